"""The edge of every request, one pure ASGI layer outside all others:

- its id: the `X-Request-Id` a proxy sent when it looks like one, else a new one, kept in
  the scope's state for the handlers and sent back on the answer;
- its language (a `lang=` parameter, else Accept-Language), set once for everything under it;
- refused from its head alone when it cannot be served: a query string over the cap (414), a
  body the JSON API cannot read (415: not JSON, or compressed), a Content-Length that is not
  a number or over the cap (413); a body sent without Content-Length is counted as it comes;
- HEAD served as GET, its answer sent without the body (Content-Length kept);
- every answer gets the security headers and the id;
- one log line when it ends, 499 for a client that left before its answer; an unexpected
  error answers 500 with a sentence holding the id (the traceback goes to the log only).
"""

import sys
import time
from urllib.parse import parse_qsl

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.core.i18n import gettext, negotiate, use_locale
from app.settings import Settings
from app.web.requestlog import CLIENT_CLOSED, log_request
from app.web.responses import JSONResponse
from app.web.security import request_id, security_headers

MAX_LENGTH_DIGITS = 15  # a Content-Length past a petabyte is not a length


def too_large_message(max_bytes: int) -> str:
    return gettext("The request body is larger than %(max)s bytes; send a smaller one.") % {
        "max": f"{max_bytes:,}"
    }


def too_long_message(max_bytes: int) -> str:
    return gettext(
        "The address is longer than %(max)s bytes; use the API with a JSON body for inputs "
        "this large."
    ) % {"max": f"{max_bytes:,}"}


def server_error_message(request_id: str) -> str:
    return gettext(
        "Something went wrong on the server (error id %(id)s). Please try again; if it keeps "
        "happening, tell your teacher this error id."
    ) % {"id": request_id}


def is_json(content_type: bytes) -> bool:
    kind = content_type.split(b";", 1)[0].strip().lower()
    return kind == b"application/json" or kind.endswith(b"+json")


def refusal(
    method: str, path: str, headers: dict[bytes, bytes], query: bytes, settings: Settings
) -> tuple[int, str] | None:
    """The status and sentence refusing a request from its head alone, or None."""
    if len(query) > settings.max_query_bytes:
        return 414, too_long_message(settings.max_query_bytes)
    length = headers.get(b"content-length")
    if length is not None and not (
        length.isdigit()
        and len(length) <= MAX_LENGTH_DIGITS
        and int(length) <= settings.max_body_bytes
    ):
        return 413, too_large_message(settings.max_body_bytes)
    if (
        method == "POST"
        and path.startswith("/api/")
        and headers.get(b"content-length", b"0") != b"0"
    ):
        if not is_json(headers.get(b"content-type", b"")):
            return 415, gettext(
                "This API reads JSON only: send the body with the header "
                "content-type: application/json (with curl: -H 'content-type: application/json')."
            )
        if headers.get(b"content-encoding", b"identity").strip().lower() != b"identity":
            return 415, gettext(
                "This API reads uncompressed JSON only: send the body without Content-Encoding."
            )
    return None


def request_locale(scope: Scope) -> str:
    """The reader's language: a `lang=` parameter, else Accept-Language, else English."""
    query = scope.get("query_string", b"").decode("latin-1")
    lang = next((v for k, v in parse_qsl(query) if k == "lang"), None) if "lang=" in query else None
    accept = next((v for k, v in scope["headers"] if k == b"accept-language"), b"")
    return negotiate(lang, accept.decode("latin-1"))


class Edge:
    def __init__(self, app: ASGIApp, settings: Settings) -> None:
        self.app = app
        self.settings = settings
        self.headers = security_headers(settings.frame_ancestors)
        self.names = frozenset(name for name, _ in self.headers)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        headers = dict(scope["headers"])
        rid = request_id(scope["headers"])
        scope.setdefault("state", {})["request_id"] = rid
        method = scope["method"]
        added = [(b"x-request-id", rid.encode()), *self.headers]
        status, started, completed, disconnected, received = 500, False, False, False, 0
        max_bytes = self.settings.max_body_bytes

        async def send_out(message: Message) -> None:
            nonlocal status, started, completed
            if message["type"] == "http.response.start":
                started, status = True, message["status"]
                kept = [h for h in message.get("headers", ()) if h[0].lower() not in self.names]
                message = {**message, "headers": kept + added}
            elif message["type"] == "http.response.body":
                completed = completed or not message.get("more_body", False)
                if method == "HEAD":
                    message = {**message, "body": b""}
            await send(message)

        async def receive_in() -> Message:
            nonlocal disconnected, received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > max_bytes:
                    raise HTTPException(413, too_large_message(max_bytes))
            elif message["type"] == "http.disconnect" and not completed:
                disconnected = True
            return message

        with use_locale(request_locale(scope)):
            refused = refusal(
                method, scope["path"], headers, scope.get("query_string", b""), self.settings
            )
            inner = {**scope, "method": "GET"} if method == "HEAD" else scope
            try:
                if refused is not None:
                    code, detail = refused
                    await JSONResponse({"detail": detail}, code)(inner, receive, send_out)
                else:
                    await self.app(inner, receive_in, send_out)
            except HTTPException as error:  # raised while reading the body (413)
                if started:
                    raise
                answer = JSONResponse({"detail": error.detail}, error.status_code)
                await answer(inner, receive, send_out)
            except Exception:
                if disconnected:  # the client left mid-request: nobody to answer
                    log_request(scope, method, CLIENT_CLOSED, start, rid)
                    return
                log_request(scope, method, 500, start, rid, exc_info=sys.exc_info())
                if started:
                    raise  # the answer is half sent: let the server drop the connection
                answer = JSONResponse({"detail": server_error_message(rid)}, 500)
                await answer(inner, receive, send_out)
                return
        log_request(scope, method, CLIENT_CLOSED if disconnected else status, start, rid)
