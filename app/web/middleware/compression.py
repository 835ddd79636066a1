"""Compression: zstd, Brotli or gzip at fast levels (starlette-compress), with large answers
compressed off the event loop, streamed, and kept compressed beside the plain answers of the
cache.

`compression(app)` is two layers. Outside, starlette-compress's `CompressMiddleware` picks
the encoding (zstd, then br, then gzip, among those the client accepts) and compresses on
the event loop what is small or streamed (pages, fragments, files), which costs well under a
millisecond. Inside it, `LargeAnswers` takes the large answers and marks them
Content-Encoding so that the outer layer leaves them be; /healthz and small requests never
wait behind their tens of milliseconds of compression (gzip there is ISA-L's, see
`GzipPacker`):

- an answer written in pieces (app/web/pieces.py: a long head, 6 MB at n = 256, d = 64) is
  compressed by the work thread as it writes it, with the packer this layer leaves in the
  request's state (`PACKER`; zstd's has a worker thread of its own), and each compressed
  piece is sent as it comes (chunked), so that the client reads and decodes while the
  server still writes and compresses;
- a one-shot answer of at least `thread_above` bytes that the response cache holds is
  compressed in one go in the compression thread (app/web/work.py), and the compressed
  bytes are kept (least recently used out first, within `keep_bytes`, counting the plain
  answer they keep alive too), so a cache hit is never compressed twice;
- any other is never replayed, so nothing of it is kept. The answer to a POST is compressed
  in pieces of `PIECE_BYTES` in the compression thread, each piece sent as soon as it is
  compressed (chunked, without Content-Length, as starlette-compress sends a streamed
  answer). The answer to a GET is compressed in one go: it keeps its Content-Length, which
  HEAD answers too.
"""

import threading
from collections import OrderedDict
from collections.abc import Callable

import brotli
import zstandard
from isal import isal_zlib
from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from starlette_compress import CompressMiddleware

from app.web.middleware.cache import HELD
from app.web.pieces import PACKED, PACKER, PIECE_BYTES, Packer
from app.web.process import trim_when_idle
from app.web.work import compress_soon

ZSTD_LEVEL, BROTLI_QUALITY, GZIP_LEVEL = 1, 1, 1  # fast: the stage matrices are noisy floats
ISAL_GZIP_LEVEL = 1  # ISA-L's levels are 0 to 3
ZSTD_JOB_BYTES = 512 * 1024  # the least input zstd's worker compresses at once


class ZstdPacker:
    """zstd; with `worker`, zstd compresses in a thread of its own (no GIL there), so that
    `pack` mostly hands the piece over and returns what is already compressed."""

    def __init__(self, worker: bool = False) -> None:
        # zstd's smallest job, so that its output follows the pieces closely.
        threads = {"threads": 1, "job_size": ZSTD_JOB_BYTES} if worker else {}
        params = zstandard.ZstdCompressionParameters.from_level(ZSTD_LEVEL, **threads)
        self._compressor = zstandard.ZstdCompressor(compression_params=params).compressobj()
        # With a worker, flushing each piece would wait for it: its output comes with the
        # pieces after.
        self._each = zstandard.COMPRESSOBJ_FLUSH_BLOCK if not worker else None

    def pack(self, piece: bytes, last: bool) -> bytes:
        out = self._compressor.compress(piece)
        if last:
            return out + self._compressor.flush()
        return out + self._compressor.flush(self._each) if self._each is not None else out


class BrotliPacker:
    def __init__(self) -> None:
        self._compressor = brotli.Compressor(quality=BROTLI_QUALITY)

    def pack(self, piece: bytes, last: bool) -> bytes:
        out = self._compressor.process(piece)
        return out + (self._compressor.finish() if last else self._compressor.flush())


# gzip is ISA-L's (Intel's), at its level 1: a stream any inflate reads, a little smaller than
# zlib's level 1 in about a quarter of its time (6.34 MB at n = 256, d = 64: 2.66 MB in
# ~25 ms, against 2.75 MB in ~90 ms; zlib's Huffman coding alone, 2.88 MB in ~45 ms, also
# took the client twice as long to inflate). All three let go of the GIL while they work.
class GzipPacker:
    def __init__(self) -> None:
        self._compressor = isal_zlib.compressobj(ISAL_GZIP_LEVEL, isal_zlib.DEFLATED, 31)

    def pack(self, piece: bytes, last: bool) -> bytes:
        out = self._compressor.compress(piece)
        # Each piece flushed whole (ISA-L holds on to a few hundred kB otherwise).
        return out + self._compressor.flush(isal_zlib.Z_FINISH if last else isal_zlib.Z_SYNC_FLUSH)


PACKERS: dict[str, Callable[[], Packer]] = {
    "zstd": ZstdPacker,
    "br": BrotliPacker,
    "gzip": GzipPacker,
}
# For the pieces the work thread writes and compresses (app/web/pieces.py): zstd there has a
# worker thread, which compresses while the work thread writes the next piece.
WRITERS_PACKERS: dict[str, Callable[[], Packer]] = {
    **PACKERS,
    "zstd": lambda: ZstdPacker(worker=True),
}


def packed(encoding: str, body: bytes) -> bytes:
    """`body` compressed in one go."""
    return PACKERS[encoding]().pack(body, last=True)


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


async def stream(body: bytes, encoding: str, send: Send) -> None:
    """`body` compressed in pieces of PIECE_BYTES in the compression thread, each piece sent
    as soon as it is compressed (chunked): the client reads and decodes the first pieces
    while the rest are being compressed."""
    packer = PACKERS[encoding]()
    pieces = [body[start : start + PIECE_BYTES] for start in range(0, len(body), PIECE_BYTES)]
    last = len(pieces) - 1
    packing = [compress_soon(packer.pack, piece, i == last) for i, piece in enumerate(pieces)]
    for i, future in enumerate(packing):
        packed = await future
        if packed or i == last:  # a compressor may keep a short piece for later
            await send({"type": "http.response.body", "body": packed, "more_body": i != last})
    trim_when_idle()  # what the compressor freed goes back once the work stops


class LargeAnswers:
    """Pure ASGI middleware: answers written in pieces and compressed as they are written,
    and one-shot answers of `thread_above` bytes or more compressed in the compression
    thread (see the module docstring)."""

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
        scope.setdefault("state", {})[PACKER] = WRITERS_PACKERS[encoding]
        start: Message | None = None
        packed_by_app = False  # once the app sends its pieces compressed (PACKED)

        async def compress_large(message: Message) -> None:
            nonlocal start, packed_by_app
            if message["type"] == "http.response.start":
                start = message  # held until the body says how large it is
                return
            if packed_by_app:
                await send({**message, "body": message[PACKED]})
                return
            if start is None:  # already sent
                await send(plain(message))
                return
            held, start = start, None
            body, more = message.get("body", b""), message.get("more_body", False)
            if PACKED in message and eligible(held):  # compressed as it was written
                packed_by_app = True
                headers = encoded(held, encoding)
                if more:
                    del headers["Content-Length"]
                else:
                    headers["Content-Length"] = str(len(message[PACKED]))
                await send({**held, "headers": headers.raw})
                await send({**message, "body": message[PACKED]})
                return
            # Anything else streamed (the outer layer compresses it), small or not to compress.
            if more or PACKED in message or len(body) < self.thread_above or not eligible(held):
                await send(held)
                await send(plain(message))
                return
            headers = encoded(held, encoding)
            in_cache = scope.get("state", {}).get(HELD, False)
            # One never replayed is streamed, but a whole GET answer (HEAD is served as GET)
            # keeps its Content-Length, which HEAD shows.
            if not in_cache and scope["method"] != "GET":
                del headers["Content-Length"]
                await send({**held, "headers": headers.raw})
                await stream(body, encoding, send)
                return
            whole = self.kept.get(body, encoding) if in_cache else None
            if whole is None:
                whole = await compress_soon(packed, encoding, body)
                if in_cache:
                    self.kept.put(body, encoding, whole)
            headers["Content-Length"] = str(len(whole))
            await send({**held, "headers": headers.raw})
            await send({"type": "http.response.body", "body": whole})

        await self.app(scope, receive, compress_large)


def encoded(start: Message, encoding: str) -> MutableHeaders:
    """The headers of `start`, saying the body is in `encoding`."""
    headers = MutableHeaders(raw=list(start["headers"]))
    headers["Content-Encoding"] = encoding
    headers.add_vary_header("Accept-Encoding")
    return headers


def plain(message: Message) -> Message:
    """A body message without its compressed copy (PACKED), for an answer sent as it is."""
    return {k: v for k, v in message.items() if k != PACKED} if PACKED in message else message


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
