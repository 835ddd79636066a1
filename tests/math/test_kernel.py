"""Tiled attention and cached decoding, without the web stack: equal to the dense head."""

import numpy as np
import pytest
from hypothesis import given, settings

from app.core import rules
from app.math import attention as att
from app.math import flash as fl
from app.math import kernel as kn
from tests.math.strategies import lab_states, random_qkv

EXACT = 1e-12


def tiled_steps(q, k, v, mask, block_q: int, block_k: int) -> list[fl.TileComputation]:
    """The query-blocks-outside order (FlashAttention-2), as the lab walks it."""
    return list(fl.flash_steps(q, k, v, mask, block_q, block_k, "fa2"))


def tiled_attention(q, k, v, mask, block_q: int, block_k: int, scale: bool = True) -> np.ndarray:
    return fl.flash_attention(q, k, v, mask, block_q, block_k, "fa2", scale).output


def assemble(steps: list[fl.TileComputation], n: int, d_v: int) -> np.ndarray:
    """The output rows these steps wrote; rows not written yet stay 0."""
    out = np.zeros((n, d_v))
    for step in steps:
        if step.output_rows is not None:
            out[slice(*step.query_block)] = step.output_rows
    return out


def worked_qkv() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    x = rules.WORKED_X
    return x @ rules.WORKED_W_Q, x @ rules.WORKED_W_K, x @ rules.WORKED_W_V


@settings(max_examples=150, deadline=None)
@given(lab_states())
def test_tiled_output_equals_dense_attention(state: dict) -> None:
    q, k, v, allowed, scale = (state[f] for f in ("q", "k", "v", "allowed", "scale"))
    dense = att.attend(q, k, v, allowed, scale)
    mask = kn.mask_from_matrix(allowed)
    tiled = tiled_attention(q, k, v, mask, state["block_q"], state["block_k"], scale)
    assert not np.isnan(tiled).any()
    np.testing.assert_allclose(tiled, dense.output, rtol=0, atol=EXACT)
    np.testing.assert_array_equal(tiled[dense.empty_rows], 0.0)


MASKS = {
    "bidirectional": {},
    "causal": {"causal": True},
    "padding": {"padding": [False, True, False, False, True, False, False]},
    "window": {"window": 2},
    "causal window": {"causal": True, "window": 3},
    "custom": {"allowed": np.random.default_rng(5).random((7, 7)) < 0.4},
    "causal padding custom": {
        "causal": True,
        "padding": [True, False, False, False, False, False, True],
        "allowed": ~np.eye(7, dtype=bool),
    },
}


@pytest.mark.parametrize("mask_kind", MASKS)
@pytest.mark.parametrize(("block_q", "block_k"), [(1, 1), (1, 7), (3, 2), (7, 7), (10, 4)])
def test_every_mask_and_block_size_matches_dense(
    mask_kind: str, block_q: int, block_k: int
) -> None:
    q, k, v = random_qkv(7, seed=len(mask_kind))
    allowed = att.build_mask(7, **MASKS[mask_kind])
    dense = att.attend(q, k, v, allowed)
    tiled = tiled_attention(q, k, v, kn.mask_from_matrix(allowed), block_q, block_k)
    np.testing.assert_allclose(tiled, dense.output, rtol=0, atol=EXACT)


def test_tile_masks_match_the_matrix_masks() -> None:
    i, j = np.arange(2, 6), np.arange(0, 7)
    np.testing.assert_array_equal(kn.causal_tiles(i, j), att.causal_mask(7)[2:6])
    assert kn.visible_everywhere(i, j).all()


def test_rows_with_no_visible_key_end_as_zero_with_m_still_minus_infinity() -> None:
    q, k, v = random_qkv(4)
    allowed = att.build_mask(4, padding=[False, False, False, False])
    allowed[1] = False  # query 1 sees nothing
    allowed[:, 3] = False  # key 3 is hidden from everyone
    steps = list(tiled_steps(q, k, v, kn.mask_from_matrix(allowed), 2, 2))
    row_1 = [s for s in steps if s.query_block == (0, 2)]
    for step in row_1:
        assert step.m[1] == -np.inf
        assert step.l[1] == 0.0
        assert not np.isnan(step.rescale).any()
        assert not np.isnan(step.p).any()
    output = assemble(steps, 4, 2)
    assert output[1].tolist() == [0.0, 0.0]
    np.testing.assert_allclose(output, att.attend(q, k, v, allowed).output, rtol=0, atol=EXACT)


def test_every_key_hidden_gives_a_zero_output_and_skips_every_tile() -> None:
    q, k, v = random_qkv(5)
    allowed = np.zeros((5, 5), dtype=bool)
    steps = list(tiled_steps(q, k, v, kn.mask_from_matrix(allowed), 2, 3))
    assert all(s.skipped for s in steps)
    assert assemble(steps, 5, 2).tolist() == [[0.0, 0.0]] * 5


def test_worked_example_rescales_sleeps_when_its_maximum_grows() -> None:
    """Query "sleeps" meets score 1.414 (The) first, then 2.121 (itself): the sum shrinks."""
    q, k, v = worked_qkv()
    steps = list(tiled_steps(q, k, v, kn.causal_tiles, 2, 2))
    assert [(s.query_block, s.key_block, s.skipped) for s in steps] == [
        ((0, 2), (0, 2), False),
        ((0, 2), (2, 3), True),  # The and cat cannot see sleeps: nothing computed
        ((2, 3), (0, 2), False),
        ((2, 3), (2, 3), False),
    ]
    last = steps[3]
    assert last.m_before.round(3).tolist() == [1.414]
    assert last.m.round(3).tolist() == [2.121]
    assert last.grew.tolist() == [True]
    assert last.rescale.round(3).tolist() == [round(float(np.exp(np.sqrt(2) - 3 / np.sqrt(2))), 3)]
    np.testing.assert_allclose(last.o, last.rescale[:, None] * last.o_before + last.p @ v[2:3])
    np.testing.assert_allclose(last.l, last.rescale * last.l_before + last.p.sum(axis=1))
    assert steps[0].grew.tolist() == [False, False]  # from −∞ is a start, not a rescale
    assert steps[0].output_rows is None  # rows are written after their last key block
    np.testing.assert_allclose(steps[1].output_rows.round(2), [[1.0, -1.0], [0.83, -0.34]])


def test_touched_map_grows_tile_by_tile_and_skipped_tiles_stay_untouched() -> None:
    q, k, v = worked_qkv()
    steps = list(tiled_steps(q, k, v, kn.causal_tiles, 2, 2))
    maps = kn.touched_maps(steps, 3)
    assert maps[0].sum() == maps[1].sum() == 4
    assert maps[2].sum() == 6
    # a tile is computed whole: the hidden (0, 1) inside the first tile counts as touched
    assert maps[3].tolist() == [[True, True, False], [True, True, False], [True, True, True]]
    assert not np.any(maps[0] & ~maps[3])


@pytest.mark.parametrize(
    ("n", "block_q", "block_k", "peak", "steps"),
    [(3, 2, 2, 4, 4), (7, 1, 1, 1, 49), (7, 3, 2, 6, 12), (7, 7, 7, 49, 1), (7, 10, 4, 28, 2)],
)
def test_scores_alive_are_one_tile_and_counts_agree_with_the_closed_form(
    n: int, block_q: int, block_k: int, peak: int, steps: int
) -> None:
    q, k, v = random_qkv(n)
    walk = list(tiled_steps(q, k, v, kn.visible_everywhere, block_q, block_k))
    counts = kn.tiled_counts(n, block_q, block_k, d_k=3, d_v=2)
    assert max(s.score_entries for s in walk) == counts.tiled_score_entries == peak
    assert len(walk) == counts.steps == steps
    assert sum(s.score_entries for s in walk) == counts.dot_products == n * n
    assert counts.dense_score_entries == n * n


def test_long_sequence_counts_without_building_anything() -> None:
    counts = kn.tiled_counts(131_072, 128, 128, 128, 128)
    assert counts.dense_score_entries == 17_179_869_184
    assert counts.tiled_score_entries == 16_384
    assert counts.steps == 1024 * 1024
    assert counts.dot_products == counts.dense_score_entries  # the arithmetic is still n²
    assert counts.tiled_traffic < counts.dense_traffic
    seed_table = kn.tiled_counts(4096, 128, 128, 128, 128).dense_score_entries
    assert seed_table == 16_777_216  # seed 000: 4,096 tokens, 16,777,216 scores per head


def test_decode_counts() -> None:
    c = kn.decode_counts(4, d_k=3, d_v=2)
    assert (c.last_step_cached, c.last_step_uncached) == (4, 16)
    assert (c.total_cached, c.total_uncached) == (1 + 2 + 3 + 4, 1 + 4 + 9 + 16)
    assert c.cache_entries == 4 * 5
