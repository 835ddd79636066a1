"""Static files (app/web/static.py): ServeStatic's built set, sent whole by path (the ASGI
pathsend extension), with weak ETags and ranges read as HTTP asks."""

import gzip
import re

import pytest
from fastapi.testclient import TestClient

STYLESHEET = re.compile(r'href="(/static/app\.[0-9a-f]{12}\.css)"')
PLOTLY = "plotly.min.js"


@pytest.fixture(scope="module")
def stylesheet(client: TestClient) -> tuple[str, bytes]:
    """The app's stylesheet as a page links it, and the bytes of the built file."""
    url = STYLESHEET.search(client.get("/").text).group(1)
    root = client.app.state.static.own.root
    return url, (root / url.removeprefix("/static/")).read_bytes()


def as_sent(client: TestClient, url: str, **headers: str) -> tuple[int, dict, bytes]:
    """Status, headers and the body as it came (not decoded); headers named as_keywords."""
    named = {name.replace("_", "-"): value for name, value in headers.items()}
    with client.stream("GET", url, headers=named) as answer:
        return answer.status_code, dict(answer.headers), b"".join(answer.iter_raw())


def test_each_encoding_is_the_built_file_byte_for_byte(client, stylesheet) -> None:
    url, built = stylesheet
    status, headers, plain = as_sent(client, url, accept_encoding="identity")
    assert (status, plain, headers["content-length"]) == (200, built, str(len(built)))
    status, headers, zipped = as_sent(client, url, accept_encoding="gzip")
    assert (status, headers["content-encoding"], gzip.decompress(zipped)) == (200, "gzip", built)
    vendor = client.app.state.static.vendor
    plotly = (vendor.root / vendor.paths[PLOTLY]).read_bytes()  # bigger than one block
    assert as_sent(client, vendor.url(PLOTLY), accept_encoding="identity")[2] == plotly


def test_a_tag_is_weak_and_answers_304_and_a_valid_range_its_bytes(client, stylesheet) -> None:
    url, built = stylesheet
    tag = as_sent(client, url, accept_encoding="gzip")[1]["etag"]
    assert tag.startswith('W/"')
    assert as_sent(client, url, if_none_match=tag)[0] == 304
    status, _, part = as_sent(client, url, accept_encoding="identity", range="bytes=2-9")
    assert (status, part) == (206, built[2:10])
    status, _, whole = as_sent(client, url, accept_encoding="identity", range="bytes=9-2")
    assert (status, whole) == (200, built)


def test_head_says_the_length_and_sends_nothing(client, stylesheet) -> None:
    url, built = stylesheet
    answer = client.head(url, headers={"accept-encoding": "identity"})
    assert (answer.status_code, answer.content) == (200, b"")
    assert answer.headers["content-length"] == str(len(built))
