"""The model's own job: how close two sentences are, and which heads that closeness needs.

    cos(a, b) = a · b / (‖a‖ · ‖b‖)

For unit-length sentence embeddings the cosine is their dot product. Ranking heads: each
head is switched off alone (its output zeroed), both sentences are run again, and the heads
are ordered by how much the similarity dropped, largest drop first.
"""

from dataclasses import dataclass

import numpy as np


def cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """cos(a, b) over the last axis (any matching leading shape); a zero vector is refused."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    norms = np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1)
    if np.any(norms == 0):
        raise ValueError("the cosine of a zero vector is undefined")
    return np.clip((a * b).sum(axis=-1) / norms, -1.0, 1.0)


@dataclass(frozen=True)
class HeadEffect:
    """One head switched off alone: the similarity then, and its change from the baseline."""

    layer: int
    head: int
    similarity: float
    change: float  # similarity with the head off − similarity with every head on


def rank_heads(baseline: float, ablated: np.ndarray) -> list[HeadEffect]:
    """Heads ordered by how much switching them off lowers the similarity, the largest drop
    first (the heads it needs most); those whose absence raises it come last. Ties in
    (layer, head) order.

    ablated: (L, h), the similarity with each head switched off alone.
    """
    effects = [
        HeadEffect(layer, head, float(ablated[layer, head]), float(ablated[layer, head] - baseline))
        for layer, head in np.ndindex(ablated.shape)
    ]
    return sorted(effects, key=lambda e: (e.change, e.layer, e.head))
