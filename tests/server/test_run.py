"""`python -m app` (app/server/run.py): gunicorn's arbiter with two uvicorn workers serving the
app with the bounded protocol; what SIGTERM and a killed worker do, over real sockets."""

import os
import resource
import signal
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from app.server.protocol import BoundedHttpToolsProtocol
from app.server.run import bind_address, gunicorn_options, raise_open_file_limit
from app.settings import Settings, cgroup_cpu_limit
from tests.server.sockets import APP, Server, ask, connect, get, serve

TWO_WORKERS = {"WORKERS": "2", "MAX_HEADER_BYTES": "8192", "SHUTDOWN_GRACE_SECONDS": "30"}


@pytest.fixture(scope="module")
def app_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with serve(APP, TWO_WORKERS, tmp_path_factory.mktemp("app") / "out.log") as server:
        yield server


def workers(arbiter: int) -> set[int]:
    children = Path(f"/proc/{arbiter}/task/{arbiter}/children").read_text().split()
    return {int(pid) for pid in children}


def test_gunicorn_runs_the_bounded_protocol_with_the_settings() -> None:
    settings = Settings(workers=3, keep_alive_seconds=7, shutdown_grace_seconds=12.5)
    options = gunicorn_options(settings)
    assert (options["workers"], options["keepalive"], options["graceful_timeout"]) == (3, 7, 14)
    assert options["preload_app"] is True  # a new worker is forked with the app loaded
    uvicorn = options["worker_class"].CONFIG_KWARGS
    assert uvicorn["http"] is BoundedHttpToolsProtocol
    assert (uvicorn["loop"], uvicorn["ws"]) == ("asyncio", "none")  # fair; no WebSocket
    assert uvicorn["timeout_graceful_shutdown"] == 12.5
    assert (
        gunicorn_options(Settings(event_loop="uvloop"))["worker_class"].CONFIG_KWARGS["loop"]
        == "uvloop"
    )


@pytest.mark.parametrize(
    ("host", "bound"),
    [("127.0.0.1", "127.0.0.1:8000"), ("0.0.0.0", "0.0.0.0:8000"), ("::", "[::]:8000")],
)
def test_the_address_is_written_as_gunicorn_binds_it(host: str, bound: str) -> None:
    assert bind_address(host, 8000) == bound


def test_the_app_answers_its_health_checks_and_the_servers_refusals_as_its_own(
    app_server: Server,
) -> None:
    status, _, body = ask(app_server.address, get("/readyz"))
    assert (status, orjson.loads(body)) == (200, {"status": "ready"})
    status, headers, _ = ask(
        app_server.address, b"GET / HTTP/1.1\r\nHost: lab\r\nX-Big: " + b"a" * 9000 + b"\r\n\r\n"
    )
    assert status == 431
    assert b"frame-ancestors 'self'" in headers[b"content-security-policy"]
    line = app_server.line_of(headers[b"x-request-id"].decode())
    assert (line["method"], line["path"], line["status"]) == ("GET", "/", 431)


def test_a_killed_worker_is_replaced(app_server: Server) -> None:
    arbiter = app_server.process.pid
    before = workers(arbiter)
    victim = min(before)
    os.kill(victim, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while len(workers(arbiter) - before) < 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    now = workers(arbiter)
    assert victim not in now
    assert len(now) == 2
    assert all(ask(app_server.address, get("/healthz"))[0] == 200 for _ in range(4))


def refused(address: tuple[str, int]) -> bool:
    try:
        socket.create_connection(address, timeout=1).close()
    except ConnectionRefusedError:
        return True
    return False


def test_sigterm_refuses_new_connections_at_once_and_lets_requests_in_progress_finish(
    tmp_path: Path,
) -> None:
    """A timing run of /api/cost/measure (seconds) is in progress when SIGTERM comes: new
    connections are refused from then on, the run's answer arrives, the process exits."""
    with serve(APP, TWO_WORKERS, tmp_path / "out.log") as server:
        finished: dict[str, float | int] = {}

        def measure() -> None:  # seconds of work, many more on a loaded machine
            finished["status"] = ask(server.address, get("/api/cost/measure"), 90)[0]
            finished["at"] = time.monotonic()

        in_progress = threading.Thread(target=measure)
        in_progress.start()
        time.sleep(0.3)
        server.process.send_signal(signal.SIGTERM)
        signalled = time.monotonic()
        while not refused(server.address):
            assert time.monotonic() - signalled < 5
            time.sleep(0.02)
        refused_at = time.monotonic()
        in_progress.join(timeout=100)
        assert finished["status"] == 200
        assert finished["at"] > refused_at
        assert server.process.wait(timeout=30) == 0


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


def decoder_request(request_id: str, text: str) -> bytes:
    """Sixteen generated tokens: long enough to leave during, short enough for a suite.
    Each text once: a repeated request would be answered from the cache."""
    body = orjson.dumps({"text": text, "generate": 16})
    head = (
        "POST /api/decoder HTTP/1.1\r\nHost: lab\r\nContent-Type: application/json\r\n"
        f"X-Request-Id: {request_id}\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    return head.encode() + body


def test_work_for_a_client_that_left_stops_and_is_logged_as_499(app_server: Server) -> None:
    deadline = time.monotonic() + 120
    full = decoder_request("served-in-full", "The sky is")
    while (status := ask(app_server.address, full, 120)[0]) == 503:
        assert time.monotonic() < deadline, "the decoder did not load"
        time.sleep(0.5)  # still loading its weights
    assert status == 200
    served = app_server.line_of("served-in-full")["duration_ms"]
    with connect(app_server.address) as s:
        s.sendall(decoder_request("left-early-1", "The sea is"))
        time.sleep(min(0.2, served / 1000 / 5))
    left = app_server.line_of("left-early-1", seconds=120)
    assert left["status"] == 499
    # It stopped at its next check, not when the whole answer was ready.
    assert left["duration_ms"] < served / 2
