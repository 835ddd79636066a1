"""Several heads and grouped-query attention: the math, and POST /api/heads against an
independent head-by-head reference written with plain Python loops (no numpy)."""

import math
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient
from hypothesis import given, settings
from hypothesis import strategies as st

from app.main import create_app
from app.math import heads as mh
from app.math.attention import attend, build_mask
from app.math.positional import Positional
from app.settings import Settings

# ---------------------------------------------------------------- the reference, by hand


def ref_matmul(a: list[list[float]], b: list[list[float]]) -> list[list[float]]:
    return [
        [sum(a[i][t] * b[t][j] for t in range(len(b))) for j in range(len(b[0]))]
        for i in range(len(a))
    ]


def ref_allowed(n: int, mask: dict[str, Any]) -> list[list[bool]]:
    def visible(i: int, j: int) -> bool:
        ok = True
        if mask.get("causal"):
            ok = ok and j <= i
        if mask.get("window") is not None:
            w = mask["window"]
            ok = ok and ((i - w < j <= i) if mask.get("causal") else abs(i - j) < w)
        if mask.get("padding") is not None:
            ok = ok and not mask["padding"][j]
        if mask.get("allowed") is not None:
            ok = ok and mask["allowed"][i][j]
        return ok

    return [[visible(i, j) for j in range(n)] for i in range(n)]


def ref_position_added(x: list[list[float]], positional: str) -> list[list[float]]:
    if positional != "sinusoidal":
        return x
    d_model = len(x[0])
    out = []
    for p, row in enumerate(x):
        new = []
        for j, value in enumerate(row):
            angle = p / 10000 ** (2 * (j // 2) / d_model)
            new.append(value + (math.sin(angle) if j % 2 == 0 else math.cos(angle)))
        out.append(new)
    return out


def ref_rope(m: list[list[float]]) -> list[list[float]]:
    out = []
    for p, row in enumerate(m):
        new = list(row)
        for i in range(0, len(row), 2):  # i = 2·(pair number)
            theta = p * 10000 ** (-i / len(row))
            new[i] = row[i] * math.cos(theta) - row[i + 1] * math.sin(theta)
            new[i + 1] = row[i] * math.sin(theta) + row[i + 1] * math.cos(theta)
        out.append(new)
    return out


def ref_heads(
    x: list[list[float]],
    w_q: list[list[list[float]]],
    w_k: list[list[list[float]]],
    w_v: list[list[list[float]]],
    w_o: list[list[float]],
    allowed: list[list[bool]],
    scale: bool,
    positional: str,
) -> dict[str, Any]:
    """Head by head, as one would do it on paper."""
    n, h, g = len(x), len(w_q), len(w_k)
    x = ref_position_added(x, positional)
    heads = []
    for i in range(h):
        kv = i // (h // g)
        q, k, v = ref_matmul(x, w_q[i]), ref_matmul(x, w_k[kv]), ref_matmul(x, w_v[kv])
        if positional == "rope":
            q, k = ref_rope(q), ref_rope(k)
        factor = math.sqrt(len(q[0])) if scale else 1.0
        weights = []
        for a in range(n):
            scaled = [
                sum(qa * kb for qa, kb in zip(q[a], k[b], strict=True)) / factor for b in range(n)
            ]
            seen = [s for s, ok in zip(scaled, allowed[a], strict=True) if ok]
            top = max(seen) if seen else 0.0
            exps = [
                math.exp(s - top) if ok else 0.0 for s, ok in zip(scaled, allowed[a], strict=True)
            ]
            total = sum(exps)
            weights.append([e / total if total else 0.0 for e in exps])
        output = ref_matmul(weights, v)
        heads.append({"kv_head": kv, "q": q, "k": k, "weights": weights, "output": output})
    concat = [[value for head in heads for value in head["output"][a]] for a in range(n)]
    return {"heads": heads, "concat": concat, "output": ref_matmul(concat, w_o)}


def assert_matches_reference(body: dict[str, Any], mask: dict[str, Any], scale: bool) -> None:
    n = len(body["tokens"])
    ref = ref_heads(
        body["x"], body["w_q"], body["w_k"], body["w_v"], body["w_o"],
        ref_allowed(n, mask), scale, body["positional"],
    )  # fmt: skip
    assert [head["kv_head"] for head in body["heads"]] == [r["kv_head"] for r in ref["heads"]]
    for got, want in zip(body["heads"], ref["heads"], strict=True):
        for name in ("q", "k", "weights", "output"):
            np.testing.assert_allclose(got[name], want[name], atol=1e-9, err_msg=name)
        for row, allowed_row in zip(got["weights"], got["allowed"], strict=True):
            assert math.isclose(sum(row), 1.0, abs_tol=1e-12) or not any(allowed_row)
    np.testing.assert_allclose(body["concat"], ref["concat"], atol=1e-9)
    np.testing.assert_allclose(body["output"], ref["output"], atol=1e-9)


# ---------------------------------------------------------------- the math


def test_kv_head_of_groups_consecutive_query_heads() -> None:
    assert [mh.kv_head_of(i, 8, 2) for i in range(8)] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert [mh.kv_head_of(i, 4, 4) for i in range(4)] == [0, 1, 2, 3]
    assert [mh.kv_head_of(i, 4, 1) for i in range(4)] == [0, 0, 0, 0]


def test_one_head_without_position_is_the_single_head_engine() -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((5, 3))
    w_q, w_k, w_v = rng.standard_normal((3, 3, 2))
    allowed = build_mask(5, causal=True)
    result = mh.multi_head_attention(x, w_q[None], w_k[None], w_v[None], allowed)
    (head,), kv = result.heads, result.kv_head
    single = attend(x @ w_q, x @ w_k, x @ w_v, allowed)  # Q = X·W_Q, K = X·W_K, V = X·W_V
    assert kv == [0]
    assert result.output is None
    np.testing.assert_array_equal(result.concat, head.output)
    np.testing.assert_array_equal(head.weights, single.weights)
    np.testing.assert_array_equal(head.output, single.output)


@pytest.mark.parametrize("positional", ["none", "sinusoidal", "rope"])
def test_one_head_attention_is_multi_head_attention_with_one_head(positional: Positional) -> None:
    rng = np.random.default_rng(2)
    x = rng.standard_normal((5, 4))
    w_q, w_k, w_v = rng.standard_normal((3, 4, 4))
    allowed = build_mask(5, causal=True)
    one = mh.one_head_attention(x, w_q, w_k, w_v, allowed, True, positional)
    many = mh.multi_head_attention(x, w_q[None], w_k[None], w_v[None], allowed, True, positional)
    np.testing.assert_array_equal(one.x_in, many.x_in)
    for name in ("q", "k", "v", "scores", "masked", "weights", "output"):
        np.testing.assert_array_equal(getattr(one.head, name), getattr(many.heads[0], name))
    if positional != "none":  # position reached the head: not the plain projections
        assert not np.array_equal(one.head.scores, (x @ w_q) @ (x @ w_k).T)


def test_query_heads_of_one_group_share_keys_and_values() -> None:
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 6))
    w_q, w_k, w_v = (
        rng.standard_normal((6, 6, 2)),
        rng.standard_normal((2, 6, 2)),
        rng.standard_normal((2, 6, 2)),
    )
    w_o = rng.standard_normal((12, 6))
    result = mh.multi_head_attention(x, w_q, w_k, w_v, build_mask(4), positional="rope", w_o=w_o)
    assert result.kv_head == [0, 0, 0, 1, 1, 1]
    for i in (1, 2):
        assert result.heads[i].k is result.heads[0].k
        assert result.heads[i].v is result.heads[0].v
    assert not np.allclose(result.heads[2].k, result.heads[3].k)
    assert result.concat.shape == (4, 12)
    np.testing.assert_allclose(result.output, result.concat @ w_o)


# ---------------------------------------------------------------- the API


def test_defaults_are_four_heads_on_the_worked_example(client: TestClient) -> None:
    body = client.post("/api/heads", json={}).json()
    assert body["tokens"] == ["The", "cat", "sleeps"]
    assert body["x"] == [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]
    assert (body["d_model"], body["d_head"], body["kv_heads"]) == (2, 2, 4)
    assert len(body["heads"]) == 4
    assert np.shape(body["w_q"]) == (4, 2, 2)
    assert np.shape(body["w_o"]) == (8, 2)
    assert np.shape(body["concat"]) == (3, 8)
    assert np.shape(body["output"]) == (3, 2)
    assert body["heads"][0]["masked"][0][1] is None  # causal, as /api/attention
    assert_matches_reference(body, {"causal": True}, True)


@pytest.mark.parametrize(
    ("heads", "kv_heads", "this", "multi_head"),
    [(8, 8, 64, 64), (8, 2, 16, 64), (8, 1, 8, 64)],  # 2 · 1 layer · g · d_head 2 · 2 bytes
)
def test_kv_cache_bytes_per_token_shrinks_with_fewer_kv_heads(
    client: TestClient, heads: int, kv_heads: int, this: int, multi_head: int
) -> None:
    body = client.post("/api/heads", json={"heads": heads, "kv_heads": kv_heads}).json()
    assert body["kv_cache_bytes_per_token"] == {
        "bytes_per_element": 2, "this": this, "multi_head": multi_head,
    }  # fmt: skip


def test_given_projections_are_used_as_given(client: TestClient) -> None:
    x = [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]
    identity = [[1.0, 0.0], [0.0, 1.0]]
    request = {
        "tokens": ["a", "b", "c"], "x": x, "heads": 2, "kv_heads": 1,
        "w_q": [identity, [[0.0, 1.0], [1.0, 0.0]]], "w_k": [identity], "w_v": [identity],
        "w_o": [[1, 0], [0, 1], [0, 0], [0, 0]], "mask": {}, "positional": "none",
    }  # fmt: skip
    body = client.post("/api/heads", json=request).json()
    assert body["w_q"] == request["w_q"]
    np.testing.assert_allclose(body["output"], body["heads"][0]["output"])  # W_O keeps head 0
    assert_matches_reference(body, {}, True)


def test_positional_on_the_attention_endpoint_means_the_same(client: TestClient) -> None:
    for kind in ("sinusoidal", "rope"):
        one = client.post("/api/attention", json={"positional": kind, "mask": {}}).json()
        request = {
            "heads": 1, "x": one["x"], "tokens": one["tokens"], "mask": {}, "positional": kind,
            "w_q": [one["w_q"]], "w_k": [one["w_k"]], "w_v": [one["w_v"]], "w_o": [[1, 0], [0, 1]],
        }  # fmt: skip
        many = client.post("/api/heads", json=request).json()
        assert one["positional"] == kind
        np.testing.assert_allclose(one["weights"], many["heads"][0]["weights"], atol=1e-12)
        np.testing.assert_allclose(one["output"], many["output"], atol=1e-12)
    plain = client.post("/api/attention", json={}).json()
    assert plain["positional"] == "none"
    assert plain["x_positioned"] == plain["x"]


H, A = "/api/heads", "/api/attention"
X3 = [[1, 0], [0, 1], [1, 1]]


@pytest.mark.parametrize(
    ("endpoint", "request_body", "field", "words"),
    [
        (H, {"heads": 4, "kv_heads": 3}, "kv_heads", "does not divide 4"),
        (H, {"heads": 6, "kv_heads": 4}, "kv_heads", "1, 2, 3, 6"),
        (H, {"positional": "rope", "d_head": 3}, "positional", "d_head is 3 (odd)"),
        (A, {"positional": "rope", "d_k": 3}, "positional", "d_k is 3 (odd)"),
        (H, {"positional": "learned"}, "positional", "one of none, sinusoidal, rope"),
        (A, {"positional": "alibi"}, "positional", "one of none, sinusoidal, rope"),
        (H, {"positional": 3}, "positional", "one of none"),
        (H, {"heads": 2, "w_q": [[[1, 0], [0, 1]]]}, "w_q", "1 matrix but heads is 2"),
        (H, {"heads": 2, "kv_heads": 2, "w_k": [[[1, 0]]]}, "w_k", "1 matrix but kv_heads is 2"),
        (H, {"heads": 1, "w_v": [[[1, 0]], [[1, 0]]]}, "w_v", "2 matrices but kv_heads is 1"),
        (H, {"x": X3, "heads": 1, "w_q": [[[1, 0]]]}, "w_q", "w_q[0] has 1 rows but each x"),
        (H, {"heads": 1, "d_head": 3, "w_k": [[[1], [0]]]}, "w_k", "1 columns but d_head is 3"),
        (H, {"heads": 1, "w_q": [[[1], [0, 1]]]}, "w_q", "w_q[0] row 1 has 2 numbers"),
        (H, {"heads": 2, "w_o": [[1, 0]]}, "w_o", "= 4 × 2"),
        (H, {"heads": 17}, "heads", "at most 16"),
        (H, {"heads": 0}, "heads", "at least 1"),
        (H, {"tokens": ["a"], "x": [[1], [2.0]]}, "x", "give one row of x per token"),
        (H, {"mask": {"padding": [True]}}, "mask", "3 tokens"),
    ],
)  # fmt: skip
def test_bad_requests_get_a_422_naming_the_field(
    client: TestClient, endpoint: str, request_body: dict[str, Any], field: str, words: str
) -> None:
    response = client.post(endpoint, json=request_body)
    assert response.status_code == 422
    (error,) = response.json()["detail"]
    assert error["msg"].startswith(field)
    assert words in error["msg"]


# ---------------------------------------------------------------- properties

API = TestClient(create_app(Settings()), raise_server_exceptions=False)
Floats = st.floats(-2, 2, allow_nan=False).map(lambda v: round(v, 3))


@st.composite
def heads_requests(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any]]:
    g = draw(st.integers(1, 3))
    h = g * draw(st.integers(1, 3))
    n = draw(st.integers(1, 7))
    d_model = draw(st.integers(1, 5))
    positional = draw(st.sampled_from(["none", "sinusoidal", "rope"]))
    d_head = draw(st.integers(1, 2)) * 2 if positional == "rope" else draw(st.integers(1, 4))
    mask: dict[str, Any] = {"causal": draw(st.booleans())}
    if draw(st.booleans()):
        mask["window"] = draw(st.integers(1, n + 1))
    if draw(st.booleans()):
        mask["padding"] = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    if draw(st.booleans()):
        row = st.lists(st.booleans(), min_size=n, max_size=n)
        mask["allowed"] = draw(st.lists(row, min_size=n, max_size=n))
    request: dict[str, Any] = {
        "tokens": draw(st.lists(st.sampled_from(["a", "b", "c", "d"]), min_size=n, max_size=n)),
        "heads": h, "kv_heads": g, "d_head": d_head, "d_model": d_model,
        "mask": mask, "scale": draw(st.booleans()), "positional": positional,
        "seed": draw(st.integers(0, 1000)),
    }  # fmt: skip

    def matrix(rows: int, cols: int) -> Any:
        return st.lists(
            st.lists(Floats, min_size=cols, max_size=cols), min_size=rows, max_size=rows
        )

    if draw(st.booleans()):  # sometimes every input given, sometimes every input seeded
        request["x"] = draw(matrix(n, d_model))
        request["w_q"] = [draw(matrix(d_model, d_head)) for _ in range(h)]
        request["w_k"] = [draw(matrix(d_model, d_head)) for _ in range(g)]
        request["w_v"] = [draw(matrix(d_model, d_head)) for _ in range(g)]
        request["w_o"] = draw(matrix(h * d_head, d_model))
    return request, mask


@settings(max_examples=60, deadline=None)
@given(case=heads_requests())
def test_every_stage_matches_the_head_by_head_reference(
    case: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    request, mask = case
    response = API.post("/api/heads", json=request)
    assert response.status_code == 200, response.text
    body = response.json()
    for name in ("x", "w_q", "w_k", "w_v", "w_o"):
        if name in request:
            assert body[name] == request[name]
    assert np.shape(body["w_q"]) == (request["heads"], body["d_model"], request["d_head"])
    assert np.shape(body["w_k"]) == (request["kv_heads"], body["d_model"], request["d_head"])
    assert_matches_reference(body, mask, request["scale"])
