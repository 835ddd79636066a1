"""Compression: zstd, br, gzip as the client accepts them; large answers compressed in a
worker thread and kept compressed for the cache's replays; what is already encoded left be."""

import threading
import zlib

import brotli
import orjson
import pytest
import zstandard
from fastapi.testclient import TestClient
from isal import isal_zlib

from app.main import create_app
from app.settings import Settings
from app.web.middleware import compression as comp
from app.web.middleware.compression import LARGE_ORDER, Kept, chosen_encoding

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


@pytest.mark.parametrize(
    ("header", "chosen"),
    [
        ("gzip, deflate, br, zstd", "zstd"),
        ("gzip, deflate, br", "gzip"),  # as Safari asks
        ("br", "br"),
        ("gzip;q=0, br", "br"),
        ("*", "zstd"),
        ("identity", None),
    ],
)
def test_large_answers_prefer_gzip_to_br(header: str, chosen: str | None) -> None:
    assert chosen_encoding(header, LARGE_ORDER) == chosen


def test_a_client_that_takes_gzip_and_br_gets_br_for_a_page_and_gzip_for_a_large_answer(
    client: TestClient,
) -> None:
    page = client.get("/", headers={"accept-encoding": "gzip, br"})
    sent, packed = raw_post(client, BIG, "gzip, br")
    _, plain = raw_post(client, BIG, "identity")
    assert page.headers["content-encoding"] == "br"
    assert sent == "gzip"
    assert DECODE["gzip"](packed) == plain


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


def test_a_page_is_gzipped_by_isal_no_larger_than_zlib_level_1(client: TestClient) -> None:
    """The outer layer's gzip is ISA-L's (app/web/middleware/compression.page_gzip): the
    bytes sent are its, any inflate reads them, and they are no larger than zlib's level 1."""
    url = "/?tokens=the+cat+sat+on+the+mat&fragment=results"
    plain = client.get(url, headers={"accept-encoding": "identity"}).content
    with client.stream("GET", url, headers={"accept-encoding": "gzip"}) as answer:
        packed = b"".join(answer.iter_raw())
    assert answer.headers["content-encoding"] == "gzip"
    assert packed == comp.page_gzip(plain)
    assert zlib.decompress(packed, wbits=31) == plain
    assert len(packed) <= len(zlib.compress(plain, 1, wbits=31))


def test_large_answers_are_compressed_in_a_worker_thread_once_per_cached_answer(
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
    assert len(threads) == 1  # the replays reuse the kept compressed bytes
    assert threads[0] != loop_thread
    assert answers[0] == answers[1] == answers[2]


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


@pytest.mark.parametrize("encoding", ["zstd", "br", "gzip"])
def test_large_answers_the_cache_does_not_hold_are_compressed_piece_by_piece_in_a_thread(
    monkeypatch: pytest.MonkeyPatch, encoding: str
) -> None:
    threads: list[str] = []
    piece = comp.packed_piece

    def spy(packer: comp.Packer, data: bytes, last: bool) -> bytes:
        threads.append(threading.current_thread().name)
        return piece(packer, data, last)

    monkeypatch.setattr(comp, "packed_piece", spy)
    monkeypatch.setattr(comp, "STREAM_PIECE_BYTES", 64 * 1024)
    settings = Settings(freeze_gc=False, compress_in_thread_bytes=100_000, response_cache_bytes=0)
    with TestClient(create_app(settings)) as client:
        loop_thread = client.portal.call(lambda: threading.current_thread().name)
        _, plain = raw_post(client, BIG, "identity")
        with client.stream(
            "POST", "/api/attention", content=orjson.dumps(BIG),
            headers={"content-type": "application/json", "accept-encoding": encoding},
        ) as response:  # fmt: skip
            packed = b"".join(response.iter_raw())
    assert response.headers["content-encoding"] == encoding
    assert "content-length" not in response.headers  # streamed
    assert DECODE[encoding](packed) == plain
    assert len(packed) < 0.5 * len(plain)
    assert len(threads) == -(-len(plain) // (64 * 1024))  # one call per piece
    assert loop_thread not in threads


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
    assert len(packed) <= len(isal_zlib.compress(plain, 1, wbits=31))  # level 2: no larger
    assert len(packed) < 0.5 * len(plain)


def test_brotli_settings_of_large_answers_cost_little_size(client: TestClient) -> None:
    """br's faster settings for large answers (see compression.py) write them a little larger
    than the outer layer's quality does (at most 20 %)."""
    _, plain = raw_post(client, BIG, "identity")
    packed = comp.packed("br", plain)
    reference = brotli.compress(plain, quality=comp.BROTLI_QUALITY)
    assert brotli.decompress(packed) == plain
    assert len(reference) < len(packed) < 1.2 * len(reference)
