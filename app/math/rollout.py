"""Attention rollout (Abnar & Zuidema 2020, "Quantifying Attention Flow in Transformers").

A layer mixes the tokens through its heads and also passes each token on unchanged
through the residual connection. Rollout models one layer as

    Â_l = 0.5 · (mean over heads of layer l's weights) + 0.5 · I      (rows sum to 1)

and follows the mixing through the layers by multiplying: after layer L,

    R_L = Â_L · Â_(L−1) · … · Â_1

Row i of R_L says how much of each input position reaches position i at the top if
attention were the only way information moves, and the weights of every head counted the
same. It ignores the values, the output projection, the feed-forward blocks and the layer
norms, so it is an estimate of where information could come from, not a measurement.
"""

import numpy as np


def residual_attention(weights: np.ndarray) -> np.ndarray:
    """Â = 0.5 · mean over heads + 0.5 · I, for one layer's weights (h, n, n) → (n, n)."""
    n = weights.shape[-1]
    return 0.5 * np.asarray(weights, dtype=np.float64).mean(axis=0) + 0.5 * np.eye(n)


def attention_rollout(weights: np.ndarray) -> np.ndarray:
    """R_l = Â_l · R_(l−1) for every layer, weights (L, h, n, n) → (L, n, n); R_0 = I."""
    n = weights.shape[-1]
    rollout = np.eye(n)
    steps = []
    for layer in weights:
        rollout = residual_attention(layer) @ rollout  # (n, n)
        steps.append(rollout)
    return np.stack(steps)


def input_share(rollout: np.ndarray) -> np.ndarray:
    """How much each input position feeds the mean over positions: the mean of R's rows.

    The sentence embedding is the mean of the last hidden states, so the mean row of the
    last rollout is rollout's estimate of each word piece's share in it; it sums to 1.
    """
    return rollout.mean(axis=-2)  # (…, n)
