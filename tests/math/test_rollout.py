"""Attention rollout (Abnar & Zuidema 2020) against a plain-Python product of the model's layers."""

import math

import numpy as np
import pytest

from app.features.model.store import load_model, word_pieces
from app.math import minilm as bert
from app.math import rollout as ro


@pytest.fixture(scope="module")
def weights() -> np.ndarray:
    loaded = load_model()
    ids = word_pieces(loaded, "The cat sat on the mat because it was tired").ids
    return bert.forward(loaded.encoder, ids).weights  # (6, 12, n, n)


def plain_rollout(weights: list) -> list[list[list[float]]]:
    """R_l = Â_l · R_(l−1), Â = 0.5 · mean over heads + 0.5 · I, with Python loops."""
    n = len(weights[0][0])
    r = [[float(i == j) for j in range(n)] for i in range(n)]
    steps = []
    for layer in weights:
        h = len(layer)
        a = [
            [0.5 * math.fsum(layer[k][i][j] for k in range(h)) / h + 0.5 * (i == j)
             for j in range(n)]
            for i in range(n)
        ]  # fmt: skip
        r = [[math.fsum(a[i][t] * r[t][j] for t in range(n)) for j in range(n)] for i in range(n)]
        steps.append(r)
    return steps


def test_rollout_matches_a_plain_loop_on_the_models_weights(weights: np.ndarray) -> None:
    rollout = ro.attention_rollout(weights)
    assert rollout.shape == (6, *weights.shape[-2:])
    np.testing.assert_allclose(rollout, plain_rollout(weights.astype(float).tolist()), atol=1e-12)


def test_every_rollout_row_sums_to_one(weights: np.ndarray) -> None:
    """As exactly as the float32 weights' own rows do (within 1e-6)."""
    rollout = ro.attention_rollout(weights)
    np.testing.assert_allclose(rollout.sum(axis=-1), 1.0, rtol=0, atol=1e-6)
    assert (rollout >= 0).all()
    share = ro.input_share(rollout[-1])
    assert share.sum() == pytest.approx(1.0, abs=1e-6)
    np.testing.assert_allclose(share, rollout[-1].mean(axis=0))


def test_heads_that_only_look_at_themselves_pass_everything_straight_up() -> None:
    identity = np.broadcast_to(np.eye(5), (3, 4, 5, 5))
    np.testing.assert_allclose(ro.attention_rollout(identity)[-1], np.eye(5))


def test_uniform_heads_mix_towards_the_mean() -> None:
    """Â = 0.5 · J/n + 0.5 · I, and Â^L = I/2^L + (1 − 1/2^L) · J/n."""
    n, layers = 4, 3
    uniform = np.full((layers, 2, n, n), 1 / n)
    expected = np.eye(n) / 2**layers + (1 - 1 / 2**layers) * np.full((n, n), 1 / n)
    np.testing.assert_allclose(ro.attention_rollout(uniform)[-1], expected, atol=1e-15)


def test_one_layer_is_half_its_mean_head_plus_half_identity() -> None:
    rng = np.random.default_rng(3)
    w = rng.random((2, 3, 3))
    w /= w.sum(axis=-1, keepdims=True)
    np.testing.assert_allclose(ro.residual_attention(w), 0.5 * w.mean(axis=0) + 0.5 * np.eye(3))
    np.testing.assert_allclose(ro.attention_rollout(w[None])[0], ro.residual_attention(w))
