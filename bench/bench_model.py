"""all-MiniLM-L6-v2 in numpy: forward-pass time, and memory per uvicorn worker.

1. Forward pass at n = 32, 128 and 256 word pieces (256 is the model card's limit): the
   median (taking turns with the batched runner `run_layers`, measured in the same process:
   the same arithmetic with every head in one array and no stage kept) and the best run
   (the machine is shared by several agents: the best run is the closest to an idle
   machine), and the median CPU time (what one call needs once it has a core: with one BLAS
   thread, the figure that load on the machine does not inflate). Run once with numpy's
   BLAS on one thread (what the app sets, see app/__init__.py) and once on two, each in a
   fresh process. The goal is 150 ms at 256 word pieces.
2. The head ranking for two 12-word sentences: both sentences' forward passes, each of the
   72 heads switched off alone in both (144 runs, batched 12 at a time from the layer the
   head is in), the 72 similarities, sorted. The goal is 2 s. Then the same for two
   sentences at the longest length the ranking is offered for (MAX_RANKED_PIECES).
3. The work of one POST /api/model at 32 pieces without HTTP: validate, tokenize, forward,
   serialize with orjson.
4. Memory: `python -m app` with 2 workers on 127.0.0.1 (a free port); each worker's RSS
   before and after it has served /api/model (the model is read once per worker).
5. Edit to picture on /model (a 12-word sentence), in Debian's chromium: the head select
   changed (applied at once), and the sentence's last word changed (an input event: the
   page's 150 ms debounce included); from the event to the frame after the page's
   `live:updated` (the new fragment, its pictures drawn by the server, swapped in).
   Median of 10 each; the goal is 200 ms.

    .venv/bin/python bench/bench_model.py          # everything
    .venv/bin/python bench/bench_model.py --page   # only 5
    .venv/bin/python bench/bench_model.py --page http://127.0.0.1:8000   # 5, on that server
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
SIZES = [(32, 20), (128, 8), (256, 5)]  # (word pieces, timed repeats)
TARGET_MS = 150.0  # at 256 word pieces
RANKING_TARGET_S = 2.0
RANKING_PAIR = (  # two sentences of 12 words each
    "The weather outside is lovely and warm on this bright spring morning",
    "It is so sunny outside that we should walk to the park",
)
RANKING_REPEATS = 5


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

    from app.core.limits import MAX_RANKED_PIECES
    from app.features.model.schemas import ModelRequest
    from app.features.model.service import compute_model
    from app.features.model.store import load_model, word_pieces
    from app.math import minilm as bert
    from app.settings import Settings
    from app.web.responses import dumps

    before = rss_mib()
    start = time.perf_counter()
    loaded = load_model()
    load_s = time.perf_counter() - start
    encoder = loaded.encoder
    h = encoder.config.heads

    from app.math import ablation
    from app.math.similarity import cosine, rank_heads

    def batched(ids: np.ndarray) -> np.ndarray:
        x = bert.embed(encoder, ids, np.zeros_like(ids))[None]  # (1, n, d_model)
        return ablation.run_layers(encoder, x, ablation.head_gates(encoder.config)[None])[0]

    def ranking(texts: tuple[str, str] = RANKING_PAIR) -> list:
        runs = [bert.forward(encoder, word_pieces(loaded, t).ids) for t in texts]
        base = cosine(*(bert.sentence_embedding(r.layers[-1].output) for r in runs))
        sweeps = [ablation.single_head_ablations(encoder, r) for r in runs]
        return rank_heads(float(base), cosine(*sweeps))

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
    assert [len(word_pieces(loaded, t).ids) - 2 for t in RANKING_PAIR] == [12, 12]
    assert len(ranking()) == h * encoder.config.layers
    rank_best = min(timeit.repeat(ranking, number=1, repeat=RANKING_REPEATS))
    rank_cpu = statistics.median(cpu_seconds(ranking, RANKING_REPEATS))
    (rank_median,) = median_seconds([ranking], RANKING_REPEATS)
    rows.append({"n": "ranking", "ours": rank_median * 1e3, "best": rank_best * 1e3,
                 "cpu": rank_cpu * 1e3})  # fmt: skip
    long_pair = tuple(" ".join([w] * (MAX_RANKED_PIECES - 2)) for w in ("word", "other"))
    long_best = min(timeit.repeat(partial(ranking, long_pair), number=1, repeat=2))
    request = ModelRequest(text=" ".join(["word"] * 30), layer=0, head=0)
    (api,) = median_seconds([lambda: dumps(compute_model(request, Settings()).json())], 30)
    print(json.dumps({"load_s": load_s, "rss_before": before, "rss_after": rss_mib(),
                      "rows": rows, "api": api * 1e3, "long_ranking": long_best,
                      "long_n": MAX_RANKED_PIECES}))  # fmt: skip


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


PAGE_WORDS = "the quick brown fox jumps over the lazy dog near the"  # and a 12th word
PAGE_ROUNDS = 10
PAGE_TARGET_MS = 200.0
# One edit, timed inside the page: the field's new value and its event, to the frame after
# the swap (live.js sends `live:updated` on the document once the fragment is in).
TIME_ONE_EDIT = """async ([id, value, kind]) => {
  const field = document.getElementById(id);
  const swapped = new Promise((done) => document.addEventListener(
    "live:updated", () => requestAnimationFrame(() => done()), { once: true }));
  const start = performance.now();
  field.value = value;
  field.dispatchEvent(new Event(kind, { bubbles: true }));
  await swapped;
  return performance.now() - start;
}"""


def page_edits(base: str | None = None) -> None:
    """Section 5: the /model page's edit-to-picture times in chromium, on `base` or on a
    `python -m app` of its own."""
    from playwright.sync_api import sync_playwright

    from tests.browser.conftest import CHROMIUM, CHROMIUM_ARGS

    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"\nEdit to picture on /model, 12 words, median of {PAGE_ROUNDS} (load {load})")
    if base is None:
        with running_app() as port:
            return page_edits(f"http://127.0.0.1:{port}")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        page.goto(f"{base}/model?text={PAGE_WORDS.replace(' ', '+')}+river")
        edits = {
            "head select": ("head", [str(k % 12) for k in range(1, PAGE_ROUNDS + 2)], "change"),
            "last word typed": (
                "text",
                [f"{PAGE_WORDS} word{k}" for k in range(PAGE_ROUNDS + 1)],
                "input",
            ),
        }
        for name, (field, values, kind) in edits.items():
            page.evaluate(TIME_ONE_EDIT, [field, values[0], kind])  # warm up
            times = [page.evaluate(TIME_ONE_EDIT, [field, v, kind]) for v in values[1:]]
            print(f"  {name:<16} median {statistics.median(times):7.1f} ms, best "
                  f"{min(times):7.1f} ms  (goal {PAGE_TARGET_MS:.0f} ms)")  # fmt: skip
        browser.close()


def main() -> None:
    if sys.argv[1:2] == ["--page"]:
        page_edits(*sys.argv[2:3])
        return
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
              f"{'CPU':>9}")  # fmt: skip
        *forward_rows, rank = r["rows"]
        for row in forward_rows:
            ours, batched, best, cpu = row["ours"], row["batched"], row["best"], row["cpu"]
            print(f"{row['n']:>5} {ours:>7.1f}ms {batched:>7.1f}ms {ours / batched:>13.2f} "
                  f"{best:>7.1f}ms {cpu:>7.1f}ms")  # fmt: skip
        cpu_256 = forward_rows[-1]["cpu"]
        print(f"goal at 256 pieces: {TARGET_MS:.0f} ms; median CPU / goal = "
              f"{cpu_256 / TARGET_MS:.2f}")  # fmt: skip
        print(f"72-head ranking, two 12-word sentences (144 ablated runs): median "
              f"{rank['ours'] / 1e3:.2f} s, best {rank['best'] / 1e3:.2f} s, CPU "
              f"{rank['cpu'] / 1e3:.2f} s; goal {RANKING_TARGET_S:.0f} s")  # fmt: skip
        print(f"72-head ranking, two sentences of {r['long_n']} pieces (the longest "
              f"offered): best {r['long_ranking']:.2f} s")  # fmt: skip
        print(f"/api/model work at n = 32 (tokenize, forward, orjson): {r['api']:.1f} ms")
    print("\nMemory per uvicorn worker (python -m app, WORKERS=2), MiB RSS:")
    for pid, before, after in worker_memory():
        print(f"  worker {pid}: {before:.0f} before the model, {after:.0f} after")
    page_edits()


if __name__ == "__main__":
    child() if sys.argv[1:] == ["--child"] else main()
