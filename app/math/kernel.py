"""Memory-efficient exact attention, and decoding with a key/value cache, in pure numpy.

Tiled attention with an online softmax (FlashAttention; loop order of FlashAttention-2,
Dao 2023, Algorithm 1). Q is cut into blocks Q_i of b_q rows, K and V into blocks K_j, V_j
of b_k rows. For each query block the kernel keeps, per row, a running maximum m, a running
sum l and an unnormalised output O, and visits the key blocks one by one:

    S_ij  = Q_i · K_jᵀ / √d_k            (b_q, b_k), −∞ where the mask hides a pair
    m_new = max(m, rowmax(S_ij))
    P_ij  = exp(S_ij − m_new)
    l     = exp(m − m_new) · l + rowsum(P_ij)
    O     = exp(m − m_new) · O + P_ij · V_j
    m     = m_new

and after the last key block writes the rows O / l. The result equals
softmax(Q·Kᵀ / √d_k + M) · V exactly (up to rounding), yet no more than one b_q × b_k tile
of scores exists at any moment. The arithmetic stays n² dot products.

Cached decoding: after a prefill of the first p tokens, each new token t projects only its
own row, appends k_t and v_t to the caches, and scores its single query against every cached
key: t + 1 dot products instead of recomputing the (t + 1) × (t + 1) matrix. The causal mask
is what makes this valid: no earlier row ever depends on a later token.

Nothing here knows about the web.
"""

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from math import ceil

import numpy as np

from app.math import attention as att
from app.math import positional as pos
from app.math.cost import score_entries

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


# ---------------------------------------------------------------- tiled attention


@dataclass(frozen=True)
class TileStep:
    """One (query block, key block) step: what the kernel holds and how its state moves."""

    index: int
    query_block: tuple[int, int]  # rows [start, stop)
    key_block: tuple[int, int]  # columns [start, stop)
    allowed: np.ndarray  # (b_q, b_k) bool
    skipped: bool  # every pair hidden: the kernel loads nothing and computes nothing
    scores: np.ndarray  # (b_q, b_k) S_ij = Q_i·K_jᵀ / √d_k, −∞ where hidden
    m_before: np.ndarray  # (b_q,) running row maximum before this tile (−∞ at first)
    m: np.ndarray  # (b_q,)  after
    rescale: np.ndarray  # (b_q,) exp(m_before − m): < 1 where m grew; 1 while m is −∞
    p: np.ndarray  # (b_q, b_k) exp(S_ij − m), 0 where hidden
    l_before: np.ndarray  # (b_q,) running sum of exp before
    l: np.ndarray  # (b_q,)  after
    o_before: np.ndarray  # (b_q, d_v) unnormalised output before
    o: np.ndarray  # (b_q, d_v) after: rescale · o_before + P · V_j
    output_rows: np.ndarray | None  # (b_q, d_v) O / l, on the last key block of the row block

    @property
    def score_entries(self) -> int:
        """Score entries alive during this step: one tile (P overwrites S in place)."""
        return 0 if self.skipped else self.scores.size

    @property
    def grew(self) -> np.ndarray:
        """Rows whose running maximum rose in this step, so their partial sums shrank."""
        return np.isfinite(self.m_before) & (self.m > self.m_before)  # (b_q,)


def tiled_steps(
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    mask: TileMask,
    block_q: int,
    block_k: int,
    scale: bool = True,
) -> Iterator[TileStep]:
    """Every step of tiled attention in order: query blocks outside, key blocks inside."""
    n, d_v = q.shape[0], v.shape[1]
    scale_factor = float(np.sqrt(q.shape[-1])) if scale else 1.0
    key_blocks = blocks(n, block_k)
    index = 0
    for r0, r1 in blocks(n, block_q):
        rows = np.arange(r0, r1)
        m = np.full(r1 - r0, -np.inf)  # (b_q,)
        l = np.zeros(r1 - r0)  # (b_q,)
        o = np.zeros((r1 - r0, d_v))  # (b_q, d_v)
        for c0, c1 in key_blocks:
            allowed = mask(rows, np.arange(c0, c1))  # (b_q, b_k)
            skipped = not allowed.any()
            if skipped:  # every pair hidden: nothing is loaded, the state stays as it was
                s = np.full(allowed.shape, -np.inf)
                m_new, l_new, o_new = m, l, o
                p, rescale = np.zeros(allowed.shape), np.ones_like(m)
            else:
                s = np.where(allowed, q[r0:r1] @ k[c0:c1].T / scale_factor, -np.inf)  # (b_q, b_k)
                m_new = np.maximum(m, s.max(axis=1))  # (b_q,)
                # A row that has seen no visible key keeps m = −∞; measure it from 0 instead,
                # so that exp(−∞ − (−∞)) never turns into NaN. Its p, l and o all stay 0.
                shift = np.where(np.isfinite(m_new), m_new, 0.0)
                p = np.exp(s - shift[:, None])  # (b_q, b_k), exp(−∞) = 0 where hidden
                rescale = np.where(np.isfinite(m), np.exp(m - shift), 1.0)  # (b_q,)
                l_new = rescale * l + p.sum(axis=1)
                o_new = rescale[:, None] * o + p @ v[c0:c1]  # (b_q, d_v)
            yield TileStep(
                index=index,
                query_block=(r0, r1),
                key_block=(c0, c1),
                allowed=allowed,
                skipped=skipped,
                scores=s,
                m_before=m,
                m=m_new,
                rescale=rescale,
                p=p,
                l_before=l,
                l=l_new,
                o_before=o,
                o=o_new,
                output_rows=_normalise(o_new, l_new) if c1 == n else None,
            )
            index += 1
            m, l, o = m_new, l_new, o_new


def _normalise(o: np.ndarray, l: np.ndarray) -> np.ndarray:
    """O / l per row; a row that saw no key (l = 0) is 0, never 0/0."""
    return np.divide(o, l[:, None], out=np.zeros_like(o), where=l[:, None] > 0)


def tiled_attention(
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    mask: TileMask,
    block_q: int,
    block_k: int,
    scale: bool = True,
) -> np.ndarray:
    """softmax(Q·Kᵀ / √d_k + M) · V computed tile by tile: the (n, d_v) output only."""
    return assemble(tiled_steps(q, k, v, mask, block_q, block_k, scale), q.shape[0], v.shape[1])


def assemble(steps: Iterable[TileStep], n: int, d_v: int) -> np.ndarray:
    """The output rows written by these steps; rows not written yet stay 0."""
    out = np.zeros((n, d_v))  # (n, d_v)
    for step in steps:
        if step.output_rows is not None:
            out[slice(*step.query_block)] = step.output_rows
    return out


def touched_maps(steps: Iterable[TileStep], n: int) -> list[np.ndarray]:
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


# ---------------------------------------------------------------- cached decoding


class KVCache:
    """Keys and values of the tokens seen so far, one row per token, grown by append."""

    def __init__(self, capacity: int, d_k: int, d_v: int) -> None:
        self._k = np.zeros((capacity, d_k))
        self._v = np.zeros((capacity, d_v))
        self.length = 0

    def append(self, k: np.ndarray, v: np.ndarray) -> None:
        """Add rows (t, d_k) and (t, d_v); rows already cached never change."""
        stop = self.length + k.shape[0]
        self._k[self.length : stop], self._v[self.length : stop] = k, v
        self.length = stop

    @property
    def k(self) -> np.ndarray:
        return self._k[: self.length]  # (length, d_k)

    @property
    def v(self) -> np.ndarray:
        return self._v[: self.length]  # (length, d_v)


@dataclass(frozen=True)
class DecodeStep:
    """One generated token t: its single query row against the t + 1 cached keys."""

    position: int  # t
    q: np.ndarray  # (d_k,) x_t · W_Q
    k: np.ndarray  # (d_k,) x_t · W_K, the row appended to the K cache
    v: np.ndarray  # (d_v,) x_t · W_V, the row appended to the V cache
    stages: att.HeadStages  # one query row against the cache: scores (1, t + 1) ...

    @property
    def cache_length(self) -> int:
        return self.position + 1

    @property
    def dots_cached(self) -> int:
        """Dot products this step: the new query with every cached key."""
        return self.cache_length

    @property
    def dots_uncached(self) -> int:
        """Dot products to recompute the whole (t + 1) × (t + 1) matrix without a cache."""
        return self.cache_length**2


@dataclass(frozen=True)
class Decoding:
    prefill: att.HeadStages  # the first p tokens at once: (p, p) scores, (p, d_v) output
    steps: list[DecodeStep]

    @property
    def output(self) -> np.ndarray:
        """Prefill rows, then one row per generated token: (n, d_v)."""
        rows = [s.stages.output for s in self.steps]
        return np.vstack([self.prefill.output, *rows])


def decode(
    x: np.ndarray,
    w_q: np.ndarray,
    w_k: np.ndarray,
    w_v: np.ndarray,
    allowed: np.ndarray,
    prompt: int,
    scale: bool = True,
    positional: pos.Positional = "none",
) -> Decoding:
    """Prefill x[:prompt] as one block, then decode x[prompt:] one token at a time.

    `allowed` must be causal (no key after its query): only then are the cached rows of K
    and V, and the outputs already produced, unaffected by tokens that arrive later.
    Position enters row by row (x_t + PE(t), or q_t and k_t rotated by RoPE at t), so a
    cached row never needs to change either.
    """
    if np.triu(allowed, k=1).any():
        raise ValueError("cached decoding needs a causal mask: no query may see a later key")
    n = x.shape[0]
    x_in = pos.add_position(x, positional)  # (n, d_model): each row has its own position
    cache = KVCache(n, w_k.shape[1], w_v.shape[1])
    cache.append(pos.rotate(x_in[:prompt] @ w_k, positional), x_in[:prompt] @ w_v)
    q = pos.rotate(x_in[:prompt] @ w_q, positional)  # (p, d_k)
    prefill = att.attend(q, cache.k, cache.v, allowed[:prompt, :prompt], scale)  # (p, p) scores
    steps = []
    for t in range(prompt, n):
        row = x_in[t : t + 1]  # (1, d_model): only the new token is projected
        q_t = pos.rotate(row @ w_q, positional, start=t)  # (1, d_k)
        k_t = pos.rotate(row @ w_k, positional, start=t)
        v_t = row @ w_v  # (1, d_v)
        cache.append(k_t, v_t)
        stages = att.attend(q_t, cache.k, cache.v, allowed[t : t + 1, : t + 1], scale)
        steps.append(DecodeStep(t, q_t[0], k_t[0], v_t[0], stages))  # scores: (1, t + 1)
    return Decoding(prefill, steps)
