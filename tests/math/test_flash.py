"""FlashAttention's two loop orders: exact output, the per-row log-sum-exp, and the traffic."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.core import rules
from app.math import attention as att
from app.math import flash as fl
from app.math import kernel as kn
from tests.math.strategies import lab_states, random_qkv

EXACT = 1e-12


def dense_logsumexp(q: np.ndarray, k: np.ndarray, allowed: np.ndarray, scale: bool) -> np.ndarray:
    """log Σ_j exp(s_ij) over the visible keys, from the whole score matrix at once."""
    s = q @ k.T / (np.sqrt(q.shape[1]) if scale else 1.0)
    top = np.where(allowed, s, -np.inf).max(axis=1, initial=-np.inf)
    top = np.where(np.isfinite(top), top, 0.0)
    total = np.where(allowed, np.exp(s - top[:, None]), 0.0).sum(axis=1)
    with np.errstate(divide="ignore"):
        return top + np.log(total)  # log 0 = −∞ for a row that sees nothing


@settings(max_examples=150, deadline=None)
@given(lab_states(), st.sampled_from(fl.ORDERS))
def test_both_orders_equal_dense_attention_under_every_mask(state: dict, order: str) -> None:
    q, k, v, allowed, scale = (state[f] for f in ("q", "k", "v", "allowed", "scale"))
    dense = att.attend(q, k, v, allowed, scale)
    mask = kn.mask_from_matrix(allowed)
    run = fl.flash_attention(q, k, v, mask, state["block_q"], state["block_k"], order, scale)
    assert not np.isnan(run.output).any()
    np.testing.assert_allclose(run.output, dense.output, rtol=0, atol=EXACT)
    np.testing.assert_array_equal(run.output[dense.empty_rows], 0.0)
    np.testing.assert_allclose(run.logsumexp, dense_logsumexp(q, k, allowed, scale), atol=1e-9)


@pytest.mark.parametrize("mask", [{}, {"causal": True}, {"causal": True, "window": 2}])
def test_the_two_orders_give_the_same_numbers_in_a_different_order_of_steps(mask: dict) -> None:
    q, k, v = random_qkv(7, seed=3)
    tiles = kn.mask_from_matrix(att.build_mask(7, **mask))
    fa1 = fl.flash_attention(q, k, v, tiles, 3, 2, "fa1")
    fa2 = fl.flash_attention(q, k, v, tiles, 3, 2, "fa2")
    np.testing.assert_allclose(fa1.output, fa2.output, rtol=0, atol=EXACT)
    np.testing.assert_allclose(fa1.logsumexp, fa2.logsumexp, rtol=0, atol=EXACT)
    # fa1 walks key blocks outside, fa2 query blocks outside
    assert [s.key_block for s in fa1.steps[:3]] == [(0, 2)] * 3
    assert [s.query_block for s in fa2.steps[:4]] == [(0, 3)] * 4


def test_fa1_keeps_o_finished_after_every_step() -> None:
    """After key blocks [0, c1), fa1's O_i is softmax attention over exactly those keys."""
    q, k, v = random_qkv(6, seed=1)
    allowed = att.build_mask(6, causal=True)
    for step in fl.flash_steps(q, k, v, kn.mask_from_matrix(allowed), 2, 2, "fa1"):
        r0, r1 = step.query_block
        seen = allowed.copy()
        seen[:, step.key_block[1] :] = False
        partial = att.attend(q, k, v, seen).output[r0:r1]
        np.testing.assert_allclose(step.o, partial, rtol=0, atol=EXACT)
        if not step.skipped:
            assert [t.name for t in step.writes] == ["O", "l", "m"]


def test_fa2_writes_each_row_block_once_after_one_rescale() -> None:
    q, k, v = random_qkv(5, seed=2)
    steps = list(fl.flash_steps(q, k, v, kn.visible_everywhere, 2, 2, "fa2"))
    finals = [s for s in steps if s.final_rescale]
    assert [s.query_block for s in finals] == [(0, 2), (2, 4), (4, 5)]
    assert all(s.key_block == (4, 5) for s in finals)
    assert all(not s.writes for s in steps if not s.final_rescale)
    for s in finals:
        np.testing.assert_allclose(s.output_rows, s.o / s.l[:, None])
        np.testing.assert_allclose(s.logsumexp_rows, s.m + np.log(s.l))
        assert [t.name for t in s.writes] == ["O", "L"]


def test_worked_example_gives_cat_the_same_output_in_both_orders() -> None:
    x = rules.WORKED_X
    q, k, v = x @ rules.WORKED_W_Q, x @ rules.WORKED_W_K, x @ rules.WORKED_W_V
    # the tile (The, cat) × (sleeps) is hidden: second in fa2's order, third in fa1's
    expected = {"fa2": [False, True, False, False], "fa1": [False, False, True, False]}
    for order, skipped in expected.items():
        run = fl.flash_attention(q, k, v, kn.causal_tiles, 2, 2, order)
        assert run.output[1].round(2).tolist() == [0.83, -0.34]
        assert [s.skipped for s in run.steps] == skipped
        assert run.traffic.skipped_tiles == 1


@pytest.mark.parametrize(
    ("m", "d", "expected"), [(16, 2, (2, 2)), (100, 4, (4, 7)), (100_000, 64, (64, 391))]
)
def test_block_sizes_from_on_chip_memory(m: int, d: int, expected: tuple[int, int]) -> None:
    assert fl.sram_blocks(m, d) == expected  # B_r = min(⌈M/4d⌉, d), B_c = ⌈M/4d⌉


# ---------------------------------------------------------------- traffic


def block_sizes(n: int, b: int) -> np.ndarray:
    return np.diff(np.append(np.arange(0, n, b), n))


def independent_traffic(
    allowed: np.ndarray, b_r: int, b_c: int, d_k: int, d_v: int, order: str
) -> tuple[int, int, int]:
    """The counts of the module docstring, from a grid of visible tiles, with array algebra."""
    n = allowed.shape[0]
    rows, cols = block_sizes(n, b_r), block_sizes(n, b_c)
    r_starts, c_starts = np.arange(0, n, b_r), np.arange(0, n, b_c)
    per_row_block = np.add.reduceat(allowed.astype(int), r_starts, axis=0)
    visible = np.add.reduceat(per_row_block, c_starts, axis=1) > 0  # (T_r, T_c)
    tile_rows = visible * rows[:, None]  # rows of each visible tile
    if order == "fa2":
        reads = (visible.any(axis=1) * rows).sum() * d_k + (visible * cols).sum() * (d_k + d_v)
        writes = n * (d_v + 1)
    else:
        reads = (visible.any(axis=0) * cols).sum() * (d_k + d_v)
        reads += tile_rows.sum() * (d_k + d_v + 2)
        writes = n * (d_v + 2) + tile_rows.sum() * (d_v + 2)
    return int(reads), int(writes), int((~visible).sum())


@settings(max_examples=120, deadline=None)
@given(lab_states(), st.sampled_from(fl.ORDERS))
def test_step_traffic_matches_an_independent_count(state: dict, order: str) -> None:
    q, k, v, allowed = state["q"], state["k"], state["v"], state["allowed"]
    b_r, b_c = state["block_q"], state["block_k"]
    run = fl.flash_attention(q, k, v, kn.mask_from_matrix(allowed), b_r, b_c, order)
    reads, writes, skipped = independent_traffic(allowed, b_r, b_c, q.shape[1], v.shape[1], order)
    assert (run.traffic.reads, run.traffic.writes, run.traffic.skipped_tiles) == (
        reads,
        writes,
        skipped,
    )
    steps_only = fl.traffic_of(run.steps, order, q.shape[0], v.shape[1])
    assert steps_only == run.traffic


@pytest.mark.parametrize("order", fl.ORDERS)
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize(("n", "b_r", "b_c"), [(1, 1, 1), (9, 2, 3), (16, 4, 4), (13, 5, 2)])
def test_counted_traffic_without_running_equals_the_run(
    order: str, causal: bool, n: int, b_r: int, b_c: int
) -> None:
    q, k, v = random_qkv(n, d_k=4, d_v=3)
    tiles = kn.causal_tiles if causal else kn.visible_everywhere
    run = fl.flash_attention(q, k, v, tiles, b_r, b_c, order, keep_steps=False)
    assert fl.counted_traffic(n, b_r, b_c, 4, 3, order, causal) == run.traffic


@pytest.mark.parametrize(("n", "b_r", "b_c", "d"), [(9, 2, 3, 3), (4096, 64, 128, 64)])
def test_unmasked_traffic_follows_the_closed_forms(n: int, b_r: int, b_c: int, d: int) -> None:
    t_r, t_c = -(-n // b_r), -(-n // b_c)
    fa1 = fl.counted_traffic(n, b_r, b_c, d, d, "fa1")
    fa2 = fl.counted_traffic(n, b_r, b_c, d, d, "fa2")
    assert (fa1.reads, fa1.writes) == (2 * n * d + t_c * n * (2 * d + 2), (n + t_c * n) * (d + 2))
    assert (fa2.reads, fa2.writes) == (n * d + t_r * n * 2 * d, n * (d + 1))


def test_standard_attention_moves_s_and_p_through_slow_memory() -> None:
    std = fl.standard_traffic(4096, 64, 64)
    assert std.reads == 2 * 4096 * 64 + 4096 * 64 + 2 * 4096**2 == 34_340_864
    assert std.writes == 2 * 4096**2 + 4096 * 64 == 33_816_576
    b_r, b_c = fl.sram_blocks(100_000, 64)
    fa1 = fl.counted_traffic(4096, b_r, b_c, 64, 64, "fa1")
    assert fa1.total < std.total / 2  # Θ(n²d²/M) against Θ(nd + n²)
