"""GET /api/decoder/measure: one decoding step with the KV cache, against the same step
recomputed from scratch, timed on this server at a few lengths (once per process).

With the cache, the token at position n − 1 is one row through every layer, its query scored
against n cached keys; without it, all n tokens go through every layer again to produce the
same row. Both are timed on the same random tokens, the fastest of a few runs.
"""

import threading
import time
from dataclasses import dataclass

import numpy as np

from app.core.background import OnceInBackground
from app.features.decoder.service import one_blas_thread
from app.math import llama

LENGTHS = (16, 64, 128)
RUNS = 2


@dataclass(frozen=True)
class DecodeTiming:
    lengths: list[int]
    cached_ms: list[float]  # one cached step at each length, the fastest run
    uncached_ms: list[float]  # the same step without the cache: all n tokens again
    speedup: list[float]  # uncached / cached
    runs: int


def best_ms(run: list[float]) -> float:
    return min(run) * 1000


def time_steps(
    model: llama.LlamaWeights, time_cap_s: float, lengths: tuple[int, ...] = LENGTHS
) -> DecodeTiming:
    """Time a cached step and the recomputed one at each length, the shortest first; a
    longer length is left out when it would not end within `time_cap_s`."""
    with one_blas_thread():  # as the service computes
        rng = np.random.default_rng(0)
        ids = rng.integers(0, model.config.vocab, max(lengths)).tolist()
        started = time.perf_counter()
        timed, cached, uncached = [], [], []
        for n in lengths:
            # the prefill and the recomputed runs cost about (RUNS + 1) × the last one, × n / n'
            predicted = (RUNS + 1) * uncached[-1] / 1000 * n / timed[-1] if timed else 0.0
            if timed and time.perf_counter() - started + predicted > time_cap_s:
                break
            with_cache, without = [], []
            decoder = llama.Decoder(model, capacity=n - 1 + RUNS)
            decoder.feed(ids[: n - 1])
            for run in range(RUNS):  # steps at positions n − 1, n, …: the same work each
                start = time.perf_counter()
                llama.unembed(decoder.feed(ids[n - 1 - run : n - run]), model)
                with_cache.append(time.perf_counter() - start)
                start = time.perf_counter()
                llama.unembed(llama.Decoder(model, capacity=n).feed(ids[:n])[-1:], model)
                without.append(time.perf_counter() - start)
            timed.append(n)
            cached.append(best_ms(with_cache))
            uncached.append(best_ms(without))
    speedup = [u / c for u, c in zip(uncached, cached, strict=True)]
    return DecodeTiming(timed, cached, uncached, speedup, RUNS)


_timings: dict[int, OnceInBackground[DecodeTiming]] = {}
_timings_lock = threading.Lock()


def decode_timing(
    model: llama.LlamaWeights, time_cap_s: float, wait_s: float
) -> OnceInBackground[DecodeTiming]:
    """The process's one timing run for this model."""
    with _timings_lock:
        key = id(model)
        if key not in _timings:
            _timings[key] = OnceInBackground(
                lambda: time_steps(model, time_cap_s),
                wait_s,
                "the decoder's timing run is still going on this server; try again in a few "
                "seconds",
            )
        return _timings[key]
