"""Why Q·Kᵀ is divided by √d_k, measured on random numbers.

With q and k of unit-variance entries, q·k = Σ_t q_t k_t is a sum of d_k products of
variance 1, so its standard deviation grows like √d_k. Softmax of such wide-spread scores
puts almost all weight on one key (it saturates), and its Jacobian

    ∂p_i/∂s_j = p_i (δ_ij − p_j)

is then close to 0: the scores barely receive a gradient and the head stops learning.
Dividing by √d_k keeps the spread near 1 whatever the width. Pure numpy.
"""

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from app.math.attention import masked_softmax

D_K_VALUES: tuple[int, ...] = (2, 4, 8, 16, 32, 64, 128, 256, 512)
N_KEYS = 64


@dataclass(frozen=True)
class Spread:
    """Averages over the rows of one n × n score matrix."""

    score_std: float  # standard deviation of the scores fed to softmax
    max_weight: float  # mean of each row's largest weight (1/n uniform … 1 saturated)
    entropy_bits: float  # mean row entropy −Σ p log₂ p (log₂ n uniform … 0 saturated)
    gradient: float  # mean Frobenius norm of the softmax Jacobian diag(p) − p pᵀ


def spread(scores: np.ndarray) -> Spread:
    """How peaked the softmax rows of these scores are, and how much gradient they pass."""
    p = masked_softmax(scores, np.ones(scores.shape, dtype=bool))  # (n, n)
    plogp = np.where(p > 0, p * np.log2(np.where(p > 0, p, 1.0)), 0.0)
    jacobian = p[:, :, None] * np.eye(p.shape[1]) - p[:, :, None] * p[:, None, :]  # (n, n, n)
    return Spread(
        score_std=float(scores.std()),
        max_weight=float(p.max(axis=1).mean()),
        entropy_bits=float(-plogp.sum(axis=1).mean()),
        gradient=float(np.linalg.norm(jacobian, axis=(1, 2)).mean()),
    )


@lru_cache(maxsize=32)
def saturation(seed: int = 0, n: int = N_KEYS) -> dict[str, list[float] | list[int]]:
    """For each d_k in 2 … 512: random unit-variance q, k (n × d_k, seeded), and the spread
    of Q·Kᵀ without scaling ("raw_…") and divided by √d_k ("scaled_…")."""
    curves: dict[str, list] = {"d_k": list(D_K_VALUES)}
    for d_k in D_K_VALUES:
        rng = np.random.default_rng([seed, d_k])
        q, k = rng.standard_normal((2, n, d_k))
        scores = q @ k.T  # (n, n)
        for prefix, s in (("raw", scores), ("scaled", scores / np.sqrt(d_k))):
            for name, value in vars(spread(s)).items():
                curves.setdefault(f"{prefix}_{name}", []).append(value)
    return curves
