"""Large answers serialized in pieces, sent while the next piece is being written.

One `orjson.dumps` of a 6 MB answer (n = 256, d = 64: the n × n stages) writes every byte
before the first can leave: serializing, compressing, sending and the client's decoding then
run one after the other. `json_pieces` writes the same JSON in pieces of about
`PIECE_BYTES` instead: the fields one by one, and an n × n matrix as blocks of rows, each
block one orjson call. Joined, the pieces are exactly the bytes of `json_io.dumps` (the
same options, numpy arrays written directly, wide integers as floats).

`PiecesResponse` writes them in the work thread (app/web/work.py), in arrival order with the
other heavy work, and the event loop sends each piece as soon as it is written, so that the
client reads and decodes while the server still writes. When the compression layer
(app/web/middleware/compression.py) has chosen an encoding, it leaves a packer in the
request's state (`PACKER`); the work thread then compresses each piece right after writing
it, and each body message carries the compressed bytes (under `PACKED`) beside the plain
ones, which the response cache keeps. Compressing there rather than in another Python thread
spares the two threads waiting on each other for the GIL at every piece: the compressors let
go of it while they work, so the loop sends meanwhile, and zstd's compresses in a thread of
its own, without the GIL, while the work thread writes the next piece.

An answer that fits in one piece is sent in one go, with its Content-Length; a longer one goes
out chunked, without it.
"""

import asyncio
import dataclasses
import threading
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple, Protocol

import numpy as np
import orjson
from starlette.datastructures import MutableHeaders
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from app.web.json_io import dumps
from app.web.work import run_work

# The size of a piece: small enough that compressing one takes about a millisecond, large
# enough that handing it from thread to thread costs little beside it (bench/bench_api.py).
PIECE_BYTES = 256 * 1024

Part = bytes | memoryview
# The request state's key for a function making the packer to compress the pieces with
# (set by the compression layer), and a body message's key for the compressed bytes.
PACKER = "pieces_packer"
PACKED = "attention_lab.packed_body"


class Packer(Protocol):
    """A compressor fed piece by piece."""

    def pack(self, piece: bytes, last: bool) -> bytes:
        """The compressed bytes the client can have once it has `piece` (the whole rest of
        the stream when `last`)."""
        ...


def json_parts(value: Any, piece_bytes: int) -> Iterator[Part]:
    """The JSON of `value` as consecutive parts: a dataclass or a dict with string keys field
    by field (as orjson writes them: a dataclass's fields in order, without those whose name
    starts with an underscore), a matrix of more numbers than fit in a piece (at 16 bytes or
    so a number) in blocks of rows of about `piece_bytes`, anything else in one orjson call."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        names = [f.name for f in dataclasses.fields(value) if not f.name.startswith("_")]
        yield from _object_parts(((name, getattr(value, name)) for name in names), piece_bytes)
    elif isinstance(value, dict) and all(type(key) is str for key in value):
        yield from _object_parts(value.items(), piece_bytes)
    elif isinstance(value, np.ndarray) and value.ndim >= 2 and value.size > piece_bytes // 16:
        yield from _matrix_parts(value, piece_bytes)
    else:
        yield dumps(value)


def _object_parts(items: Iterator[tuple[str, Any]], piece_bytes: int) -> Iterator[Part]:
    separator = b"{"
    for key, item in items:
        yield separator + orjson.dumps(key) + b":"
        yield from json_parts(item, piece_bytes)
        separator = b","
    yield b"}" if separator == b"," else b"{}"


def _matrix_parts(matrix: np.ndarray, piece_bytes: int) -> Iterator[Part]:
    """A matrix as blocks of rows, each block's JSON without its outer brackets. The first
    block guesses 16 bytes a number; each next one is sized by the one before, at most twice
    its rows (row sizes differ: the masked scores of a causal head are mostly null at the
    top)."""
    rows = max(1, piece_bytes // (16 * matrix[0].size))
    start = 0
    yield b"["
    while start < len(matrix):
        block = dumps(matrix[start : start + rows])
        if start:
            yield b","
        yield memoryview(block)[1:-1]
        start += rows
        rows = max(1, min(2 * rows, rows * piece_bytes // len(block)))
    yield b"]"


def json_pieces(value: Any, piece_bytes: int = PIECE_BYTES) -> Iterator[bytes]:
    """The JSON of `value` in pieces of about `piece_bytes` (from a quarter of it to a part
    more): b"".join of them is `dumps(value)`."""
    parts: list[Part] = []
    size = 0
    for part in json_parts(value, piece_bytes):
        if size + len(part) > piece_bytes and size >= piece_bytes // 4:
            yield b"".join(parts)
            parts, size = [], 0
        parts.append(part)
        size += len(part)
    yield b"".join(parts)


class Written(NamedTuple):
    piece: bytes
    packed: bytes | None  # the piece compressed, when there is a packer
    last: bool


class PiecesResponse(Response):
    """A JSON answer written piece by piece in the work thread and sent as it is written."""

    media_type = "application/json"

    def __init__(self, content: Any, status_code: int = 200) -> None:
        self.content = content
        self.status_code = status_code
        self.background = None
        self.init_headers()  # no body yet: no Content-Length

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        loop = asyncio.get_running_loop()
        written: asyncio.Queue[Written | Exception] = asyncio.Queue()
        stop = threading.Event()  # set when the answer is no longer wanted
        new_packer: Callable[[], Packer] | None = scope.get("state", {}).get(PACKER)

        def write() -> None:
            try:
                packer = new_packer() if new_packer is not None else None

                def hand_over(piece: bytes, last: bool) -> None:
                    packed = packer.pack(piece, last) if packer is not None else None
                    loop.call_soon_threadsafe(written.put_nowait, Written(piece, packed, last))

                held: bytes | None = None  # one piece behind, to know which is the last
                for piece in json_pieces(self.content, PIECE_BYTES):
                    if stop.is_set():
                        return
                    if held is not None:
                        hand_over(held, last=False)
                    held = piece
                assert held is not None  # json_pieces writes at least one piece
                hand_over(held, last=True)
            except Exception as error:  # handed to the loop, which raises it
                loop.call_soon_threadsafe(written.put_nowait, error)

        async def next_piece() -> Written:
            piece = await written.get()
            if isinstance(piece, Exception):
                raise piece
            return piece

        job = asyncio.ensure_future(run_work(write))
        try:
            piece = await next_piece()
            headers = MutableHeaders(raw=list(self.raw_headers))
            if piece.last:  # all in one piece
                headers["Content-Length"] = str(len(piece.piece))
            start = {"type": "http.response.start", "status": self.status_code}
            await send({**start, "headers": headers.raw})
            while True:
                message = {"type": "http.response.body", "body": piece.piece}
                if piece.packed is not None:
                    message[PACKED] = piece.packed
                await send({**message, "more_body": not piece.last})
                if piece.last:
                    return
                piece = await next_piece()
        finally:
            stop.set()
            await asyncio.shield(job)
