"""A JSON route FastAPI has routed once is called directly by app/web/middleware/direct.py,
and answers every request exactly as the long way does: answers, errors, their language,
headers, the log line."""

import json
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from app.main import create_app
from app.settings import Settings, get_settings
from app.web.json_io import DirectRoute
from app.web.middleware.direct import DirectRoutes
from tests.aio import run_async
from tests.conftest import TEST_SETTINGS

# No response cache, so that a repeated request is computed again; a budget that 40 tokens
# at width 8 go over.
SETTINGS = Settings(**TEST_SETTINGS, response_cache_bytes=0, answer_budget_bytes=100_000)
JSON = {"content-type": "application/json"}
SPANISH = {**JSON, "accept-language": "es-ES,es;q=0.9"}
WIDE = {"tokens": [f"t{i}" for i in range(40)], "d_model": 8}
CASES = [
    ("/api/attention", b'{"tokens": ["the", "cat", "sat"], "mask": {"causal": false}}', JSON),
    ("/api/attention", b'{"query": "2"}', JSON),  # pydantic's 422
    ("/api/attention", b'{"tokens": ["a", "b"], "query": 5}', JSON),  # the service's 422
    ("/api/attention", b'{"tokens": ["a"], "x": [[NaN, 1]]}', JSON),  # Python's JSON only
    ("/api/attention", b'{"tokens": [', JSON),  # not JSON
    ("/api/attention", json.dumps(WIDE).encode(), JSON),  # over the budget
    ("/api/attention", json.dumps(WIDE).encode(), SPANISH),  # the budget's sentence in Spanish
    ("/api/heads", b'{"tokens": ["a", "b"], "heads": 2}', JSON),
    ("/api/heads", b'{"heads": 0}', JSON),
]


def routes_of(app: FastAPI) -> dict[str, DirectRoute]:
    """The table of the app's DirectRoutes layer (the app has served a request)."""
    layer: Any = app.middleware_stack
    while not isinstance(layer, DirectRoutes):
        layer = layer.app
    return layer.routes


def warmed(path: str) -> TestClient:
    """A client of an app that has routed one POST to `path`."""
    client = TestClient(create_app(SETTINGS), raise_server_exceptions=False)
    assert client.post(path, json={}).status_code == 200
    assert path in routes_of(client.app)
    return client


def answered(client: TestClient, path: str, body: bytes, headers: dict[str, str]) -> tuple:
    response = client.post(path, content=body, headers=headers)
    kept = {k: v for k, v in response.headers.items() if k != "x-request-id"}
    return response.status_code, kept, response.content


@pytest.mark.parametrize(("path", "body", "headers"), CASES)
def test_a_route_called_directly_answers_as_the_long_way(
    path: str, body: bytes, headers: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    direct_calls: list[str] = []
    call = DirectRoute.__call__

    async def counted(self: DirectRoute, scope: Any, receive: Any, send: Any) -> None:
        direct_calls.append(scope["path"])
        await call(self, scope, receive, send)

    monkeypatch.setattr(DirectRoute, "__call__", counted)
    long_way = TestClient(create_app(SETTINGS), raise_server_exceptions=False)
    expected = answered(long_way, path, body, headers)  # the app's first request to path
    assert direct_calls == []
    assert answered(warmed(path), path, body, headers) == expected
    assert direct_calls == [path]


def test_the_direct_answers_carry_what_the_long_way_adds(
    capsys: pytest.CaptureFixture[str],
) -> None:
    client = warmed("/api/attention")
    capsys.readouterr()
    response = client.post("/api/attention", json=WIDE, headers={"accept-language": "es"})
    assert response.json()["detail"][0]["msg"].startswith("tokens, d_model, d_k, d_v: la respuesta")
    assert response.headers["content-security-policy"].startswith("default-src 'self'")
    [line] = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert (line["path"], line["status"]) == ("/api/attention", 422)
    assert line["request_id"] == response.headers["x-request-id"]
    assert line["invalid"] == [response.json()["detail"][0]["msg"]]


def test_a_query_string_or_a_dependency_override_goes_the_long_way() -> None:
    client = warmed("/api/attention")
    spanish = client.post("/api/attention?lang=es", json=WIDE)
    assert "la respuesta" in spanish.json()["detail"][0]["msg"]
    assert client.post("/api/attention", json={"tokens": ["a"] * 25}).status_code == 200
    client.app.dependency_overrides[get_settings] = lambda: Settings(**TEST_SETTINGS, max_tokens=20)
    refused = client.post("/api/attention", json={"tokens": ["a"] * 25})
    assert refused.status_code == 422
    assert "at most 20" in refused.json()["detail"][0]["msg"]


def test_a_client_that_leaves_mid_body_of_a_direct_call_is_logged_as_499(
    capsys: pytest.CaptureFixture[str],
) -> None:
    app = create_app(SETTINGS)
    body = b'{"tokens": ["a", "b"]}'

    async def post(messages: list[dict]) -> list[dict]:
        scope = {
            "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
            "method": "POST", "scheme": "http", "path": "/api/attention",
            "raw_path": b"/api/attention", "query_string": b"", "root_path": "",
            "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 80),
            "headers": [(b"content-type", b"application/json"), (b"content-length", b"22")],
        }  # fmt: skip
        sent: list[dict] = []

        async def receive() -> dict:
            return messages.pop(0) if messages else {"type": "http.disconnect"}

        async def send(message: dict) -> None:
            sent.append(message)

        await app(scope, receive, send)
        return sent

    async def both() -> None:
        first = await post([{"type": "http.request", "body": body}])
        assert first[0]["status"] == 200
        assert "/api/attention" in routes_of(app)
        capsys.readouterr()
        left = [{"type": "http.request", "body": body[:5], "more_body": True}]
        assert await post([*left, {"type": "http.disconnect"}]) == []

    run_async(both())
    [line] = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert (line["level"], line["status"]) == ("info", 499)
    assert "exception" not in line
