"""Request bodies validated from their bytes (JSONRoute) answer exactly as FastAPI's generic
body handling does, and the work of a request goes where app/web/work.py says."""

import asyncio
from typing import Annotated, Any

import orjson
import pytest
from anyio import to_thread
from fastapi import APIRouter, Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.testclient import TestClient

from app.features.lab import routes as lab_routes
from app.features.lab.schemas import AttentionRequest
from app.web import handlers, json_io
from app.web.json_io import (
    INLINE_BYTES,
    DirectCall,
    JSONResponse,
    JSONRoute,
    included,
    parse,
)
from app.web.work import work_limiter

BODIES = [
    b"{}",
    b'{"tokens": []}',
    b'{"tokens": "abc"}',
    b'{"query": 2.0}',
    b'{"query": "2"}',
    b'{"query": -1}',
    b'{"tokens": ["a", "b"], "x": [[NaN, 1], [1, Infinity]]}',
    b'{"tokens": ["a"], "x": [[1e999, 1]]}',
    b"[]",
    b"3",
    b'"text"',
    b"null",
    b'{"unknown": 1}',
    b'{"tokens": ["a", "b"], "w_q": [[1, 2], [3]]}',
    b'{"tokens": ["a", "b"], "x": [[1, 2], [3, 4]], "w_k": [[1, 2, 3]]}',
    b'{"mask": {"causal": "yes"}}',
    b'{"x": [' + b", ".join([b"[NaN, NaN, NaN]"] * 9) + b"]}",  # 27 problems: 20 listed
]


def both_ways() -> TestClient:
    """One model behind FastAPI's generic body handling and behind JSONRoute."""
    app = FastAPI()
    app.add_exception_handler(RequestValidationError, handlers.request_validation_handler)

    @app.post("/generic")
    def generic(req: AttentionRequest) -> dict[str, Any]:
        return req.model_dump()

    router = APIRouter(route_class=JSONRoute)

    @router.post("/bytes")
    def from_bytes(req: AttentionRequest) -> dict[str, Any]:
        return req.model_dump()

    app.include_router(router)
    return TestClient(app)


@pytest.mark.parametrize("body", BODIES)
def test_a_body_validated_from_its_bytes_answers_as_fastapi_would(body: bytes) -> None:
    client = both_ways()
    headers = {"content-type": "application/json"}
    generic = client.post("/generic", content=body, headers=headers)
    ours = client.post("/bytes", content=body, headers=headers)
    assert ours.status_code == generic.status_code
    assert ours.json() == generic.json()


def direct_and_generic(calls: list[str]) -> tuple[TestClient, APIRouter]:
    """The same endpoint (its body, a dependency's value, a route dependency) behind
    FastAPI's own handling and behind JSONRoute, which calls it directly."""
    app = FastAPI()
    app.add_exception_handler(RequestValidationError, handlers.request_validation_handler)

    async def mark(request: Request) -> None:
        calls.append(request.url.path)

    async def width(request: Request) -> int:
        return len(request.url.path)

    def answer(req: AttentionRequest, value: int) -> JSONResponse:
        return JSONResponse({"tokens": req.tokens, "query": req.query, "value": value})

    @app.post("/generic", dependencies=[Depends(mark)])
    def generic(req: AttentionRequest, value: Annotated[int, Depends(width)]) -> JSONResponse:
        return answer(req, value)

    router = APIRouter(route_class=JSONRoute)

    @router.post("/direct", dependencies=[Depends(mark)])
    async def direct(req: AttentionRequest, value: Annotated[int, Depends(width)]) -> JSONResponse:
        return answer(req, value)

    app.include_router(router)
    return TestClient(app), router


@pytest.mark.parametrize(
    ("body", "kind"),
    [
        (b'{"tokens": ["a", "b"], "query": 1}', "application/json"),
        (b'{"query": -1}', "application/json"),
        (b"", "application/json"),
        (b'{"tokens": ["a"]}', "text/plain"),
    ],
)
def test_a_route_of_a_body_and_simple_dependencies_called_directly_answers_as_fastapi(
    body: bytes, kind: str
) -> None:
    calls: list[str] = []
    client, _ = direct_and_generic(calls)
    generic = client.post("/generic", content=body, headers={"content-type": kind})
    direct = client.post("/direct", content=body, headers={"content-type": kind})
    assert (direct.status_code, direct.json()) == (
        generic.status_code,
        {**generic.json(), "value": 7} if generic.status_code == 200 else generic.json(),
    )
    assert direct.headers["content-type"] == generic.headers["content-type"]
    if generic.status_code == 200:
        assert generic.json()["value"] == 8  # len("/generic"): the dependency's value
        assert calls == ["/generic", "/direct"]  # the route dependency ran for both


def test_an_overridden_dependency_is_honoured_by_a_route_called_directly() -> None:
    client, router = direct_and_generic([])

    async def other(request: Request) -> int:
        return 99

    width = next(d.call for d in router.routes[0].dependant.dependencies if d.name == "value")
    client.app.dependency_overrides[width] = other
    assert client.post("/direct", json={"tokens": ["a"]}).json()["value"] == 99


def test_only_a_body_simple_dependencies_and_a_declared_response_are_called_directly() -> None:
    _, direct = direct_and_generic([])
    assert isinstance(DirectCall.of(direct.routes[0].dependant), DirectCall)
    [attention] = [r for r in lab_routes.api.routes if r.path == "/api/attention"]
    assert DirectCall.of(attention.dependant) is not None
    # the FastAPI release installed has the internals `included` reads: the direct call is on
    assert included(attention) is attention
    router = APIRouter(route_class=JSONRoute)

    @router.post("/query")
    async def with_query(req: AttentionRequest, page: int = 0) -> JSONResponse:
        return JSONResponse(page)

    @router.post("/request")
    async def with_request(req: AttentionRequest, request: Request) -> JSONResponse:
        return JSONResponse(request.url.path)

    @router.post("/dict")
    async def a_dict(req: AttentionRequest) -> dict[str, Any]:
        return {}

    for route in router.routes:
        assert DirectCall.of(route.dependant) is None, route.path


@pytest.mark.parametrize("body", [b'{"tokens": ["a",]}', b'{"query": 1', b"\xff\xfe", b"{} x"])
def test_json_that_cannot_be_read_names_orjsons_position_and_reason(body: bytes) -> None:
    with pytest.raises(orjson.JSONDecodeError) as error:
        parse(body)
    response = both_ways().post(
        "/bytes", content=body, headers={"content-type": "application/json"}
    )
    [problem] = response.json()["detail"]
    assert response.status_code == 422
    assert problem["loc"] == ["body", error.value.pos]
    assert problem["msg"].startswith(
        f"the request body is not valid JSON at character {error.value.pos}: {error.value.msg}"
    )


@pytest.mark.parametrize(
    ("size", "on_loop"), [(INLINE_BYTES - 100, True), (INLINE_BYTES + 1, False)]
)
def test_a_large_body_is_validated_off_the_event_loop(
    client: TestClient, monkeypatch: pytest.MonkeyPatch, size: int, on_loop: bool
) -> None:
    where = where_it_runs(monkeypatch, json_io, "validated")
    body = b'{"tokens": ["a"], "x": [[NaN]]}'
    body = body[:-1] + b" " * (size - len(body)) + b"}"
    response = client.post(
        "/api/attention", content=body, headers={"content-type": "application/json"}
    )
    assert response.status_code == 422
    assert response.json()["detail"][0]["msg"].startswith("x[0][0] must be a finite number")
    assert where == [on_loop]


def running_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def where_it_runs(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> list[bool]:
    """`module.name` wrapped to record, at each call, whether it ran on the event loop."""
    where: list[bool] = []
    original = getattr(module, name)

    def recorded(*args: Any) -> Any:
        where.append(running_loop())
        return original(*args)

    monkeypatch.setattr(module, name, recorded)
    return where


@pytest.mark.parametrize(("n", "on_loop"), [(3, True), (32, True), (33, False), (256, False)])
def test_a_long_head_is_computed_in_a_work_thread_and_a_short_one_on_the_loop(
    fresh_client: TestClient, monkeypatch: pytest.MonkeyPatch, n: int, on_loop: bool
) -> None:
    where = where_it_runs(monkeypatch, lab_routes, "compute_attention")
    response = fresh_client.post("/api/attention", json={"tokens": [f"t{i}" for i in range(n)]})
    assert response.status_code == 200
    assert len(response.json()["tokens"]) == n
    assert where == [on_loop]


@pytest.mark.parametrize("threads", [1, 3])
def test_the_work_threads_setting_sizes_the_work_pool_and_only_it(
    make_client: Any, threads: int
) -> None:
    client = make_client(work_threads=threads, page_threads=5)
    client.get("/healthz")  # started: the lifespan has run
    assert client.portal.call(lambda: work_limiter().total_tokens) == threads
    default_pool = client.portal.call(to_thread.current_default_thread_limiter)
    assert default_pool.total_tokens == 5  # Settings.page_threads: sync routes, static files
