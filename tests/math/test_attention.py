"""The math of one head, without the web stack."""

import hashlib

import numpy as np
import pytest

from app.core import rules
from app.math import attention as att


def worked_example() -> att.HeadStages:
    allowed = att.causal_mask(3)
    x = rules.WORKED_X
    return att.attend(x @ rules.WORKED_W_Q, x @ rules.WORKED_W_K, x @ rules.WORKED_W_V, allowed)


def test_worked_example_token_table() -> None:
    s = worked_example()
    np.testing.assert_array_equal(s.q, [[1.0, 0.5], [0.0, 1.0], [1.0, 1.5]])
    np.testing.assert_array_equal(s.k, [[0.5, 1.0], [1.0, 0.0], [1.5, 1.0]])
    np.testing.assert_array_equal(s.v, [[1.0, -1.0], [0.5, 1.0], [1.5, 0.0]])


def test_worked_example_query_cat() -> None:
    s = worked_example()
    np.testing.assert_array_equal(s.scores[1], [1.0, 0.0, 1.0])
    assert s.scale_factor == pytest.approx(np.sqrt(2))
    assert np.round(s.scaled[1, :2], 3).tolist() == [0.707, 0.0]
    assert s.masked[1, 2] == -np.inf
    assert np.round(s.weights[1], 3).tolist() == [0.670, 0.330, 0.0]
    weighted = s.weights[1][:, None] * s.v
    assert np.round(weighted, 2).tolist() == [[0.67, -0.67], [0.17, 0.33], [0.0, 0.0]]
    assert np.round(s.output[1], 2).tolist() == [0.83, -0.34]


def test_causal_mask_hides_future_keys() -> None:
    assert att.causal_mask(3).tolist() == [
        [True, False, False],
        [True, True, False],
        [True, True, True],
    ]


@pytest.mark.parametrize("n", [1, 5, 65])
def test_causal_mask_is_the_lower_triangle(n: int) -> None:
    np.testing.assert_array_equal(att.causal_mask(n), np.tril(np.ones((n, n), dtype=bool)))


@pytest.mark.parametrize(
    ("causal", "expected_row_2"),
    [(True, [False, True, True, False, False]), (False, [False, True, True, True, False])],
)
def test_window_mask_keeps_nearby_keys(causal: bool, expected_row_2: list[bool]) -> None:
    assert att.window_mask(5, 2, causal)[2].tolist() == expected_row_2


def test_padding_hides_padded_keys_from_every_query() -> None:
    mask = att.build_mask(3, padding=[False, False, True])
    assert mask[:, 2].tolist() == [False, False, False]
    assert mask[:, :2].all()


@pytest.mark.parametrize(
    ("scores", "visible", "expected"),
    [
        ([1e6, -1e6, 1e6 - 1], [1, 1, 1], [1 / (1 + np.exp(-1)), 0.0, 1 / (1 + np.e)]),
        ([-1e6, -1e6, -1e6], [1, 1, 1], [1 / 3, 1 / 3, 1 / 3]),
        ([1e6, -1e6, 5.0], [0, 1, 1], [0.0, np.exp(-1e6 - 5), 1.0]),
        ([1e6, 1e6, -1e6], [1, 0, 0], [1.0, 0.0, 0.0]),
        ([-1e6, 1e6, 1e6], [1, 1, 1], [0.0, 0.5, 0.5]),
        ([1e300, -1e300, 0.0], [1, 1, 1], [1.0, 0.0, 0.0]),
    ],
)
def test_softmax_subtracts_the_row_maximum(
    scores: list[float], visible: list[int], expected: list[float]
) -> None:
    allowed = np.array([visible], dtype=bool)
    weights = att.masked_softmax(np.array([scores]), allowed)
    assert np.isfinite(weights).all()
    np.testing.assert_allclose(weights[0], expected, rtol=1e-12, atol=0)
    assert (weights[~allowed] == 0.0).all()
    assert abs(weights.sum() - 1.0) <= 1e-12


def test_row_with_no_visible_key_is_zero_not_nan() -> None:
    allowed = np.array([[False, False], [True, True]])
    s = att.attend(np.ones((2, 2)), np.ones((2, 2)), np.ones((2, 2)), allowed)
    assert s.weights[0].tolist() == [0.0, 0.0]
    assert s.output[0].tolist() == [0.0, 0.0]
    assert s.empty_rows == [0]
    assert not np.isnan(s.weights).any()


def test_equal_tokens_get_equal_generated_rows() -> None:
    x = att.token_vectors(["a", "b", "a"], 5, seed=3)
    np.testing.assert_array_equal(x[0], x[2])
    assert not np.array_equal(x[0], x[1])
    np.testing.assert_array_equal(x, att.token_vectors(["a", "b", "a"], 5, seed=3))


def test_generated_rows_are_numpys_default_generator_for_the_tokens_seed() -> None:
    """The documented recipe, so that any numpy reproduces the lab's generated inputs."""
    digest = hashlib.sha256(b"3\x1ftoken\x1fcat").digest()
    rng = np.random.default_rng(int.from_bytes(digest[:8], "little"))
    expected = rng.standard_normal(5).round(2)
    np.testing.assert_array_equal(att.token_vectors(["cat"], 5, seed=3)[0], expected)


def test_a_generated_projection_is_the_callers_to_change() -> None:
    first = att.random_projection(3, 2, seed=1, name="w_q")
    first[:] = 0.0
    assert np.abs(att.random_projection(3, 2, seed=1, name="w_q")).sum() > 0
