"""app/server/protocol.py over real sockets: uvicorn (at the version pyproject.toml pins) serving
tests/server/probe_app.py with the bounded protocol, settings small enough that each bound
shows within a second or two.

Together these tests cover everything the protocol relies on in uvicorn (its docstring lists
it): they fail when an upgrade of uvicorn or httptools changes any of it.
"""

import contextlib
import re
import socket
import threading
import time
import tomllib
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path

import orjson
import pytest

from app.web.edge import too_large_message, too_long_message
from tests.server.sockets import (
    PROBE,
    ROOT,
    Server,
    answer,
    ask,
    connect,
    get,
    post,
    read_until_closed,
    serve,
)

QUICK = {
    "HEADER_TIMEOUT_SECONDS": "1",
    "TRANSFER_WINDOW_SECONDS": "1",
    "MIN_TRANSFER_RATE": "1024",
    "MAX_HEADER_BYTES": "8192",
    "MAX_CONNECTIONS": "64",
    "MAX_CONCURRENT_REQUESTS": "3",
    "MAX_BODY_BYTES": "1000000",
    "CLIENT_BUFFER_BYTES": "40000000",
    "FRAME_ANCESTORS": "'none'",
}
# For the answers clients do not read: a long window, so that the budget acts before it.
PATIENT = {
    **QUICK,
    "TRANSFER_WINDOW_SECONDS": "30",
    "CLIENT_BUFFER_BYTES": "8000000",
    "MAX_CONCURRENT_REQUESTS": "64",
    "COMPUTE_SLOTS": "1",
}
# Slots for every request of a gathered group (probe_app's `together`), which then takes
# its own turns.
GATHERING = {**PATIENT, "COMPUTE_SLOTS": "16"}
BIG_ANSWER = 16_000_000  # more than loopback's socket buffers take in


@pytest.fixture(scope="module")
def quick(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with serve(PROBE, QUICK, tmp_path_factory.mktemp("quick") / "out.log") as server:
        yield server


@pytest.fixture(scope="module")
def patient(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with serve(PROBE, PATIENT, tmp_path_factory.mktemp("patient") / "out.log") as server:
        yield server


@pytest.fixture(scope="module")
def gathering(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with serve(PROBE, GATHERING, tmp_path_factory.mktemp("gathering") / "out.log") as server:
        yield server


def detail(body: bytes) -> str:
    return orjson.loads(body)["detail"]


def assert_said_as_the_app_says(server: Server, status: int, headers: dict[bytes, bytes]) -> None:
    """The headers of every answer of the app, and its JSON log line."""
    assert headers[b"content-type"] == b"application/json"
    assert headers[b"content-security-policy"].endswith(b"frame-ancestors 'none'")
    assert headers[b"x-content-type-options"] == b"nosniff"
    line = server.line_of(headers[b"x-request-id"].decode())
    assert (line["logger"], line["status"]) == ("attention_lab.requests", status)


# -- reading a request


@pytest.mark.parametrize(
    "sent",
    [b"", b"GET / HTTP/1.1\r\nHost: lab\r\n", b"GE"],
    ids=["nothing", "half a head", "two bytes"],
)
def test_a_head_that_does_not_arrive_in_time_gets_408_and_the_connection_closed(
    quick: Server, sent: bytes
) -> None:
    start = time.perf_counter()
    status, headers, body = ask(quick.address, sent)
    waited = time.perf_counter() - start
    assert status == 408
    assert headers[b"connection"] == b"close"
    assert "within 1 seconds" in detail(body)
    assert 0.9 < waited < 3.0
    assert_said_as_the_app_says(quick, 408, headers)


def test_a_slowly_dripped_head_is_cut_at_the_timeout(quick: Server) -> None:
    with connect(quick.address) as s:
        start = time.perf_counter()
        s.sendall(b"GET / HTTP/1.1\r\n")
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            for _ in range(30):  # one header byte every 0.1 s would take 3 s
                time.sleep(0.1)
                s.sendall(b"X")
        status, _, _ = answer(read_until_closed(s))
    assert status == 408
    assert time.perf_counter() - start < 2.5


def dribble(s: socket.socket, count: int, every: float) -> None:
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        for _ in range(count):
            s.sendall(b" ")
            time.sleep(every)


def test_a_body_slower_than_the_least_rate_gets_408_within_a_window(quick: Server) -> None:
    with connect(quick.address) as s:
        start = time.perf_counter()
        s.sendall(post("/echo", b"{", length=100_000))
        dribble(s, 25, 0.1)  # 10 bytes a second, against 1,024
        status, headers, body = answer(read_until_closed(s))
    assert status == 408
    assert "slower than 1,024 bytes a second" in detail(body)
    assert time.perf_counter() - start < 2.0
    assert_said_as_the_app_says(quick, 408, headers)


def test_a_body_at_a_fair_rate_arrives_whole_in_one_message(quick: Server) -> None:
    """Three windows of 1,500 bytes each (above 1,024 a second): read to the end, and handed
    to the app at once."""
    with connect(quick.address) as s:
        s.sendall(post("/echo", b"", length=4500))
        for _ in range(3):
            s.sendall(b" " * 1500)
            time.sleep(0.9)
        status, _, body = answer(read_until_closed(s))
    assert (status, orjson.loads(body)) == (200, {"received": 4500, "messages": 1})


def test_bodies_still_arriving_hold_none_of_the_apps_slots(quick: Server) -> None:
    """Ten uploads under way against a limit of 3 requests in progress: the others are
    served, and the server says it is ready."""
    uploads = [connect(quick.address) for _ in range(10)]
    try:
        for s in uploads:
            s.sendall(post("/echo", b"{", length=50_000))
        assert ask(quick.address, get("/elsewhere"))[0] == 200
        status, _, body = ask(quick.address, get("/readyz"))
        assert (status, orjson.loads(body)) == (200, {"status": "ready"})
    finally:
        for s in uploads:
            s.close()


def status_if_answered(s: socket.socket) -> int | None:
    s.settimeout(0.5)
    try:
        return answer(read_until_closed(s))[0]
    except TimeoutError:
        return None


def test_bodies_being_read_are_bounded_together(patient: Server) -> None:
    """Ten bodies of 950 kB, none finished, against 8 MB for all bodies: at most eight are
    still being read; the others got 503 with Retry-After."""
    uploads = [connect(patient.address) for _ in range(10)]
    try:
        for s in uploads:
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                s.sendall(post("/echo", b" " * 950_000, length=1_000_000))
        statuses = [status_if_answered(s) for s in uploads]
    finally:
        for s in uploads:
            s.close()
    assert statuses.count(None) <= 8
    assert set(statuses) == {None, 503}
    [refused] = [line for line in patient.lines() if line.get("status") == 503][-1:]
    assert refused["path"] == "/echo"


@pytest.mark.parametrize(
    "request_bytes",
    [
        post("/echo", b"", length=1_000_001),
        post("/echo", b"", length=int("9" * 30)),
        b"POST /echo HTTP/1.1\r\nHost: lab\r\nTransfer-Encoding: chunked\r\n\r\n"
        + b"".join(b"10000\r\n" + b" " * 0x10000 + b"\r\n" for _ in range(16)),
    ],
    ids=["Content-Length over the cap", "thirty digits", "chunked over the cap"],
)
def test_bodies_over_the_cap_get_413(quick: Server, request_bytes: bytes) -> None:
    status, headers, body = ask(quick.address, request_bytes)
    assert status in (413, 400)  # thirty digits overflow httptools' own parser: 400
    if status == 413:
        assert detail(body) == too_large_message(1_000_000)
    assert_said_as_the_app_says(quick, status, headers)


def test_expect_100_continue_is_answered_before_the_body_is_read(quick: Server) -> None:
    with connect(quick.address) as s:
        s.sendall(
            b"POST /echo HTTP/1.1\r\nHost: lab\r\nContent-Length: 2\r\n"
            b"Expect: 100-continue\r\nConnection: close\r\n\r\n"
        )
        assert s.recv(100) == b"HTTP/1.1 100 Continue\r\n\r\n"
        s.sendall(b"{}")
        status, _, body = answer(read_until_closed(s))
    assert (status, orjson.loads(body)["received"]) == (200, 2)


@pytest.mark.parametrize(
    "headers",
    [
        b"X-Big: " + b"a" * 9000 + b"\r\n",
        b"".join(b"X-H%d: %s\r\n" % (i, b"b" * 500) for i in range(20)),
        b"Cookie: " + b"c" * 5_000_000 + b"\r\n",
    ],
    ids=["one large header", "many headers", "5 MB cookie"],
)
def test_headers_over_the_cap_get_431(quick: Server, headers: bytes) -> None:
    status, sent, body = ask(quick.address, b"GET / HTTP/1.1\r\nHost: lab\r\n" + headers + b"\r\n")
    assert status == 431
    assert "8,192 bytes" in detail(body)
    assert_said_as_the_app_says(quick, 431, sent)


def test_headers_within_the_cap_are_served(quick: Server) -> None:
    status, _, _ = ask(quick.address, get("/healthz", "X-Fine: " + "a" * 7000))
    assert status == 200


@pytest.mark.parametrize("query_bytes", [62_000, 70_000, 300_000])
def test_targets_longer_than_httptools_parses_get_the_apps_414(
    quick: Server, query_bytes: int
) -> None:
    status, headers, body = ask(quick.address, get("/?tokens=" + "a" * query_bytes))
    if query_bytes < 65_535:  # parsed, and the app's to judge
        assert (status, orjson.loads(body)) == (200, {"path": "/"})
        return
    assert status == 414
    assert detail(body) == too_long_message(60_000)
    assert_said_as_the_app_says(quick, 414, headers)


def test_bytes_that_are_not_http_get_the_apps_kind_of_400(quick: Server) -> None:
    status, headers, body = ask(quick.address, b"HELLO THERE\r\n\r\n")
    assert status == 400
    assert "not valid HTTP/1.1" in detail(body)
    assert_said_as_the_app_says(quick, 400, headers)


def test_a_refusal_speaks_the_readers_language_and_keeps_a_valid_request_id(
    quick: Server,
) -> None:
    status, headers, body = ask(
        quick.address,
        b"GET /?lang=es HTTP/1.1\r\nHost: lab\r\nX-Request-ID: class-7-lab-2\r\n"
        + b"X-Big: "
        + b"a" * 9000
        + b"\r\n\r\n",
    )
    assert status == 431
    assert headers[b"x-request-id"] == b"class-7-lab-2"
    assert "8.192 bytes" in detail(body)
    assert "cabeceras" in detail(body)


def test_an_upgrade_header_is_served_as_plain_http(quick: Server) -> None:
    status, _, body = ask(quick.address, get("/plain", "Upgrade: websocket", "Connection: Upgrade"))
    assert (status, orjson.loads(body)) == (200, {"path": "/plain"})


# -- serving


def test_requests_beyond_the_limit_get_503_and_health_checks_still_answer(quick: Server) -> None:
    sleepers = [
        threading.Thread(target=ask, args=(quick.address, get("/sleep?seconds=1.5")))
        for _ in range(3)
    ]
    for thread in sleepers:
        thread.start()
    time.sleep(0.5)
    try:
        status, headers, body = ask(quick.address, get("/elsewhere"))
        assert (status, headers[b"retry-after"]) == (503, b"1")
        assert "try again" in detail(body)
        assert_said_as_the_app_says(quick, 503, headers)
        status, headers, body = ask(quick.address, get("/readyz"))
        assert (status, orjson.loads(body), headers[b"retry-after"]) == (
            503,
            {"status": "busy"},
            b"1",
        )
        assert ask(quick.address, get("/healthz"))[0] == 200
        assert ask(quick.address, get("/static/js/lab.js"))[0] == 200  # never busy
    finally:
        for thread in sleepers:
            thread.join()
    assert ask(quick.address, get("/readyz"))[0] == 200


def test_requests_beyond_the_compute_slots_wait_their_turn(patient: Server) -> None:
    """One compute slot: of two half-second requests asked together, the second is served
    after the first, and /readyz says busy meanwhile."""
    finished: list[float] = []

    def sleep() -> None:
        assert ask(patient.address, get("/sleep?seconds=0.5"))[0] == 200
        finished.append(time.perf_counter() - start)

    start = time.perf_counter()
    sleepers = [threading.Thread(target=sleep) for _ in range(2)]
    for thread in sleepers:
        thread.start()
    time.sleep(0.2)
    status, _, body = ask(patient.address, get("/readyz"))
    assert (status, orjson.loads(body)) == (503, {"status": "busy"})
    assert ask(patient.address, get("/healthz"))[0] == 200  # never waits for a slot
    for thread in sleepers:
        thread.join()
    assert max(finished) >= 0.95  # one after the other: twice half a second
    assert ask(patient.address, get("/readyz"))[0] == 200


def test_static_files_are_served_while_every_compute_slot_is_taken(patient: Server) -> None:
    """The one slot is held by a request that ends only once a static file has reached the
    app: the file is served, then the holder."""
    holder: list[int] = []
    thread = threading.Thread(target=lambda: holder.append(ask(patient.address, get("/wait"))[0]))
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while ask(patient.address, get("/readyz"))[0] != 503:  # the holder has the slot
            assert time.monotonic() < deadline, "the holder never took the slot"
            time.sleep(0.05)
        assert ask(patient.address, get("/static/vendor/plotly.min.js"))[0] == 200
    finally:
        thread.join()
    assert holder == [200]


def test_a_request_whose_client_left_while_it_waited_is_never_computed(patient: Server) -> None:
    """While the one slot is held, a client asks and leaves; once the slot is free, its
    request is logged 499 and never reaches the app."""
    holder = threading.Thread(target=ask, args=(patient.address, get("/wait")))
    holder.start()
    try:
        while ask(patient.address, get("/readyz"))[0] != 503:  # the holder has the slot
            time.sleep(0.05)
        with connect(patient.address) as s:
            s.sendall(get("/left-early", "X-Request-ID: left-early-in-line"))
        # Asked after it left, on another connection: the server has read the leaving.
        assert ask(patient.address, get("/healthz"))[0] == 200
        status, _, body = ask(patient.address, get("/static/seen"))  # frees the slot
        assert status == 200
    finally:
        holder.join()
    assert patient.line_of("left-early-in-line")["status"] == 499
    status, _, body = ask(patient.address, get("/static/seen"))
    assert "/left-early" not in orjson.loads(body)["seen"]


def test_beyond_the_connection_cap_the_longest_waiting_connections_are_closed(
    quick: Server,
) -> None:
    slow = [connect(quick.address) for _ in range(40)]
    for s in slow:
        s.sendall(b"GET / HTTP/1.1\r\n")  # half a head each
    time.sleep(0.1)
    newer = [connect(quick.address) for _ in range(60)]
    try:
        assert ask(quick.address, get("/healthz"))[0] == 200
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
    quick: Server,
) -> None:
    with connect(quick.address) as s:
        s.sendall(post("/echo", b"{}", close=False))
        first = s.recv(1 << 20)
        assert first.startswith(b"HTTP/1.1 200")
        pipelined = post("/echo", b"{}", close=False) + post("/echo", b"[1]", close=False)
        s.sendall(pipelined + get("/healthz"))
        rest = read_until_closed(s)
    assert rest.count(b"HTTP/1.1 200 OK") == 3
    assert b'{"received":3,"messages":1}' in rest


def test_head_over_a_kept_alive_connection_answers_the_head_alone(quick: Server) -> None:
    head = b"HEAD /healthz HTTP/1.1\r\nHost: lab\r\n\r\n"
    with connect(quick.address) as s:
        s.sendall(head + head)  # pipelined
        raw = b""
        while raw.count(b"\r\n\r\n") < 2:
            raw += s.recv(1 << 16)
        first, second = raw.split(b"\r\n\r\n")[:2]
        assert first.split(b"\r\n")[0] == second.split(b"\r\n")[0] == b"HTTP/1.1 200 OK"
        s.sendall(get("/healthz"))
        status, _, body = answer(read_until_closed(s))
    assert (status, orjson.loads(body)) == (200, {"path": "/healthz"})


def test_a_request_that_arrived_whole_leaves_no_deadline_on_its_kept_alive_connection(
    quick: Server,
) -> None:
    """Idle longer than the head timeout (1 s here), within the keep-alive (5 s): the
    connection still serves the next request."""
    with connect(quick.address) as s:
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: lab\r\n\r\n")
        assert s.recv(1 << 16).startswith(b"HTTP/1.1 200")
        time.sleep(1.5)
        s.sendall(get("/healthz"))
        status, _, _ = answer(read_until_closed(s))
    assert status == 200


# -- writing answers


def rss_bytes(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(r"VmRSS:\s+(\d+) kB", status).group(1)) * 1024


def unread(server: Server, count: int, query: str = "") -> list[socket.socket]:
    """`count` connections that ask for a 16 MB answer (`query`: more of the probe's
    parameters) and never read it."""
    readers = []
    for _ in range(count):
        s = connect(server.address)
        s.sendall(get(f"/bytes?size={BIG_ANSWER}{query}", close=False))
        readers.append(s)
    return readers


def closed_early(s: socket.socket, seconds: float = 5) -> bool:
    """Whether the server closed the connection before the whole answer was sent."""
    s.settimeout(seconds)
    return len(read_until_closed(s)) < BIG_ANSWER


def head_of(s: socket.socket) -> tuple[dict[bytes, bytes], int]:
    """The headers of the answer arriving on `s`, and how many bytes of its body came with
    them."""
    s.settimeout(60)
    raw = b""
    while b"\r\n\r\n" not in raw and (chunk := s.recv(1 << 16)):
        raw += chunk
    _, headers, body = answer(raw)
    return headers, len(body)


def test_answers_made_together_and_not_read_are_bounded_by_closing_the_oldest(
    gathering: Server,
) -> None:
    """Twelve 16 MB answers asked for together and not read, against 8 MB for all: made once
    all twelve requests are in (whatever order they arrived in), one after another, each
    written closes the one before. Once every head has come, the server holds a few answers,
    not twelve (their memory goes back to the system: app/server/run.py's map_large_blocks),
    and only the answer made last is read whole."""
    before = rss_bytes(gathering.process.pid)
    readers = unread(gathering, 12, "&together=12")
    try:
        heads = [head_of(s) for s in readers]  # each comes as its answer is made
        grown = rss_bytes(gathering.process.pid) - before
        turns = [int(headers[b"x-made"]) for headers, _ in heads]
        assert sorted(turns) == list(range(1, 13))
        assert grown < 4 * BIG_ANSWER
        whole = [
            started + len(read_until_closed(s)) == BIG_ANSWER
            for s, (_, started) in zip(readers, heads, strict=True)
        ]
        assert whole == [turn == 12 for turn in turns]
    finally:
        for s in readers:
            s.close()


def test_a_new_request_closes_an_answer_unread_for_a_second_and_is_served(
    patient: Server,
) -> None:
    """While a fresh unread answer fills the buffer, a new request gets 503 and /readyz says
    busy; once nothing of it has been read for a second (judged each second: by the
    second's end), it makes room for the next."""
    [reader] = unread(patient, 1)
    try:
        time.sleep(0.3)
        assert ask(patient.address, get("/elsewhere"))[0] == 503
        status, _, body = ask(patient.address, get("/readyz"))
        assert (status, orjson.loads(body)["status"]) == (503, "busy")
        time.sleep(2)
        assert ask(patient.address, get("/readyz"))[0] == 200
        assert ask(patient.address, get("/elsewhere"))[0] == 200
        assert closed_early(reader)
    finally:
        reader.close()


def test_a_reader_that_stops_is_closed_after_a_window_and_one_that_reads_is_not(
    quick: Server,
) -> None:
    """Against 1,024 bytes a second over one-second windows."""
    with connect(quick.address) as stopped, connect(quick.address) as steady:
        stopped.sendall(get(f"/bytes?size={BIG_ANSWER}"))
        steady.sendall(get(f"/bytes?size={BIG_ANSWER}"))
        got = 0
        start = time.perf_counter()
        while time.perf_counter() - start < 2.5:  # in bursts, never a second apart
            got += len(steady.recv(1 << 16))
            time.sleep(0.02)
        got += len(read_until_closed(steady))
        assert got > BIG_ANSWER  # the head and the whole body
        assert closed_early(stopped)


def test_uvicorn_is_pinned_to_the_version_these_tests_ran_with() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    pins = [d for d in pyproject["project"]["dependencies"] if d.startswith("uvicorn[")]
    assert pins == [f"uvicorn[standard]=={metadata.version('uvicorn')}"]
