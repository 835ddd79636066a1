"""The service: defaults filled in, every stage laid out, checked against the plain head."""

import numpy as np
import pytest
from hypothesis import given, settings

from app.features.lab.schemas import AttentionRequest
from app.features.lab.service import compute_attention
from app.settings import Settings
from tests.reference import assert_stages_close, head_requests, plain, plain_answer


def compute(request: dict) -> dict:
    return compute_attention(AttentionRequest.model_validate(request), Settings())


@settings(max_examples=80, deadline=None)
@given(head_requests())
def test_every_stage_matches_the_plain_head(request: dict) -> None:
    result = compute(request)
    n = len(request["tokens"])
    assert (result.d_model, result.d_k, result.d_v) == (
        request["d_model"],
        request["d_k"],
        request["d_v"],
    )
    for name, shape in {
        "x": (n, request["d_model"]),
        "w_q": (request["d_model"], request["d_k"]),
        "w_k": (request["d_model"], request["d_k"]),
        "w_v": (request["d_model"], request["d_v"]),
    }.items():
        assert getattr(result, name).shape == shape
        if name in request:
            assert getattr(result, name).tolist() == request[name]
    got = plain(result)
    assert_stages_close(got, plain_answer(request, got))


@settings(max_examples=80, deadline=None)
@given(head_requests())
def test_weights_are_numbers_a_teacher_can_trust(request: dict) -> None:
    result = compute(request)
    weights, allowed = result.weights, result.allowed
    assert np.isfinite(weights).all()
    assert (weights[~allowed] == 0.0).all()  # hidden pairs: exactly 0, not merely tiny
    seeing = allowed.any(axis=1)
    np.testing.assert_allclose(weights[seeing].sum(axis=1), 1.0, rtol=0, atol=1e-12)
    assert result.empty_rows == np.flatnonzero(~seeing).tolist()
    assert (weights[~seeing] == 0.0).all()
    assert (result.output[~seeing] == 0.0).all()
    assert np.isfinite(result.output).all()


def test_generated_inputs_are_deterministic() -> None:
    request = {"tokens": ["a", "b", "a"], "d_model": 5, "d_k": 3, "seed": 7}
    first, second = compute(request), compute(request)
    for name in ("x", "w_q", "w_k", "w_v", "output"):
        np.testing.assert_array_equal(getattr(first, name), getattr(second, name))
    np.testing.assert_array_equal(first.x[0], first.x[2])  # equal tokens, equal rows
    assert not np.array_equal(first.w_q, compute({**request, "seed": 8}).w_q)


@pytest.mark.parametrize(
    ("request_", "d_model", "worked"),
    [
        ({}, 2, True),
        ({"mask": {}}, 2, True),
        ({"w_q": [[1.0, 0.0], [0.0, 1.0]]}, 2, True),
        ({"w_q": [[1.0], [0.0], [2.0]]}, 3, False),
        ({"d_model": 6}, 6, False),
        ({"tokens": ["a", "b"]}, 4, False),
        ({"seed": 1}, 4, False),
    ],
)
def test_d_model_comes_from_whichever_field_fixes_it(
    request_: dict, d_model: int, worked: bool
) -> None:
    result = compute(request_)
    assert result.d_model == d_model
    assert (result.x.tolist() == [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]) == worked
