"""One attention head, every stage, in pure numpy.

    Attention(Q, K, V) = softmax(Q·Kᵀ / √d_k + M) · V

Row-vector convention, as in the worked example: Q = X·W_Q, so W_Q is d_model × d_k.
M is 0 where query i may see key j and −∞ where it may not; `allowed` is the boolean
form of M. Nothing here knows about the web.
"""

import math
from dataclasses import dataclass
from functools import lru_cache
from hashlib import sha256

import numpy as np

# ---------------------------------------------------------------- masks


def causal_mask(n: int) -> np.ndarray:
    """Query i sees keys j ≤ i (a decoder: no peeking at the future)."""
    return np.tri(n, dtype=bool)  # (n, n): the lower triangle, diagonal included


def window_mask(n: int, w: int, causal: bool) -> np.ndarray:
    """Query i sees keys within w positions: i − w < j ≤ i when causal, |i − j| < w otherwise."""
    offset = np.arange(n)[:, None] - np.arange(n)[None, :]  # (n, n): i − j
    if causal:
        return (offset >= 0) & (offset < w)
    return np.abs(offset) < w


def padding_mask(padding: list[bool]) -> np.ndarray:
    """Padded keys are hidden from every query; padded queries still see the real keys."""
    keep = ~np.asarray(padding, dtype=bool)  # (n,)
    return np.broadcast_to(keep[None, :], (len(padding), len(padding))).copy()


def build_mask(
    n: int,
    causal: bool = False,
    padding: list[bool] | None = None,
    window: int | None = None,
    allowed: list[list[bool]] | np.ndarray | None = None,
) -> np.ndarray:
    """Combine every restriction with AND; no restriction at all is bidirectional (an encoder)."""
    mask = causal_mask(n) if causal else np.ones((n, n), dtype=bool)
    if window is not None:
        mask &= window_mask(n, window, causal)
    if padding is not None:
        mask &= padding_mask(padding)
    if allowed is not None:
        mask &= np.asarray(allowed, dtype=bool)
    return mask


# ---------------------------------------------------------------- softmax


def masked_softmax(scores: np.ndarray, allowed: np.ndarray) -> np.ndarray:
    """Row-wise softmax over the visible keys only (see `softmax`)."""
    return softmax(np.where(allowed, scores, -np.inf))


def softmax(masked: np.ndarray) -> np.ndarray:
    """Row-wise softmax of scores that are −∞ at the hidden keys.

    The row maximum is subtracted before exp, so scores of ±1e6 stay finite. Hidden keys
    get exactly 0 (exp(−∞) is 0). A row with no visible key gets all zeros instead of
    0/0 = NaN.
    """
    row_max = masked.max(axis=-1, keepdims=True)  # (n, 1)
    row_max[~np.isfinite(row_max)] = 0.0  # a row with no visible key: all its terms are 0
    exp = np.exp(masked - row_max)
    total = exp.sum(axis=-1, keepdims=True)  # (n, 1)
    return np.divide(exp, total, out=np.zeros_like(exp), where=total > 0)


# ---------------------------------------------------------------- one head


@dataclass(frozen=True)
class HeadStages:
    """Every intermediate result of one head, as the paper names them."""

    q: np.ndarray  # (n, d_k)
    k: np.ndarray  # (n, d_k)
    v: np.ndarray  # (n, d_v)
    scores: np.ndarray  # (n, n)  Q·Kᵀ
    scale_factor: float  # √d_k, or 1 without scaling
    scaled: np.ndarray  # (n, n)  Q·Kᵀ / √d_k
    allowed: np.ndarray  # (n, n)  bool: M = 0 where True, −∞ where False
    masked: np.ndarray  # (n, n)  scaled + M (−∞ where hidden)
    weights: np.ndarray  # (n, n)  softmax rows
    output: np.ndarray  # (n, d_v) weights · V

    @property
    def empty_rows(self) -> list[int]:
        """Queries that see no key at all."""
        return np.flatnonzero(~self.allowed.any(axis=-1)).tolist()


def attend(
    q: np.ndarray, k: np.ndarray, v: np.ndarray, allowed: np.ndarray, scale: bool = True
) -> HeadStages:
    """softmax(Q·Kᵀ / √d_k + M) · V from already projected q, k, v."""
    scores = q @ k.T  # (n, n)
    scale_factor = math.sqrt(q.shape[-1]) if scale else 1.0
    scaled = scores / scale_factor
    masked = np.where(allowed, scaled, -np.inf)  # scaled + M
    weights = softmax(masked)
    output = weights @ v  # (n, d_v)
    return HeadStages(q, k, v, scores, scale_factor, scaled, allowed, masked, weights, output)


# ---------------------------------------------------------------- generated inputs


def _seed(seed: int, *labels: str) -> int:
    """A 64-bit seed fixed by the seed and the labels, the same on every machine."""
    digest = sha256("\x1f".join([str(seed), *labels]).encode()).digest()
    return int.from_bytes(digest[:8], "little")


# Generated rows and projections are kept: a class types the same words again and again,
# and every request asks for the same default projections.
@lru_cache(maxsize=4096)
def _token_row(token: str, d_model: int, seed: int) -> np.ndarray:
    row = np.random.default_rng(_seed(seed, "token", token)).standard_normal(d_model).round(2)
    row.flags.writeable = False
    return row


def token_vectors(tokens: list[str], d_model: int, seed: int = 0) -> np.ndarray:
    """Input rows generated from each token's text: equal tokens get equal rows.

    Token t's row: `default_rng(_seed(seed, "token", t)).standard_normal(d_model)`, rounded to
    2 decimals."""
    return np.array([_token_row(t, d_model, seed) for t in tokens]).reshape(len(tokens), d_model)


@lru_cache(maxsize=256)
def _projection(d_in: int, d_out: int, seed: int, name: str) -> np.ndarray:
    rng = np.random.default_rng(_seed(seed, "projection", name, str(d_in), str(d_out)))
    projection = np.round(rng.standard_normal((d_in, d_out)) / np.sqrt(d_in), 2)
    projection.flags.writeable = False
    return projection


def random_projection(d_in: int, d_out: int, seed: int = 0, name: str = "w") -> np.ndarray:
    """A seeded d_in × d_out projection with variance 1/d_in, rounded for readable tables."""
    return _projection(d_in, d_out, seed, name).copy()
