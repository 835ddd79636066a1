"""The edge of every request, in one pure ASGI layer: size limits, the request log, the
security headers; and the layers under it that a path has no use for, skipped.

One layer instead of three, because each layer costs a closure per message and a call per
`send` on every request, the ones answered from the cache included. In order, for a request:

- its id: the `X-Request-Id` a proxy sent when it looks like one, else a new one, kept in
  the scope's state for the handlers and sent back on the answer;
- refused from its head alone when too large or not JSON (app/web/middleware/body_limits.py:
  413, 414, 415), and a body sent without Content-Length counted as it arrives (413);
- HEAD is served as GET and its answer sent without the body (Content-Length kept);
- the health checks go straight to the app under compression and the response cache (a few
  bytes of JSON that neither would change), everything else through them;
- every answer gets the security headers (app/web/middleware/security.py) and the id;
- one log line when it ends (app/web/middleware/requestlog.py), 499 for a client that left
  before its answer; an unexpected error answers 500 with a sentence holding the id (the
  traceback goes to the log only).
"""

import random
import sys
import time

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.settings import Settings
from app.web.health import HEALTH_PATHS
from app.web.json_io import JSONResponse
from app.web.middleware.body_limits import refusal, too_large_message
from app.web.middleware.cache import CachedAnswers, ResponseCache
from app.web.middleware.compression import compression
from app.web.middleware.direct import DirectRoutes
from app.web.middleware.requestlog import (
    CLIENT_CLOSED,
    INCOMING_ID,
    log_request,
    server_error_message,
)
from app.web.middleware.security import security_headers


class Edge:
    """The layer of the module docstring. `app` is compression and the response cache around
    `plain`, the app the health checks go to directly."""

    def __init__(self, app: ASGIApp, plain: ASGIApp, settings: Settings) -> None:
        self.app = app
        self.plain = plain
        self.max_bytes = settings.max_body_bytes
        self.max_query = settings.max_query_bytes
        self.headers = security_headers(settings.frame_ancestors)
        self.names = frozenset(name for name, _ in self.headers)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        headers = dict(scope["headers"])
        incoming = headers.get(b"x-request-id", b"").decode("latin-1")
        request_id = incoming if INCOMING_ID.fullmatch(incoming) else new_request_id()
        scope.setdefault("state", {})["request_id"] = request_id
        method = scope["method"]
        added = [(b"x-request-id", request_id.encode()), *self.headers]
        status, started, completed, disconnected, received = 500, False, False, False, 0

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
                # A chunked body has no Content-Length: count it as it arrives.
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise HTTPException(413, too_large_message(self.max_bytes))
            elif message["type"] == "http.disconnect" and not completed:
                # A disconnect after the whole answer went out is the normal end of a request.
                disconnected = True
            return message

        refused = refusal(
            method,
            scope["path"],
            headers,
            scope.get("query_string", b""),
            self.max_bytes,
            self.max_query,
        )
        if method == "HEAD":
            scope = {**scope, "method": "GET"}
        inner = self.plain if scope["path"] in HEALTH_PATHS else self.app
        try:
            if refused is not None:
                status_code, detail = refused
                await JSONResponse({"detail": detail}, status_code=status_code)(
                    scope, receive, send_out
                )
            else:
                await inner(scope, receive_in, send_out)
        except Exception:
            if disconnected:  # the client left mid-request: nobody to answer, nothing wrong
                log_request(scope, method, CLIENT_CLOSED, start, request_id)
                return
            log_request(scope, method, 500, start, request_id, exc_info=sys.exc_info())
            if started:
                raise  # the answer is half sent: let the server drop the connection
            response = JSONResponse({"detail": server_error_message(request_id)}, status_code=500)
            await response(scope, receive, send_out)
            return
        log_request(scope, method, CLIENT_CLOSED if disconnected else status, start, request_id)


def new_request_id() -> str:
    """16 hex digits: an id to find a request's log line by, not a secret (so drawn without a
    system call, as os.urandom would make)."""
    return f"{random.getrandbits(64):016x}"


def edge_stack(app: ASGIApp, *, settings: Settings, cache: ResponseCache) -> Edge:
    """The layers over `app` (the routes, and the classroom view): the edge, compression,
    the response cache, the JSON routes called directly (app/web/middleware/direct.py); the
    health checks skip the three inner ones."""
    around = compression(
        CachedAnswers(DirectRoutes(app), cache),
        thread_above=settings.compress_in_thread_bytes,
        keep_bytes=settings.compressed_cache_bytes,
    )
    return Edge(around, app, settings)
