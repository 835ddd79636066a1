"""The response cache: bounded in bytes, least recently used out first, one per app."""

import pytest
from fastapi.testclient import TestClient

from app.cache import ResponseCache
from app.config import Settings
from app.main import create_app
from app.routes import api


def test_the_least_recently_used_answer_leaves_first_when_full() -> None:
    cache = ResponseCache(max_bytes=10, max_entry_bytes=10)
    a, b, c = (("POST", "/p", b"", name.encode()) for name in "abc")
    cache.put(a, b"aaaa")
    cache.put(b, b"bbbb")
    assert cache.get(a) == b"aaaa"  # a is now the most recently used
    cache.put(c, b"cccc")
    assert (cache.get(a), cache.get(b), cache.get(c)) == (b"aaaa", None, b"cccc")
    assert cache.size == 8


def test_an_answer_larger_than_an_entry_may_be_is_not_kept() -> None:
    cache = ResponseCache(max_bytes=100, max_entry_bytes=3)
    key = ("POST", "/p", b"", b"{}")
    cache.put(key, b"1234")
    assert cache.get(key) is None
    assert cache.size == 0


def test_a_repeated_request_is_answered_from_the_cache_with_the_same_bytes(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache: ResponseCache = client.app.state.response_cache
    computed = []
    original = api.compute_attention
    monkeypatch.setattr(api, "compute_attention", lambda *a: computed.append(1) or original(*a))
    first = client.post("/api/attention", json={"tokens": ["a", "b"], "seed": 3})
    assert len(cache.entries) == 1
    assert ("POST", "/api/attention") in cache.routes
    second = client.post("/api/attention", json={"tokens": ["a", "b"], "seed": 3})
    assert first.content == second.content
    assert second.headers["content-type"] == "application/json"
    assert second.headers["content-security-policy"]
    assert len(computed) == 1
    other = client.post("/api/attention", json={"tokens": ["a", "b"], "seed": 4})
    assert other.content != first.content
    assert len(cache.entries) == 2


def test_each_app_has_its_own_cache_so_its_own_limits_apply() -> None:
    body = {"tokens": ["a", "b", "c"]}
    with TestClient(create_app(Settings())) as roomy:
        assert roomy.post("/api/attention", json=body).status_code == 200
    with TestClient(create_app(Settings(max_tokens=2))) as strict:
        assert strict.post("/api/attention", json=body).status_code == 422


def test_invalid_requests_are_not_cached(client: TestClient) -> None:
    client.post("/api/attention", json={})
    for _ in range(2):
        response = client.post("/api/attention", json={"tokens": ["a"], "query": 3})
        assert response.status_code == 422
    assert len(client.app.state.response_cache.entries) == 1


def test_a_chunked_body_goes_through_the_app(client: TestClient) -> None:
    client.post("/api/attention", json={})
    response = client.post(
        "/api/attention", content=iter([b"{", b"}"]), headers={"content-type": "application/json"}
    )
    assert response.status_code == 200
    assert response.json()["tokens"] == ["The", "cat", "sleeps"]
