"""The answer cache (app/web/cache.py, at the edge): a class asking for the same answer gets the
same bytes, made (and compressed) once, within a bounded memory."""

import asyncio
import gzip
from urllib.parse import urlencode

import httpx
from fastapi import Depends, FastAPI
from fastapi.responses import PlainTextResponse
from fastapi.testclient import TestClient
from starlette_compress import CompressMiddleware

from app.core.lessons import lesson_by_slug
from app.settings import Settings
from app.web.cache import cacheable
from app.web.edge import Edge
from tests.aio import run_async


class Counted:
    """A tiny app as main assembles it: the edge (with its cache) over compression over the
    routes, which count how often each answer is made."""

    def __init__(self, max_bytes: int = 1 << 20) -> None:
        self.made: dict[str, int] = {}
        routes = FastAPI()

        @routes.get("/kept/{name}", dependencies=[Depends(cacheable)])
        async def kept(name: str, size: int = 2000) -> PlainTextResponse:
            self.made[name] = self.made.get(name, 0) + 1
            await asyncio.sleep(0.01)  # others asking meanwhile find it under way
            return PlainTextResponse((name * size)[:size])

        @routes.get("/plain/{name}")
        async def plain(name: str) -> PlainTextResponse:
            self.made[name] = self.made.get(name, 0) + 1
            return PlainTextResponse(name * 1000)

        settings = Settings(response_cache_bytes=max_bytes)
        self.edge = Edge(CompressMiddleware(routes, minimum_size=500), settings=settings)
        self.cache = self.edge.cache

    def client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(transport=httpx.ASGITransport(app=self.edge), base_url="http://t")


def as_sent(client: TestClient, path: str, encoding: str) -> tuple[str | None, bytes]:
    """The Content-Encoding and the body as they came over the wire (not decoded)."""
    with client.stream("GET", path, headers={"accept-encoding": encoding}) as answer:
        assert answer.status_code == 200
        return answer.headers.get("content-encoding"), b"".join(answer.iter_raw())


async def ask_together(counted: Counted, path: str, count: int, encoding: str) -> set[bytes]:
    headers = {"accept-encoding": encoding}
    async with counted.client() as client:
        answers = await asyncio.gather(*(client.get(path, headers=headers) for _ in range(count)))
    assert {a.status_code for a in answers} == {200}
    return {a.content for a in answers}


def test_a_class_asking_together_gets_one_answer_made_once() -> None:
    counted = Counted()
    bodies = run_async(ask_together(counted, "/kept/lesson", 200, "gzip"))
    assert bodies == {("lesson" * 2000)[:2000].encode()}  # httpx decodes the gzip
    assert counted.made == {"lesson": 1}


def test_each_encoding_is_kept_as_sent_and_a_route_not_cacheable_is_made_each_time() -> None:
    counted = Counted()
    with TestClient(counted.edge) as client:
        sent = [as_sent(client, "/kept/x", e) for e in ("gzip", "identity", "gzip", "identity")]
        assert (sent[0][0], sent[1][0]) == ("gzip", None)
        assert gzip.decompress(sent[0][1]) == sent[1][1] == b"x" * 2000
        assert sent[:2] == sent[2:]
        assert counted.made == {"x": 2}  # once per encoding
        for _ in range(3):
            assert client.get("/plain/y").status_code == 200
        assert client.get("/kept/missing/part").status_code == 404
        assert counted.made == {"x": 2, "y": 3}


def test_the_cache_keeps_within_its_bytes_and_forgets_the_oldest() -> None:
    counted = Counted(max_bytes=64_000)
    with TestClient(counted.edge) as client:
        for i in range(100):
            client.get(f"/kept/a{i}", headers={"accept-encoding": "identity"})
        assert counted.cache.answers.currsize <= 64_000
        assert len(counted.cache.answers) < 100
        client.get("/kept/a99", headers={"accept-encoding": "identity"})
        client.get("/kept/a0", headers={"accept-encoding": "identity"})
    assert (counted.made["a99"], counted.made["a0"]) == (1, 2)


def test_the_teachers_link_gives_the_same_bytes_in_its_language_and_mode(fresh_client) -> None:
    link = "/?" + urlencode(lesson_by_slug("encoder-decoder").start)
    first, again = (as_sent(fresh_client, link, "gzip") for _ in range(2))
    assert first[0] == "gzip"
    assert first == again
    spanish = gzip.decompress(as_sent(fresh_client, link + "&lang=es", "gzip")[1])
    present = gzip.decompress(as_sent(fresh_client, link + "&present=1", "gzip")[1])
    assert b'<html lang="es"' in spanish
    assert b'<body class="present"' in present
    assert len({gzip.decompress(first[1]), spanish, present}) == 3
