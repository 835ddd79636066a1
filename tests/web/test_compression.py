"""Compression: zstd, br, gzip as the client accepts them; large answers compressed in a
worker thread and kept compressed for the cache's replays; what is already encoded left be."""

import threading
import zlib
from collections.abc import Callable, Iterator

import brotli
import orjson
import pytest
import zstandard
from fastapi.testclient import TestClient
from starlette.types import Message, Receive, Scope, Send

from app.features.lab.schemas import AttentionRequest
from app.features.lab.service import compute_attention
from app.main import create_app
from app.settings import Settings
from app.web import pieces
from app.web.json_io import dumps
from app.web.middleware import compression as comp
from app.web.middleware.compression import Kept, chosen_encoding
from app.web.pieces import Packer

DECODE = {
    "zstd": lambda b: zstandard.ZstdDecompressor().decompressobj().decompress(b),
    "br": brotli.decompress,
    "gzip": lambda b: zlib.decompress(b, wbits=31),
}
BIG = {"tokens": [f"t{i}" for i in range(64)], "d_model": 32}  # an answer of ~400 kB


def raw_post(client: TestClient, body: dict, encoding: str) -> tuple[str, bytes]:
    with client.stream(
        "POST", "/api/attention", content=orjson.dumps(body),
        headers={"content-type": "application/json", "accept-encoding": encoding},
    ) as response:  # fmt: skip
        assert response.status_code == 200
        return response.headers.get("content-encoding", "identity"), b"".join(response.iter_raw())


@pytest.mark.parametrize(
    ("header", "chosen"),
    [
        ("gzip, deflate, br, zstd", "zstd"),
        ("gzip, br", "br"),
        ("gzip", "gzip"),
        ("zstd;q=0, gzip", "gzip"),
        ("identity", None),
        ("*", "zstd"),
        ("", None),
    ],
)
def test_the_encoding_is_the_fastest_the_client_accepts(header: str, chosen: str | None) -> None:
    assert chosen_encoding(header) == chosen


@pytest.mark.parametrize("encoding", ["zstd", "br", "gzip"])
@pytest.mark.parametrize("body", [{}, BIG], ids=["small, on the loop", "large, in a thread"])
def test_answers_come_in_the_accepted_encoding_and_decode_to_the_plain_answer(
    client: TestClient, encoding: str, body: dict
) -> None:
    _, plain = raw_post(client, body, "identity")
    sent, packed = raw_post(client, body, encoding)
    assert sent == encoding
    assert len(packed) < len(plain)
    assert DECODE[encoding](packed) == plain


def test_large_answers_are_compressed_in_the_compression_thread_once_per_cached_answer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    threads: list[str] = []
    whole = comp.packed

    def spy(encoding: str, body: bytes) -> bytes:
        threads.append(threading.current_thread().name)
        return whole(encoding, body)

    monkeypatch.setattr(comp, "packed", spy)
    with TestClient(create_app(Settings(compress_in_thread_bytes=100_000))) as client:
        loop_thread = client.portal.call(lambda: threading.current_thread().name)
        answers = [raw_post(client, BIG, "zstd") for _ in range(3)]  # computed, then replayed
    # The first answer went out piece by piece as it was written; the first replay is
    # compressed in one go, and the second replays those bytes.
    assert threads == ["compression_0"] != [loop_thread]
    assert answers[1] == answers[2]
    assert len({DECODE["zstd"](packed) for _, packed in answers}) == 1


def layer_of(app: object, kind: type) -> object:
    """The first ASGI layer of type `kind` under `app` (each layer's next one is `.app`)."""
    while not isinstance(app, kind):
        app = app.app  # type: ignore[attr-defined]
    return app


@pytest.mark.parametrize(
    "settings",
    [
        Settings(compress_in_thread_bytes=100_000, response_cache_bytes=0),
        Settings(compress_in_thread_bytes=100_000, response_cache_bytes=10_000_000),
    ],
    ids=["cache off", "answer too large for the cache"],
)
def test_compressed_copies_are_kept_only_of_answers_the_cache_holds(settings: Settings) -> None:
    app = create_app(settings)
    query = {"tokens": " ".join(BIG["tokens"]), "d_model": "8"}  # a page: d_model ≤ 8
    with TestClient(app) as client:
        answers = [raw_post(client, BIG, "zstd") for _ in range(2)]
        page = client.get("/lab.json", params=query, headers={"accept-encoding": "zstd"})
        kept = layer_of(app.middleware_stack, comp.LargeAnswers).kept  # type: ignore[attr-defined]
    assert answers[0] == answers[1]
    assert answers[0][0] == page.headers["content-encoding"] == "zstd"
    assert int(page.headers["content-length"]) == len(page.content)  # a GET: in one go
    assert kept.size == 0


def recorded_packing(monkeypatch: pytest.MonkeyPatch, table: str) -> list[str]:
    """The thread of each piece compressed by the packers of `comp.<table>`."""
    threads: list[str] = []

    class Recorded:
        def __init__(self, packer: Packer) -> None:
            self.packer = packer

        def pack(self, piece: bytes, last: bool) -> bytes:
            threads.append(threading.current_thread().name)
            return self.packer.pack(piece, last)

    def recorded(make: Callable[[], Packer]) -> Callable[[], Packer]:
        return lambda: Recorded(make())

    packers = {encoding: recorded(make) for encoding, make in getattr(comp, table).items()}
    monkeypatch.setattr(comp, table, packers)
    return threads


STREAMING = Settings(freeze_gc=False, compress_in_thread_bytes=32_000, response_cache_bytes=0)


@pytest.mark.parametrize("encoding", ["identity", "zstd", "br", "gzip"])
def test_a_long_head_is_compressed_piece_by_piece_as_it_is_written_and_sent_meanwhile(
    monkeypatch: pytest.MonkeyPatch, encoding: str
) -> None:
    """The work thread compresses each piece it writes. With gzip, Brotli and no encoding
    each piece leaves at once: the work thread waits before its third piece until bytes
    have gone out. zstd's worker thread sends its output as its jobs end."""
    packing = recorded_packing(monkeypatch, "WRITERS_PACKERS")
    monkeypatch.setattr(pieces, "PIECE_BYTES", 64 * 1024)
    sent_some = threading.Event()
    waited: list[bool] = []
    writers: list[str] = []
    written = pieces.json_pieces

    def slow_after_two(value: object, piece_bytes: int) -> Iterator[bytes]:
        for index, piece in enumerate(written(value, piece_bytes)):
            writers.append(threading.current_thread().name)
            if index == 2 and encoding != "zstd":
                waited.append(sent_some.wait(timeout=10))
            yield piece

    monkeypatch.setattr(pieces, "json_pieces", slow_after_two)
    app = create_app(STREAMING)

    async def watched(scope: Scope, receive: Receive, send: Send) -> None:
        async def send_and_see(message: Message) -> None:
            if message["type"] == "http.response.body" and message.get("body"):
                sent_some.set()
            await send(message)

        await app(scope, receive, send_and_see)

    with TestClient(watched) as client:
        loop_thread = client.portal.call(lambda: threading.current_thread().name)
        sent, packed = raw_post(client, BIG, encoding)
        expected = dumps(compute_attention(AttentionRequest(**BIG), STREAMING))
    assert waited == ([] if encoding == "zstd" else [True])
    assert sent == encoding
    assert (packed if encoding == "identity" else DECODE[encoding](packed)) == expected
    assert len(writers) > 4
    assert loop_thread not in writers
    if encoding != "identity":
        assert packing == writers  # each piece compressed in the work thread that wrote it
        assert len(packed) < 0.5 * len(expected)


@pytest.mark.parametrize("encoding", ["zstd", "br", "gzip"])
def test_a_large_answer_made_in_one_go_is_compressed_and_streamed_in_pieces(
    monkeypatch: pytest.MonkeyPatch, encoding: str
) -> None:
    packing = recorded_packing(monkeypatch, "PACKERS")
    monkeypatch.setattr(comp, "PIECE_BYTES", 64 * 1024)
    heads = {"tokens": [f"t{i}" for i in range(64)], "d_model": 32, "heads": 2}  # ~650 kB
    with TestClient(create_app(STREAMING)) as client:
        plain = client.post("/api/heads", json=heads, headers={"accept-encoding": "identity"})
        with client.stream(
            "POST", "/api/heads", json=heads, headers={"accept-encoding": encoding}
        ) as response:
            packed = b"".join(response.iter_raw())
    assert plain.headers["content-length"] == str(len(plain.content))  # made in one go
    assert response.headers["content-encoding"] == encoding
    assert "content-length" not in response.headers  # streamed
    assert DECODE[encoding](packed) == plain.content
    assert len(packed) < 0.5 * len(plain.content)
    assert len(packing) == -(-len(plain.content) // (64 * 1024))  # one call per piece
    assert set(packing) == {"compression_0"}


@pytest.mark.parametrize("worker", [False, True])
def test_zstd_pieces_decode_to_the_whole_body_with_or_without_its_worker_thread(
    worker: bool,
) -> None:
    body = dumps(compute_attention(AttentionRequest(**BIG), STREAMING))
    packer = comp.ZstdPacker(worker=worker)
    cuts = range(0, len(body), 50_000)
    packed = [packer.pack(body[i : i + 50_000], last=i == cuts[-1]) for i in cuts]
    assert DECODE["zstd"](b"".join(packed)) == body
    if not worker:  # each piece flushed: the client can decode all of it at once
        decoder = zstandard.ZstdDecompressor().decompressobj()
        assert decoder.decompress(packed[0]) == body[:50_000]


def test_kept_compressed_bytes_stay_within_their_bound_counting_the_plain_answer() -> None:
    kept = Kept(max_bytes=1000)
    bodies = [bytes([i]) * 300 for i in range(4)]
    for body in bodies:
        kept.put(body, "gzip", b"x" * 100)
    assert kept.size == 800  # two entries of 300 + 100; the two oldest left
    assert kept.get(bodies[0], "gzip") is None
    assert kept.get(bodies[3], "gzip") == b"x" * 100
    assert kept.get(bytes([3]) * 300, "gzip") is None  # equal bytes, another object: not kept
    assert kept.get(bodies[3], "br") is None


def test_plotly_js_is_sent_as_already_gzipped(client: TestClient) -> None:
    from app.web.assets import PLOTLY_URL

    response = client.get(PLOTLY_URL, headers={"accept-encoding": "zstd, gzip"})
    assert response.headers["content-encoding"] == "gzip"


def test_large_answers_are_gzipped_by_isal_no_larger_than_zlib_level_1(
    client: TestClient,
) -> None:
    _, plain = raw_post(client, BIG, "identity")
    packed = comp.packed("gzip", plain)
    assert zlib.decompress(packed, wbits=31) == plain  # any inflate reads it
    assert len(packed) <= len(zlib.compress(plain, 1, wbits=31))
    assert len(packed) < 0.5 * len(plain)
