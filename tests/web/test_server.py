"""`python -m app` against slow and greedy clients: app/web/server.py's bounds, over real sockets.

One server for the module, with short timeouts and small caps so that each bound shows in
about a second: heads and bodies that do not arrive in time get 408, oversized headers 431,
targets httptools cannot parse the app's 414, requests beyond the limit 503 (health checks
excepted), and beyond the connection cap the longest-waiting connection is closed.
"""

import contextlib
import os
import resource
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from app.__main__ import PROTOCOL, raise_open_file_limit, uvicorn_options
from app.settings import Settings, cgroup_cpu_limit
from app.web.edge import too_long_message
from app.web.server import HeadWithBody

ROOT = Path(__file__).resolve().parents[2]
LIMITS = {
    "HEADER_TIMEOUT_SECONDS": "1",
    "BODY_TIMEOUT_SECONDS": "1",
    "MAX_HEADER_BYTES": "8192",
    "MAX_CONNECTIONS": "64",
    "MAX_CONCURRENT_REQUESTS": "3",
    "MAX_QUERY_BYTES": "60000",
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def address() -> Iterator[tuple[str, int]]:
    port = free_port()
    env = {**os.environ, **LIMITS, "HOST": "127.0.0.1", "PORT": str(port), "WORKERS": "1"}
    env["PYTHONPATH"] = str(ROOT)
    process = subprocess.Popen(
        [sys.executable, "-m", "app"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2):
                    break
            except OSError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise
                time.sleep(0.1)
        yield ("127.0.0.1", port)
    finally:
        process.terminate()
        process.wait(timeout=10)


def connect(address: tuple[str, int], timeout: float = 15.0) -> socket.socket:
    s = socket.create_connection(address)
    s.settimeout(timeout)
    return s


def read_until_closed(s: socket.socket) -> bytes:
    out = b""
    while True:
        try:
            chunk = s.recv(65536)
        except ConnectionResetError:
            break
        if not chunk:
            break
        out += chunk
    return out


def answer(raw: bytes) -> tuple[int, dict[bytes, bytes], bytes]:
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    headers = dict(line.lower().split(b": ", 1) for line in lines[1:])
    return int(lines[0].split()[1]), headers, body


def ask(address: tuple[str, int], request: bytes) -> tuple[int, dict[bytes, bytes], bytes]:
    with connect(address) as s:
        # Refused before it was all sent: the answer is waiting anyway.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            s.sendall(request)
        return answer(read_until_closed(s))


def get(path: str) -> bytes:
    return f"GET {path} HTTP/1.1\r\nHost: lab\r\nConnection: close\r\n\r\n".encode()


def healthz_ok(address: tuple[str, int]) -> float:
    start = time.perf_counter()
    status, _, body = ask(address, get("/healthz"))
    assert (status, orjson.loads(body)["status"]) == (200, "ok")
    return time.perf_counter() - start


@pytest.mark.parametrize(
    "sent",
    [b"", b"GET / HTTP/1.1\r\nHost: lab\r\n", b"GE"],
    ids=["nothing", "half a head", "two bytes"],
)
def test_a_head_that_does_not_arrive_in_time_gets_408_and_the_connection_closed(
    address: tuple[str, int], sent: bytes
) -> None:
    start = time.perf_counter()
    status, headers, body = ask(address, sent)
    waited = time.perf_counter() - start
    assert status == 408
    assert headers[b"connection"] == b"close"
    assert "within 1 seconds" in orjson.loads(body)["detail"]
    assert 0.9 < waited < 3.0


def test_a_body_that_does_not_arrive_in_time_gets_408(address: tuple[str, int]) -> None:
    head = (
        b"POST /api/attention HTTP/1.1\r\nHost: lab\r\nContent-Type: application/json\r\n"
        b"Content-Length: 200\r\n\r\n"
    )
    start = time.perf_counter()
    status, _, _ = ask(address, head + b'{"tokens": ["a"')
    assert status == 408
    assert 0.9 < time.perf_counter() - start < 3.0


def test_a_slowly_dripped_head_is_cut_at_the_timeout(address: tuple[str, int]) -> None:
    with connect(address) as s:
        start = time.perf_counter()
        s.sendall(b"GET / HTTP/1.1\r\n")
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            for _ in range(30):  # one header byte every 0.1 s would take 3 s
                time.sleep(0.1)
                s.sendall(b"X")
        status, _, _ = answer(read_until_closed(s))
    assert status == 408
    assert time.perf_counter() - start < 2.5


@pytest.mark.parametrize(
    "headers",
    [
        b"X-Big: " + b"a" * 9000 + b"\r\n",
        b"".join(b"X-H%d: %s\r\n" % (i, b"b" * 500) for i in range(20)),
        b"Cookie: " + b"c" * 5_000_000 + b"\r\n",
    ],
    ids=["one large header", "many headers", "5 MB cookie"],
)
def test_headers_over_the_cap_get_431(address: tuple[str, int], headers: bytes) -> None:
    status, _, body = ask(address, b"GET / HTTP/1.1\r\nHost: lab\r\n" + headers + b"\r\n")
    assert status == 431
    assert "8,192 bytes" in orjson.loads(body)["detail"]


def test_headers_within_the_cap_are_served(address: tuple[str, int]) -> None:
    status, _, _ = ask(
        address,
        b"GET /healthz HTTP/1.1\r\nHost: lab\r\nConnection: close\r\nX-Fine: "
        + b"a" * 7000
        + b"\r\n\r\n",
    )
    assert status == 200


@pytest.mark.parametrize("query_bytes", [62_000, 70_000, 300_000])
def test_long_targets_get_the_apps_414_sentence(address: tuple[str, int], query_bytes: int) -> None:
    # 62,000: parsed, refused by the app (MAX_QUERY_BYTES); longer: refused by the server
    # before httptools, which cannot parse targets over 65,535 bytes, answers a bare 400.
    status, headers, body = ask(address, get("/?tokens=" + "a" * query_bytes))
    assert status == 414
    assert headers[b"content-type"].startswith(b"application/json")
    assert orjson.loads(body)["detail"] == too_long_message(60_000)


def hold_requests(address: tuple[str, int], count: int) -> list[socket.socket]:
    """Requests in progress: heads sent, bodies still to come."""
    held = []
    for _ in range(count):
        s = connect(address)
        s.sendall(
            b"POST /api/attention HTTP/1.1\r\nHost: lab\r\nContent-Type: application/json\r\n"
            b"Content-Length: 50\r\n\r\n{"
        )
        held.append(s)
    time.sleep(0.2)
    return held


def test_requests_beyond_the_limit_get_503_and_health_checks_still_answer(
    address: tuple[str, int],
) -> None:
    held = hold_requests(address, 3)
    try:
        status, headers, body = ask(address, get("/api/cost"))
        assert status == 503
        assert headers[b"retry-after"] == b"1"
        assert "try again" in orjson.loads(body)["detail"]
        healthz_ok(address)
    finally:
        for s in held:
            s.close()
    time.sleep(0.2)
    status, _, _ = ask(address, get("/api/cost"))
    assert status == 200


def test_beyond_the_connection_cap_the_longest_waiting_connections_are_closed(
    address: tuple[str, int],
) -> None:
    slow = [connect(address) for _ in range(40)]
    for s in slow:
        s.sendall(b"GET / HTTP/1.1\r\n")  # half a head each
    time.sleep(0.1)
    newer = [connect(address) for _ in range(60)]
    try:
        assert healthz_ok(address) < 1.0
        closed = 0
        for s in slow:
            s.settimeout(0.5)
            try:
                closed += s.recv(100) == b""
            except (ConnectionResetError, TimeoutError):
                closed += 1
        # 100 open + the health check's, against a cap of 64: the oldest went first.
        assert closed >= 100 + 1 - 64
    finally:
        for s in slow + newer:
            s.close()


def test_a_keep_alive_connection_serves_requests_one_after_another_and_pipelined(
    address: tuple[str, int],
) -> None:
    body = b"{}"
    post = (
        b"POST /api/attention HTTP/1.1\r\nHost: lab\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
    )
    with connect(address) as s:
        s.sendall(post)
        first = s.recv(1 << 20)
        assert first.startswith(b"HTTP/1.1 200")
        s.sendall(post + b"GET /healthz HTTP/1.1\r\nHost: lab\r\nConnection: close\r\n\r\n")
        rest = read_until_closed(s)
    assert rest.count(b"HTTP/1.1 200 OK") == 2


def test_python_m_app_serves_with_the_bounded_protocol_and_the_settings() -> None:
    settings = Settings(workers=3, keep_alive_seconds=7, max_header_bytes=4096)
    options = uvicorn_options(settings)
    assert options["http"] == PROTOCOL == "app.web.server:BoundedHttpToolsProtocol"
    assert (options["workers"], options["timeout_keep_alive"]) == (3, 7)
    assert options["loop"] == "asyncio"  # fair under saturation (see Settings.event_loop)
    assert uvicorn_options(Settings(event_loop="uvloop"))["loop"] == "uvloop"
    assert options["h11_max_incomplete_event_size"] == 4096 + 65_536


def test_the_open_file_limit_is_raised_to_the_hard_limit() -> None:
    before, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    now = raise_open_file_limit()
    assert now >= before
    assert now == resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if hard != resource.RLIM_INFINITY:
        assert now == hard


@pytest.mark.parametrize(
    ("files", "cores"),
    [
        ({"cpu.max": "150000 100000\n"}, 1.5),
        ({"cpu.max": "max 100000\n"}, None),
        ({"cpu/cpu.cfs_quota_us": "200000\n", "cpu/cpu.cfs_period_us": "100000\n"}, 2.0),
        ({"cpu/cpu.cfs_quota_us": "-1\n", "cpu/cpu.cfs_period_us": "100000\n"}, None),
        ({}, None),
    ],
    ids=["v2 quota", "v2 unlimited", "v1 quota", "v1 unlimited", "no cgroup"],
)
def test_the_cgroup_cpu_limit_is_read_in_cores(
    tmp_path: Path, files: dict[str, str], cores: float | None
) -> None:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert cgroup_cpu_limit(tmp_path) == cores


def test_workers_default_to_the_available_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("WORKERS", raising=False)
    monkeypatch.setattr("app.settings.cgroup_cpu_limit", lambda: 1.2)
    assert Settings().workers == min(2, len(os.sched_getaffinity(0)))
    monkeypatch.setattr("app.settings.cgroup_cpu_limit", lambda: None)
    assert Settings().workers == min(len(os.sched_getaffinity(0)), 64)


class Recorded:
    """A transport that records what is written to it."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.closed = False

    def write(self, data: bytes) -> None:
        self.writes.append(data)

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed


class Cycle:
    response_started = False


def test_an_answers_head_leaves_with_its_first_body_bytes_in_one_write() -> None:
    transport, cycle = Recorded(), Cycle()
    held = HeadWithBody(transport, cycle)  # type: ignore[arg-type]
    held.write(b"HTTP/1.1 100 Continue\r\n\r\n")  # before the answer starts: as it comes
    cycle.response_started = True
    held.write(b"HTTP/1.1 200 OK\r\n\r\n")
    assert transport.writes == [b"HTTP/1.1 100 Continue\r\n\r\n"]
    held.write(b"{}")
    held.write(b"more")
    assert transport.writes[1:] == [b"HTTP/1.1 200 OK\r\n\r\n{}", b"more"]
    assert held.is_closing() is False  # the rest is the transport's


@pytest.mark.parametrize("body", [b"", None], ids=["empty body", "closed before a body"])
def test_a_head_leaves_with_an_empty_body_or_when_the_connection_closes(
    body: bytes | None,
) -> None:
    transport, cycle = Recorded(), Cycle()
    held = HeadWithBody(transport, cycle)  # type: ignore[arg-type]
    cycle.response_started = True
    held.write(b"HTTP/1.1 204 No Content\r\n\r\n")
    if body is None:
        held.close()
    else:
        held.write(body)
    assert transport.writes == [b"HTTP/1.1 204 No Content\r\n\r\n"]
    assert transport.closed is (body is None)


def test_head_over_a_kept_alive_connection_answers_the_head_alone(
    address: tuple[str, int],
) -> None:
    head = b"HEAD /healthz HTTP/1.1\r\nHost: lab\r\n\r\n"
    with connect(address) as s:
        s.sendall(head + head)  # pipelined
        raw = b""
        while raw.count(b"\r\n\r\n") < 2:
            raw += s.recv(1 << 16)
        first, second = raw.split(b"\r\n\r\n")[:2]
        assert first.split(b"\r\n")[0] == second.split(b"\r\n")[0] == b"HTTP/1.1 200 OK"
        s.sendall(head)
        status, headers, body = answer(s.recv(1 << 16))
        assert (status, body) == (200, b"")
        assert int(headers[b"content-length"]) > 0
        s.sendall(get("/healthz"))
        status, _, body = answer(read_until_closed(s))
    assert (status, orjson.loads(body)["status"]) == (200, "ok")


def test_a_request_that_arrived_whole_leaves_no_deadline_on_its_kept_alive_connection(
    address: tuple[str, int],
) -> None:
    """Idle longer than the head timeout (1 s here), within the keep-alive (5 s): the
    connection still serves the next request."""
    with connect(address) as s:
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: lab\r\n\r\n")
        assert s.recv(1 << 16).startswith(b"HTTP/1.1 200")
        time.sleep(1.5)
        s.sendall(get("/healthz"))
        status, _, _ = answer(read_until_closed(s))
    assert status == 200
