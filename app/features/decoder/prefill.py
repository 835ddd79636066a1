"""A prompt's rows, kept from one request to the next that begins with the same tokens.

While a teacher types, the prompt changes only at its end: the next request shares all its
tokens but the last one or two with one before it. Each request keeps what its prompt's rows
computed (every layer's K and V rows, what the heads did on each row, each row's final hidden
state and its logits' normaliser, the surprisal); the next one resumes after the tokens they
share (`llama.Decoder.resume`) and computes only the new rows. The causal mask makes this
exact: no row depends on a later token. Results equal those computed from scratch, to float
rounding (tests/features/decoder/test_prefill.py).

This is a cache of the model's state inside the decoder service, not an answer cache: the
finished answers of pure routes are app/web/cache.py's, keyed by the whole request; these
entries are keyed by what the rows depend on (the weights, the cache policy, the heads
switched off, the layers observed) and found by the longest shared prefix of token ids.

Bounded in bytes, per process (PREFILL_BYTES): an entry holds about 63 KB per position
(K and V 46 KB over the 30 layers, the heads' numbers 9 KB, the watched layer's rows 6 KB,
the final hidden row 2 KB) and its watched layer's n × n weights: an 8-word prompt about
0.7 MB, the longest prompt (256 tokens) about 19 MB, whatever was generated after it (only
the prompt's positions are kept). 64 MB keeps the last hundred or so edits of short prompts,
or three of the longest, at a tenth of the memory a worker maps for the weights; the least
recently used entry goes first. The page's background runs (the long text under each cache
policy, the induction test) are not kept: nobody types on them.
"""

import threading
from dataclasses import dataclass

import numpy as np
from cachetools import LRUCache

from app.math import decoding as dc
from app.math import llama

PREFILL_BYTES = 64 * 2**20


def shared_prefix(a: tuple[int, ...], b: list[int]) -> int:
    """How many first tokens two sequences have in common."""
    count = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        count += 1
    return count


@dataclass(frozen=True)
class PrefillKey:
    """What a prompt's rows depend on besides its tokens."""

    weights: int  # id() of the model's arrays
    policy: dc.CachePolicy
    ablate: tuple[llama.Head, ...]  # sorted
    dense: tuple[int, ...]  # the layers whose n × n weights are logged
    watched: int | None  # the layer whose rows are watched for one head's stages
    lookback: int | None  # the induction test's λ


@dataclass(frozen=True)
class Prefilled:
    """What one request's prompt computed, row by row, its arrays holding the prompt's
    positions alone."""

    ids: tuple[int, ...]  # the prompt's token ids
    kv: llama.KVRecord
    log: llama.AttentionLog
    watch: llama.LayerWatch | None
    hidden: np.ndarray  # (n, d_model) the final-normed rows the unembedding reads
    normaliser: np.ndarray  # (n,) ln Σ exp of each row's logits (app/math/sampling.py)
    surprisal: list[float | None]  # of each prompt token, None for the first

    @property
    def nbytes(self) -> int:
        watched = 0 if self.watch is None else self.watch.nbytes
        arrays = self.kv.nbytes + self.log.nbytes + watched
        return arrays + self.hidden.nbytes + self.normaliser.nbytes + 16 * len(self.ids)


class Prefills:
    """The kept prompts of this process, the least recently used dropped beyond max_bytes."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._entries: LRUCache[tuple[PrefillKey, tuple[int, ...]], Prefilled] = LRUCache(
            max_bytes, getsizeof=lambda entry: entry.nbytes
        )
        self._lock = threading.Lock()  # the page's background runs decode in threads too

    def longest(self, key: PrefillKey, ids: list[int]) -> tuple[Prefilled, int] | None:
        """The kept prompt, computed under `key`, sharing the most first tokens with `ids`,
        and how many it shares; None when none shares even the first."""
        with self._lock:
            candidates = [kept for (k, kept) in self._entries if k == key]
            scored = [(shared_prefix(kept, ids), kept) for kept in candidates]
            count, best = max(scored, default=(0, ()))
            if count == 0:
                return None
            return self._entries[(key, best)], count

    def keep(self, key: PrefillKey, entry: Prefilled) -> None:
        if entry.nbytes <= self.max_bytes:
            with self._lock:
                self._entries[(key, entry.ids)] = entry

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


prefills = Prefills(PREFILL_BYTES)
