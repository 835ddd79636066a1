"""Finished JSON answers of pure endpoints, kept in memory and bounded in bytes.

Every API answer is a pure function of the request (path, query string, body) and the
app's settings, so a class sending the same request (the worked example, a shared link) is
answered from here. A route opts in by answering through `ResponseCache.json`; from then on
the `CachedAnswers` middleware answers a repeated request to that route before routing,
validation or computing: microseconds. One cache per app (so per settings); least recently
used answers leave first; an answer larger than `max_entry_bytes` is never kept.
"""

from collections import OrderedDict
from collections.abc import Callable
from threading import Lock
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.responses import JSONResponse, dumps

Key = tuple[str, str, bytes, bytes]


def cache_key(scope: Scope, body: bytes) -> Key:
    return (scope["method"], scope["path"], scope.get("query_string", b""), body)


class ResponseCache:
    def __init__(self, max_bytes: int, max_entry_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.max_entry_bytes = max_entry_bytes
        self.entries: OrderedDict[Key, bytes] = OrderedDict()
        self.size = 0
        self.routes: set[tuple[str, str]] = set()  # (method, path) that opted in
        self.lock = Lock()  # sync routes run in the thread pool

    def get(self, key: Key) -> bytes | None:
        with self.lock:
            body = self.entries.get(key)
            if body is not None:
                self.entries.move_to_end(key)
            return body

    def put(self, key: Key, body: bytes) -> None:
        if len(body) > self.max_entry_bytes:
            return
        with self.lock:
            if key in self.entries:
                return
            self.entries[key] = body
            self.size += len(body)
            while self.size > self.max_bytes:
                _, old = self.entries.popitem(last=False)
                self.size -= len(old)

    async def json(self, request: Request, compute: Callable[[], Any]) -> Response:
        """The answer to this request: from the cache, or `compute()` serialized and kept."""
        key = cache_key(request.scope, await request.body())
        self.routes.add(key[:2])
        body = self.get(key)
        if body is None:
            body = dumps(compute())
            self.put(key, body)
        return Response(body, media_type=JSONResponse.media_type)


async def get_cache(request: Request) -> ResponseCache:
    """The dependency: the cache of the app serving this request (set by create_app)."""
    return request.app.state.response_cache


class CachedAnswers:
    """Pure ASGI middleware: a repeated request to a route that opted in is answered from
    the cache before the app sees it. Only bodies with a Content-Length (already checked
    against the cap) are read here; anything else goes through untouched."""

    def __init__(self, app: ASGIApp, cache: ResponseCache) -> None:
        self.app = app
        self.cache = cache

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or (scope["method"], scope["path"]) not in self.cache.routes:
            await self.app(scope, receive, send)
            return
        if b"content-length" not in dict(scope["headers"]):
            await self.app(scope, receive, send)
            return
        chunks = []
        more = True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        body = b"".join(chunks)
        cached = self.cache.get(cache_key(scope, body))
        if cached is not None:
            await Response(cached, media_type=JSONResponse.media_type)(scope, receive, send)
            return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)
