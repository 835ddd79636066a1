"""FlashAttention's two loop orders against the dense head, in numpy, at n = 1,024 and 4,096.

For each n, d_k = d_v = 64, full (bidirectional) and causal attention:
- dense, the lab's path: app.attention.attend, which keeps every stage (scores, scaled,
  masked, weights: four n × n matrices) besides the n × n mask;
- dense, output only: masked_softmax(Q·Kᵀ / √d_k, M) · V, the least a dense path holds;
- fa1 and fa2: app.math.flash.flash_attention in each loop order, blocks from on-chip memory
  M = 100,000 elements (B_c = ⌈M / 4d⌉ = 391, B_r = min(B_c, d) = 64), the mask computed per
  tile (no n × n array anywhere), steps not kept;
- fa2 128 × 128: square tiles, as FlashAttention-2 kernels often use, for comparison.
Counted traffic is the elements each path reads from and writes to slow memory, as
app.math.flash counts them (standard attention: Dao et al. 2022, Algorithm 0).
Time is processor time (time.process_time), the median of a few runs, with numpy's BLAS
held to one thread: on a shared machine wall-clock time mostly measures the neighbours.
Peak memory is tracemalloc's peak above what was already allocated (numpy reports its
buffers to tracemalloc), measured in a separate run. Ratios are against the lab's dense
path in the same run. Not a pass/fail test.

    .venv/bin/python bench/bench_kernel.py
"""

import os

# One BLAS thread for every path, set before numpy loads its BLAS.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import statistics  # noqa: E402
import time  # noqa: E402
import tracemalloc  # noqa: E402
from collections.abc import Callable  # noqa: E402

import numpy as np  # noqa: E402

from app.math import attention as att  # noqa: E402
from app.math import flash as fl  # noqa: E402
from app.math import kernel as kn  # noqa: E402

SIZES = [(1024, 5), (4096, 3)]  # (n, timed runs)
D = 64
SRAM = 100_000  # elements of on-chip memory
TILE = 128
MiB = 2**20


def peak_bytes(run: Callable[[], np.ndarray]) -> int:
    tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    run()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak - base


def seconds(run: Callable[[], np.ndarray], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.process_time()
        run()
        times.append(time.process_time() - start)
    return statistics.median(times)


def cases(
    q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool
) -> list[tuple[str, Callable[[], np.ndarray]]]:
    n = q.shape[0]

    def dense_lab() -> np.ndarray:
        allowed = att.causal_mask(n) if causal else np.ones((n, n), dtype=bool)
        return att.attend(q, k, v, allowed).output

    def dense_output_only() -> np.ndarray:
        allowed = att.causal_mask(n) if causal else np.ones((n, n), dtype=bool)
        return att.masked_softmax(q @ k.T / np.sqrt(D), allowed) @ v

    tile_mask = kn.causal_tiles if causal else kn.visible_everywhere
    b_r, b_c = fl.sram_blocks(SRAM, D)
    orders = [
        (
            f"{order} {b_r} × {b_c}",
            lambda o=order: (
                fl.flash_attention(q, k, v, tile_mask, b_r, b_c, o, keep_steps=False).output
            ),
        )
        for order in fl.ORDERS
    ]
    square = (
        f"fa2 {TILE} × {TILE}",
        lambda: fl.flash_attention(q, k, v, tile_mask, TILE, TILE, "fa2", keep_steps=False).output,
    )
    dense = [("dense (lab: every stage)", dense_lab), ("dense (output only)", dense_output_only)]
    return [*dense, *orders, square]


def main() -> None:
    print(f"FlashAttention orders vs dense in numpy, d_k = d_v = {D}, float64, one BLAS thread")
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"load average before: {load} on {os.cpu_count()} CPUs (times are processor time)")
    header = f"{'n':>6} {'mask':<7} {'path':<26} {'cpu s':>8} {'× dense':>8}"
    header += f" {'peak MiB':>9} {'× dense':>8} {'max |diff|':>11}"
    for n, repeats in SIZES:
        rng = np.random.default_rng(n)
        q, k, v = (rng.standard_normal((n, D)) for _ in range(3))
        print()
        print(header)
        for causal in (False, True):
            reference = None
            base_time = base_peak = 0.0
            for name, run in cases(q, k, v, causal):
                out = run()  # warm up, and the result to compare
                took, peak = seconds(run, repeats), peak_bytes(run)
                if reference is None:
                    reference, base_time, base_peak = out, took, peak
                diff = float(np.abs(out - reference).max())
                print(
                    f"{n:>6} {'causal' if causal else 'full':<7} {name:<26} {took:>8.3f} "
                    f"{took / base_time:>8.2f} {peak / MiB:>9.1f} {peak / base_peak:>8.3f} "
                    f"{diff:>11.1e}"
                )
        print_traffic(n)


def print_traffic(n: int) -> None:
    """Counted slow-memory traffic, elements: standard attention and both orders."""
    b_r, b_c = fl.sram_blocks(SRAM, D)
    std = fl.standard_traffic(n, D, D)
    print(f"{n:>6} traffic (elements of slow memory), M = {SRAM:,}, B_r = {b_r}, B_c = {b_c}:")
    print(f"{'':>6} {'standard':<16} reads {std.reads:>13,} writes {std.writes:>13,}")
    for causal in (False, True):
        for order in fl.ORDERS:
            t = fl.counted_traffic(n, b_r, b_c, D, D, order, causal)
            name = f"{order} {'causal' if causal else 'full'}"
            print(
                f"{'':>6} {name:<16} reads {t.reads:>13,} writes {t.writes:>13,} "
                f"total {t.total / std.total:>6.1%} of standard, "
                f"{t.skipped_tiles} of {t.tiles} tiles skipped"
            )
    # fa2 re-reads K and V once per query block: it wants tall query blocks, not B_r ≤ d
    t = fl.counted_traffic(n, b_c, b_r, D, D, "fa2")
    print(
        f"{'':>6} {f'fa2 {b_c} × {b_r} full':<16} reads {t.reads:>13,} writes {t.writes:>13,} "
        f"total {t.total / std.total:>6.1%} of standard (blocks swapped: B_r = {b_c}, B_c = {b_r})"
    )


if __name__ == "__main__":
    main()
