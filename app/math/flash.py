"""FlashAttention's two loop orders, step by step, with the slow-memory traffic of every step.

Both orders cut Q into row blocks Q_i of B_r rows and K, V into column blocks K_j, V_j of B_c
rows, and never hold more than one B_r × B_c tile of scores. They differ in which loop is outside.

fa1 (Dao et al. 2022, Algorithm 1): key/value blocks outside. O, l and m live in slow memory,
set to 0, 0 and −∞ first; for each K_j, V_j the kernel visits every Q_i, reads Q_i, O_i, l_i and
m_i, and writes the updated O_i, l_i, m_i back:

    S  = Q_i·K_jᵀ / √d_k       m̃ = rowmax(S)       P̃ = exp(S − m̃)       l̃ = rowsum(P̃)
    m' = max(m_i, m̃)           l' = e^(m_i − m')·l_i + e^(m̃ − m')·l̃
    O_i ← diag(l')⁻¹ · (diag(l_i)·e^(m_i − m')·O_i + e^(m̃ − m')·P̃·V_j)

so O_i is a finished (normalised) average after every step.

fa2 (Dao 2023, Algorithm 1): query blocks outside. Q_i is read once; O, l and m stay on chip,
unnormalised, while every K_j, V_j streams past:

    m' = max(m, rowmax(S))      P = exp(S − m')
    l ← e^(m − m')·l + rowsum(P)      O ← e^(m − m')·O + P·V_j

and one rescale at the end writes O_i = diag(l)⁻¹·O and the log-sum-exp L_i = m + log l, which the
backward pass keeps instead of the n × n softmax.

Traffic counts elements moved between slow memory and the chip, as the loops move them. The mask
is computed on chip from positions and moves nothing; a tile whose pairs are all hidden is
skipped: nothing read, nothing computed, nothing written.

    fa1   setup: write O, l, m (n·d_v + 2n); per column block with a visible tile: read K_j, V_j;
          per visible tile: read Q_i, O_i, l_i, m_i, write O_i, l_i, m_i
    fa2   per row block with a visible tile: read Q_i; per visible tile: read K_j, V_j;
          per row block, at its end: write O_i and L_i
    standard (Algorithm 0): read Q, K, write S; read S, write P; read P and V, write O:
          reads 2n·d_k + n·d_v + 2n², writes 2n² + n·d_v, whatever the mask

Without a mask, with T_r = ⌈n/B_r⌉ row blocks and T_c = ⌈n/B_c⌉ column blocks:

    fa1   reads n(d_k + d_v) + T_c·n(d_k + d_v + 2)     writes n(d_v + 2) + T_c·n(d_v + 2)
    fa2   reads n·d_k + T_r·n(d_k + d_v)                writes n(d_v + 1)

The paper's block sizes for on-chip memory of M elements are B_c = ⌈M / 4d⌉, B_r = min(B_c, d):
then T_c ≈ 4nd / M and fa1 moves Θ(n²d² / M) elements where standard attention moves Θ(nd + n²).
"""

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from math import ceil
from typing import Literal

import numpy as np

from app.math.kernel import TileMask, blocks

LoopOrder = Literal["fa1", "fa2"]
ORDERS: tuple[LoopOrder, ...] = ("fa1", "fa2")


def sram_blocks(sram_elements: int, d: int) -> tuple[int, int]:
    """(B_r, B_c) for on-chip memory of M elements: B_c = ⌈M / 4d⌉, B_r = min(B_c, d)."""
    block_k = ceil(sram_elements / (4 * d))
    return min(block_k, d), block_k


@dataclass(frozen=True)
class Transfer:
    """Rows [start, stop) of one matrix moved between slow memory and the chip."""

    name: str  # Q, K, V, O, l, m (fa1's running state) or L (fa2's log-sum-exp)
    rows: tuple[int, int]
    elements: int


def _transfer(name: str, r0: int, r1: int, width: int) -> Transfer:
    return Transfer(name, (r0, r1), (r1 - r0) * width)


@dataclass(frozen=True)
class TileComputation:
    """The arithmetic of one (query block, key block) step: what the kernel holds, how its
    state moves, and what it read from and wrote to slow memory (the API's answer for a step
    is app/features/kernel/results.TileStep, built from this)."""

    order: LoopOrder
    index: int
    query_block: tuple[int, int]  # rows [start, stop)
    key_block: tuple[int, int]  # columns [start, stop)
    allowed: np.ndarray  # (b_q, b_k) bool
    skipped: bool  # every pair hidden: nothing loaded, nothing computed
    scores: np.ndarray  # (b_q, b_k) S = Q_i·K_jᵀ / √d_k, −∞ where hidden
    m_tile: np.ndarray  # (b_q,) rowmax(S): −∞ for a row that sees nothing in this tile
    m_before: np.ndarray  # (b_q,) running maximum before this tile (−∞ at first)
    m: np.ndarray  # (b_q,) after
    rescale: np.ndarray  # (b_q,) e^(m_before − m) on what was kept; 1 while m is −∞
    p: np.ndarray  # (b_q, b_k) fa2: exp(S − m); fa1: P̃ = exp(S − m̃); 0 where hidden
    p_scale: np.ndarray  # (b_q,) fa1: e^(m̃ − m) on the new tile; fa2: 1
    l_before: np.ndarray  # (b_q,)
    l: np.ndarray  # (b_q,)
    o_before: np.ndarray  # (b_q, d_v) fa1: normalised; fa2: unnormalised
    o: np.ndarray  # (b_q, d_v)
    output_rows: np.ndarray | None  # (b_q, d_v) O_i as written to slow memory by this step
    logsumexp_rows: np.ndarray | None  # (b_q,) fa2's L_i = m + log l, written at a row's end
    reads: tuple[Transfer, ...] = field(default=())
    writes: tuple[Transfer, ...] = field(default=())

    @property
    def score_entries(self) -> int:
        """Score entries alive during this step: one tile, or none when skipped."""
        return 0 if self.skipped else self.scores.size

    @property
    def grew(self) -> np.ndarray:
        """Rows whose running maximum rose in this step, so what they kept shrank."""
        return np.isfinite(self.m_before) & (self.m > self.m_before)  # (b_q,)

    @property
    def elements_read(self) -> int:
        return sum(t.elements for t in self.reads)

    @property
    def elements_written(self) -> int:
        return sum(t.elements for t in self.writes)

    @property
    def final_rescale(self) -> bool:
        """fa2's last step of a row block: O is divided by l once and written with L."""
        return self.logsumexp_rows is not None


def _scores(q_i: np.ndarray, k_j: np.ndarray, allowed: np.ndarray, sf: float) -> np.ndarray:
    return np.where(allowed, q_i @ k_j.T / sf, -np.inf)  # (b_q, b_k)


def _finite_or_zero(m: np.ndarray) -> np.ndarray:
    """A row that has seen no visible key keeps m = −∞; measure it from 0 instead, so that
    exp(−∞ − (−∞)) never turns into NaN. Its p, l and O stay 0."""
    return np.where(np.isfinite(m), m, 0.0)


def _rescale(m_old: np.ndarray, shift: np.ndarray) -> np.ndarray:
    return np.where(np.isfinite(m_old), np.exp(m_old - shift), 1.0)


def normalise(o: np.ndarray, l: np.ndarray) -> np.ndarray:
    """diag(l)⁻¹ · O; a row that saw no key (l = 0) is 0, never 0/0."""
    return np.divide(o, l[:, None], out=np.zeros_like(o), where=l[:, None] > 0)


def logsumexp_of(m: np.ndarray, l: np.ndarray) -> np.ndarray:
    """L = m + log l per row; −∞ for a row that saw no key (l = 0)."""
    safe = np.where(l > 0, l, 1.0)
    return np.where(l > 0, m + np.log(safe), -np.inf)


def flash_steps(
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    mask: TileMask,
    block_q: int,
    block_k: int,
    order: LoopOrder = "fa2",
    scale: bool = True,
) -> Iterator[TileComputation]:
    """Every step of tiled exact attention, in the loop order asked for."""
    sf = float(np.sqrt(q.shape[-1])) if scale else 1.0
    run = _fa1_steps if order == "fa1" else _fa2_steps
    return run(q, k, v, mask, block_q, block_k, sf)


def _fa2_steps(
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    mask: TileMask,
    block_q: int,
    block_k: int,
    sf: float,
) -> Iterator[TileComputation]:
    n, d_k, d_v = q.shape[0], q.shape[1], v.shape[1]
    key_blocks = blocks(n, block_k)
    index = 0
    for r0, r1 in blocks(n, block_q):
        rows = np.arange(r0, r1)
        m = np.full(r1 - r0, -np.inf)  # (b_q,) on chip
        l = np.zeros(r1 - r0)
        o = np.zeros((r1 - r0, d_v))
        q_loaded = False
        for c0, c1 in key_blocks:
            allowed = mask(rows, np.arange(c0, c1))  # (b_q, b_k)
            skipped = not allowed.any()
            reads: list[Transfer] = []
            if skipped:
                s, p = np.full(allowed.shape, -np.inf), np.zeros(allowed.shape)
                m_tile, m_new, l_new, o_new, rescale = np.full_like(m, -np.inf), m, l, o, None
            else:
                if not q_loaded:
                    reads.append(_transfer("Q", r0, r1, d_k))
                    q_loaded = True
                reads += [_transfer("K", c0, c1, d_k), _transfer("V", c0, c1, d_v)]
                s = _scores(q[r0:r1], k[c0:c1], allowed, sf)
                m_tile = s.max(axis=1)
                m_new = np.maximum(m, m_tile)  # (b_q,)
                shift = _finite_or_zero(m_new)
                p = np.exp(s - shift[:, None])  # (b_q, b_k), 0 where hidden
                rescale = _rescale(m, shift)
                l_new = rescale * l + p.sum(axis=1)
                o_new = rescale[:, None] * o + p @ v[c0:c1]  # (b_q, d_v)
            last = c1 == n
            out = normalise(o_new, l_new) if last else None  # the one rescale, at the end
            lse = logsumexp_of(m_new, l_new) if last else None
            writes = (_transfer("O", r0, r1, d_v), _transfer("L", r0, r1, 1)) if last else ()
            yield TileComputation(
                order="fa2",
                index=index,
                query_block=(r0, r1),
                key_block=(c0, c1),
                allowed=allowed,
                skipped=skipped,
                scores=s,
                m_tile=m_tile,
                m_before=m,
                m=m_new,
                rescale=np.ones_like(m) if rescale is None else rescale,
                p=p,
                p_scale=np.ones_like(m),
                l_before=l,
                l=l_new,
                o_before=o,
                o=o_new,
                output_rows=out,
                logsumexp_rows=lse,
                reads=tuple(reads),
                writes=writes,
            )
            index += 1
            m, l, o = m_new, l_new, o_new


def _fa1_steps(
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    mask: TileMask,
    block_q: int,
    block_k: int,
    sf: float,
) -> Iterator[TileComputation]:
    n, d_k, d_v = q.shape[0], q.shape[1], v.shape[1]
    # slow memory: O, l, m of every row, as Algorithm 1 initialises them
    o_hbm, l_hbm, m_hbm = np.zeros((n, d_v)), np.zeros(n), np.full(n, -np.inf)
    row_blocks = blocks(n, block_q)
    index = 0
    for c0, c1 in blocks(n, block_k):
        cols = np.arange(c0, c1)
        kv_loaded = False
        for r0, r1 in row_blocks:
            allowed = mask(np.arange(r0, r1), cols)  # (b_q, b_k)
            skipped = not allowed.any()
            m, l, o = m_hbm[r0:r1].copy(), l_hbm[r0:r1].copy(), o_hbm[r0:r1].copy()
            ones = np.ones_like(m)
            if skipped:
                s, p = np.full(allowed.shape, -np.inf), np.zeros(allowed.shape)
                yield TileComputation(
                    order="fa1",
                    index=index,
                    query_block=(r0, r1),
                    key_block=(c0, c1),
                    allowed=allowed,
                    skipped=True,
                    scores=s,
                    m_tile=np.full_like(m, -np.inf),
                    m_before=m,
                    m=m,
                    rescale=ones,
                    p=p,
                    p_scale=ones,
                    l_before=l,
                    l=l,
                    o_before=o,
                    o=o,
                    output_rows=None,
                    logsumexp_rows=None,
                )
                index += 1
                continue
            reads = [] if kv_loaded else [_transfer("K", c0, c1, d_k), _transfer("V", c0, c1, d_v)]
            kv_loaded = True
            reads += [_transfer(name, r0, r1, w) for name, w in (("Q", d_k), ("O", d_v))]
            reads += [_transfer("l", r0, r1, 1), _transfer("m", r0, r1, 1)]
            s = _scores(q[r0:r1], k[c0:c1], allowed, sf)
            m_tile = s.max(axis=1)  # m̃, (b_q,)
            p = np.exp(s - _finite_or_zero(m_tile)[:, None])  # P̃, 0 where hidden
            m_new = np.maximum(m, m_tile)
            shift = _finite_or_zero(m_new)
            rescale = _rescale(m, shift)
            p_scale = np.where(np.isfinite(m_tile), np.exp(m_tile - shift), 0.0)
            l_new = rescale * l + p_scale * p.sum(axis=1)
            kept = (l * rescale)[:, None] * o + p_scale[:, None] * (p @ v[c0:c1])  # (b_q, d_v)
            o_new = normalise(kept, l_new)
            o_hbm[r0:r1], l_hbm[r0:r1], m_hbm[r0:r1] = o_new, l_new, m_new
            writes = tuple(_transfer(nm, r0, r1, w) for nm, w in (("O", d_v), ("l", 1), ("m", 1)))
            yield TileComputation(
                order="fa1",
                index=index,
                query_block=(r0, r1),
                key_block=(c0, c1),
                allowed=allowed,
                skipped=False,
                scores=s,
                m_tile=m_tile,
                m_before=m,
                m=m_new,
                rescale=rescale,
                p=p,
                p_scale=p_scale,
                l_before=l,
                l=l_new,
                o_before=o,
                o=o_new,
                output_rows=o_new,
                logsumexp_rows=None,
                reads=tuple(reads),
                writes=writes,
            )
            index += 1


def setup_writes(order: LoopOrder, n: int, d_v: int) -> tuple[Transfer, ...]:
    """fa1 starts by writing O = 0, l = 0 and m = −∞ to slow memory; fa2 starts on chip."""
    if order == "fa2":
        return ()
    return (_transfer("O", 0, n, d_v), _transfer("l", 0, n, 1), _transfer("m", 0, n, 1))


# ---------------------------------------------------------------- results of a whole run


@dataclass(frozen=True)
class Traffic:
    """Elements read from and written to slow memory by a whole run."""

    reads: int
    writes: int
    tiles: int = 0
    skipped_tiles: int = 0

    @property
    def total(self) -> int:
        return self.reads + self.writes


def standard_traffic(n: int, d_k: int, d_v: int) -> Traffic:
    """Standard attention (Dao et al. 2022, Algorithm 0) writes S and P out and reads them
    back: reads Q, K (2n·d_k), S, P (2n²) and V (n·d_v); writes S, P (2n²) and O (n·d_v)."""
    return Traffic(reads=2 * n * d_k + n * d_v + 2 * n * n, writes=2 * n * n + n * d_v)


def traffic_of(steps: Iterable[TileComputation], order: LoopOrder, n: int, d_v: int) -> Traffic:
    """What these steps read and wrote, with the setup of their order."""
    reads = tiles = skipped = 0
    writes = sum(t.elements for t in setup_writes(order, n, d_v))
    for step in steps:
        reads += step.elements_read
        writes += step.elements_written
        tiles += 1
        skipped += step.skipped
    return Traffic(reads, writes, tiles, skipped)


@dataclass(frozen=True)
class FlashRun:
    """A whole run of one order: every step, the output, the row statistics and the traffic."""

    order: LoopOrder
    block_q: int
    block_k: int
    steps: list[TileComputation]
    output: np.ndarray  # (n, d_v)
    m: np.ndarray  # (n,) final running maximum
    l: np.ndarray  # (n,) final running sum
    logsumexp: np.ndarray  # (n,) L = m + log l, −∞ for a row that sees no key
    traffic: Traffic
    setup: tuple[Transfer, ...]


def flash_attention(
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    mask: TileMask,
    block_q: int,
    block_k: int,
    order: LoopOrder = "fa2",
    scale: bool = True,
    keep_steps: bool = True,
) -> FlashRun:
    """Run one order to the end. keep_steps=False keeps only the output and the counts (for
    long sequences: one tile alive at a time)."""
    n, d_v = q.shape[0], v.shape[1]
    out, m, l = np.zeros((n, d_v)), np.full(n, -np.inf), np.zeros(n)
    kept: list[TileComputation] = []
    reads = tiles = skipped = 0
    setup = setup_writes(order, n, d_v)
    writes = sum(t.elements for t in setup)
    for step in flash_steps(q, k, v, mask, block_q, block_k, order, scale):
        rows = slice(*step.query_block)
        if step.output_rows is not None:
            out[rows] = step.output_rows
        m[rows], l[rows] = step.m, step.l
        reads, writes = reads + step.elements_read, writes + step.elements_written
        tiles, skipped = tiles + 1, skipped + step.skipped
        if keep_steps:
            kept.append(step)
    traffic = Traffic(reads, writes, tiles, skipped)
    return FlashRun(order, block_q, block_k, kept, out, m, l, logsumexp_of(m, l), traffic, setup)


# ---------------------------------------------------------------- counts for any n, no arrays


def counted_traffic(
    n: int, block_q: int, block_k: int, d_k: int, d_v: int, order: LoopOrder, causal: bool = False
) -> Traffic:
    """The traffic of a run without running it, full or causal, block by block in numpy (fast
    enough for a chart over n). Causal: tile [r0, r1) × [c0, c1) is visible when its last query
    r1 − 1 reaches its first key c0, so row block i reads the key rows [0, ⌈r1 / B_c⌉·B_c) and
    column block j meets the query rows from ⌊c0 / B_r⌋·B_r on."""
    t_r, t_c = ceil(n / block_q), ceil(n / block_k)
    r1 = np.minimum(np.arange(1, t_r + 1) * block_q, n)  # (T_r,) end of each row block
    c0 = np.arange(t_c) * block_k  # (T_c,) start of each column block
    if order == "fa2":
        if causal:
            visible_cols = (r1 - 1) // block_k + 1  # (T_r,)
            key_rows = int(np.minimum(visible_cols * block_k, n).sum())
            skipped = int(t_r * t_c - visible_cols.sum())
        else:
            key_rows, skipped = t_r * n, 0
        return Traffic(n * d_k + key_rows * (d_k + d_v), n * (d_v + 1), t_r * t_c, skipped)
    if causal:
        first_row_block = c0 // block_q  # (T_c,)
        covered = int((n - first_row_block * block_q).sum())  # query rows met, all columns
        skipped = int(first_row_block.sum())
    else:
        covered, skipped = t_c * n, 0
    reads = n * (d_k + d_v) + covered * (d_k + d_v + 2)
    writes = n * (d_v + 2) + covered * (d_v + 2)
    return Traffic(reads, writes, t_r * t_c, skipped)
