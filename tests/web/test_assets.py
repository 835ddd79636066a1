"""Libraries from installed packages and static files: versioned, compressed once, cached."""

import gzip
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from starlette.staticfiles import StaticFiles

from app import STATIC_DIR
from app.web import assets
from app.web.assets import (
    FILES,
    ONE_YEAR,
    PLOTLY_URL,
    SWAGGER_CSS_URL,
    VersionedStaticFiles,
)
from app.web.templating import static_url
from tests.routes import PAGES
from tests.web.test_compression import DECODE


@pytest.mark.parametrize("url", list(FILES))
def test_a_packaged_library_is_served_gzipped_and_cached(client: TestClient, url: str) -> None:
    path, media_type = FILES[url]
    plain = client.get(url, headers={"accept-encoding": "identity"})
    assert plain.status_code == 200
    assert plain.headers["content-type"].startswith(media_type)
    assert plain.headers["cache-control"] == ONE_YEAR
    assert plain.content == path.read_bytes()
    packed = client.get(url, headers={"accept-encoding": "gzip"})
    assert packed.headers["content-encoding"] == "gzip"
    assert int(packed.headers["content-length"]) < len(plain.content) / 2
    assert packed.content == plain.content  # httpx undoes the gzip


def test_only_the_exact_version_of_a_static_file_is_cached_for_a_year(
    client: TestClient,
) -> None:
    url = static_url("app.css")  # /static/app.css?v=<its content hash>
    assert client.get(url).headers["cache-control"] == ONE_YEAR
    path = url.split("?")[0]
    for other in ("?dev=1", "?v=0000000000", "?v=" + url.split("v=")[1] + "&x=1", ""):
        response = client.get(path + other)
        assert response.status_code == 200
        assert "immutable" not in response.headers.get("cache-control", ""), other


def test_favicon_ico_is_the_apps_icon(client: TestClient) -> None:
    """What a browser asks of a page without an icon link (a fragment, JSON) is not a 404."""
    response = client.get("/favicon.ico")
    assert response.status_code == 200
    assert response.headers["content-type"] == "image/svg+xml"
    assert response.content == (STATIC_DIR / "favicon.svg").read_bytes()


def both_static() -> TestClient:
    """static/ behind Starlette's own StaticFiles and behind VersionedStaticFiles."""
    app = FastAPI()
    app.mount("/plain", StaticFiles(directory=STATIC_DIR), name="plain")
    app.mount("/kept", VersionedStaticFiles(directory=STATIC_DIR), name="kept")
    return TestClient(app)


@pytest.mark.parametrize(
    ("method", "headers"),
    [
        ("GET", {}),
        ("HEAD", {}),
        ("GET", {"range": "bytes=10-99"}),
        ("GET", {"range": "bytes=99999999-"}),
    ],
)
def test_a_static_file_from_memory_answers_as_starlettes_static_files(
    method: str, headers: dict[str, str]
) -> None:
    client = both_static()
    headers = {**headers, "accept-encoding": "identity"}
    for name in ("js/live.js", "favicon.svg", "js/live.js"):  # the second time from memory
        plain = client.request(method, f"/plain/{name}", headers=headers)
        kept = client.request(method, f"/kept/{name}", headers=headers)
        assert kept.status_code == plain.status_code
        assert kept.content == plain.content
        assert kept.headers.multi_items() == plain.headers.multi_items()
        etag = kept.headers.get("etag")
        if etag:
            again = client.get(f"/kept/{name}", headers={"if-none-match": etag})
            assert again.status_code == 304


@pytest.mark.parametrize("encoding", ["zstd", "br", "gzip"])
def test_a_static_file_is_sent_compressed_once_in_the_encoding_the_client_prefers(
    encoding: str,
) -> None:
    """The same answer as StaticFiles' plain one but for the body, compressed at start-up in
    the encoding of the outer layer's order that the client accepts (Content-Encoding,
    Content-Length, Vary say so); its ETag still answers 304, HEAD says how long it is."""
    client = both_static()
    file = (STATIC_DIR / "app.css").read_bytes()
    plain = client.get("/plain/app.css", headers={"accept-encoding": "identity"})
    accept = {"zstd": "gzip, br, zstd", "br": "gzip, br", "gzip": "gzip, deflate"}[encoding]
    with client.stream("GET", "/kept/app.css", headers={"accept-encoding": accept}) as kept:
        body = b"".join(kept.iter_raw())
    assert kept.headers["content-encoding"] == encoding
    assert DECODE[encoding](body) == file
    assert int(kept.headers["content-length"]) == len(body) < len(file) / 3
    assert kept.headers["vary"] == "Accept-Encoding"
    changed = {"content-encoding", "content-length", "vary"}
    assert [h for h in kept.headers.multi_items() if h[0] not in changed] == [
        h for h in plain.headers.multi_items() if h[0] != "content-length"
    ]
    head = client.head("/kept/app.css", headers={"accept-encoding": accept})
    assert head.headers["content-length"] == kept.headers["content-length"]
    again = client.get(
        "/kept/app.css", headers={"accept-encoding": accept, "if-none-match": kept.headers["etag"]}
    )
    assert again.status_code == 304


def test_a_static_file_is_read_and_compressed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    client = both_static()
    key = str(STATIC_DIR / "app.css")
    packings: list[int] = []
    real = assets.pack

    def counted(plain: bytes, encodings: tuple[str, ...]) -> assets.Packed:
        packings.append(len(plain))
        return real(plain, encodings)

    monkeypatch.setattr(assets, "pack", counted)
    monkeypatch.delitem(assets._packed, key, raising=False)
    for _ in range(3):
        assert client.get("/kept/app.css").content == (STATIC_DIR / "app.css").read_bytes()
    assert packings == [len((STATIC_DIR / "app.css").read_bytes())]
    assert client.get("/kept/no-such-file.css").status_code == 404
    assert client.get("/kept/../pyproject.toml").status_code == 404


def test_plotly_is_loaded_where_a_figure_is_drawn(client: TestClient) -> None:
    """Every page with a figure loads plotly.js; the pages that never draw one (the lessons,
    the API docs, the embed code) leave its 4.8 MB out."""
    without = set()
    for path in PAGES:
        html = client.get(path).text
        if not html.startswith("<!doctype html>"):
            continue  # a fragment: the page it goes into has loaded plotly.js
        if "data-figure=" in html:
            assert PLOTLY_URL in html, path
        elif PLOTLY_URL not in html:
            without.add(path)
    assert without == {"/docs", "/embed", "/lessons"}


def test_a_library_is_gzipped_once_when_a_class_asks_for_it_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[int] = []
    real = gzip.compress

    def counted(data: bytes, *args: object, **kwargs: object) -> bytes:
        calls.append(len(data))
        time.sleep(0.05)  # a slow gzip: the other threads arrive while it runs
        return real(data, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(assets.gzip, "compress", counted)
    monkeypatch.delitem(assets._packed, SWAGGER_CSS_URL, raising=False)
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(assets.packed, [SWAGGER_CSS_URL] * 8))
    assert len(calls) == 1
    assert all(answer is answers[0] for answer in answers)
    assert gzip.decompress(answers[0].encoded["gzip"]) == answers[0].plain
