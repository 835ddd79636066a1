"""uvicorn's httptools protocol with the bounds uvicorn lacks: how each worker of `python -m app`
reads requests and writes answers.

uvicorn has a keep-alive timeout and a `limit_concurrency` that counts open connections with
requests, and nothing else against a slow or greedy client. Here, in each worker:

Reading. A request's head must arrive within `header_timeout_seconds` of the connection
opening or of the request's first byte, else 408 and the connection is closed; headers over
`max_header_bytes` get 431, a target httptools cannot parse (over MAX_TARGET_BYTES) the app's
414, a Content-Length over `max_body_bytes` 413, bytes that are not HTTP 400. The body is read
here, before the app sees the request: it must keep arriving at `min_transfer_rate` bytes a
second over every `transfer_window_seconds` (else 408), and the bodies being read take at most
`client_buffer_bytes` together (else 503). So a slow upload holds a connection for seconds,
never one of the app's slots. Beyond `max_connections`, a new connection closes the one that
has waited longest without being served (idle, or its request still arriving).

Serving. A whole request becomes a task, which waits its turn for one of `compute_slots`
(answers are made by that many requests at once, which bounds the memory they take) before
the app sees it (or, if its client left meanwhile, is logged 499 and never computed);
beyond `max_concurrent_requests` of them a new one gets 503 busy. Static
files (/static/…) and /healthz reach the app at once, never refused busy: a file is
written in blocks, the next waiting while the client lags (uvicorn's flow control), so it
holds little memory and no compute. /readyz gets 503 {"status": "busy"} here while every slot is
taken or a new request would get 503.

Writing. The answers waiting in the connections' write buffers (their clients not reading)
take at most `client_buffer_bytes` together. An answer written past it closes the connections
that have read least recently; a new request that finds no room closes those that have read
nothing for STALLED_SECONDS, and gets 503 busy if that is not enough. Each second a client
reads less than `min_transfer_rate` counts as not reading: after a whole
`transfer_window_seconds` of it, its connection is closed.

The refusals are answered as the app answers (app/server/answers.py). Everything else
(parsing, keep-alive, pipelining, writing answers) is uvicorn's.

What this relies on in uvicorn, pinned exactly in pyproject.toml for it (tests/server/
test_protocol.py, over real sockets, fails when an upgrade changes any of it):
- HttpToolsProtocol's methods data_received, on_message_begin, on_headers_complete, on_body,
  on_message_complete, on_response_complete, connection_made, connection_lost,
  pause_writing, resume_writing and send_400_response, extended here, and
  `_start_asgi_task(cycle, app)`, where a request's task is made: the one private name;
- its attributes parser, url, headers, expect_100_continue, cycle, tasks, connections,
  transport and loop;
- RequestResponseCycle's body, more_body, message_event, response_complete, disconnected and
  scope.
"""

import asyncio
import fcntl
import logging
import resource
import struct
import termios
import time
from collections import OrderedDict
from functools import lru_cache
from typing import Any, ClassVar

from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol, RequestResponseCycle

from app.server.answers import Refusals
from app.settings import Settings, environment_settings
from app.web.health import HEALTHZ, READYZ
from app.web.static import PREFIX as STATIC_PREFIX

# httptools' URL parser keeps offsets in 16 bits: a longer request target cannot be parsed.
MAX_TARGET_BYTES = 65_535
REQUEST_LINE_ALLOWANCE = 1024  # method, version, separators
FILES_KEPT_FREE = 64
# An answer nobody has read for this long may be dropped to make room for a new request.
STALLED_SECONDS = 1.0
log = logging.getLogger("attention_lab.server")


def kernel_unsent(transport: asyncio.BaseTransport) -> int:
    """Bytes in the socket's send queue, not yet acknowledged (Linux's SIOCOUTQ); 0 where
    it cannot be asked."""
    sock = transport.get_extra_info("socket")
    try:
        return struct.unpack("i", fcntl.ioctl(sock.fileno(), termios.TIOCOUTQ, b"\0" * 4))[0]
    except (AttributeError, OSError):
        return 0


@lru_cache
def connection_cap(max_connections: int) -> int:
    """max_connections, kept under the open-file limit (each connection is a file; the
    listening socket, the model's files and logs need a few more)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return max_connections
    return max(16, min(max_connections, soft - FILES_KEPT_FREE))


class Load:
    """What the connections of one worker hold together (one event loop per process)."""

    def __init__(self, settings: Settings) -> None:
        self.budget = settings.client_buffer_bytes
        # Connections not being served, longest waiting first: the ones to close when
        # there are too many.
        self.waiting: OrderedDict[BoundedHttpToolsProtocol, None] = OrderedDict()
        self.unsent: dict[BoundedHttpToolsProtocol, int] = {}  # bytes in write buffers
        self.unsent_bytes = 0
        self.body_bytes = 0  # bodies being read
        self.refusals = Refusals(settings)
        self.slots = asyncio.Semaphore(settings.compute_slots)  # wakes waiters in turn
        self.computing = 0  # requests computing or waiting for a slot

    def hold(self, connection: "BoundedHttpToolsProtocol", size: int) -> None:
        """`connection` now has `size` bytes of answers waiting in its write buffer."""
        self.unsent_bytes += size - self.unsent.pop(connection, 0)
        if size:
            self.unsent[connection] = size

    def refresh(self) -> None:
        """Each buffer as it is now (a small one drains without telling)."""
        for connection in list(self.unsent):
            connection.note_unsent()

    def shed(self, keep: "BoundedHttpToolsProtocol | None" = None, stalled: bool = False) -> None:
        """Close the connections that have read least recently (never `keep`; with `stalled`,
        only those that have read nothing for STALLED_SECONDS) until the answers fit."""
        self.refresh()
        for connection in sorted(self.unsent, key=lambda c: c.read_at):
            if self.unsent_bytes < self.budget:
                break
            if connection is not keep and (not stalled or connection.stalled()):
                connection.abandon()

    def room(self, *, shed: bool) -> bool:
        """Whether a new request may start: whether unread answers leave room, once those
        stalled are closed (`shed`) or counted as closed."""
        self.refresh()
        if shed and self.unsent_bytes >= self.budget:
            self.shed(stalled=True)
        stalled = 0 if shed else sum(n for c, n in self.unsent.items() if c.stalled())
        return self.unsent_bytes - stalled < self.budget


class BoundedHttpToolsProtocol(HttpToolsProtocol):
    """One connection, with the bounds of the module docstring."""

    load: ClassVar[Load | None] = None  # made by the worker's first connection

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.bounds = environment_settings()
        cls = type(self)
        if cls.load is None:
            cls.load = Load(self.bounds)
        self.shared: Load = cls.load
        self.refusals = self.shared.refusals
        self.max_connections = connection_cap(self.bounds.max_connections)
        self.window = self.bounds.transfer_window_seconds
        self.least_per_window = self.bounds.min_transfer_rate * self.window
        self.write_tick = min(self.window, STALLED_SECONDS)
        self.least_per_tick = self.bounds.min_transfer_rate * self.write_tick
        self.opened = time.perf_counter()  # when this connection, then each request, began
        self.read_timer: asyncio.TimerHandle | None = None
        self.reading: str | None = None  # what read_timer waits for: connection, head, body
        self.reading_head = True  # until a request's head is complete
        self.head_begun = False  # a request's first bytes have come
        self.head_bytes = 0
        self.reading_body = False  # a head is complete, its body still to come
        self.body = bytearray()  # that body
        self.body_mark = 0  # its length when the current window began
        self.deferred: tuple[RequestResponseCycle, ASGIApp] | None = None  # body still to come
        self.serving = False  # a task of this connection's is in progress
        self.write_timer: asyncio.TimerHandle | None = None
        self.unread_mark = 0  # unread bytes at the last tick
        self.read_at = 0.0  # when the client was last seen reading
        self.refused = False

    # -- connection

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if len(self.connections) > self.max_connections:
            self.close_longest_waiting()
        self.shared.waiting[self] = None
        self.arm_read("connection", self.bounds.header_timeout_seconds)

    def connection_lost(self, exc: Exception | None) -> None:
        self.disarm_read()
        self.disarm_write()
        self.shared.waiting.pop(self, None)
        self.shared.hold(self, 0)
        self.drop_body()
        super().connection_lost(exc)

    def close_longest_waiting(self) -> None:
        waiting = self.shared.waiting
        for _ in range(len(waiting)):
            oldest, _ = waiting.popitem(last=False)
            if oldest is not self and not oldest.transport.is_closing():
                oldest.disarm_read()
                oldest.transport.close()
                return

    # -- reading a request

    def data_received(self, data: bytes) -> None:
        if self.refused:
            return
        if self.reading_head:
            self.head_bytes += len(data)
        super().data_received(data)
        if self.reading_head and not self.refused:
            # A head still arriving: refuse it as soon as it is too long, not once it ends.
            url = len(getattr(self, "url", b""))
            if url > MAX_TARGET_BYTES:
                self.refuse(414)
            elif self.head_bytes - url > self.bounds.max_header_bytes + REQUEST_LINE_ALLOWANCE:
                self.refuse(431)
        if not self.refused:
            self.watch_reading()

    def watch_reading(self) -> None:
        """After the bytes that came, the deadline of what is still arriving: the head of a
        request begun, or its body; none once the request is whole. Armed here rather than
        as the parser passes each mark, so that a request that arrives whole (as most do)
        sets no timer at all."""
        if self.reading_head:
            if self.head_begun:  # else nothing of the first request yet: the open's deadline
                self.arm_read("head", self.bounds.header_timeout_seconds)
        elif self.reading_body:
            if self.reading != "body":
                self.body_mark = len(self.body)
            self.arm_read("body", self.window)
        else:
            self.disarm_read()

    def on_message_begin(self) -> None:
        if self.refused:
            return
        super().on_message_begin()
        self.opened = time.perf_counter()
        self.reading_head = True
        self.head_begun = True
        self.head_bytes = 0

    def on_headers_complete(self) -> None:
        if self.refused:
            return
        self.reading_head = False
        self.head_begun = False
        if self.reading == "head":  # that head is whole: a pipelined next one gets its own
            self.reading = "whole head"  # replaced or disarmed by watch_reading()
        if len(self.url) > MAX_TARGET_BYTES:  # uvicorn's parse_url would answer a bare 400
            self.refuse(414)
            return
        if sum(len(k) + len(v) + 4 for k, v in self.headers) > self.bounds.max_header_bytes:
            self.refuse(431)
            return
        if not self.body_fits():
            self.refuse(413)
            return
        if self.expect_100_continue and not self.serving:  # the body is read before the app
            self.expect_100_continue = False  # asks for it, so it is asked for here
            self.transport.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        self.reading_body = True
        super().on_headers_complete()

    def body_fits(self) -> bool:
        """Whether the Content-Length, if any, is a number within `max_body_bytes`."""
        length = next((v for k, v in self.headers if k == b"content-length"), b"0").strip()
        digits = length.lstrip(b"0")
        return (
            length.isdigit()
            and len(digits) <= 12
            and int(digits or 0) <= self.bounds.max_body_bytes
        )

    def on_body(self, body: bytes) -> None:
        if self.refused:
            return
        self.body += body
        self.shared.body_bytes += len(body)
        if len(self.body) > self.bounds.max_body_bytes:  # a chunked body has no length
            self.refuse(413)
        elif self.shared.body_bytes > self.shared.budget:
            self.refuse(503)

    def on_message_complete(self) -> None:
        if self.refused:
            return
        self.reading_body = False
        self.cycle.body = self.body  # handed to the cycle whole: the app reads it at once
        self.drop_body()
        super().on_message_complete()
        if self.deferred is not None:
            cycle, app = self.deferred
            self.deferred = None
            self._start_asgi_task(cycle, app)

    def drop_body(self) -> None:
        self.shared.body_bytes -= len(self.body)
        self.body = bytearray()

    def send_400_response(self, msg: str) -> None:
        if not self.refused:
            self.refuse(400)

    # -- serving a whole request

    def _start_asgi_task(self, cycle: RequestResponseCycle, app: Any) -> None:
        if cycle.more_body:  # its body is still arriving: started by on_message_complete
            self.deferred = (cycle, app)
            return
        self.shared.waiting.pop(self, None)
        self.serving = True
        path = cycle.scope["path"]
        full = self.shared.computing >= self.bounds.max_concurrent_requests
        if path == READYZ:
            if full or self.shared.slots.locked() or not self.shared.room(shed=False):
                app = self.refusals.busy({"status": "busy"})
        elif path != HEALTHZ and not path.startswith(STATIC_PREFIX):
            room = not full and self.shared.room(shed=True)
            app = self.counted(app, cycle) if room else self.refusals.busy()
        super()._start_asgi_task(cycle, app)

    def counted(self, app: ASGIApp, cycle: RequestResponseCycle) -> ASGIApp:
        """`app` in one of the compute slots, with what it writes counted; not run at all if
        the client left while the request waited for its slot (a superseded live edit)."""
        self.shared.computing += 1
        admitted = time.perf_counter()

        async def counting(scope: Scope, receive: Receive, send: Send) -> None:
            async def send_counted(message: Message) -> None:
                await send(message)
                self.note_unsent(written=True)

            try:
                async with self.shared.slots:
                    if cycle.disconnected:
                        self.refusals.log_left(scope, admitted)
                        return
                    await app(scope, receive, send_counted)
            finally:
                self.shared.computing -= 1

        return counting

    def on_response_complete(self) -> None:
        self.serving = False
        super().on_response_complete()  # may start a pipelined request
        if not self.serving and not self.transport.is_closing():
            self.shared.waiting[self] = None
            self.shared.waiting.move_to_end(self)

    # -- writing answers

    def note_unsent(self, *, written: bool = False) -> None:
        """Count this connection's write buffer; past the budget after a write, shed."""
        size = self.transport.get_write_buffer_size()  # a closing transport still sends it
        if size and self not in self.shared.unsent:
            self.read_at = self.loop.time()
        self.shared.hold(self, size)
        if written and self.shared.unsent_bytes > self.shared.budget:
            self.shared.shed(keep=self)

    def unread(self) -> int:
        """Bytes of answers the client has not taken: in the write buffer, and in the
        kernel's send queue (a reader is seen reading before the buffer shrinks)."""
        return self.transport.get_write_buffer_size() + kernel_unsent(self.transport)

    def stalled(self) -> bool:
        """Whether the client has read (almost) nothing for STALLED_SECONDS."""
        return self.write_timer is not None and self.loop.time() - self.read_at >= STALLED_SECONDS

    def pause_writing(self) -> None:
        super().pause_writing()
        self.read_at = self.loop.time()
        self.unread_mark = self.unread()
        self.arm_write()

    def resume_writing(self) -> None:
        self.disarm_write()
        self.read_at = self.loop.time()
        self.note_unsent()
        super().resume_writing()

    def arm_write(self) -> None:
        self.write_timer = self.loop.call_later(self.write_tick, self.write_tick_passed)

    def disarm_write(self) -> None:
        if self.write_timer is not None:
            self.write_timer.cancel()
            self.write_timer = None

    def write_tick_passed(self) -> None:
        """Whether the client read at `min_transfer_rate` this tick; closed once it has not
        for a whole window."""
        now, unread = self.loop.time(), self.unread()
        if self.unread_mark - unread >= self.least_per_tick:
            self.read_at = now
        self.unread_mark = unread
        if now - self.read_at >= self.window:
            self.write_timer = None
            self.abandon()
            return
        self.note_unsent()
        self.arm_write()

    def abandon(self) -> None:
        """Close now, dropping the answer the client is not reading."""
        self.disarm_write()
        scope = self.cycle.scope if self.cycle is not None else {}
        fields = {"request_id": scope.get("state", {}).get("request_id")}
        log.warning("connection closed: its client stopped reading", extra={"fields": fields})
        self.shared.hold(self, 0)
        self.transport.abort()

    # -- deadlines

    def arm_read(self, part: str, seconds: float) -> None:
        """A deadline `seconds` from now for `part` (kept if one for it is already set)."""
        if self.reading == part:
            return
        self.disarm_read()
        self.reading = part
        self.read_timer = self.loop.call_later(seconds, self.read_deadline_passed)

    def disarm_read(self) -> None:
        self.reading = None
        if self.read_timer is not None:
            self.read_timer.cancel()
            self.read_timer = None

    def read_deadline_passed(self) -> None:
        part, self.read_timer, self.reading = self.reading, None, None
        if part == "body":
            # While an answer is written, uvicorn reads no further (a pipelined body waits).
            if not self.serving and len(self.body) - self.body_mark < self.least_per_window:
                self.refuse(408, "body")
            else:
                self.body_mark = len(self.body)
                self.arm_read("body", self.window)
        elif self.serving:  # the head of a pipelined request, while one is answered
            self.transport.close()
        else:
            self.refuse(408)

    def refuse(self, status: int, reason: str = "") -> None:
        """Answer `status` and close, whatever was read of the request; nothing more of it
        is parsed."""
        self.refused = True
        self.disarm_read()
        self.deferred = None
        self.drop_body()
        self.shared.waiting.pop(self, None)
        if self.transport.is_closing():
            return
        if self.serving:  # an answer is being written: nothing can be said in its midst
            self.transport.close()
            return
        try:
            method = self.parser.get_method().decode("latin-1")
        except Exception:  # the method itself did not arrive or was not valid
            method = ""
        self.transport.write(
            self.refusals.closing_answer(
                status,
                getattr(self, "url", b""),
                self.headers or (),
                method=method,
                started=self.opened,
                reason=reason,
            )
        )
        self.transport.close()
        if self.cycle is not None and not self.cycle.response_complete:
            self.cycle.disconnected = True
            self.cycle.message_event.set()
