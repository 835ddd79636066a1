"""uvicorn's httptools protocol with the bounds uvicorn lacks: `python -m app` serves with it.

uvicorn (0.54) has a keep-alive timeout and a `limit_concurrency`, and nothing else against a
slow or greedy client: a connection that sends half a request head lives until the client
goes away; headers of any size are read; a target over 65,535 bytes gets httptools' plain 400;
and `limit_concurrency` counts open connections as well as requests, so 10,000 half-open
connections would make every request, /healthz too, a 503. Here, per connection:

- the head of every request must arrive within `header_timeout_seconds` of the connection
  opening or of the request's first byte, and its body within `body_timeout_seconds` of the
  head: else 408 and the connection is closed;
- request headers over `max_header_bytes` get 431, a target over `MAX_TARGET_BYTES` the
  app's own 414 sentence (httptools cannot parse a longer one);
- beyond `max_connections` open connections, a new one closes the connection that has waited
  longest without a request being served (idle keep-alive or a head still arriving), so a
  flood of slow clients cannot keep /healthz out;
- beyond `max_concurrent_requests` requests in progress, a new request gets 503 with
  Retry-After, except the health checks, which are cheap and must answer under load.

And every answer's head leaves with its first body bytes, in one write (`HeadWithBody`):
uvicorn writes the head as soon as the app starts the answer, which costs a second system
call and a second TCP segment for every small answer.

Everything else (parsing, keep-alive, pipelining, flow control) is uvicorn's.
"""

import asyncio
import resource
from collections import OrderedDict
from functools import lru_cache
from typing import Any, ClassVar

import orjson
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol, RequestResponseCycle

from app.settings import Settings, environment_settings
from app.web.edge import too_long_message
from app.web.health import HEALTH_PATHS

# httptools' URL parser keeps offsets in 16 bits: a longer request target cannot be parsed.
MAX_TARGET_BYTES = 65_535
BUSY_RETRY_AFTER_S = 1
REQUEST_LINE_ALLOWANCE = 1024  # method, version, separators
FILES_KEPT_FREE = 64

REASONS = {
    408: b"Request Timeout",
    414: b"URI Too Long",
    431: b"Request Header Fields Too Large",
    503: b"Service Unavailable",
}


def header_message(max_bytes: int) -> str:
    return (
        f"The request headers are larger than {max_bytes:,} bytes; send fewer or shorter "
        "headers (cookies included)."
    )


def timeout_message(seconds: float) -> str:
    return (
        f"The request did not arrive within {seconds:g} seconds; send it again on a faster "
        "connection."
    )


BUSY_MESSAGE = "The server is answering as many requests as it can; try again in a moment."


def plain_answer(status: int, detail: str, extra: tuple[bytes, ...] = ()) -> bytes:
    """A whole HTTP/1.1 answer {"detail": detail} that closes the connection."""
    body = orjson.dumps({"detail": detail})
    head = [
        b"HTTP/1.1 %d %s" % (status, REASONS[status]),
        b"content-type: application/json",
        b"content-length: %d" % len(body),
        b"connection: close",
        *extra,
    ]
    return b"\r\n".join(head) + b"\r\n\r\n" + body


@lru_cache
def connection_cap(max_connections: int) -> int:
    """max_connections, kept under the open-file limit (each connection is a file; the
    listening socket, the model's files and logs need a few more)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return max_connections
    return max(16, min(max_connections, soft - FILES_KEPT_FREE))


class BoundedHttpToolsProtocol(HttpToolsProtocol):
    """One connection, with the bounds of the module docstring."""

    settings: ClassVar[Settings | None] = None  # environment_settings() unless a test sets it
    # Connections not being served right now (idle or reading a head), oldest first: the
    # ones to close when there are too many. One event loop per process, so one registry.
    waiting: ClassVar[OrderedDict["BoundedHttpToolsProtocol", None]] = OrderedDict()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.bounds = type(self).settings or environment_settings()
        self.max_connections = connection_cap(self.bounds.max_connections)
        self.deadline: asyncio.TimerHandle | None = None
        self.armed_for: str | None = None  # the deadline's part: connection, head, body
        self.reading_head = True  # until a request's head is complete
        self.head_begun = False  # a request's first bytes have come
        self.reading_body = False  # a head is complete, its body still to come
        self.head_bytes = 0
        self.refused = False

    # -- connection

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if len(self.connections) > self.max_connections:
            self.close_longest_waiting()
        self.waiting[self] = None
        self.arm("connection", self.bounds.header_timeout_seconds)

    def connection_lost(self, exc: Exception | None) -> None:
        self.disarm()
        self.waiting.pop(self, None)
        super().connection_lost(exc)

    def close_longest_waiting(self) -> None:
        for _ in range(len(self.waiting)):
            oldest, _ = self.waiting.popitem(last=False)
            if oldest is not self and not oldest.transport.is_closing():
                oldest.disarm()
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
                self.refuse(414, too_long_message(self.bounds.max_query_bytes))
            elif self.head_bytes - url > self.bounds.max_header_bytes + REQUEST_LINE_ALLOWANCE:
                self.refuse(431, header_message(self.bounds.max_header_bytes))
        if not self.refused:
            self.watch()

    def watch(self) -> None:
        """After the bytes that came, the deadline of what is still arriving: the head of a
        request begun, or its body; none once the request is whole. Armed here rather than
        as the parser passes each mark, so that a request that arrives whole (as most do)
        sets no timer at all."""
        if self.reading_head:
            if self.head_begun:  # else nothing of the first request yet: the open's deadline
                self.arm("head", self.bounds.header_timeout_seconds)
        elif self.reading_body:
            self.arm("body", self.bounds.body_timeout_seconds)
        else:
            self.disarm()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self.reading_head = True
        self.head_begun = True
        self.head_bytes = 0

    def on_headers_complete(self) -> None:
        self.reading_head = False
        self.head_begun = False
        if self.armed_for == "head":  # that head is whole: a pipelined next one gets its own
            self.armed_for = "whole head"  # replaced or disarmed by watch()
        self.waiting.pop(self, None)
        if len(self.url) > MAX_TARGET_BYTES:  # uvicorn's parse_url would answer a bare 400
            self.refuse(414, too_long_message(self.bounds.max_query_bytes))
            return
        if sum(len(k) + len(v) + 4 for k, v in self.headers) > self.bounds.max_header_bytes:
            self.refuse(431, header_message(self.bounds.max_header_bytes))
            return
        self.reading_body = True
        super().on_headers_complete()

    def on_body(self, body: bytes) -> None:
        if not self.refused:
            super().on_body(body)

    def on_message_complete(self) -> None:
        self.reading_body = False
        if not self.refused:
            super().on_message_complete()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self.waiting[self] = None
            self.waiting.move_to_end(self)

    # -- requests in progress

    def _start_asgi_task(self, cycle: RequestResponseCycle, app: Any) -> None:
        limit = self.bounds.max_concurrent_requests
        if len(self.tasks) >= limit and cycle.scope["path"] not in HEALTH_PATHS:
            app = busy
        if cycle.scope["method"] != "HEAD":  # uvicorn writes no body for HEAD
            cycle.transport = HeadWithBody(cycle.transport, cycle)
        super()._start_asgi_task(cycle, app)

    # -- deadlines

    def arm(self, part: str, seconds: float) -> None:
        """A deadline `seconds` from now for `part` (kept if one for it is already set)."""
        if self.armed_for == part:
            return
        self.disarm()
        self.armed_for = part
        self.deadline = self.loop.call_later(seconds, self.deadline_passed, seconds)

    def disarm(self) -> None:
        self.armed_for = None
        if self.deadline is not None:
            self.deadline.cancel()
            self.deadline = None

    def deadline_passed(self, seconds: float) -> None:
        self.deadline = None
        self.armed_for = None
        if self.cycle is not None and self.cycle.response_started:
            self.transport.close()
        else:
            self.refuse(408, timeout_message(seconds))

    def refuse(self, status: int, detail: str) -> None:
        """Answer `status` with {"detail": …} and close, whatever was read of the request;
        nothing more of it is parsed."""
        self.refused = True
        self.disarm()
        self.waiting.pop(self, None)
        if self.transport.is_closing():
            return
        self.transport.write(plain_answer(status, detail))
        self.transport.close()
        if self.cycle is not None and not self.cycle.response_complete:
            self.cycle.disconnected = True
            self.cycle.message_event.set()


class HeadWithBody:
    """The transport of one request's cycle (not a HEAD's), holding the answer's head
    (uvicorn's first write once the answer has started) until the first body bytes (an
    empty body is written too) or the connection's close, then writing both at once.
    Anything written before the answer starts (a 100 Continue) goes out as it comes."""

    def __init__(self, transport: asyncio.Transport, cycle: RequestResponseCycle) -> None:
        self.transport = transport
        self.cycle = cycle
        self.head: bytes | None = None
        self.head_sent = False

    def write(self, data: bytes) -> None:
        if not self.head_sent and self.cycle.response_started:
            if self.head is None:
                self.head = data
                return
            data = self.head + data
            self.head, self.head_sent = None, True
        self.transport.write(data)

    def close(self) -> None:
        if self.head is not None:
            self.write(b"")
        self.transport.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.transport, name)


async def busy(scope: Any, receive: Any, send: Any) -> None:
    """The answer to a request beyond `max_concurrent_requests`."""
    body = orjson.dumps({"detail": BUSY_MESSAGE})
    await send(
        {
            "type": "http.response.start",
            "status": 503,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"retry-after", str(BUSY_RETRY_AFTER_S).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
