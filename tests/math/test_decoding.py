"""Decoding with a cache under the full, window and sinks policies, against the dense head."""

import numpy as np
import pytest
from hypothesis import given, settings

from app.core import rules
from app.math import attention as att
from app.math import decoding as dc
from app.math import heads as mh
from tests.math.strategies import decode_states

EXACT = 1e-12


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
        np.testing.assert_allclose(step.stages.k, dense.k[held], atol=EXACT)
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
    reference = att.attend(x @ w_q, x @ w_k, x @ w_v, causal).output
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


def test_each_decode_step_adds_one_cache_row_and_one_query() -> None:
    x, w_q, w_k, w_v = rules.WORKED_X, rules.WORKED_W_Q, rules.WORKED_W_K, rules.WORKED_W_V
    decoding = dc.decode(x, w_q, w_k, w_v, att.causal_mask(3), prompt=1)
    assert decoding.prefill.scores.shape == (1, 1)
    assert [s.position for s in decoding.steps] == [1, 2]
    assert [s.cache_length for s in decoding.steps] == [2, 3]
    assert [s.stages.scores.shape for s in decoding.steps] == [(1, 2), (1, 3)]
    assert [(s.dots_cached, s.dots_uncached) for s in decoding.steps] == [(2, 4), (3, 9)]
    cat = decoding.steps[0]
    np.testing.assert_array_equal(cat.k, [1.0, 0.0])
    assert cat.stages.weights.round(3).tolist() == [[0.670, 0.330]]
    assert cat.stages.output.round(2).tolist() == [[0.83, -0.34]]


def test_cache_rows_never_change_once_written() -> None:
    cache = dc.KVCache(capacity=3, d_k=2, d_v=1)
    cache.append(np.ones((1, 2)), np.ones((1, 1)))
    first = cache.k.copy()
    cache.append(np.full((2, 2), 5.0), np.full((2, 1), 5.0))
    assert cache.length == 3
    np.testing.assert_array_equal(cache.k[:1], first)
    assert cache.v[:, 0].tolist() == [1.0, 5.0, 5.0]


def test_decoding_refuses_a_mask_that_sees_the_future() -> None:
    x = rules.WORKED_X
    with pytest.raises(ValueError, match="causal"):
        dc.decode(x, rules.WORKED_W_Q, rules.WORKED_W_K, rules.WORKED_W_V, np.ones((3, 3), bool), 1)
