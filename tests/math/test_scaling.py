"""Why √d_k, measured: the spread of raw scores grows with d_k and saturates softmax."""

import math

import numpy as np
import pytest

from app.math.scaling import D_K_VALUES, saturation, spread


def test_uniform_rows_have_the_textbook_spread() -> None:
    n = 8
    s = spread(np.zeros((n, n)))
    assert s.score_std == 0.0
    assert s.max_weight == pytest.approx(1 / n)
    assert s.entropy_bits == pytest.approx(math.log2(n))
    # J = I/n − 11ᵀ/n²: n diagonal entries (1/n − 1/n²), n² − n off-diagonal ones −1/n²
    expected = math.sqrt(n * (1 / n - 1 / n**2) ** 2 + (n * n - n) / n**4)
    assert s.gradient == pytest.approx(expected)


def test_a_saturated_row_passes_no_gradient() -> None:
    s = spread(np.array([[1000.0, 0.0, 0.0]] * 3))
    assert s.max_weight == pytest.approx(1.0)
    assert s.entropy_bits == pytest.approx(0.0, abs=1e-12)
    assert s.gradient == pytest.approx(0.0, abs=1e-12)


def test_raw_scores_spread_like_the_square_root_of_d_k_and_scaled_ones_stay_near_1() -> None:
    c = saturation(seed=0)
    assert c["d_k"] == list(D_K_VALUES) == [2, 4, 8, 16, 32, 64, 128, 256, 512]
    for d_k, raw, scaled in zip(c["d_k"], c["raw_score_std"], c["scaled_score_std"], strict=True):
        assert 0.7 < raw / math.sqrt(d_k) < 1.3
        assert 0.8 < scaled < 1.2
        assert raw == pytest.approx(scaled * math.sqrt(d_k))


def test_without_scaling_wide_heads_saturate_and_lose_their_gradient() -> None:
    c = saturation(seed=0)
    assert c["raw_max_weight"][-1] > 0.9  # d_k = 512: one key takes almost everything
    assert c["raw_entropy_bits"][-1] < 0.5  # of log₂ 64 = 6 bits
    assert max(c["scaled_max_weight"]) < 0.2
    assert min(c["scaled_entropy_bits"]) > 5
    assert c["raw_gradient"][-1] < 0.5 * c["scaled_gradient"][-1]
    assert max(c["scaled_gradient"]) - min(c["scaled_gradient"]) < 0.05


def test_saturation_is_seeded() -> None:
    assert saturation(seed=3) == saturation.__wrapped__(seed=3)
    assert saturation(seed=3) != saturation(seed=4)
