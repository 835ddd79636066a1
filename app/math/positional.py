"""Positional encoding: how attention, which by itself ignores order, learns where a token is.

Without position, attention is permutation equivariant: shuffle the input rows (and a mask
that does not depend on position) and the output rows come out shuffled the same way, and
two identical tokens get identical rows. Two ways to break that symmetry, as in API.md:

- sinusoidal (added to x before the projections):
      PE(p, 2i) = sin(p / 10000^(2i/d_model)),   PE(p, 2i+1) = cos(p / 10000^(2i/d_model))
- rope (rotary; applied to every q and k row after the projections, before Q·Kᵀ):
      pair (2i, 2i+1) of the row at position p is rotated by θ = p · 10000^(−2i/d_head)

Rotating q at position p by p·ω and k at position r by r·ω makes their dot product depend on
p − r only, and a rotation keeps every row's length. Pure numpy; nothing here knows the web.
"""

from functools import lru_cache
from typing import Literal

import numpy as np

Positional = Literal["none", "sinusoidal", "rope"]
KINDS: tuple[Positional, ...] = ("none", "sinusoidal", "rope")
BASE = 10000.0


def pair_frequencies(d: int, base: float = BASE) -> np.ndarray:
    """ω_i = base^(−2i/d) for each column (base 10000 unless a model says otherwise): columns
    2i and 2i+1 share frequency i."""
    i = np.arange(d) // 2  # (d,)
    return base ** (-2.0 * i / d)


def sinusoidal(n: int, d_model: int) -> np.ndarray:
    """The sinusoidal table PE for positions 0 … n−1: sin in even columns, cos in odd ones.

    An odd d_model simply ends on a sin column (its cos partner would be column d_model).
    """
    angles = np.arange(n)[:, None] * pair_frequencies(d_model)[None, :]  # (n, d_model)
    return np.where(np.arange(d_model) % 2 == 0, np.sin(angles), np.cos(angles))


def rope(m: np.ndarray, start: int = 0, base: float = BASE) -> np.ndarray:
    """Rotate each pair (2i, 2i+1) of row p by θ = p · base^(−2i/d_head); d_head must be even.
    Row r sits at position p = start + r (a decoder rotates one new row at its position).
    Any leading axes (one per head) are rotated alike: (…, n, d_head).

    m'[p, 2i]   = m[p, 2i] cos θ − m[p, 2i+1] sin θ
    m'[p, 2i+1] = m[p, 2i] sin θ + m[p, 2i+1] cos θ
    """
    *_, n, d_head = m.shape
    if d_head % 2:
        raise ValueError(f"rope rotates pairs of numbers, so d_head must be even, not {d_head}")
    out = np.empty(m.shape, dtype=np.result_type(m, np.float32))  # float32 stays float32
    cos, sin = rotation(start, n, d_head, base, out.dtype)
    even, odd = m[..., 0::2], m[..., 1::2]  # (…, n, d_head/2) each
    out[..., 0::2] = even * cos - odd * sin
    out[..., 1::2] = even * sin + odd * cos
    return out


@lru_cache(maxsize=16)
def rotation(
    start: int, n: int, d_head: int, base: float, dtype: np.dtype
) -> tuple[np.ndarray, np.ndarray]:
    """cos θ and sin θ, (n, d_head/2), for positions start … start + n − 1. Kept for the last
    few calls (read-only): a decoder rotates the same rows' q and k in every layer."""
    theta = np.arange(start, start + n)[:, None] * pair_frequencies(d_head, base)[None, ::2]
    cos, sin = np.cos(theta).astype(dtype), np.sin(theta).astype(dtype)
    cos.flags.writeable = sin.flags.writeable = False
    return cos, sin


def add_position(x: np.ndarray, kind: Positional) -> np.ndarray:
    """What the projections see: x + PE for sinusoidal, x itself otherwise."""
    return x + sinusoidal(*x.shape) if kind == "sinusoidal" else x


def rotate(m: np.ndarray, kind: Positional, start: int = 0) -> np.ndarray:
    """q or k rows (from position `start` on) after position is applied: rotated for rope,
    unchanged otherwise."""
    return rope(m, start) if kind == "rope" else m


# ---------------------------------------------------------------- the symmetry, measured


def permutation_gap(output: np.ndarray, shuffled_output: np.ndarray, perm: np.ndarray) -> float:
    """max |out(P·x) − P·out(x)|: 0 when attention is blind to order (permutation equivariant).

    `perm[j]` is the original position of the token now at position j.
    """
    return float(np.max(np.abs(shuffled_output - output[perm]), initial=0.0))


def repeated_token_gaps(tokens: list[str], rows: np.ndarray) -> list[dict[str, object]]:
    """For each token text that occurs more than once: its positions and the largest
    difference between their rows (0 when identical tokens get identical rows)."""
    positions: dict[str, list[int]] = {}
    for p, token in enumerate(tokens):
        positions.setdefault(token, []).append(p)
    return [
        {"token": t, "positions": ps, "gap": float(np.max(np.ptp(rows[ps], axis=0)))}
        for t, ps in positions.items()
        if len(ps) > 1
    ]


def shuffle_order(n: int, seed: int = 0) -> np.ndarray:
    """A seeded reordering of 0 … n−1 that moves at least one token whenever n > 1."""
    perm = np.random.default_rng(seed).permutation(n)
    return perm[::-1].copy() if n > 1 and np.array_equal(perm, np.arange(n)) else perm
