"""Compression: zstd, Brotli or gzip at fast levels (starlette-compress), with large answers
compressed in a worker thread, streamed, and kept compressed beside the plain answers of the
cache.

`compression(app)` is two layers. Outside, starlette-compress's `CompressMiddleware` picks
the encoding (zstd, then br, then gzip, among those the client accepts) and compresses on
the event loop what is small or streamed (pages, fragments, files), which costs well under a
millisecond. Inside it, `LargeAnswers` takes the one-shot answers of at least
`thread_above` bytes (the stage matrices at n = 256 are 6 MB) and marks them
Content-Encoding so that the outer layer leaves them be. It compresses them in the work
thread (app/web/work.py), so /healthz and small requests never wait behind tens of
milliseconds of compression (gzip there is ISA-L's, see `PACKERS`):

- an answer the response cache holds is compressed in one go and the compressed bytes are
  kept (least recently used out first, within `keep_bytes`, counting the plain answer they
  keep alive too), so a cache hit is never compressed twice;
- any other is never replayed, so nothing of it is kept. The answer to a POST (the APIs'
  6 MB answers) is compressed in pieces of `STREAM_PIECE_BYTES`, each piece sent as soon as
  it is written (chunked, without Content-Length, as starlette-compress sends a streamed
  answer), so that the client reads and decodes while the server still compresses: two
  cores at work instead of one after the other (at n = 256, d = 64, gzip: ~20 ms less for a
  client that decodes as it reads, as browsers do). The answer to a GET is compressed in
  one go: it keeps its Content-Length, which HEAD answers too.
"""

import asyncio
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Protocol

import brotli
import zstandard
from isal import isal_zlib
from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from starlette_compress import CompressMiddleware

from app.web.middleware.cache import HELD
from app.web.pieces import PIECE_BYTES
from app.web.process import trim_when_idle
from app.web.work import compress_soon

ZSTD_LEVEL, BROTLI_QUALITY, GZIP_LEVEL = 1, 1, 1  # fast: the stage matrices are noisy floats
ISAL_GZIP_LEVEL = 1  # ISA-L's levels are 0 to 3


class Packer(Protocol):
    """A compressor fed piece by piece."""

    def compress(self, data: bytes) -> bytes:
        """What it has written of `data` so far (it may keep some for later)."""
        ...

    def sync(self) -> bytes:
        """All it kept, the stream left open: the client can decode everything so far."""
        ...

    def end(self) -> bytes:
        """All it kept, and the end of the stream."""
        ...


class ZstdPacker:
    def __init__(self) -> None:
        self._compressor = zstandard.ZstdCompressor(level=ZSTD_LEVEL).compressobj()

    def compress(self, data: bytes) -> bytes:
        return self._compressor.compress(data)

    def sync(self) -> bytes:
        return self._compressor.flush(zstandard.COMPRESSOBJ_FLUSH_BLOCK)

    def end(self) -> bytes:
        return self._compressor.flush()


class BrotliPacker:
    def __init__(self) -> None:
        self._compressor = brotli.Compressor(quality=BROTLI_QUALITY)

    def compress(self, data: bytes) -> bytes:
        return self._compressor.process(data)

    def sync(self) -> bytes:
        return self._compressor.flush()

    def end(self) -> bytes:
        return self._compressor.finish()


# gzip is ISA-L's (Intel's), at its level 1: a stream any inflate reads, a little smaller than
# zlib's level 1 in about a quarter of its time (6.34 MB at n = 256, d = 64: 2.66 MB in
# ~25 ms, against 2.75 MB in ~90 ms; zlib's Huffman coding alone, 2.88 MB in ~45 ms, also
# took the client twice as long to inflate). All three let go of the GIL while they work.
class GzipPacker:
    def __init__(self) -> None:
        self._compressor = isal_zlib.compressobj(ISAL_GZIP_LEVEL, isal_zlib.DEFLATED, 31)

    def compress(self, data: bytes) -> bytes:
        return self._compressor.compress(data)

    def sync(self) -> bytes:
        return self._compressor.flush(isal_zlib.Z_SYNC_FLUSH)

    def end(self) -> bytes:
        return self._compressor.flush()


PACKERS: dict[str, Callable[[], Packer]] = {
    "zstd": ZstdPacker,
    "br": BrotliPacker,
    "gzip": GzipPacker,
}


def packed(encoding: str, body: bytes) -> bytes:
    """`body` compressed in one go."""
    packer = PACKERS[encoding]()
    return packer.compress(body) + packer.end()


def packed_piece(packer: Packer, piece: bytes, last: bool) -> bytes:
    """What `packer` writes for the next `piece` of a body, all of it (a compressor holds
    on to up to a few hundred kB otherwise), and the body's end when `last`."""
    return packer.compress(piece) + (packer.end() if last else packer.sync())


COMPRESSIBLE = (b"application/json", b"text/", b"application/javascript", b"image/svg+xml")


def chosen_encoding(accept_encoding: str) -> str | None:
    """The encoding the outer layer would pick: zstd, br, gzip in that order, q > 0."""
    accepted = set()
    for item in accept_encoding.lower().split(","):
        coding, _, params = item.partition(";")
        quality = params.strip().removeprefix("q=")
        try:
            if params and float(quality) <= 0:
                continue
        except ValueError:
            continue
        accepted.add(coding.strip())
    for encoding in PACKERS:
        if encoding in accepted or "*" in accepted:
            return encoding
    return None


class Kept:
    """Compressed bytes by (plain body, encoding), for plain bodies replayed as the same object
    by the response cache; an entry counts its compressed and its plain bytes."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.size = 0
        self._entries: OrderedDict[tuple[int, str], tuple[bytes, bytes]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, body: bytes, encoding: str) -> bytes | None:
        with self._lock:
            entry = self._entries.get((id(body), encoding))
            if entry is None or entry[0] is not body:  # an id reused by another object
                return None
            self._entries.move_to_end((id(body), encoding))
            return entry[1]

    def put(self, body: bytes, encoding: str, compressed: bytes) -> None:
        size = len(body) + len(compressed)
        if size > self.max_bytes:
            return
        with self._lock:
            old = self._entries.pop((id(body), encoding), None)
            if old is not None:
                self.size -= len(old[0]) + len(old[1])
            self._entries[(id(body), encoding)] = (body, compressed)
            self.size += size
            while self.size > self.max_bytes:
                _, (plain, packed) = self._entries.popitem(last=False)
                self.size -= len(plain) + len(packed)


class Pieces:
    """A body compressed piece by piece in the compression thread, each piece sent as soon as
    it is compressed (chunked) by a task of its own: the loop hands the next piece over while
    the one before is being compressed, so the thread never waits for the loop's sending."""

    def __init__(self, encoding: str, send: Send) -> None:
        self.packer = PACKERS[encoding]()
        self.send = send
        self.compressed: asyncio.Queue[tuple[asyncio.Future[bytes], bool]] = asyncio.Queue()
        self.sender = asyncio.ensure_future(self.send_all())

    async def push(self, piece: bytes, last: bool) -> None:
        """Have `piece` compressed (the body's end when `last`; then wait until all is sent)."""
        self.compressed.put_nowait((compress_soon(packed_piece, self.packer, piece, last), last))
        if last:
            await self.sender

    async def send_all(self) -> None:
        last = False
        while not last:
            future, last = await self.compressed.get()
            packed = await future
            if packed or last:  # a compressor may keep a short piece for later
                message = {"type": "http.response.body", "body": packed, "more_body": not last}
                await self.send(message)
        trim_when_idle()  # what the compressors freed goes back once the work stops

    def stop(self) -> None:
        """The answer ended without its last piece (an error): stop sending."""
        self.sender.cancel()


class LargeAnswers:
    """Pure ASGI middleware: answers of `thread_above` bytes or more, and streamed answers
    whose first piece is that large, compressed in the compression thread (see the module
    docstring)."""

    def __init__(self, app: ASGIApp, thread_above: int, keep_bytes: int) -> None:
        self.app = app
        self.thread_above = thread_above
        self.kept = Kept(keep_bytes)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        accept = b",".join(v for k, v in scope["headers"] if k == b"accept-encoding")
        encoding = chosen_encoding(accept.decode("latin-1")) if accept else None
        if encoding is None:
            await self.app(scope, receive, send)
            return
        start: Message | None = None
        pieces: Pieces | None = None  # once the answer is being compressed piece by piece

        async def compress_large(message: Message) -> None:
            nonlocal start, pieces
            if message["type"] == "http.response.start":
                start = message  # held until the body says how large it is
                return
            more = message.get("more_body", False)
            if pieces is not None:
                await pieces.push(message.get("body", b""), last=not more)
                return
            if start is None:  # already sent
                await send(message)
                return
            held, start = start, None
            body = message.get("body", b"")
            if len(body) < self.thread_above or not eligible(held):
                await send(held)
                await send(message)
                return
            headers = MutableHeaders(raw=list(held["headers"]))
            headers["Content-Encoding"] = encoding
            headers.add_vary_header("Accept-Encoding")
            in_cache = scope.get("state", {}).get(HELD, False)
            # An answer never replayed is streamed, but a whole GET answer (HEAD is served as
            # GET) keeps its Content-Length, which HEAD shows.
            if more or (not in_cache and scope["method"] != "GET"):
                del headers["Content-Length"]
                await send({**held, "headers": headers.raw})
                pieces = Pieces(encoding, send)
                if more:
                    await pieces.push(body, last=False)
                    return
                for offset in range(0, len(body), PIECE_BYTES):
                    last = offset + PIECE_BYTES >= len(body)
                    await pieces.push(body[offset : offset + PIECE_BYTES], last)
                return
            whole = self.kept.get(body, encoding) if in_cache else None
            if whole is None:
                whole = await compress_soon(packed, encoding, body)
                if in_cache:
                    self.kept.put(body, encoding, whole)
            headers["Content-Length"] = str(len(whole))
            await send({**held, "headers": headers.raw})
            await send({"type": "http.response.body", "body": whole})

        try:
            await self.app(scope, receive, compress_large)
        finally:
            if pieces is not None and not pieces.sender.done():
                pieces.stop()


def eligible(start: Message) -> bool:
    headers = dict(start.get("headers", []))
    kind = headers.get(b"content-type", b"")
    return (
        start.get("status", 200) == 200
        and b"content-encoding" not in headers
        and kind.startswith(COMPRESSIBLE)
    )


def compression(app: ASGIApp, thread_above: int, keep_bytes: int) -> ASGIApp:
    """Both layers around `app` (the response cache and what it wraps)."""
    inner = LargeAnswers(app, thread_above=thread_above, keep_bytes=keep_bytes)
    return CompressMiddleware(
        inner,
        minimum_size=1024,
        zstd_level=ZSTD_LEVEL,
        brotli_quality=BROTLI_QUALITY,
        gzip_level=GZIP_LEVEL,
    )
