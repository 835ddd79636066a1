"""Compression: zstd, Brotli or gzip at fast levels (starlette-compress), with large answers
compressed in a worker thread, streamed, and kept compressed beside the plain answers of the
cache.

`compression(app)` is two layers. Outside, starlette-compress's `CompressMiddleware` picks
the encoding (zstd, then br, then gzip, among those the client accepts) and compresses on
the event loop what is small or streamed (pages, fragments, files), which costs well under a
millisecond. Inside it, `LargeAnswers` takes the one-shot answers of at least
`thread_above` bytes (the stage matrices at n = 256 are 6 MB) and marks them
Content-Encoding so that the outer layer leaves them be. It picks their encoding itself
(zstd, then gzip, then br: `LARGE_ORDER`) and compresses them with settings of their own
(`PACKERS`: gzip there is ISA-L's) in the work thread (app/web/work.py), so /healthz and
small requests never wait behind tens of milliseconds of compression:

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
from app.web.work import run_work

ZSTD_LEVEL, BROTLI_QUALITY, GZIP_LEVEL = 1, 1, 1  # fast: the stage matrices are noisy floats
# A large answer the cache does not hold goes out compressed in pieces of this many bytes.
STREAM_PIECE_BYTES = 512 * 1024

# Large answers have settings of their own where they write and read them faster for about
# the same size. Measured on the 6.34 MB answer at n = 256, d = 64 (CPU of one thread, the
# least of 15 runs, read as bench_api.py's clients read: Python's zlib, brotli, zstandard):
# - gzip: ISA-L's (Intel's) level 2: 2.63 MB in 19.0 ms, inflated in 18.5 ms (level 1: 2.66 MB
#   in 18.6 ms, inflated in 22.4 ms; level 0: 3.36 MB, barely faster); zlib's level 1 took ~90 ms.
# - br: quality 0 with a 16 kB window: 2.62 MB in 23.8 ms, read in 17.6 ms (quality 1: 2.52 MB
#   in 34.3 ms, read in 22.8 ms; 0.5 MB answers come out 18 % larger than at quality 1).
# - zstd: level 1, as outside (2.44 MB in 12 ms, read in 4.5 ms). A hash table of 2¹¹
#   entries instead of 2¹⁴ wrote it 15-25 % faster but 4 % larger (14 % at 0.5 MB); the fast
#   negative levels write no faster here (11 ms at -1) and leave the digits unencoded (4.7 MB).
# All three let go of the GIL while they work.
LARGE_BROTLI = {"quality": 0, "lgwin": 14}
ISAL_GZIP_LEVEL = 2  # ISA-L's levels are 0 to 3
# The order of preference: starlette-compress's for the outer layer (br writes small pages
# smaller than gzip); for large answers, gzip before br (as small, and faster both ways).
ORDER = ("zstd", "br", "gzip")
LARGE_ORDER = ("zstd", "gzip", "br")


class Packer(Protocol):
    """A compressor fed piece by piece: what it has written so far, then the rest."""

    def compress(self, data: bytes | memoryview) -> bytes: ...

    def flush(self) -> bytes: ...


class BrotliPacker:
    def __init__(self) -> None:
        self._compressor = brotli.Compressor(**LARGE_BROTLI)

    def compress(self, data: bytes | memoryview) -> bytes:
        return self._compressor.process(data)

    def flush(self) -> bytes:
        return self._compressor.finish()


PACKERS: dict[str, Callable[[], Packer]] = {
    "zstd": lambda: zstandard.ZstdCompressor(level=ZSTD_LEVEL).compressobj(),
    "br": BrotliPacker,
    "gzip": lambda: isal_zlib.compressobj(ISAL_GZIP_LEVEL, isal_zlib.DEFLATED, 31),
}


def packed(encoding: str, body: bytes) -> bytes:
    """`body` compressed in one go."""
    packer = PACKERS[encoding]()
    return packer.compress(body) + packer.flush()


def packed_piece(packer: Packer, piece: bytes | memoryview, last: bool) -> bytes:
    """What `packer` writes for the next `piece` of a body (and its end when `last`)."""
    out = packer.compress(piece)
    return out + packer.flush() if last else out


COMPRESSIBLE = (b"application/json", b"text/", b"application/javascript", b"image/svg+xml")


def chosen_encoding(accept_encoding: str, order: tuple[str, ...] = ORDER) -> str | None:
    """The first encoding of `order` that the client accepts (q > 0); `ORDER` is the outer
    layer's."""
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
    for encoding in order:
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


class LargeAnswers:
    """Pure ASGI middleware: one-shot answers of `thread_above` bytes or more, compressed in
    a worker thread (see the module docstring)."""

    def __init__(self, app: ASGIApp, thread_above: int, keep_bytes: int) -> None:
        self.app = app
        self.thread_above = thread_above
        self.kept = Kept(keep_bytes)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        accept = b",".join(v for k, v in scope["headers"] if k == b"accept-encoding")
        encoding = chosen_encoding(accept.decode("latin-1"), LARGE_ORDER) if accept else None
        if encoding is None:
            await self.app(scope, receive, send)
            return
        start: Message | None = None

        async def compress_large(message: Message) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                start = message  # held until the body says how large it is
                return
            if start is None:  # already sent
                await send(message)
                return
            held, start = start, None
            body = message.get("body", b"")
            if message.get("more_body") or len(body) < self.thread_above or not eligible(held):
                await send(held)
                await send(message)
                return
            headers = MutableHeaders(raw=list(held["headers"]))
            headers["Content-Encoding"] = encoding
            headers.add_vary_header("Accept-Encoding")
            in_cache = scope.get("state", {}).get(HELD, False)
            # A GET answer (HEAD is served as GET) keeps its Content-Length, which HEAD shows.
            if not in_cache and scope["method"] != "GET":  # never replayed: streamed
                del headers["Content-Length"]
                await send({**held, "headers": headers.raw})
                await self.stream(body, encoding, send)
                return
            whole = self.kept.get(body, encoding) if in_cache else None
            if whole is None:
                whole = await run_work(packed, encoding, body)
                if in_cache:
                    self.kept.put(body, encoding, whole)
            headers["Content-Length"] = str(len(whole))
            await send({**held, "headers": headers.raw})
            await send({"type": "http.response.body", "body": whole})

        await self.app(scope, receive, compress_large)

    @staticmethod
    async def stream(body: bytes, encoding: str, send: Send) -> None:
        """`body` compressed piece by piece by one job of the work thread, each piece handed
        to the event loop and sent as soon as it is written: the client reads and decodes the
        first pieces while the rest are being compressed."""
        loop = asyncio.get_running_loop()
        pieces: asyncio.Queue[bytes | BaseException] = asyncio.Queue()

        def compress_all() -> None:
            try:
                packer = PACKERS[encoding]()
                view = memoryview(body)  # pieces without copies
                for offset in range(0, len(body), STREAM_PIECE_BYTES):
                    last = offset + STREAM_PIECE_BYTES >= len(body)
                    piece = view[offset : offset + STREAM_PIECE_BYTES]
                    loop.call_soon_threadsafe(pieces.put_nowait, packed_piece(packer, piece, last))
            except BaseException as error:  # handed to the loop, which raises it
                loop.call_soon_threadsafe(pieces.put_nowait, error)

        job = asyncio.ensure_future(run_work(compress_all))
        try:
            for _ in range(0, len(body), STREAM_PIECE_BYTES):
                piece = await pieces.get()
                if isinstance(piece, BaseException):
                    raise piece
                await send({"type": "http.response.body", "body": piece, "more_body": True})
            await send({"type": "http.response.body", "body": b""})
        finally:
            await job


def eligible(start: Message) -> bool:
    headers = dict(start.get("headers", []))
    kind = headers.get(b"content-type", b"")
    return (
        start.get("status", 200) == 200
        and b"content-encoding" not in headers
        and kind.startswith(COMPRESSIBLE)
    )


def page_gzip(body: bytes) -> bytes:
    """The outer layer's one-shot gzip (pages, fragments, small JSON): ISA-L's at level 1
    instead of zlib's, the same format, about 4× faster and no larger (a 58 kB lab fragment:
    0.06 ms and 13.0 kB against 0.28 ms and 13.3 kB). A browser that accepts zstd gets zstd."""
    return isal_zlib.compress(body, 1, wbits=31)


def compression(app: ASGIApp, thread_above: int, keep_bytes: int) -> ASGIApp:
    """Both layers around `app` (the response cache and what it wraps)."""
    inner = LargeAnswers(app, thread_above=thread_above, keep_bytes=keep_bytes)
    outer = CompressMiddleware(
        inner,
        minimum_size=1024,
        zstd_level=ZSTD_LEVEL,
        brotli_quality=BROTLI_QUALITY,
        gzip_level=GZIP_LEVEL,
    )
    outer._gzip.oneshot = page_gzip  # its gzip responder's one-shot compressor (2.0's API)
    return outer
