"""Finished answers of pure routes, kept in memory (bounded in bytes) and replayed.

A route whose answer depends only on the request (method, path, query string, body, the
reader's language) and the app's settings opts in with the dependency `Depends(cacheable)`.
Its 200 answers are kept as sent, compressed for the encodings the client accepts, and the
same request is answered again before routing, validation, computing or compressing: a class
opening the teacher's link (the same state, language and presenter mode, from the same
browsers) gets the same bytes, made once. Requests that arrive together for the same answer
wait for the first one instead of each computing it again.
"""

import asyncio
from dataclasses import dataclass

from cachetools import LRUCache
from fastapi import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.core.i18n import current_locale

Key = tuple[str, str, bytes, str, bytes, bytes]
ENTRY_OVERHEAD = 256  # the tuple, the answer and their objects' headers, roughly


@dataclass(frozen=True)
class Answer:
    headers: tuple[tuple[bytes, bytes], ...]
    body: bytes
    size: int  # with its key


async def cacheable(request: Request) -> None:
    """Route dependency: this route's 200 answers may be kept and replayed."""
    request.state.cacheable = True


class AnswerCache:
    """Pure ASGI middleware over compression and the routes (inside the edge)."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_entry_bytes = max_bytes // 16
        self.answers: LRUCache[Key, Answer] = LRUCache(max_bytes, getsizeof=lambda a: a.size)
        self.in_flight: dict[Key, asyncio.Event] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] != "http"
            or scope["method"] not in ("GET", "POST")
            or not self.max_entry_bytes
        ):
            await self.app(scope, receive, send)
            return
        body = b""
        if scope["method"] == "POST":
            body = await read_body(receive)
            if body is None:
                return  # the client left before its body arrived
            receive = replay(body, receive)
        headers = dict(scope["headers"])
        key = (
            scope["path"],
            scope["method"],
            scope["query_string"],
            current_locale(),
            headers.get(b"content-type", b"") + body,
            headers.get(b"accept-encoding", b""),  # what the compression outside chose from
        )
        answer = self.answers.get(key)
        if answer is None and key in self.in_flight:  # the same request, under way: wait
            await self.in_flight[key].wait()
            answer = self.answers.get(key)
        if answer is not None:
            await send(
                {"type": "http.response.start", "status": 200, "headers": list(answer.headers)}
            )
            await send({"type": "http.response.body", "body": answer.body})
            return
        if key in self.in_flight:  # not kept (not cacheable, or an error), and asked again
            await self.app(scope, receive, send)
            return
        self.in_flight[key] = asyncio.Event()
        try:
            await self.app(scope, receive, self.keeper(scope, key, send))
        finally:
            self.in_flight.pop(key).set()

    def keeper(self, scope: Scope, key: Key, send: Send) -> Send:
        """`send`, keeping a 200 answer of a cacheable route once it is whole."""
        start: Message = {}
        pieces: list[bytes] | None = []  # None once the answer is not to be kept
        key_bytes = sum(len(part) for part in key if isinstance(part, bytes | str))

        async def keep(message: Message) -> None:
            nonlocal pieces, start
            if message["type"] == "http.response.start":
                start = message
                if message["status"] != 200:
                    pieces = None
            elif message["type"] == "http.response.body" and pieces is not None:
                pieces.append(message.get("body", b""))
                size = key_bytes + sum(map(len, pieces)) + ENTRY_OVERHEAD
                if size > self.max_entry_bytes:
                    pieces = None
                elif not message.get("more_body", False) and scope.get("state", {}).get(
                    "cacheable"
                ):
                    headers = tuple(start.get("headers", ()))
                    self.answers[key] = Answer(headers, b"".join(pieces), size)
            await send(message)

        return keep


async def read_body(receive: Receive) -> bytes | None:
    """The request's whole body, or None if the client left first."""
    chunks = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return None
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks)


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
