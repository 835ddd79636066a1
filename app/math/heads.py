"""Several heads side by side, and grouped-query attention, in pure numpy.

    head_i  = softmax(Q_i·K_jᵀ / √d_head + M) · V_j     with j = ⌊i / (h / g)⌋
    concat  = [head_0 | head_1 | … | head_{h−1}]          (n, h·d_head)
    output  = concat · W_O                                (n, d_model)

h query heads share g key/value heads (g divides h): g = h is multi-head attention,
1 < g < h grouped-query attention, g = 1 multi-query attention. Each key/value head is
projected once and used by the h/g query heads of its group. Position (app/math/positional.py)
is added to x before the projections (sinusoidal) or rotates q and k (rope).
"""

from dataclasses import dataclass

import numpy as np

from app.math.attention import HeadStages, attend
from app.math.positional import Positional, add_position, rotate


def kv_head_of(i: int, heads: int, kv_heads: int) -> int:
    """The key/value head that query head i uses: ⌊i / (h / g)⌋."""
    return i // (heads // kv_heads)


@dataclass(frozen=True)
class MultiHeadStages:
    """Every head's stages, which key/value head each used, the concatenation and W_O."""

    x_in: np.ndarray  # (n, d_model) x with position added (x itself unless sinusoidal)
    heads: list[HeadStages]  # h of them
    kv_head: list[int]  # h entries: the key/value head each query head used
    concat: np.ndarray  # (n, h·d_v)
    output: np.ndarray | None  # (n, d_model) concat · W_O, when W_O is given


@dataclass(frozen=True)
class PositionedHead:
    """One head with position applied: what its projections saw, and its stages."""

    x_in: np.ndarray  # (n, d_model) x + PE for sinusoidal, x itself otherwise
    head: HeadStages


def one_head_attention(
    x: np.ndarray,
    w_q: np.ndarray,
    w_k: np.ndarray,
    w_v: np.ndarray,
    allowed: np.ndarray,
    scale: bool = True,
    positional: Positional = "none",
) -> PositionedHead:
    """multi_head_attention with h = g = 1 (w_q, w_k, w_v each (d_model, d)), without the
    lists and the concatenation around its one head: /api/attention's hot path."""
    x_in = add_position(x, positional)  # (n, d_model)
    q = rotate(x_in @ w_q, positional)  # (n, d_k)
    k = rotate(x_in @ w_k, positional)  # (n, d_k)
    return PositionedHead(x_in, attend(q, k, x_in @ w_v, allowed, scale))


def multi_head_attention(
    x: np.ndarray,
    w_q: np.ndarray,
    w_k: np.ndarray,
    w_v: np.ndarray,
    allowed: np.ndarray,
    scale: bool = True,
    positional: Positional = "none",
    w_o: np.ndarray | None = None,
) -> MultiHeadStages:
    """h query heads over g key/value heads, side by side in head order, then W_O.

    w_q is (h, d_model, d_k), w_k is (g, d_model, d_k), w_v is (g, d_model, d_v), w_o is
    (h·d_v, d_model). With h = g = 1 and no W_O this is one head, as /api/attention has it.
    """
    h, g = len(w_q), len(w_k)
    x_in = add_position(x, positional)  # (n, d_model)
    k = [rotate(x_in @ w, positional) for w in w_k]  # g × (n, d_k)
    v = [x_in @ w for w in w_v]  # g × (n, d_v)
    kv = [kv_head_of(i, h, g) for i in range(h)]
    stages = [
        attend(rotate(x_in @ w_q[i], positional), k[kv[i]], v[kv[i]], allowed, scale)
        for i in range(h)
    ]
    concat = np.concatenate([s.output for s in stages], axis=-1)  # (n, h·d_v)
    return MultiHeadStages(x_in, stages, kv, concat, None if w_o is None else concat @ w_o)
