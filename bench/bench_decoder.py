"""SmolLM2-135M in numpy: prefill, one cached step, start-up, and a second worker's memory.

Each timing is set against a floor measured in the same run on the same arrays: the same
matrix products alone (every layer's projections, the attention products, SwiGLU's three
matrices, the unembedding), without the norms, RoPE, softmax, cache and bookkeeping around
them. One BLAS thread, as the service computes (app/features/decoder/service.py). Medians,
the calls taking turns so that both see the same machine load; the machine is shared, so
the ratios are the figures to read.

1. Prefill of a 32-token prompt (every layer, every position's logits, as the service needs
   them for the surprisal): ours / floor, goal ≤ 1.5.
2. One cached step at 128 tokens (one row through every layer against 127 cached positions,
   then its logits): ours / floor, goal ≤ 1.5 (reading every weight once is the limit).
3. The same step recomputed without the cache (all 128 tokens again, the last row's logits):
   recomputed / cached, goal ≥ 5.
4. Start-up with the weights already prepared: the decoder loaded in a fresh process, and
   `python -m app` from its start to /healthz saying the decoder is ready; goal ≤ 2 s.
5. Memory: `python -m app` with one worker, then two, each having served /api/decoder; the
   proportional set size (PSS: a page shared by k processes counts 1/k in each) of all the
   workers together, so the second worker's cost is what the machine gives it; goal ≤ 150 MB.

    .venv/bin/python bench/bench_decoder.py
"""

import http.client
import json
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np
from bench_api import median_seconds
from server import Server
from threadpoolctl import threadpool_limits

from app.features.decoder.store import decoder_store
from app.math import llama
from app.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
PREFILL, CONTEXT = 32, 128
REPEATS = 15
GOALS = {"prefill": 1.5, "step": 1.5, "speedup": 5.0, "start": 2.0, "memory": 150.0}


def floor(model: llama.LlamaWeights, rows: int, keys: int, logit_rows: int) -> Callable[[], Any]:
    """The matrix products of `rows` new positions against `keys` cached ones, alone: the
    same weight arrays, inputs of the same shapes made beforehand."""
    c = model.config
    rng = np.random.default_rng(0)

    def inputs(*shape: int) -> np.ndarray:
        return rng.standard_normal(shape, dtype=np.float32)

    h, o, a = inputs(rows, c.d_model), inputs(rows, c.heads * c.d_head), inputs(rows, c.d_ff)
    q = inputs(c.kv_heads, c.group, rows, c.d_head)
    k_t = inputs(c.kv_heads, 1, c.d_head, keys)
    w, v = inputs(c.kv_heads, c.group, rows, keys), inputs(c.kv_heads, 1, keys, c.d_head)
    last = h[-logit_rows:]

    def products() -> None:
        for layer in range(c.layers):
            h @ model.w_q[layer], h @ model.w_k[layer], h @ model.w_v[layer]
            q @ k_t, w @ v
            o @ model.w_o[layer]
            h @ model.w_gate[layer], h @ model.w_up[layer]
            a @ model.w_down[layer]
        last @ model.embedding.T

    return products


def timings() -> dict[str, float]:
    """1 to 3, in this process: seconds."""
    settings = Settings()
    loaded = decoder_store(settings.decoder_gguf, settings.cache_dir).get(600)
    model = loaded.weights
    ids = np.random.default_rng(1).integers(17, model.config.vocab, CONTEXT).tolist()

    def prefill() -> None:
        h = llama.Decoder(model, PREFILL).feed(ids[:PREFILL])
        llama.unembed(h, model)

    warm = llama.Decoder(model, CONTEXT - 1 + 4 * REPEATS)
    warm.feed(ids[: CONTEXT - 1])
    fed = iter(ids * 2)

    def step() -> None:  # positions 127, 128, …: the same work each time
        llama.unembed(warm.feed([next(fed)]), model)

    def recomputed() -> None:
        h = llama.Decoder(model, CONTEXT).feed(ids[:CONTEXT])
        llama.unembed(h[-1:], model)

    with threadpool_limits(limits=1, user_api="blas"):
        ours, base = median_seconds([prefill, floor(model, PREFILL, PREFILL, PREFILL)], REPEATS)
        cached, step_floor = median_seconds([step, floor(model, 1, CONTEXT, 1)], REPEATS)
        (again,) = median_seconds([recomputed], 5)
    return {"prefill": ours, "prefill_floor": base, "step": cached, "step_floor": step_floor,
            "recomputed": again}  # fmt: skip


def load_child() -> None:
    """In a fresh process: the decoder loaded from the prepared folder (seconds)."""
    start = time.perf_counter()
    settings = Settings()
    decoder_store(settings.decoder_gguf, settings.cache_dir).get(600)
    print(json.dumps({"load_s": time.perf_counter() - start}))


def smaps_mib(pid: int) -> dict[str, float]:
    """/proc/<pid>/smaps_rollup's sizes in MiB: Rss, Pss, Private_Clean, Private_Dirty, …"""
    sizes = {}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]:
        name, value, *_ = line.split()
        sizes[name.rstrip(":")] = int(value) / 1024
    return sizes


def uss_mib(pid: int) -> float:
    """Memory only this process holds (its private pages)."""
    sizes = smaps_mib(pid)
    return sizes["Private_Clean"] + sizes["Private_Dirty"]


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def workers_of(server: Server) -> list[int]:
    pid = server.process.pid
    children = [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    tracker = b"resource_tracker"  # multiprocessing's, not a worker
    workers = [p for p in children if tracker not in Path(f"/proc/{p}/cmdline").read_bytes()]
    return workers or [pid]  # one worker: the server process serves itself


def serve_decoder(port: int) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    body = json.dumps({"text": "The capital of France is", "generate": 2})
    conn.request("POST", "/api/decoder", body, {"content-type": "application/json"})
    response = conn.getresponse()
    response.read()
    conn.close()
    if response.status != 200:
        raise RuntimeError(f"/api/decoder answered {response.status}")


def memory(workers: int) -> tuple[float, list[float], list[float]]:
    """Once each worker has served /api/decoder: the PSS of all of them together, and each
    one's RSS and USS. Measured before this process maps the weights itself (PSS would
    share them with it)."""
    server = Server(env={"RESPONSE_CACHE_BYTES": "0"}, workers=workers)
    try:
        pids = workers_of(server)
        for _ in range(60):  # new connections until every worker has mapped the weights
            serve_decoder(server.port)
            if all(rss_mib(pid) > 500 for pid in pids):
                break
        else:
            raise RuntimeError("not every worker served the decoder")
        time.sleep(1.5)  # the workers give freed memory back after 1 s idle
        pss = sum(smaps_mib(pid)["Pss"] for pid in pids)
        return pss, [rss_mib(pid) for pid in pids], [uss_mib(pid) for pid in pids]
    finally:
        server.stop()


def decoder_state(url: str) -> str:
    with urllib.request.urlopen(url + "/healthz", timeout=5) as answer:
        return json.loads(answer.read())["decoder"]


def start_up() -> tuple[float, float]:
    """`python -m app` from its start to its first /healthz answer, and to /healthz saying the
    decoder is ready (seconds): the decoder loads after the app's own start-up (the static
    files compressed), in a thread of its own."""
    start = time.perf_counter()
    server = Server()
    try:
        answered = time.perf_counter() - start
        while decoder_state(server.url) != "ready":
            if time.perf_counter() - start > 60:
                raise RuntimeError("the decoder was not ready within 60 s")
            time.sleep(0.02)
        return answered, time.perf_counter() - start
    finally:
        server.stop()


def main() -> None:
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print("SmolLM2-135M-Instruct in numpy, one BLAS thread (ms: medians, taking turns)")
    print(f"load average before: {load} on {os.cpu_count()} CPUs")
    one, one_rss, one_uss = memory(1)
    two, two_rss, two_uss = memory(2)
    print(f"memory, PSS of the workers: 1 worker {one:.0f} MiB (RSS {one_rss[0]:.0f}, USS "
          f"{one_uss[0]:.0f}); 2 workers {two:.0f} MiB (RSS {two_rss[0]:.0f} and "
          f"{two_rss[1]:.0f}, USS {two_uss[0]:.0f} and {two_uss[1]:.0f}): the second worker "
          f"adds {two - one:.0f} MiB (goal ≤ {GOALS['memory']:.0f} MB)")  # fmt: skip
    child = subprocess.run([sys.executable, __file__, "--load"], cwd=ROOT, check=True,
                           stdout=subprocess.PIPE, text=True)  # fmt: skip
    load_s = json.loads(child.stdout.strip().splitlines()[-1])["load_s"]
    answered, ready = start_up()
    print(f"start-up, weights prepared: the decoder loaded in a fresh process in {load_s:.2f} s "
          f"(goal ≤ {GOALS['start']:.0f} s); python -m app answered /healthz after "
          f"{answered:.2f} s and said the decoder was ready after {ready:.2f} s")  # fmt: skip
    t = timings()
    prefill, step = t["prefill"] / t["prefill_floor"], t["step"] / t["step_floor"]
    speedup = t["recomputed"] / t["step"]
    print(
        f"prefill, {PREFILL} tokens: {t['prefill'] * 1e3:.1f} ms, floor "
        f"{t['prefill_floor'] * 1e3:.1f} ms: ratio {prefill:.2f} (goal ≤ {GOALS['prefill']})"
    )
    print(
        f"cached step at {CONTEXT}: {t['step'] * 1e3:.1f} ms, floor "
        f"{t['step_floor'] * 1e3:.1f} ms: ratio {step:.2f} (goal ≤ {GOALS['step']})"
    )
    print(f"recomputed step at {CONTEXT}: {t['recomputed'] * 1e3:.1f} ms: "
          f"{speedup:.1f}× the cached step (goal ≥ {GOALS['speedup']:.0f}×)")  # fmt: skip
    print(f"load average after: {', '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    load_child() if sys.argv[1:] == ["--load"] else main()
