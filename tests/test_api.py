"""/api/attention and /healthz through the HTTP stack."""

from fastapi.testclient import TestClient


def test_healthz(client: TestClient) -> None:
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


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
