"""One JSON line per request on stdout; 422s at info, unexpected errors at error with the id
the user sees."""

import json
from collections.abc import Callable

import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from app.web.requestlog import configure_logging
from app.web.security import INCOMING_ID
from tests.aio import run_async
from tests.web.test_security import failing_app


def lines(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def request_lines(text: str) -> list[dict]:
    return [line for line in lines(text) if line["logger"] == "attention_lab.requests"]


@pytest.mark.parametrize(
    ("method", "path", "body", "status"),
    [
        ("GET", "/healthz", None, 200),
        ("POST", "/api/attention", {}, 200),
        ("POST", "/api/attention", {"tokens": []}, 422),
        ("GET", "/no-such-page", None, 404),
    ],
)
def test_one_json_line_per_request_on_stdout(
    fresh_client: TestClient, capsys: pytest.CaptureFixture[str], method, path, body, status
) -> None:
    capsys.readouterr()
    response = fresh_client.request(method, path, json=body)
    [line] = request_lines(capsys.readouterr().out)
    assert response.status_code == status
    assert line["level"] == "info"
    assert (line["method"], line["path"], line["status"]) == (method, path, status)
    assert 0 <= line["duration_ms"] < 10_000
    assert line["request_id"] == response.headers["x-request-id"]


def test_a_validation_failure_is_logged_at_info_with_its_messages(
    fresh_client: TestClient, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    response = fresh_client.post("/api/attention", json={"tokens": ["a"], "query": 3})
    [line] = request_lines(capsys.readouterr().out)
    assert (line["level"], line["status"]) == ("info", 422)
    assert line["invalid"] == [e["msg"] for e in response.json()["detail"]]
    assert line["invalid"][0].startswith("query is 3")


def test_the_log_level_setting_silences_request_lines(
    capsys: pytest.CaptureFixture[str], make_client: Callable[..., TestClient]
) -> None:
    client = make_client(log_level="warning")
    capsys.readouterr()
    client.get("/healthz")
    assert request_lines(capsys.readouterr().out) == []
    configure_logging("info")


def test_an_unexpected_error_is_logged_at_error_with_the_id_the_user_sees(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with TestClient(failing_app(), raise_server_exceptions=False) as client:
        capsys.readouterr()
        response = client.get("/boom")
    [line] = request_lines(capsys.readouterr().out)
    assert line["level"] == "error"
    assert line["status"] == 500
    assert line["request_id"] == response.headers["x-request-id"]
    assert line["request_id"] in response.json()["detail"]
    assert "RuntimeError: database password" in line["exception"]


@pytest.mark.parametrize(
    ("sent", "kept"),
    [("proxy-id-12345678", True), ("short", False), ("bad id\nforged: line", False)],
)
def test_a_proxys_request_id_is_kept_only_when_well_formed(
    client: TestClient, sent: str, kept: bool
) -> None:
    response = client.get("/healthz", headers={"x-request-id": sent})
    returned = response.headers["x-request-id"]
    assert (returned == sent) is kept
    assert INCOMING_ID.fullmatch(returned)


def test_a_log_line_stays_short_whatever_the_request(
    client: TestClient, capsys: pytest.CaptureFixture[str]
) -> None:
    nans = '{"x": [' + ", ".join(["[" + ", ".join(["NaN"] * 64) + "]"] * 256) + "]}"
    capsys.readouterr()
    client.post("/api/attention", content=nans, headers={"content-type": "application/json"})
    client.get("/no-such-page-" + "a" * 20_000)
    out = capsys.readouterr().out
    first, second = request_lines(out)
    assert len(first["invalid"]) == 21
    assert first["invalid"][-1].startswith("and 16,364 more problems")
    assert len(second["path"]) == 300
    assert max(len(line) for line in out.splitlines()) < 12_000


def test_a_client_that_leaves_mid_body_is_logged_at_info_as_499(
    capsys: pytest.CaptureFixture[str],
) -> None:
    app = create_app()
    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
        "scheme": "http", "path": "/api/attention", "raw_path": b"/api/attention",
        "query_string": b"", "root_path": "", "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 80),
        "headers": [(b"content-type", b"application/json"), (b"content-length", b"100")],
    }  # fmt: skip
    messages = [
        {"type": "http.request", "body": b'{"tokens": ', "more_body": True},
        {"type": "http.disconnect"},
    ]
    sent: list[dict] = []

    async def receive() -> dict:
        return messages.pop(0) if messages else {"type": "http.disconnect"}

    async def send(message: dict) -> None:
        sent.append(message)

    capsys.readouterr()
    run_async(app(scope, receive, send))
    [line] = request_lines(capsys.readouterr().out)
    assert (line["level"], line["status"]) == ("info", 499)
    assert "exception" not in line
