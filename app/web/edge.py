"""The edge of every request: the one ASGI layer of ours, outside FastAPI's routing.

- its id: the `X-Request-Id` a proxy sent when it looks like one, else a new one, kept in
  the scope's state for the handlers and sent back on the answer;
- its language (a `lang=` parameter, else Accept-Language), set once for everything under it,
  and the classroom parameters lifted off the query (app/web/classroom.py), presenter mode set;
- refused from its head alone when it cannot be served: a query string over the cap (414), a
  body the JSON API cannot read (415: not JSON, or compressed), a Content-Length that is not
  a number or over the cap (413); a body sent without Content-Length is counted as it comes;
- HEAD served as GET, its answer sent without the body (Content-Length kept);
- static files (/static/…) answered by ServeStatic (app/web/static.py), every other request
  by a kept answer when a pure route made it before (app/web/cache.py), else by the app;
- every answer gets the security headers and the id, a page its Content-Language;
- one log line when it ends, 499 for a client that left before its answer; an unexpected
  error answers 500 with a sentence holding the id (the traceback goes to the log only).

One layer rather than one per concern: each layer is a call and a wrapped `send` per message
for every request, and the request's head is read here once.
"""

import sys
import time

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.core.i18n import gettext, negotiate, use_locale
from app.settings import Settings
from app.web.cache import AnswerCache, Keeping, read_body, replay, request_key
from app.web.classroom import SCOPE_KEY, in_language, lifted, param, presenting, switched_on
from app.web.requestlog import CLIENT_CLOSED, log_request
from app.web.responses import JSONResponse
from app.web.security import request_id, security_headers
from app.web.static import PREFIX as STATIC_PREFIX
from app.web.static import StaticFiles

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


def locale_of(classroom: list[tuple[str, str]], headers: dict[bytes, bytes]) -> str:
    """The reader's language: a `lang=` parameter, else Accept-Language, else English."""
    accept = headers.get(b"accept-language", b"").decode("latin-1")
    return negotiate(param(classroom, "lang"), accept)


def request_locale(scope: Scope) -> str:
    """The same, from a request's scope (its query string and headers)."""
    return locale_of(lifted(scope.get("query_string", b""))[1], dict(scope["headers"]))


class Edge:
    def __init__(self, app: ASGIApp, settings: Settings, static: StaticFiles | None = None) -> None:
        self.app = app
        self.settings = settings
        self.headers = security_headers(settings.frame_ancestors)
        self.names = frozenset(name for name, _ in self.headers)
        self.static = static.serve(app) if static is not None else None
        self.cache = AnswerCache(settings.response_cache_bytes)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        headers = dict(scope["headers"])
        rid = request_id(scope["headers"])
        scope.setdefault("state", {})["request_id"] = rid
        method = scope["method"]
        query = scope.get("query_string", b"")
        own_query, classroom = lifted(query)
        locale = locale_of(classroom, headers)
        added = [(b"x-request-id", rid.encode()), *self.headers]
        status, started, completed, disconnected, received = 500, False, False, False, 0
        max_bytes = self.settings.max_body_bytes

        async def send_out(message: Message) -> None:
            nonlocal status, started, completed
            if message["type"] == "http.response.start":
                started, status = True, message["status"]
                kept = [h for h in message.get("headers", ()) if h[0].lower() not in self.names]
                message = {**message, "headers": kept + added}
                in_language(message, locale)
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

        inner = {**scope, "method": "GET"} if method == "HEAD" else scope
        presenter = presenting.set(switched_on(param(classroom, "present")))
        try:
            with use_locale(locale):
                refused = refusal(method, scope["path"], headers, query, self.settings)
                if refused is not None:
                    code, detail = refused
                    await JSONResponse({"detail": detail}, code)(inner, receive, send_out)
                elif self.static is not None and scope["path"].startswith(STATIC_PREFIX):
                    await self.static(inner, receive_in, send_out)
                else:
                    if classroom:  # lifted for the templates (app/web/classroom.py)
                        inner = {**inner, "query_string": own_query, SCOPE_KEY: classroom}
                    await self.answer(inner, receive_in, send_out, (query, headers, locale))
        except HTTPException as error:  # raised while reading the body (413)
            if started:
                raise
            with use_locale(locale):
                answer = JSONResponse({"detail": error.detail}, error.status_code)
            await answer(inner, receive, send_out)
        except Exception:
            if disconnected:  # the client left mid-request: nobody to answer
                log_request(scope, method, CLIENT_CLOSED, start, rid)
                return
            log_request(scope, method, 500, start, rid, exc_info=sys.exc_info())
            if started:
                raise  # the answer is half sent: let the server drop the connection
            with use_locale(locale):
                answer = JSONResponse({"detail": server_error_message(rid)}, 500)
            await answer(inner, receive, send_out)
            return
        finally:
            presenting.reset(presenter)
        log_request(scope, method, CLIENT_CLOSED if disconnected else status, start, rid)

    async def answer(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        request: tuple[bytes, dict[bytes, bytes], str],
    ) -> None:
        """The app's answer, or the same answer kept from before: a pure route's, made for
        the same `request` (its query as it came, its headers and language) and body."""
        method = scope["method"]
        if not (self.cache.on and method in ("GET", "POST")):
            await self.app(scope, receive, send)
            return
        body = b""
        if method == "POST":
            read = await read_body(receive)
            if read is None:
                return  # the client left before its body arrived (logged 499)
            body, receive = read, replay(read, receive)
        query, headers, locale = request
        key = request_key(scope["path"], method, query, headers, locale, body)
        kept = await self.cache.find(key)
        if kept is not None:
            start = {"type": "http.response.start", "status": 200, "headers": list(kept.headers)}
            await send(start)
            await send({"type": "http.response.body", "body": kept.body})
        elif not self.cache.claim(key):  # made a moment ago and not kept: made again
            await self.app(scope, receive, send)
        else:
            try:
                await self.app(scope, receive, Keeping(self.cache, key, scope, send).send)
            finally:
                self.cache.release(key)
