"""all-MiniLM-L6-v2 in numpy: forward-pass time, and memory per uvicorn worker.

1. Forward pass at n = 8, 32 and 128 word pieces: the median (taking turns with a batched
   version measured in the same process: the same arithmetic with every head in one
   (h, n, n) array and no stage kept) and the best run (the machine's other work is shared
   by ~8 engineers: the best run is the closest to an idle machine), and the median CPU
   time (what one call needs once it has a core: with one BLAS thread, the figure that
   load on the machine does not inflate). Run once with numpy's
   BLAS on one thread (what the app sets, see app/__init__.py) and once on two, each in a
   fresh process. The target is 50 ms at 32 word pieces.
2. The work of one POST /api/model at 32 pieces without HTTP: validate, tokenize, forward,
   serialize with orjson.
3. Memory: `python -m app` with 2 workers on 127.0.0.1 (a free port); each worker's RSS
   before and after it has served /api/model (the model is read once per worker).

    .venv/bin/python bench/bench_model.py
"""

import http.client
import json
import os
import statistics
import subprocess
import sys
import time
import timeit
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_api import median_seconds, running_app

ROOT = Path(__file__).resolve().parents[1]
SIZES = [(8, 20), (32, 30), (128, 5)]  # (word pieces, timed repeats)
TARGET_MS = 50.0


def rss_mib(pid: int | str = "self") -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def cpu_seconds(call, repeats: int) -> list[float]:  # type: ignore[no-untyped-def]
    """CPU time of each call: on a busy machine, the time the call needs once it has a core
    (with one BLAS thread; with more, their times add up)."""
    times = []
    for _ in range(repeats):
        start = time.process_time()
        call()
        times.append(time.process_time() - start)
    return times


def child() -> None:
    """Timings in this process; prints one JSON line."""
    import numpy as np

    from app.features.model.schemas import ModelRequest
    from app.features.model.service import compute_model
    from app.features.model.store import load_model, word_pieces
    from app.math import minilm as bert
    from app.settings import Settings
    from app.web.json_io import dumps

    before = rss_mib()
    start = time.perf_counter()
    loaded = load_model()
    load_s = time.perf_counter() - start
    encoder = loaded.encoder
    h = encoder.config.heads

    def batched(ids: np.ndarray) -> np.ndarray:
        x = bert.embed(encoder, ids, np.zeros_like(ids))
        for w in encoder.layers:
            q, k, v = (bert.split_heads(x @ wm + b, h) for wm, b in
                       ((w.w_q, w.b_q), (w.w_k, w.b_k), (w.w_v, w.b_v)))  # fmt: skip
            scores = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])  # (h, n, n)
            e = np.exp(scores - scores.max(axis=-1, keepdims=True))
            out = (e / e.sum(axis=-1, keepdims=True)) @ v  # (h, n, d_head)
            concat = out.transpose(1, 0, 2).reshape(len(ids), -1)
            a = bert.layer_norm(x + concat @ w.w_o + w.b_o, w.norm_1, encoder.config.eps)
            f = bert.gelu(a @ w.w_1 + w.b_1) @ w.w_2 + w.b_2
            x = bert.layer_norm(a + f, w.norm_2, encoder.config.eps)
        return x

    rows = []
    for n, repeats in SIZES:
        ids = word_pieces(loaded, " ".join(["word"] * (n - 2))).ids
        assert len(ids) == n
        np.testing.assert_allclose(
            batched(ids), bert.forward(encoder, ids).layers[-1].output, atol=1e-4
        )
        run = partial(bert.forward, encoder, ids)
        ours, base = median_seconds([run, partial(batched, ids)], repeats)
        best = min(timeit.repeat(run, number=1, repeat=repeats))
        cpu = statistics.median(cpu_seconds(run, repeats))
        rows.append({"n": n, "ours": ours * 1e3, "batched": base * 1e3,
                     "best": best * 1e3, "cpu": cpu * 1e3})  # fmt: skip
    request = ModelRequest(text=" ".join(["word"] * 30), layer=0, head=0)
    (api,) = median_seconds([lambda: dumps(compute_model(request, Settings()))], 30)
    print(json.dumps({"load_s": load_s, "rss_before": before, "rss_after": rss_mib(),
                      "rows": rows, "api": api * 1e3}))  # fmt: skip


def children(pid: int) -> list[int]:
    return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def is_worker(pid: int) -> bool:
    """uvicorn's workers, not multiprocessing's resource tracker."""
    return b"resource_tracker" not in Path(f"/proc/{pid}/cmdline").read_bytes()


def worker_memory() -> list[tuple[int, float, float]]:
    """(pid, RSS before the model, RSS after) for each of 2 uvicorn workers."""
    with running_app(workers=2) as port:
        (server,) = children(os.getpid())
        workers = [pid for pid in children(server) if is_worker(pid)]
        before = {pid: rss_mib(pid) for pid in workers}
        body = json.dumps({"text": "The cat sat on the mat."})
        for _ in range(40):  # a new connection each time, so that both workers get some
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            conn.request("POST", "/api/model", body, {"content-type": "application/json"})
            conn.getresponse().read()
            conn.close()
        return [(pid, before[pid], rss_mib(pid)) for pid in workers]


def main() -> None:
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print("all-MiniLM-L6-v2 forward pass in numpy (ms): median, taking turns with a batched")
    print("version of the same arithmetic; and the best run")
    print(f"load average before: {load} on {os.cpu_count()} CPUs")
    for threads in ("1", "2"):
        env = {**os.environ, "OPENBLAS_NUM_THREADS": threads, "OMP_NUM_THREADS": threads}
        out = subprocess.run([sys.executable, __file__, "--child"], cwd=ROOT, env=env,
                             stdout=subprocess.PIPE, text=True, check=True)  # fmt: skip
        r = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"\nBLAS threads {threads}: model read in {r['load_s']:.2f} s, "
              f"RSS {r['rss_before']:.0f} → {r['rss_after']:.0f} MiB")  # fmt: skip
        print(f"{'n':>5} {'median':>9} {'batched':>9} {'ours/batched':>13} {'best':>9} "
              f"{'CPU':>9} {'CPU/50 ms':>10}")  # fmt: skip
        for row in r["rows"]:
            ours, batched, best, cpu = row["ours"], row["batched"], row["best"], row["cpu"]
            print(f"{row['n']:>5} {ours:>7.1f}ms {batched:>7.1f}ms {ours / batched:>13.2f} "
                  f"{best:>7.1f}ms {cpu:>7.1f}ms {cpu / TARGET_MS:>10.2f}")  # fmt: skip
        print(f"/api/model work at n = 32 (tokenize, forward, orjson): {r['api']:.1f} ms")
    print("\nMemory per uvicorn worker (python -m app, WORKERS=2), MiB RSS:")
    for pid, before, after in worker_memory():
        print(f"  worker {pid}: {before:.0f} before the model, {after:.0f} after")


if __name__ == "__main__":
    child() if sys.argv[1:] == ["--child"] else main()
