"""Finished answers of pure routes, kept in memory, bounded in bytes, replayed before routing.

A route whose answer depends only on the request (method, path, query string, body, and the
Accept-Language, Cookie and Content-Type headers) and the app's settings opts in with the
dependency `Depends(cacheable)`. Its 200 answers are then kept, and the `CachedAnswers`
middleware answers the same request again before routing, validation or computing: a class
opening the worked example, or a link the teacher shared, costs microseconds per student.
One cache per app (so per settings); least recently used answers leave first. Everything an
entry holds counts against `max_bytes`: the answer's body and headers, and its key (which
holds the request body, up to the body cap, and the headers it varies on), plus a fixed
overhead; an entry larger than `max_entry_bytes` is never kept.

Requests that arrive together for the same answer (a class opening the link on the
projector) are answered once: while one is being computed, the same requests wait for it
and are replayed its answer, instead of each computing it again.
"""

import asyncio
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from threading import Lock

from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

Key = tuple[str, str, bytes, bytes, bytes, bytes, bytes]
# A text/plain post of the same bytes is not the JSON request (it gets 415, not the answer).
VARY = (b"accept-language", b"cookie", b"content-type")
ENTRY_OVERHEAD = 256  # the tuple, the Answer, the dict slot and the objects' headers
# Set in the scope's state when the answer going out is one the cache holds (just kept or
# replayed): the compression layer keeps compressed copies of those only.
HELD = "held_by_response_cache"


@dataclass(frozen=True)
class Answer:
    headers: tuple[tuple[bytes, bytes], ...]  # a tuple: middleware outside edits header lists
    body: bytes


def entry_bytes(key: Key, answer: Answer) -> int:
    """What one entry holds, in bytes: key, answer headers and body, and the overhead."""
    header_bytes = sum(len(name) + len(value) for name, value in answer.headers)
    return sum(map(len, key)) + header_bytes + len(answer.body) + ENTRY_OVERHEAD


def cache_key(scope: Scope, body: bytes, headers: dict[bytes, bytes] | None = None) -> Key:
    """The key of a request (`headers`: its headers as a dict, when already made)."""
    headers = dict(scope["headers"]) if headers is None else headers
    vary = tuple(headers.get(name, b"") for name in VARY)
    return (scope["method"], scope["path"], scope.get("query_string", b""), *vary, body)


class ResponseCache:
    def __init__(self, max_bytes: int, max_entry_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.max_entry_bytes = max_entry_bytes
        self.entries: OrderedDict[Key, Answer] = OrderedDict()
        self.sizes: dict[Key, int] = {}
        self.size = 0
        self.routes: set[tuple[str, str]] = set()  # (method, path) that opted in
        self.lock = Lock()  # the middleware runs on the event loop, sync routes in threads

    def get(self, key: Key) -> Answer | None:
        with self.lock:
            answer = self.entries.get(key)
            if answer is not None:
                self.entries.move_to_end(key)
            return answer

    def put(self, key: Key, answer: Answer) -> bool:
        """Keep `answer` for `key`; whether it is kept (not too large, not already there)."""
        size = entry_bytes(key, answer)
        if size > self.max_entry_bytes:
            return False
        with self.lock:
            if key in self.entries:
                return False
            self.entries[key] = answer
            self.sizes[key] = size
            self.size += size
            while self.size > self.max_bytes:
                old, _ = self.entries.popitem(last=False)
                self.size -= self.sizes.pop(old)
        return True


async def cacheable(request: Request) -> None:
    """Route dependency: this route's 200 answers may be kept and replayed."""
    request.state.cacheable = True


def cacheable_routes(routes: Iterable[object]) -> set[tuple[str, str]]:
    """(method, path) of every route that depends on `cacheable`: known from the start, so
    that the first requests, arriving together, are already answered once."""
    known = set()
    for route in routes:
        dependant = getattr(route, "dependant", None)
        if dependant is not None and any(d.call is cacheable for d in dependant.dependencies):
            path, methods = getattr(route, "path", ""), getattr(route, "methods", ())
            known.update((method, path) for method in methods)
    return known


class CachedAnswers:
    """Pure ASGI middleware: replays a kept answer, and keeps the 200 answers of routes that
    declared themselves `cacheable`."""

    def __init__(self, app: ASGIApp, cache: ResponseCache) -> None:
        self.app = app
        self.cache = cache
        # Requests being answered, by key, with the event their twins wait on (made by the
        # first twin to come: most requests have none).
        self.in_flight: dict[Key, asyncio.Event | None] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self.cache.max_entry_bytes == 0:
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        known = (scope["method"], scope["path"]) in self.cache.routes
        key: Key | None = None  # the request's key, once its whole body is known
        if known and (b"content-length" in headers or scope["method"] in ("GET", "HEAD")):
            body = await read_body(receive) if b"content-length" in headers else b""
            if body is None:
                return  # the client went away
            key = cache_key(scope, body, headers)
            answer = self.cache.get(key)
            while answer is None and key in self.in_flight:  # the same request, under way
                under_way = self.in_flight[key]
                if under_way is None:
                    under_way = self.in_flight[key] = asyncio.Event()
                await under_way.wait()
                answer = self.cache.get(key)  # None if it was not kept (an error, too large)
            if answer is not None:
                scope.setdefault("state", {})[HELD] = True
                headers_copy = list(answer.headers)  # middleware outside edits the list
                await send({"type": "http.response.start", "status": 200, "headers": headers_copy})
                await send({"type": "http.response.body", "body": answer.body})
                return
            receive = replay(body, receive)

        received: list[bytes] = []
        sent: list[bytes] | None = []  # None once the answer is too large to hold
        start: dict[str, Message] = {}

        async def tee_receive() -> Message:
            message = await receive()
            if message["type"] == "http.request":
                received.append(message.get("body", b""))
            return message

        async def keep_send(message: Message) -> None:
            nonlocal sent
            if message["type"] == "http.response.start":
                start["message"] = message
            elif message["type"] == "http.response.body" and start["message"]["status"] == 200:
                if sent is not None:
                    sent.append(message.get("body", b""))
                    # An answer sent in pieces stops being kept once it outgrows an entry:
                    # no joining of megabytes on the loop for the cache to refuse.
                    if sum(map(len, sent)) > self.cache.max_entry_bytes:
                        sent = None
                if not message.get("more_body", False) and scope.get("state", {}).get("cacheable"):
                    self.cache.routes.add((scope["method"], scope["path"]))
                    if sent is not None:
                        answer = Answer(tuple(start["message"].get("headers", [])), b"".join(sent))
                        if self.cache.put(key or cache_key(scope, b"".join(received)), answer):
                            scope["state"][HELD] = True
            await send(message)

        if key is None:  # the body is kept as it is read
            await self.app(scope, tee_receive, keep_send)
            return
        self.in_flight[key] = None
        try:
            await self.app(scope, receive, keep_send)
        finally:
            waited_on = self.in_flight.pop(key)
            if waited_on is not None:
                waited_on.set()


async def read_body(receive: Receive) -> bytes | None:
    """The request's whole body, or None if the client left first (http.disconnect)."""
    chunks = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return None
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def replay(body: bytes, receive: Receive) -> Receive:
    """A receive that hands the app the body already read, then the real channel."""
    done = False

    async def replayed() -> Message:
        nonlocal done
        if not done:
            done = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed
