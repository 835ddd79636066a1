"""The cost calculator: dense attention timed on this machine, and what one /cost answer costs.

1. The "measure it" run of the page (app/features/cost/measure.py): one head, d_head = 64,
   n = 128 … 2,048,
   fastest run per length, each time compared with n = 128 measured in the same run: a
   quadratic cost gives (n / 128)².
2. GET /api/cost and GET /cost answered in-process (TestClient), against the bare
   computation (app.cost_service.compute_cost) measured in the same run.

    .venv/bin/python bench/bench_cost.py
"""

import os
import statistics
import time
from collections.abc import Callable

from fastapi.testclient import TestClient

from app.features.cost.measure import measure_scaling
from app.features.cost.schemas import CostQuery
from app.features.cost.service import compute_cost
from app.main import create_app
from app.settings import Settings

CONFIGS = [
    {},
    {"preset": "llama-3-8b", "seq_len": 8192},
    {"preset": "gemma-2-9b", "seq_len": 100_000, "batch": 8},
]


def per_call(fn: Callable[[], object], repeats: int) -> float:
    """Median seconds of one call."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    m = measure_scaling(2048, 60.0)
    base = m.rows[0]
    print("\ndense attention, one head, d_head = 64 (fastest run per length)")
    print(f"{'n':>6} {'runs':>5} {'ms':>9} {'÷ n=128':>9} {'(n/128)²':>9} {'÷ c·n²':>7}")
    for r in m.rows:
        ratio = r.seconds / base.seconds
        quadratic = (r.n / base.n) ** 2
        print(
            f"{r.n:>6} {r.runs:>5} {r.seconds * 1e3:>9.2f} {ratio:>9.1f} "
            f"{quadratic:>9.0f} {r.ratio:>7.2f}"
        )
    print(f"c = {m.c_seconds * 1e9:.1f} ms per million n²; log–log slope {m.slope:.2f}")

    client = TestClient(create_app(Settings()))
    print("\none answer, median ms (ratio to compute_cost alone)")
    for params in CONFIGS:
        bare = per_call(lambda p=params: compute_cost(CostQuery(**p)), 30)
        api = per_call(lambda p=params: client.get("/api/cost", params=p), 30)
        page = per_call(lambda p=params: client.get("/cost", params=p), 15)
        print(
            f"{params or 'defaults'!s:<55} compute {bare * 1e3:6.2f}  "
            f"/api/cost {api * 1e3:6.2f} ({api / bare:4.1f}×)  /cost {page * 1e3:6.2f} "
            f"({page / bare:4.1f}×)"
        )


if __name__ == "__main__":
    main()
