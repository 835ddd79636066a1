"""The response cache: opt-in per route, bounded in bytes, least recently used out first,
one per app, replayed before routing."""

import asyncio
from collections.abc import Callable

import pytest
from fastapi import Depends
from fastapi.testclient import TestClient

from app.features.lab import routes as lab_routes
from app.main import create_app
from app.settings import Settings
from app.web.middleware.cache import (
    ENTRY_OVERHEAD,
    Answer,
    CachedAnswers,
    ResponseCache,
    cacheable,
    entry_bytes,
)


def key(name: str) -> tuple:
    return ("POST", "/p", b"", b"", b"", b"", name.encode())


# One entry of key("a") and a 4-byte body: "POST" + "/p" + "a" + 4 + the fixed overhead.
ENTRY = 4 + 2 + 1 + 4 + ENTRY_OVERHEAD


def test_the_least_recently_used_answer_leaves_first_when_full() -> None:
    cache = ResponseCache(max_bytes=2 * ENTRY + 5, max_entry_bytes=ENTRY)
    a, b, c = (Answer((), body * 4) for body in (b"a", b"b", b"c"))
    cache.put(key("a"), a)
    cache.put(key("b"), b)
    assert cache.get(key("a")) == a  # a is now the most recently used
    cache.put(key("c"), c)
    assert (cache.get(key("a")), cache.get(key("b")), cache.get(key("c"))) == (a, None, c)
    assert cache.size == 2 * ENTRY


def test_an_answer_larger_than_an_entry_may_be_is_not_kept() -> None:
    cache = ResponseCache(max_bytes=10 * ENTRY, max_entry_bytes=ENTRY - 1)
    cache.put(key("a"), Answer((), b"1234"))
    assert cache.get(key("a")) is None
    assert cache.size == 0


def test_the_bound_counts_keys_and_headers_not_only_answers() -> None:
    cache = ResponseCache(max_bytes=1_000_000, max_entry_bytes=500_000)
    answer = Answer(((b"content-type", b"application/json"),), b"{}")
    for i in range(50):  # 50 requests of 100 kB bodies, each answered with 2 bytes
        cache.put(("POST", "/p", b"", b"", b"", b"", b"%d" % i + b" " * 100_000), answer)
    assert cache.size <= 1_000_000
    assert len(cache.entries) == 9  # 9 × ~100 kB: the keys are what fills it
    assert cache.size == sum(entry_bytes(k, answer) for k in cache.entries)


def test_the_same_bytes_sent_as_text_are_not_answered_from_the_json_cache(
    client: TestClient,
) -> None:
    body = b'{"tokens": ["a", "b", "c", "d"]}'
    json = client.post("/api/attention", content=body, headers={"content-type": "application/json"})
    plain = client.post("/api/attention", content=body, headers={"content-type": "text/plain"})
    assert json.status_code == 200
    assert plain.status_code == 415


def test_a_repeated_request_is_answered_from_the_cache_with_the_same_bytes(
    fresh_client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache: ResponseCache = fresh_client.app.state.response_cache
    computed = []
    original = lab_routes.compute_attention

    def counted(*args: object) -> object:
        computed.append(1)
        return original(*args)

    monkeypatch.setattr(lab_routes, "compute_attention", counted)
    first = fresh_client.post("/api/attention", json={"tokens": ["a", "b"], "seed": 3})
    assert len(cache.entries) == 1
    assert ("POST", "/api/attention") in cache.routes
    second = fresh_client.post("/api/attention", json={"tokens": ["a", "b"], "seed": 3})
    assert first.content == second.content
    assert second.headers["content-type"] == "application/json"
    assert second.headers["content-security-policy"]
    assert second.headers["x-request-id"] != first.headers["x-request-id"]
    assert len(computed) == 1
    other = fresh_client.post("/api/attention", json={"tokens": ["a", "b"], "seed": 4})
    assert other.content != first.content
    assert len(computed) == 2


def test_a_replayed_answer_is_compressed_like_the_first(client: TestClient) -> None:
    body = {"tokens": ["a", "b", "c", "d", "e", "f"]}  # an answer above gzip's minimum size
    for encoding in ("gzip", "zstd"):
        answers = [
            client.post("/api/attention", json=body, headers={"accept-encoding": encoding})
            for _ in range(3)
        ]
        assert {a.headers["content-encoding"] for a in answers} == {encoding}
        assert answers[0].content == answers[1].content == answers[2].content


@pytest.mark.parametrize(
    "headers", [{"accept-language": "es"}, {"cookie": "lang=es"}], ids=["language", "cookie"]
)
def test_pages_are_kept_apart_by_language_and_cookie(
    fresh_client: TestClient, headers: dict[str, str]
) -> None:
    fresh_client.get("/")
    fresh_client.get("/", headers=headers)
    assert len(fresh_client.app.state.response_cache.entries) == 2


def test_routes_that_did_not_opt_in_are_never_kept(fresh_client: TestClient) -> None:
    fresh_client.get("/healthz")
    fresh_client.get("/openapi.json")
    cache: ResponseCache = fresh_client.app.state.response_cache
    assert cache.entries == {}
    # Known from the start: the routes that depend on `cacheable`, and only those.
    assert cache.routes == {("GET", "/"), ("POST", "/api/attention"), ("POST", "/api/model")}


def test_any_route_opts_in_with_the_dependency() -> None:
    app = create_app(Settings())
    calls = []

    @app.get("/count", dependencies=[Depends(cacheable)])
    def count(n: int = 0) -> dict[str, int]:
        calls.append(n)
        return {"n": n}

    with TestClient(app) as client:
        answers = [client.get("/count?n=1").json() for _ in range(3)] + [
            client.get("/count?n=2").json()
        ]
    assert answers == [{"n": 1}, {"n": 1}, {"n": 1}, {"n": 2}]
    assert calls == [1, 2]


def test_each_app_has_its_own_cache_so_its_own_limits_apply(
    make_client: Callable[..., TestClient],
) -> None:
    body = {"tokens": ["a", "b", "c"]}
    assert make_client().post("/api/attention", json=body).status_code == 200
    assert make_client(max_tokens=2).post("/api/attention", json=body).status_code == 422


def test_invalid_requests_are_not_kept(fresh_client: TestClient) -> None:
    fresh_client.post("/api/attention", json={})
    for _ in range(2):
        response = fresh_client.post("/api/attention", json={"tokens": ["a"], "query": 3})
        assert response.status_code == 422
    assert len(fresh_client.app.state.response_cache.entries) == 1


def test_a_chunked_body_goes_through_the_app(client: TestClient) -> None:
    client.post("/api/attention", json={})
    response = client.post(
        "/api/attention", content=iter([b"{", b"}"]), headers={"content-type": "application/json"}
    )
    assert response.status_code == 200
    assert response.json()["tokens"] == ["The", "cat", "sleeps"]


def test_a_zero_budget_turns_caching_off(make_client: Callable[..., TestClient]) -> None:
    client = make_client(response_cache_bytes=0)
    client.post("/api/attention", json={})
    assert client.app.state.response_cache.entries == {}


def test_an_answer_sent_in_pieces_past_an_entry_is_sent_whole_and_not_kept() -> None:
    cache = ResponseCache(max_bytes=10_000, max_entry_bytes=1_000)
    pieces = [bytes([65 + i]) * 600 for i in range(3)]  # 1,800 bytes: over one entry
    offered: list[int] = []  # the sizes of the answers offered to the cache
    put = cache.put
    cache.put = lambda key, answer: offered.append(len(answer.body)) or put(key, answer)

    async def streaming(scope: dict, receive: Callable, send: Callable) -> None:
        scope["state"]["cacheable"] = True
        await send({"type": "http.response.start", "status": 200, "headers": []})
        for i, piece in enumerate(pieces):
            await send({"type": "http.response.body", "body": piece, "more_body": i < 2})

    async def run() -> list[bytes]:
        sent: list[bytes] = []

        async def receive() -> dict:
            return {"type": "http.request", "body": b"{}", "more_body": False}

        async def send(message: dict) -> None:
            if message["type"] == "http.response.body":
                sent.append(message["body"])

        scope = {"type": "http", "method": "POST", "path": "/p", "query_string": b"",
                 "headers": [(b"content-length", b"2")], "state": {}}  # fmt: skip
        await CachedAnswers(streaming, cache)(scope, receive, send)
        return sent

    assert asyncio.run(run()) == pieces
    assert offered == []  # the pieces were let go past an entry's size, never joined
    assert cache.entries == {}
    assert cache.routes == {("POST", "/p")}  # known as cacheable: a small answer would be kept


def test_requests_that_arrive_together_for_one_answer_are_answered_once() -> None:
    """A class opening the same link at once: one computation, the others wait and get its
    answer; a request for another answer does not wait."""
    cache = ResponseCache(max_bytes=10_000, max_entry_bytes=1_000)
    cache.routes.add(("GET", "/p"))
    computed: list[bytes] = []
    release = asyncio.Event()

    async def slow(scope: dict, receive: Callable, send: Callable) -> None:
        computed.append(scope["query_string"])
        scope["state"]["cacheable"] = True
        await release.wait()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"answer " + scope["query_string"]})

    middleware = CachedAnswers(slow, cache)  # one, as in the app

    async def get(query: bytes) -> bytes:
        sent: list[bytes] = []

        async def send(message: dict) -> None:
            if message["type"] == "http.response.body":
                sent.append(message["body"])

        scope = {"type": "http", "method": "GET", "path": "/p", "query_string": query,
                 "headers": [], "state": {}}  # fmt: skip
        await middleware(scope, None, send)  # type: ignore[arg-type]
        return b"".join(sent)

    async def run() -> list[bytes]:
        answers = asyncio.gather(*(get(q) for q in (b"a", b"a", b"b", b"a")))
        while len(middleware.in_flight) < 2:  # until both answers are under way
            await asyncio.sleep(0)
        for _ in range(10):  # and the repeated requests have had every chance to start
            await asyncio.sleep(0)
        assert computed == [b"a", b"b"]
        release.set()
        return await answers

    assert asyncio.run(run()) == [b"answer a", b"answer a", b"answer b", b"answer a"]
    assert computed == [b"a", b"b"]
