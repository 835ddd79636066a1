"""Finished answers of pure routes, kept in memory (bounded in bytes) and replayed.

A route whose answer depends only on the request (method, path, query string, body, the
reader's language) and the app's settings opts in with the dependency `Depends(cacheable)`.
Its 200 answers are kept as sent, compressed for the encodings the client accepts, and the
same request is answered again by the edge (app/web/edge.py) before routing, validation,
computing or compressing: a class opening the teacher's link (the same state, language and
presenter mode, from the same browsers) gets the same bytes, made once. Requests that arrive
together for the same answer wait for the first one instead of each computing it again.
"""

import asyncio
from dataclasses import dataclass

from cachetools import LRUCache
from fastapi import Request
from starlette.types import Message, Receive, Scope, Send

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


def request_key(
    path: str, method: str, query: bytes, headers: dict[bytes, bytes], locale: str, body: bytes
) -> Key:
    """What an answer of a pure route depends on: the request as it came (classroom
    parameters included), the reader's language, and the encodings compression chose from."""
    content = headers.get(b"content-type", b"") + body
    return (path, method, query, locale, content, headers.get(b"accept-encoding", b""))


class Keeping:
    """`send` for one answer on its way out, which keeps it once it is whole if it is a
    cacheable route's 200."""

    def __init__(self, cache: "AnswerCache", key: Key, scope: Scope, send: Send) -> None:
        self.cache = cache
        self.key = key
        self.scope = scope
        self.send_on = send
        self.start: Message = {}
        self.pieces: list[bytes] | None = []  # None once the answer is not to be kept
        self.size = ENTRY_OVERHEAD + sum(len(part) for part in key)

    async def send(self, message: Message) -> None:
        if self.pieces is not None:
            self.keep(message)
        await self.send_on(message)

    def keep(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.start = message
            if message["status"] != 200:
                self.pieces = None
        elif message["type"] == "http.response.body":
            body = message.get("body", b"")
            self.pieces.append(body)
            self.size += len(body)
            if self.size > self.cache.max_entry_bytes:
                self.pieces = None
            elif not message.get("more_body", False) and self.scope["state"].get("cacheable"):
                headers = tuple(self.start.get("headers", ()))
                self.cache.answers[self.key] = Answer(headers, b"".join(self.pieces), self.size)


class AnswerCache:
    """The kept answers and the requests under way, of one worker."""

    def __init__(self, max_bytes: int) -> None:
        self.max_entry_bytes = max_bytes // 16
        self.answers: LRUCache[Key, Answer] = LRUCache(max_bytes, getsizeof=lambda a: a.size)
        self.in_flight: dict[Key, asyncio.Event] = {}

    @property
    def on(self) -> bool:
        return self.max_entry_bytes > 0

    async def find(self, key: Key) -> Answer | None:
        """The kept answer, waiting for the same request under way if there is one."""
        answer = self.answers.get(key)
        if answer is None and key in self.in_flight:
            await self.in_flight[key].wait()
            answer = self.answers.get(key)
        return answer

    def claim(self, key: Key) -> bool:
        """Whether this request is the one to make the answer for `key` (no other is under
        way: one that was and kept nothing, not cacheable or an error, is not waited for)."""
        if key in self.in_flight:
            return False
        self.in_flight[key] = asyncio.Event()
        return True

    def release(self, key: Key) -> None:
        """The answer for `key` is made (kept or not): wake those waiting for it."""
        self.in_flight.pop(key).set()


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
