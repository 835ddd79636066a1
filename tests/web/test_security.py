"""Security headers, size caps and error answers on every route, found from the app itself."""

from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from app import STATIC_DIR
from app.main import create_app
from app.settings import Settings
from app.web.security import content_security_policy
from tests.routes import APP, PAGE_STATE, PAGES, api_routes

# Markup and script in the places a student can type: they must come back as text.
PAYLOADS = [
    "<script>alert(1)</script>",
    '"><img src=x onerror=alert(1)>',
    "</script><script>alert(1)</script>",
    "<svg onload=alert(1)>",
    "' onmouseover='alert(1)",
    "<b>bold</b>&amp;",
]
# Two payloads that each try every context (attribute, element, script block) at once, for
# the pages × parameters cross product.
URL_PAYLOADS = [
    "\"'><img src=x onerror=alert(1)><script>alert(1)</script>",
    "</script><svg onload=alert(1)>&lt;b&gt;",
]
BODY_ROUTES = sorted(
    path
    for path, route in api_routes(APP).items()
    if route.dependant.body_params and not route.dependant.path_params
)


def requests_of_every_kind() -> list[tuple[str, str, dict | None]]:
    """(method, path, json) for every page, every body route, and every kind of answer."""
    cases = [("GET", path, None) for path in PAGES]
    cases += [("POST", path, {}) for path in BODY_ROUTES]
    cases += [
        ("POST", "/api/attention", {"tokens": 5}),  # 422
        ("GET", "/healthz", None),
        ("GET", "/openapi.json", None),
        ("GET", "/static/app.css", None),
        ("GET", "/no-such-page", None),  # 404
        ("DELETE", "/api/attention", None),  # 405
    ]
    return cases


@pytest.mark.parametrize(("method", "path", "body"), requests_of_every_kind())
def test_every_answer_carries_the_security_headers(
    client: TestClient, method: str, path: str, body: dict | None
) -> None:
    response = client.request(method, path, json=body)
    csp = response.headers["content-security-policy"]
    assert "script-src 'self';" in csp
    assert "unsafe-eval" not in csp
    assert "'unsafe-inline'" not in csp.split("script-src")[1].split(";")[0]
    assert "frame-ancestors 'self'" in csp
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["referrer-policy"] == "strict-origin-when-cross-origin"
    assert len(response.headers["x-request-id"]) >= 8
    assert "server" not in response.headers or "uvicorn" not in response.headers["server"]


def test_frame_ancestors_come_from_the_settings() -> None:
    course = "'self' https://course.example.org"
    app = create_app(Settings(frame_ancestors=course))
    with TestClient(app) as client:
        csp = client.get("/healthz").headers["content-security-policy"]
    assert csp == content_security_policy(course)
    assert csp.endswith(f"frame-ancestors {course}")


def test_headers_are_not_duplicated_when_a_route_sets_one(client: TestClient) -> None:
    response = client.get("/static/app.css")
    assert len(response.headers.get_list("x-content-type-options")) == 1


@pytest.mark.parametrize("path", BODY_ROUTES)
def test_every_body_route_refuses_an_oversized_body_unread(path: str) -> None:
    app = create_app(Settings(max_body_bytes=2048))
    with TestClient(app) as client:
        json = {"content-type": "application/json"}
        declared = client.post(path, content=b"{}", headers={**json, "content-length": "999999"})
        streamed = client.post(path, content=iter([b" " * 1500, b" " * 1500]), headers=json)
    for response in (declared, streamed):
        assert response.status_code == 413
        assert "larger than 2,048 bytes" in response.json()["detail"]


@pytest.mark.parametrize("path", [*PAGES, "/api/attention"])
def test_an_overlong_query_string_is_refused(path: str) -> None:
    app = create_app(Settings(max_query_bytes=1024))
    with TestClient(app) as client:
        response = client.get(f"{path}?tokens={'a' * 2000}")
    assert response.status_code == 414
    assert "longer than 1,024 bytes" in response.json()["detail"]


def failing_app() -> FastAPI:
    app = create_app(Settings())

    @app.get("/boom")
    def boom() -> None:
        secret = "/srv/attention-lab/app/secret.py"
        raise RuntimeError(f"database password in {secret}")

    return app


def test_an_unexpected_error_shows_an_id_and_nothing_internal() -> None:
    with TestClient(failing_app(), raise_server_exceptions=False) as client:
        response = client.get("/boom")
    assert response.status_code == 500
    detail = response.json()["detail"]
    request_id = response.headers["x-request-id"]
    assert f"error id {request_id}" in detail
    for leak in ("Traceback", "RuntimeError", "password", "/srv", ".py", "line "):
        assert leak not in response.text
    assert response.headers["content-security-policy"]


@pytest.mark.parametrize("payload", PAYLOADS)
def test_payloads_in_tokens_come_back_as_json_strings(client: TestClient, payload: str) -> None:
    response = client.post("/api/attention", json={"tokens": [payload, "x"]})
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert response.json()["tokens"] == [payload, "x"]


PAGE_PARAM_CASES = [(path, name) for path, names in PAGE_STATE.items() for name in names]


def assert_inert(response: httpx.Response, payload: str) -> None:
    """HTML carries the payload only escaped; anything else is JSON the browser won't run."""
    assert response.status_code < 500
    assert response.headers["x-content-type-options"] == "nosniff"
    if response.headers["content-type"].startswith("text/html"):
        assert payload not in response.text
        assert "<script>alert" not in response.text
    else:
        assert response.headers["content-type"] == "application/json"
        response.json()


@pytest.mark.parametrize("payload", URL_PAYLOADS)
@pytest.mark.parametrize(("path", "name"), PAGE_PARAM_CASES)
def test_payloads_in_page_urls_are_escaped(
    client: TestClient, path: str, name: str, payload: str
) -> None:
    assert_inert(client.get(f"{path}?{name}={quote(payload)}"), payload)


@pytest.mark.parametrize("payload", PAYLOADS)
def test_payloads_in_the_path_are_not_echoed(client: TestClient, payload: str) -> None:
    response = client.get(f"/{quote(payload)}")
    assert response.status_code == 404
    assert_inert(response, payload)


class InlineCode(HTMLParser):
    """Collects what a strict CSP would refuse: inline script code, on* handler attributes,
    javascript: URLs."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []
        self.in_script: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        named = dict(attrs)
        self.found += [f"<{tag} {k}=…>" for k, _ in attrs if k.startswith("on")]
        self.found += [f"<{tag} {k}=javascript:…>" for k, v in attrs if "javascript:" in (v or "")]
        if tag == "script" and "src" not in named and named.get("type") != "application/json":
            self.in_script = tag

    def handle_data(self, data: str) -> None:
        if self.in_script and data.strip():
            self.found.append(f"inline script: {data.strip()[:60]}")

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self.in_script = None


@pytest.mark.parametrize("path", sorted(PAGES))
def test_pages_carry_no_inline_code(client: TestClient, path: str) -> None:
    parser = InlineCode()
    parser.feed(client.get(path).text)
    assert parser.found == []


@pytest.mark.parametrize("script", sorted((STATIC_DIR / "js").glob("*.js")), ids=lambda p: p.name)
def test_our_scripts_never_evaluate_strings(script: Path) -> None:
    code = script.read_text()
    for forbidden in ("eval(", "new Function", 'setTimeout("', "setTimeout('"):
        assert forbidden not in code, f"{script.name}: {forbidden}"
