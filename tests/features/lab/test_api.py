"""/api/attention and /healthz through the HTTP stack."""

import jsonschema
import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings

from app.core.rules import WORKED_EXAMPLE_REQUEST
from tests.reference import assert_stages_close, head_requests, plain_answer


def test_healthz(client: TestClient) -> None:
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json()["status"] == "ok"


def test_empty_request_is_the_worked_example(client: TestClient) -> None:
    body = client.post("/api/attention", json={}).json()
    assert body["tokens"] == ["The", "cat", "sleeps"]
    assert body["x"] == [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]
    assert body["q"] == [[1.0, 0.5], [0.0, 1.0], [1.0, 1.5]]
    assert body["k"] == [[0.5, 1.0], [1.0, 0.0], [1.5, 1.0]]
    assert body["v"] == [[1.0, -1.0], [0.5, 1.0], [1.5, 0.0]]
    assert body["masked"][1][2] is None
    assert body["allowed"][1] == [True, True, False]
    query = body["query"]
    assert (query["index"], query["token"]) == (1, "cat")
    assert [r["dot"] for r in query["rows"]] == [1.0, 0.0, 1.0]
    assert [round(r["scaled"], 3) for r in query["rows"][:2]] == [0.707, 0.0]
    assert [r["visible"] for r in query["rows"]] == [True, True, False]
    assert [round(r["weight"], 3) for r in query["rows"]] == [0.670, 0.330, 0.0]
    weighted = [[round(v, 2) for v in r["weighted_value"]] for r in query["rows"]]
    assert weighted == [[0.67, -0.67], [0.17, 0.33], [0.0, 0.0]]
    assert [round(v, 2) for v in query["output"]] == [0.83, -0.34]
    assert body["empty_rows"] == []


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(request=head_requests())
def test_every_stage_over_http_matches_the_plain_head(client: TestClient, request: dict) -> None:
    response = client.post("/api/attention", json=request)
    assert response.status_code == 200, response.text
    body = response.json()
    assert_stages_close(body, plain_answer(request, body))
    assert body["tokens"] == request["tokens"]


@pytest.mark.parametrize(
    ("x", "w_q"),
    [
        ([[1e6], [-1e6], [1e6]], [[1e6]]),  # scores of ±1e18
        ([[1e6], [1e6], [1e6]], [[-1e6]]),  # every score −1e18
        ([[1e-6], [0.0], [-1e-6]], [[1e6]]),
    ],
)
def test_huge_scores_still_give_finite_weights(client: TestClient, x: list, w_q: list) -> None:
    request = {"tokens": ["a", "b", "c"], "x": x, "w_q": w_q, "w_k": [[1.0]], "w_v": [[1.0]]}
    body = client.post("/api/attention", json={**request, "mask": {}}).json()
    for row in body["weights"]:
        assert all(0.0 <= w <= 1.0 for w in row)
        assert sum(row) == pytest.approx(1.0, abs=1e-12)
    assert all(isinstance(o, float) for row in body["output"] for o in row)


def test_hidden_scores_are_null_and_hidden_weights_exactly_zero(client: TestClient) -> None:
    body = client.post(
        "/api/attention", json={"tokens": ["a", "b", "c"], "mask": {"padding": [True, False, True]}}
    ).json()
    assert [row[0] for row in body["masked"]] == [None, None, None]
    assert [row[0] for row in body["weights"]] == [0.0, 0.0, 0.0]
    assert [row[1] for row in body["weights"]] == [1.0, 1.0, 1.0]


def test_a_query_that_sees_nothing_gets_zeros_and_is_listed(client: TestClient) -> None:
    allowed = [[False, False], [True, True]]
    body = client.post(
        "/api/attention", json={"tokens": ["a", "b"], "mask": {"allowed": allowed}, "query": 0}
    ).json()
    assert body["empty_rows"] == [0]
    assert body["weights"][0] == [0.0, 0.0]
    assert body["output"][0] == [0.0] * body["d_v"]
    assert body["masked"][0] == [None, None]
    assert body["query"]["output"] == [0.0] * body["d_v"]
    assert "NaN" not in client.post("/api/attention", json={"mask": {"allowed": allowed}}).text


# ---------------------------------------------------------------- the contract at /docs


def openapi(client: TestClient) -> dict:
    return client.get("/openapi.json").json()


def test_docs_show_the_worked_example_as_the_request_example(client: TestClient) -> None:
    body = openapi(client)["paths"]["/api/attention"]["post"]["requestBody"]
    media = body["content"]["application/json"]
    assert media["schema"] == {"$ref": "#/components/schemas/AttentionRequest"}
    example = media["examples"]["worked"]["value"]
    assert example == WORKED_EXAMPLE_REQUEST
    # Sending the example gives exactly what {} gives: it is the worked example.
    assert client.post("/api/attention", json=example).json() == (
        client.post("/api/attention", json={}).json()
    )
    assert client.get("/docs").status_code == 200


WINDOW_AND_PADDING = {
    "tokens": ["a", "b", "c", "d"],
    "mask": {"window": 2, "padding": [False] * 3 + [True]},
}
GQA_ROPE = {"heads": 4, "kv_heads": 2, "positional": "rope"}


@pytest.mark.parametrize(
    ("path", "name", "request_", "head_name"),
    [
        ("/api/attention", "AttentionResult", {}, None),
        ("/api/attention", "AttentionResult", WINDOW_AND_PADDING, None),
        ("/api/heads", "HeadsResult", GQA_ROPE, "QueryHead"),
    ],
)
def test_responses_match_the_documented_schema(
    client: TestClient, path: str, name: str, request_: dict, head_name: str | None
) -> None:
    """`head_name`: where one head's stages are documented, when not in the body itself."""
    spec = openapi(client)
    response = spec["paths"][path]["post"]["responses"]["200"]
    ref = response["content"]["application/json"]["schema"]["$ref"]
    assert ref == f"#/components/schemas/{name}"
    schema = {"$ref": ref, "components": spec["components"]}
    body = client.post(path, json=request_).json()
    jsonschema.validate(body, schema)
    documented = spec["components"]["schemas"][name]
    assert set(body) == set(documented["properties"]) == set(documented["required"])
    head = body["heads"][0] if head_name else body
    masked_cell = spec["components"]["schemas"][head_name or name]["properties"]["masked"]
    assert {"type": "null"} in masked_cell["items"]["items"]["anyOf"]
    assert any(cell is None for row in head["masked"] for cell in row)


WIDE_COST = "/api/cost?seq_len=1000000000&heads=128&layers=128&batch=65536&kv_heads=8"


@pytest.mark.parametrize(
    ("method", "path", "request_", "name"),
    [
        ("post", "/api/kernel/tiled", {}, "TiledResult"),
        ("post", "/api/kernel/tiled", {**WINDOW_AND_PADDING, "order": "fa1"}, "TiledResult"),
        ("post", "/api/kernel/decode", {}, "DecodeResult"),
        ("post", "/api/kernel/decode", {"cache": {"policy": "sinks", "window": 2}}, "DecodeResult"),
        ("get", "/api/cost", "/api/cost", "CostResult"),
        ("get", "/api/cost", "/api/cost?preset=deepseek-v2&seq_len=32768", "CostResult"),
        ("get", "/api/cost", WIDE_COST, "CostResult"),
        ("get", "/api/cost/models", "/api/cost/models", "PresetList"),
    ],
)
def test_kernel_and_cost_answers_match_the_documented_schema(
    client: TestClient, method: str, path: str, request_: dict | str, name: str
) -> None:
    """The same check for the walk-throughs and the calculator; `request_` is the body of a
    POST, or the URL of a GET."""
    spec = openapi(client)
    response = spec["paths"][path][method]["responses"]["200"]
    ref = response["content"]["application/json"]["schema"]["$ref"]
    assert ref == f"#/components/schemas/{name}"
    if method == "post":
        body = client.post(path, json=request_).json()
    else:
        body = client.get(str(request_)).json()
    jsonschema.validate(body, {"$ref": ref, "components": spec["components"]})
    documented = spec["components"]["schemas"][name]
    assert set(body) == set(documented["properties"]) == set(documented["required"])


def test_integers_beyond_64_bits_still_go_out_as_floats(client: TestClient) -> None:
    """A typed cost result with a 10²⁷-byte count is written, not refused: the wide numbers
    become the nearest float, the narrow ones stay exact integers."""
    body = client.get(WIDE_COST).json()
    n, h, layers, batch = 10**9, 128, 128, 65_536
    assert body["score_bytes_model"] == float(2 * n * n * h * layers * batch)
    assert isinstance(body["score_bytes_model"], float)
    assert body["score_entries_per_head"] == n * n  # 10¹⁸ fits in 64 bits: an int
    assert isinstance(body["score_entries_per_head"], int)


MODEL_FULL = {"text": "The cat sat.", "layer": 0, "head": 2, "compare_text": "A dog ran."}


@pytest.mark.parametrize(
    ("request_", "absent"),
    [
        ({"text": "The cat sat."}, {"head", "similarity", "compare", "ranking"}),
        ({**MODEL_FULL, "ablate": [[0, 1]], "rank_heads": True, "include_weights": False}, set()),
    ],
)
def test_model_answers_match_the_documented_schema(
    client: TestClient, request_: dict, absent: set[str]
) -> None:
    """/api/model leaves out what does not apply: those fields are documented, not required."""
    spec = openapi(client)
    response = spec["paths"]["/api/model"]["post"]["responses"]["200"]
    ref = response["content"]["application/json"]["schema"]["$ref"]
    assert ref == "#/components/schemas/ModelResult"
    body = client.post("/api/model", json=request_).json()
    jsonschema.validate(body, {"$ref": ref, "components": spec["components"]})
    documented = spec["components"]["schemas"]["ModelResult"]
    assert set(body) | absent <= set(documented["properties"])
    assert absent.isdisjoint(body)
    assert set(documented["required"]) <= set(body)
    if "head" in body:
        assert body["head"]["layer"] == 0
        assert len(body["head"]["weights"]) == len(body["tokens"])
