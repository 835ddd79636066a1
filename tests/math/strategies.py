"""Hypothesis strategies shared by the kernel and decoding tests: any mix of masks."""

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from app.math import attention as att
from app.math import decoding as dc

values = st.floats(-3, 3, allow_nan=False, allow_infinity=False)


def random_qkv(n: int, d_k: int = 3, d_v: int = 2, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((n, d)) for d in (d_k, d_k, d_v)]


@st.composite
def lab_states(draw: st.DrawFn) -> dict:
    """Random q, k, v, any combination of the lab's masks, block sizes from 1 to past n."""
    n = draw(st.integers(1, 12))
    d_k, d_v = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    allowed = att.build_mask(
        n,
        causal=draw(st.booleans()),
        padding=draw(st.none() | st.lists(st.booleans(), min_size=n, max_size=n)),
        window=draw(st.none() | st.integers(1, n + 1)),
        allowed=draw(st.none() | arrays(bool, (n, n))),
    )
    return {
        "q": draw(arrays(float, (n, d_k), elements=values)),
        "k": draw(arrays(float, (n, d_k), elements=values)),
        "v": draw(arrays(float, (n, d_v), elements=values)),
        "allowed": allowed,
        "block_q": draw(st.integers(1, n + 2)),
        "block_k": draw(st.integers(1, n + 2)),
        "scale": draw(st.booleans()),
    }


@st.composite
def cache_policies(draw: st.DrawFn, n: int) -> dc.CachePolicy:
    kind = draw(st.sampled_from(dc.POLICIES))
    if kind == "full":
        return dc.FULL
    return dc.CachePolicy(kind, draw(st.integers(1, n + 1)), draw(st.integers(0, n)))


@st.composite
def decode_states(draw: st.DrawFn) -> dict:
    """Keyword arguments of `decoding.decode`: a causal mask with padding and a window, any
    prompt length, position encoding and cache policy."""
    n = draw(st.integers(1, 10))
    d_model = draw(st.integers(1, 4))
    allowed = att.build_mask(
        n,
        causal=True,
        padding=draw(st.none() | st.lists(st.booleans(), min_size=n, max_size=n)),
        window=draw(st.none() | st.integers(1, n + 1)),
    )
    matrix = lambda rows, cols: arrays(float, (rows, cols), elements=values)  # noqa: E731
    return {
        "x": draw(matrix(n, d_model)),
        "w_q": draw(matrix(d_model, 4)),
        "w_k": draw(matrix(d_model, 4)),
        "w_v": draw(matrix(d_model, 2)),
        "allowed": allowed,
        "prompt": draw(st.integers(1, n)),
        "scale": draw(st.booleans()),
        "positional": draw(st.sampled_from(["none", "sinusoidal", "rope"])),
        "policy": draw(cache_policies(n)),
    }
