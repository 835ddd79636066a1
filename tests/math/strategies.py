"""Hypothesis strategies shared by the kernel tests: random q, k, v with any mix of masks."""

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from app.math import attention as att

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
