"""Sinusoidal and rotary position, and the symmetry they break, without the web stack."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.math import positional as pos
from app.math.attention import build_mask
from app.math.heads import multi_head_attention


@pytest.mark.parametrize(
    ("p", "column", "expected"),
    [
        (0, 0, 0.0),  # sin 0
        (0, 1, 1.0),  # cos 0
        (1, 0, math.sin(1.0)),  # 0.8415
        (1, 1, math.cos(1.0)),  # 0.5403
        (1, 2, math.sin(1 / 100)),  # 10000^(2/4) = 100
        (1, 3, math.cos(1 / 100)),
        (5, 0, math.sin(5.0)),  # −0.9589
        (5, 2, math.sin(5 / 100)),
    ],
)
def test_sinusoidal_values_at_known_positions(p: int, column: int, expected: float) -> None:
    assert pos.sinusoidal(6, 4)[p, column] == pytest.approx(expected, abs=1e-15)


def test_sinusoidal_table_rounds_to_the_textbook_numbers() -> None:
    table = np.round(pos.sinusoidal(3, 4), 4).tolist()
    assert table == [
        [0.0, 1.0, 0.0, 1.0],
        [0.8415, 0.5403, 0.01, 1.0],
        [0.9093, -0.4161, 0.02, 0.9998],
    ]


def test_odd_d_model_ends_on_a_sine_column() -> None:
    pe = pos.sinusoidal(4, 3)
    assert pe.shape == (4, 3)
    np.testing.assert_allclose(pe[:, 2], np.sin(np.arange(4) / 10000 ** (2 / 3)))


def test_add_position_only_for_sinusoidal() -> None:
    x = np.ones((3, 2))
    np.testing.assert_array_equal(pos.add_position(x, "none"), x)
    np.testing.assert_array_equal(pos.add_position(x, "rope"), x)
    np.testing.assert_allclose(pos.add_position(x, "sinusoidal"), x + pos.sinusoidal(3, 2))


def test_rope_rotates_pairs_by_position_times_frequency() -> None:
    m = np.tile([1.0, 0.0, 1.0, 0.0], (3, 1))  # unit vectors along each pair's first axis
    rotated = pos.rope(m)
    for p in range(3):
        for i in range(2):
            theta = p * 10000 ** (-2 * i / 4)
            assert rotated[p, 2 * i] == pytest.approx(math.cos(theta))
            assert rotated[p, 2 * i + 1] == pytest.approx(math.sin(theta))
    np.testing.assert_array_equal(rotated[0], m[0])  # position 0 is not rotated


def test_rope_refuses_an_odd_width() -> None:
    with pytest.raises(ValueError, match="even"):
        pos.rope(np.ones((2, 3)))


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(1, 12),
    half=st.integers(1, 4),
    seed=st.integers(0, 2**16),
)
def test_rope_preserves_every_row_length(n: int, half: int, seed: int) -> None:
    m = np.random.default_rng(seed).standard_normal((n, 2 * half))
    np.testing.assert_allclose(
        np.linalg.norm(pos.rope(m), axis=1), np.linalg.norm(m, axis=1), rtol=1e-12
    )


@settings(max_examples=30, deadline=None)
@given(half=st.integers(1, 4), seed=st.integers(0, 2**16))
def test_rope_dot_product_depends_only_on_the_offset(half: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    a, b = rng.standard_normal((2, 2 * half))
    n = 8
    q = pos.rope(np.tile(a, (n, 1)))  # a at every position
    k = pos.rope(np.tile(b, (n, 1)))
    dots = q @ k.T  # (n, n): a at position p against b at position r
    for offset in range(-(n - 1), n):
        diagonal = np.diagonal(dots, offset=-offset)  # entries with p − r = offset
        np.testing.assert_allclose(diagonal, diagonal[0], atol=1e-9)
    assert dots[0, 0] == pytest.approx(a @ b)  # offset 0 is the plain dot product


# ---------------------------------------------------------------- the symmetry


def _one_head(x: np.ndarray, allowed: np.ndarray, kind: pos.Positional) -> np.ndarray:
    rng = np.random.default_rng(7)
    w = rng.standard_normal((3, 1, x.shape[1], 4))  # w_q, w_k, w_v for one head
    return multi_head_attention(x, w[0], w[1], w[2], allowed, True, kind).heads[0].output


@pytest.mark.parametrize(
    ("kind", "causal", "equivariant"),
    [
        ("none", False, True),
        ("sinusoidal", False, False),
        ("rope", False, False),
        ("none", True, False),  # a causal mask is itself position information
    ],
)
def test_shuffling_the_tokens_permutes_the_output_only_without_position(
    kind: pos.Positional, causal: bool, equivariant: bool
) -> None:
    x = np.random.default_rng(3).standard_normal((6, 4))
    perm = pos.shuffle_order(6, seed=0)
    allowed = build_mask(6, causal=causal)
    gap = pos.permutation_gap(_one_head(x, allowed, kind), _one_head(x[perm], allowed, kind), perm)
    assert (gap < 1e-9) is equivariant


@pytest.mark.parametrize(("kind", "identical"), [("none", True), ("sinusoidal", False)])
def test_identical_tokens_get_identical_rows_only_without_position(
    kind: pos.Positional, identical: bool
) -> None:
    tokens = ["the", "cat", "sat", "on", "the", "mat"]
    x = np.array([[ord(t[0]) % 7, len(t), 1.0, -1.0] for t in tokens], dtype=float)
    out = _one_head(x, build_mask(6), kind)
    (repeat,) = pos.repeated_token_gaps(tokens, out)
    assert repeat["token"] == "the"
    assert repeat["positions"] == [0, 4]
    assert (repeat["gap"] < 1e-12) is identical


def test_shuffle_order_is_a_seeded_permutation_that_moves_something() -> None:
    for n in range(2, 10):
        perm = pos.shuffle_order(n, seed=0)
        assert sorted(perm.tolist()) == list(range(n))
        assert perm.tolist() != list(range(n))
        np.testing.assert_array_equal(perm, pos.shuffle_order(n, seed=0))
    assert pos.shuffle_order(1, seed=0).tolist() == [0]


def test_rope_of_one_row_at_its_position_equals_that_row_of_the_whole_table() -> None:
    m = np.random.default_rng(4).standard_normal((6, 4))
    whole = pos.rope(m)
    for t in range(6):
        np.testing.assert_allclose(pos.rope(m[t : t + 1], start=t), whole[t : t + 1], atol=1e-15)
