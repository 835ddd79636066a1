"""What tiled attention and cached decoding share, and what they count, in pure numpy.

Masks given tile by tile (so that a long sequence never needs an n × n array), the blocks a
sequence is cut into, the map of scores a tiled walk has touched, and the closed-form counts
of a long sequence: score entries held, dot products, and decoding with and without a cache.
The two loop orders of tiled attention live in app/math/flash.py; decoding with a cache and
its policies in app/math/decoding.py (re-exported here).

Nothing here knows about the web.
"""

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from math import ceil
from typing import TYPE_CHECKING

import numpy as np

from app.math.cost import score_entries

if TYPE_CHECKING:
    from app.math.flash import TileComputation

# A mask given tile by tile: (query positions (b_q,), key positions (b_k,)) → (b_q, b_k) bool.
TileMask = Callable[[np.ndarray, np.ndarray], np.ndarray]


def mask_from_matrix(allowed: np.ndarray) -> TileMask:
    """Tiles cut from an n × n boolean mask (the lab's masks are small)."""
    return lambda i, j: allowed[np.ix_(i, j)]


def causal_tiles(i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """The causal mask computed per tile, so that no n × n array is ever built."""
    return i[:, None] >= j[None, :]  # (b_q, b_k)


def visible_everywhere(i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """No mask at all (an encoder), per tile."""
    return np.ones((len(i), len(j)), dtype=bool)


def blocks(n: int, size: int) -> list[tuple[int, int]]:
    """[start, stop) of each block of `size` positions; the last one may be shorter."""
    return [(start, min(start + size, n)) for start in range(0, n, size)]


# ---------------------------------------------------------------- tiled walks (app/math/flash.py)


def touched_maps(steps: Iterable["TileComputation"], n: int) -> list[np.ndarray]:
    """After each step, which score entries have been computed so far: (n, n) bool each."""
    touched = np.zeros((n, n), dtype=bool)
    maps = []
    for step in steps:
        if not step.skipped:
            touched[slice(*step.query_block), slice(*step.key_block)] = True
        maps.append(touched.copy())
    return maps


# ---------------------------------------------------------------- counting, without drawing


@dataclass(frozen=True)
class TiledCounts:
    """How much the dense and the tiled paths hold and move for full (unmasked) attention.

    Traffic counts numbers read from or written to the slow (GPU main) memory, in the
    FlashAttention paper's model: the dense path writes S, reads it, writes P and reads it
    again (4n²) besides reading Q, K, V and writing O; the tiled path reads each query block
    once, all of K and V once per query block, and writes O once.
    """

    n: int
    block_q: int
    block_k: int
    steps: int
    dense_score_entries: int  # n²: the whole matrix at once
    tiled_score_entries: int  # one tile: min(b_q, n) · min(b_k, n)
    dot_products: int  # n² for both paths: the arithmetic does not change
    dense_traffic: int
    tiled_traffic: int


def tiled_counts(n: int, block_q: int, block_k: int, d_k: int, d_v: int) -> TiledCounts:
    """The counts for any n in closed form: nothing of size n² is built."""
    t_q, t_k = ceil(n / block_q), ceil(n / block_k)
    return TiledCounts(
        n=n,
        block_q=block_q,
        block_k=block_k,
        steps=t_q * t_k,
        dense_score_entries=score_entries(n),
        tiled_score_entries=min(block_q, n) * min(block_k, n),
        dot_products=score_entries(n),
        dense_traffic=4 * n * n + 2 * n * d_k + 2 * n * d_v,
        tiled_traffic=n * d_k + t_q * n * (d_k + d_v) + n * d_v,
    )


@dataclass(frozen=True)
class DecodeCounts:
    """Generating tokens 1 … n one at a time, with and without a key/value cache."""

    n: int
    last_step_cached: int  # dot products for token n with a cache: n
    last_step_uncached: int  # recomputing the whole n × n matrix: n²
    total_cached: int  # Σ_t t = n(n + 1)/2
    total_uncached: int  # Σ_t t² = n(n + 1)(2n + 1)/6
    cache_entries: int  # K and V of n tokens: n · (d_k + d_v)


def decode_counts(n: int, d_k: int, d_v: int) -> DecodeCounts:
    return DecodeCounts(
        n=n,
        last_step_cached=n,
        last_step_uncached=score_entries(n),
        total_cached=n * (n + 1) // 2,
        total_uncached=n * (n + 1) * (2 * n + 1) // 6,
        cache_entries=n * (d_k + d_v),
    )
