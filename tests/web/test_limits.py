"""A body over the cap answers 413 before it is parsed: announced or streamed, in process and
through uvicorn on 127.0.0.1."""

import socket
from collections.abc import Iterable, Iterator
from urllib.parse import urlsplit

import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from app.settings import Settings
from app.web.edge import too_large_message
from tests.routes import APP, api_routes

CAP = Settings().max_body_bytes


def over_cap_chunks(size: int = 64 * 1024) -> Iterator[bytes]:
    sent = 0
    while sent <= CAP:
        yield b" " * size
        sent += size


def test_a_body_announced_over_the_cap_gets_413(client: TestClient) -> None:
    response = client.post(
        "/api/attention", content=b" " * (CAP + 1), headers={"content-type": "application/json"}
    )
    assert response.status_code == 413
    assert response.json() == {"detail": too_large_message(CAP)}


def test_a_streamed_body_over_the_cap_gets_413(client: TestClient) -> None:
    response = client.post(
        "/api/attention", content=over_cap_chunks(), headers={"content-type": "application/json"}
    )
    assert response.status_code == 413
    assert response.json() == {"detail": too_large_message(CAP)}


def test_a_body_at_the_cap_is_read(client: TestClient) -> None:
    body = b"{}" + b" " * (CAP - 2)
    response = client.post(
        "/api/attention", content=body, headers={"content-type": "application/json"}
    )
    assert response.status_code == 200


def raw_exchange(base: str, head: str, chunks: Iterable[bytes] = ()) -> bytes:
    """Send a request by hand (headers, then whatever chunks) and return the status line."""
    address = urlsplit(base)
    with socket.create_connection((address.hostname, address.port), timeout=10) as sock:
        sock.sendall(head.encode())
        for chunk in chunks:
            sock.sendall(chunk)
        return sock.makefile("rb").readline()


def test_uvicorn_refuses_an_announced_body_without_reading_it(live_server: str) -> None:
    # Only the headers are sent: the answer cannot have waited for the body.
    head = (
        "POST /api/attention HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Content-Type: application/json\r\nContent-Length: {CAP + 1}\r\n\r\n"
    )
    assert raw_exchange(live_server, head).startswith(b"HTTP/1.1 413")


def test_uvicorn_refuses_a_chunked_body_once_it_passes_the_cap(live_server: str) -> None:
    head = (
        "POST /api/attention HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    chunks = (b"%x\r\n%s\r\n" % (len(c), c) for c in over_cap_chunks())
    assert raw_exchange(live_server, head, chunks).startswith(b"HTTP/1.1 413")


# HEAD on these would time attention (dense, or the decoder's steps) for seconds, as their
# GET tests do; HEAD is answered in one place for every route, which the others check.
MEASURES = {"/api/cost/measure", "/api/decoder/measure"}
# Every GET route of the app, found from the app, and two that FastAPI and the mount add.
GETS = {path for path, route in api_routes(APP).items() if "GET" in route.methods}
HEAD_PATHS = [*sorted(GETS - MEASURES), "/openapi.json", "/static/app.css"]


@pytest.mark.parametrize("path", HEAD_PATHS)
def test_head_answers_every_get_route_with_the_get_headers_and_no_body(path: str) -> None:
    with TestClient(create_app()) as client:
        get = client.get(path)
        head = client.head(path)
    assert get.status_code == head.status_code == 200
    assert head.content == b""
    assert head.headers["content-type"] == get.headers["content-type"]
    assert head.headers["content-length"] == get.headers["content-length"]


def test_head_on_a_post_only_route_is_405() -> None:
    with TestClient(create_app()) as client:
        assert client.head("/api/attention").status_code == 405
