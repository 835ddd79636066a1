"""The answers the server gives itself, below the app: 400 (not HTTP), 408 (too slow), 413
(body too large), 414 (target too long to parse), 431 (headers too large) and 503 (busy).

Each says {"detail": a sentence} in the reader's language (the `lang` parameter, else
Accept-Language, as far as the request was read), carries what every answer of the app
carries (the security headers and X-Request-ID: the client's when it looks like one) and is
logged as one JSON line like the app's request lines.
"""

import time
from collections.abc import Sequence
from http import HTTPStatus
from urllib.parse import urlsplit

import orjson
from starlette.types import Receive, Scope, Send

from app.core.i18n import N_, format_number, gettext, use_locale
from app.settings import Settings
from app.web.edge import request_locale, too_large_message, too_long_message
from app.web.requestlog import CLIENT_CLOSED, log_request
from app.web.security import request_id, security_headers

Headers = Sequence[tuple[bytes, bytes]]
BUSY_RETRY_AFTER_S = 1
NOT_HTTP = N_("The request is not valid HTTP/1.1; send it with a browser, curl or an HTTP library.")
LATE_HEAD = N_(
    "The request did not arrive within %(seconds)s seconds; send it again on a faster connection."
)
SLOW_BODY = N_(
    "The request body arrived slower than %(rate)s bytes a second; send it again on a "
    "faster connection."
)
LARGE_HEADERS = N_(
    "The request headers are larger than %(bytes)s bytes; send fewer or shorter headers "
    "(cookies included)."
)
BUSY = N_("The server is answering as many requests as it can; try again in a moment.")


def locale(target: bytes, headers: Headers) -> str:
    """The reader's language, from what was read of the request (as the app's edge)."""
    return request_locale({"query_string": urlsplit(target).query, "headers": headers})


class Refusals:
    """The sentences and headers of one worker's answers (from its settings)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.security = security_headers(settings.frame_ancestors)

    def sentence(self, status: int, reason: str = "") -> str:
        """The sentence of a refusal, in the current locale; `reason` tells two 408s apart."""
        s = self.settings
        match status:
            case 400:
                return gettext(NOT_HTTP)
            case 408 if reason == "body":
                return gettext(SLOW_BODY) % {"rate": format_number(s.min_transfer_rate)}
            case 408:
                return gettext(LATE_HEAD) % {"seconds": format_number(s.header_timeout_seconds)}
            case 413:
                return too_large_message(s.max_body_bytes)
            case 414:
                return too_long_message(s.max_query_bytes)
            case 431:
                return gettext(LARGE_HEADERS) % {"bytes": format_number(s.max_header_bytes)}
        return gettext(BUSY)

    def head(self, status: int, body: bytes, rid: str, *, close: bool) -> list[tuple[bytes, bytes]]:
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", b"%d" % len(body)),
            (b"x-request-id", rid.encode()),
            *self.security,
        ]
        if status == 503:
            headers.append((b"retry-after", b"%d" % BUSY_RETRY_AFTER_S))
        if close:
            headers.append((b"connection", b"close"))
        return headers

    def closing_answer(
        self,
        status: int,
        target: bytes,
        headers: Headers,
        *,
        method: str,
        started: float,
        reason: str = "",
    ) -> bytes:
        """The whole answer to a request refused while it was being read (the connection then
        closes), logged."""
        rid = request_id(headers)
        with use_locale(locale(target, headers)):
            body = orjson.dumps({"detail": self.sentence(status, reason)})
        lines = [b"HTTP/1.1 %d %s" % (status, HTTPStatus(status).phrase.encode())]
        lines += [name + b": " + value for name, value in self.head(status, body, rid, close=True)]
        path = urlsplit(target).path.decode("latin-1") if target else ""
        log_request({"path": path}, method or "-", status, started, rid)
        return b"\r\n".join(lines) + b"\r\n\r\n" + (b"" if method == "HEAD" else body)

    def log_left(self, scope: Scope, started: float) -> None:
        """The log line of a request whose client left before it was served, as the app
        logs one that leaves while served (499)."""
        log_request(scope, scope["method"], CLIENT_CLOSED, started, request_id(scope["headers"]))

    def busy(self, content: dict[str, str] | None = None) -> "Busy":
        """The ASGI answer to a whole request that finds no room: 503 with Retry-After."""
        return Busy(self, content)


class Busy:
    """503 with Retry-After, {"detail": BUSY} or `content`, written by uvicorn as any answer
    of the app (HEAD and keep-alive included), logged."""

    def __init__(self, refusals: Refusals, content: dict[str, str] | None) -> None:
        self.refusals = refusals
        self.content = content

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = time.perf_counter()
        headers = scope["headers"]
        rid = request_id(headers)
        with use_locale(request_locale(scope)):
            content = self.content or {"detail": self.refusals.sentence(503)}
        body = orjson.dumps(content)
        start_headers = self.refusals.head(503, body, rid, close=False)
        await send({"type": "http.response.start", "status": 503, "headers": start_headers})
        await send({"type": "http.response.body", "body": body})
        log_request(scope, scope["method"], 503, started, rid)
