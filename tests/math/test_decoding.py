"""Decoding with a cache under the full, window and sinks policies, against the dense head."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from app.math import attention as att
from app.math import decoding as dc
from app.math import heads as mh

EXACT = 1e-12
values = st.floats(-3, 3, allow_nan=False, allow_infinity=False)


@st.composite
def policies(draw: st.DrawFn, n: int) -> dc.CachePolicy:
    kind = draw(st.sampled_from(dc.POLICIES))
    if kind == "full":
        return dc.FULL
    return dc.CachePolicy(kind, draw(st.integers(1, n + 1)), draw(st.integers(0, n)))


@st.composite
def decode_states(draw: st.DrawFn) -> dict:
    n = draw(st.integers(1, 10))
    d_model = draw(st.integers(1, 4))
    allowed = att.build_mask(
        n, causal=True, padding=draw(st.none() | st.lists(st.booleans(), min_size=n, max_size=n))
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
        "policy": draw(policies(n)),
    }


def lab_mask(n: int, policy: dc.CachePolicy) -> np.ndarray:
    """The same policy as the lab's masks: a causal window, OR'd with the first s keys."""
    if policy.policy == "full":
        return att.build_mask(n, causal=True)
    windowed = att.build_mask(n, causal=True, window=policy.window)
    if policy.policy == "window":
        return windowed
    sinks = att.causal_mask(n) & (np.arange(n)[None, :] < policy.sinks)
    return windowed | sinks


@settings(max_examples=150, deadline=None)
@given(decode_states())
def test_every_policy_equals_the_dense_head_with_the_matching_mask(state: dict) -> None:
    decoding = dc.decode(**state)
    policy, n = state["policy"], state["x"].shape[0]
    matching = state["allowed"] & lab_mask(n, policy)
    np.testing.assert_array_equal(policy.mask(n), lab_mask(n, policy))
    x, w_q, w_k, w_v = (state[f] for f in ("x", "w_q", "w_k", "w_v"))
    dense = mh.multi_head_attention(
        x, w_q[None], w_k[None], w_v[None], matching, state["scale"], state["positional"]
    ).heads[0]
    np.testing.assert_allclose(decoding.output, dense.output, rtol=0, atol=EXACT)
    for step in decoding.steps:
        t, held = step.position, step.cached_positions
        np.testing.assert_array_equal(held, np.flatnonzero(policy.mask(n)[t]))
        np.testing.assert_allclose(step.stages.weights[0], dense.weights[t, held], atol=EXACT)
        assert dense.weights[t, np.setdiff1d(np.arange(n), held)].sum() == 0
        assert step.cache_elements == len(held) * (4 + 2)
        if policy.capacity is not None:
            assert len(held) <= policy.capacity


def test_a_sink_plus_window_cache_holds_the_first_tokens_and_the_latest() -> None:
    policy = dc.CachePolicy("sinks", window=3, sinks=2)
    assert [policy.kept(t).tolist() for t in (0, 3, 4, 5, 9)] == [
        [0],
        [0, 1, 2, 3],
        [0, 1, 2, 3, 4],
        [0, 1, 3, 4, 5],
        [0, 1, 7, 8, 9],
    ]
    assert policy.capacity == 5
    rng = np.random.default_rng(4)
    x = rng.standard_normal((10, 3))
    w_q, w_k, w_v = (rng.standard_normal((3, 2)) for _ in range(3))
    decoding = dc.decode(x, w_q, w_k, w_v, att.causal_mask(10), 4, policy=policy)
    assert decoding.prefill_positions.tolist() == [0, 1, 2, 3]
    assert [s.evicted.tolist() for s in decoding.steps] == [[], [2], [3], [4], [5], [6]]
    assert [s.cache_elements for s in decoding.steps] == [5 * 4] * 6


def test_a_window_drops_the_first_tokens_and_the_output_moves_away_from_full() -> None:
    rng = np.random.default_rng(7)
    x = rng.standard_normal((8, 3))
    w_q, w_k, w_v = (rng.standard_normal((3, 2)) for _ in range(3))
    causal = att.causal_mask(8)
    full = dc.decode(x, w_q, w_k, w_v, causal, 2)
    window = dc.decode(x, w_q, w_k, w_v, causal, 2, policy=dc.CachePolicy("window", 2))
    reference = att.attention_head(x, w_q, w_k, w_v, causal).output
    np.testing.assert_allclose(full.output, reference, rtol=0, atol=EXACT)  # full: no difference
    gap = np.abs(window.output - reference).max(axis=1)
    assert gap[:2].max() <= EXACT  # the first two tokens still see everything
    assert gap[2:].min() > 1e-3  # later ones have lost the start of the text
    assert [s.cache_length for s in window.steps] == [2] * 6
    assert [s.cache_length for s in full.steps] == [3, 4, 5, 6, 7, 8]


def test_policies_refuse_what_they_cannot_mean() -> None:
    with pytest.raises(ValueError, match="window"):
        dc.CachePolicy("sinks", window=None, sinks=2)
    with pytest.raises(ValueError, match="sinks"):
        dc.CachePolicy("window", window=2, sinks=-1)
