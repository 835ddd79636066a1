"""Dense attention timed on this machine, and fitted to c·n².

One head, bidirectional (every query sees every key), d_head = 64: the n × n score matrix
is built, scaled, soft-maxed and multiplied by V by app/math/attention.py, exactly the code the
lab pages run. A measurement is bounded (at most a handful of lengths, a hard time cap) and
kept per process: a classroom pressing the button together waits for one run, and waiting
costs no thread (the callers await it; only the run itself has one).
"""

import os
import platform
import time
from dataclasses import dataclass
from functools import partial

import numpy as np
from threadpoolctl import threadpool_limits

from app.core.background import OnceInBackground
from app.math import attention as att

D_HEAD = 64
MIN_RUNS = 3
MAX_RUNS = 30
RUN_BUDGET_S = 0.25
SIZES_PER_RUN = 5


def measure_sizes(max_n: int) -> list[int]:
    """Five lengths, each double the one before, ending at max_n (2048 → 128 … 2,048)."""
    return [max_n >> shift for shift in range(SIZES_PER_RUN - 1, -1, -1) if max_n >> shift >= 1]


def time_dense_attention(n: int, d_head: int = D_HEAD) -> tuple[float, int]:
    """(seconds, runs) for softmax(Q·Kᵀ/√d)·V on n tokens: the fastest run after a warm-up.

    Short lengths are run again until RUN_BUDGET_S is spent (at most MAX_RUNS times), so the
    fastest run is one the other processes on a shared machine did not interrupt. One BLAS
    thread: threads waiting for each other would be timed instead of the arithmetic.
    """
    rng = np.random.default_rng(n)
    q, k, v = (rng.standard_normal((n, d_head)) for _ in range(3))  # (n, d_head) each
    allowed = np.ones((n, n), dtype=bool)  # (n, n): dense, nothing hidden
    best, runs, spent = float("inf"), 0, 0.0
    with threadpool_limits(limits=1):
        att.attend(q, k, v, allowed)
        while runs < MIN_RUNS or (spent < RUN_BUDGET_S and runs < MAX_RUNS):
            start = time.perf_counter()
            att.attend(q, k, v, allowed)
            elapsed = time.perf_counter() - start
            best, runs, spent = min(best, elapsed), runs + 1, spent + elapsed
    return best, runs


def fit_quadratic(ns: list[int], seconds: list[float]) -> tuple[float, float | None]:
    """Least-squares c in t ≈ c·n², and the log–log slope (2 for a purely quadratic cost;
    None from a single length)."""
    n = np.asarray(ns, dtype=float)
    t = np.asarray(seconds, dtype=float)
    c = float((t * n**2).sum() / (n**4).sum())
    slope = float(np.polyfit(np.log(n), np.log(t), 1)[0]) if len(ns) > 1 else None
    return c, slope


@dataclass(frozen=True)
class Machine:
    cpu: str
    cpus: int | None
    python: str
    numpy: str


@dataclass(frozen=True)
class MeasuredLength:
    """One length's fastest run, against the fitted c·n²."""

    n: int
    seconds: float
    runs: int
    fitted_seconds: float
    ratio: float  # seconds / fitted_seconds


@dataclass(frozen=True)
class Measurement:
    """GET /api/cost/measure: dense attention timed on this server, fitted to c·n²."""

    d_head: int
    min_runs: int
    rows: list[MeasuredLength]
    skipped: list[int]  # lengths left out to stay within the time cap
    c_seconds: float
    slope: float | None  # log–log slope of time against n (2 for a quadratic cost)
    time_cap_seconds: float
    total_seconds: float
    machine: Machine
    measured_at: str


def measure_scaling(max_n: int, time_cap_s: float) -> Measurement:
    """Time each length in turn (the shortest always); skip the rest once the cap would be
    passed.

    The next length's time is predicted from the last one (×4 per doubling, times the runs),
    so a run stops before it starts a length it cannot finish inside the cap.
    """
    started = time.perf_counter()
    timed: list[tuple[int, float, int]] = []  # n, seconds, runs
    skipped: list[int] = []
    for n in measure_sizes(max_n):
        elapsed = time.perf_counter() - started
        one_run = timed[-1][1] * (n / timed[-1][0]) ** 2 if timed else 0.0
        predicted = max(one_run * (MIN_RUNS + 1), min(RUN_BUDGET_S, one_run * MAX_RUNS))
        if timed and (skipped or elapsed + predicted > time_cap_s):
            skipped.append(n)
            continue
        seconds, runs = time_dense_attention(n)
        timed.append((n, seconds, runs))
    c, slope = fit_quadratic([n for n, _, _ in timed], [s for _, s, _ in timed])
    return Measurement(
        d_head=D_HEAD,
        min_runs=MIN_RUNS,
        rows=[MeasuredLength(n, s, runs, c * n**2, s / (c * n**2)) for n, s, runs in timed],
        skipped=skipped,
        c_seconds=c,
        slope=slope,
        time_cap_seconds=time_cap_s,
        total_seconds=time.perf_counter() - started,
        machine=Machine(
            platform.machine(), os.cpu_count(), platform.python_version(), np.__version__
        ),
        measured_at=time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
    )


class MeasurementCache(OnceInBackground[Measurement]):
    """One measurement per process (app/core/background.py): a classroom pressing the button
    together waits for one run, holding no worker thread while it waits."""

    def __init__(self, max_n: int, time_cap_s: float, wait_s: float) -> None:
        super().__init__(
            partial(measure_scaling, max_n, time_cap_s),
            wait_s,
            "a timing run is still going on this server; try again in a few seconds",
        )
        self.max_n, self.time_cap_s = max_n, time_cap_s
