"""The one place that turns typed errors into JSON answers: 422 with FastAPI's usual body,
503, HTTP errors, and the trailing-slash redirect. Every input problem leaves as a 422 whose
`msg` starts with the field it is about, in the reader's language."""

from typing import Any

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import RedirectResponse, Response
from starlette.exceptions import HTTPException
from starlette.routing import Match

from app.core.errors import (
    BusyError,
    InputError,
    ModelUnavailableError,
    unreadable_body,
    validation_errors,
)
from app.web.classroom import SCOPE_KEY, url
from app.web.requestlog import CLIENT_CLOSED
from app.web.responses import JSONResponse


def invalid_input(request: Request, errors: list[dict[str, Any]]) -> JSONResponse:
    """The 422 answer; the messages also go into the request's log line (app/web/requestlog.py)."""
    request.state.invalid = [e["msg"] for e in errors]
    return JSONResponse({"detail": errors}, status_code=422)


async def request_validation_handler(request: Request, exc: RequestValidationError) -> Any:
    return invalid_input(request, validation_errors(exc.errors()))


async def input_error_handler(request: Request, exc: InputError) -> Any:
    error = {"loc": [exc.source, *exc.loc], "msg": exc.msg, "type": "value_error"}
    return invalid_input(request, [error])


async def busy_handler(request: Request, exc: BusyError) -> Any:
    headers = {"Retry-After": str(exc.retry_after_s)}
    return JSONResponse({"detail": exc.msg}, status_code=503, headers=headers)


async def client_left_handler(request: Request, exc: Exception) -> Any:
    """Nobody is left to read an answer: an empty one, for the log's 499."""
    return Response(status_code=CLIENT_CLOSED)


async def model_unavailable_handler(request: Request, exc: ModelUnavailableError) -> Any:
    return JSONResponse({"detail": exc.msg}, status_code=503)


def slash_twin(request: Request) -> str | None:
    """For a path no route serves, the same path with its trailing slash added or dropped
    when a route serves that, as a relative URL (query kept, classroom parameters
    included): `/docs/` → `/docs`. Relative, so the Host header never chooses where a
    redirect goes; never `//…`, which a browser would read as another host."""
    path = request.scope["path"]
    if path == "/":
        return None
    twin = path.rstrip("/") if path.endswith("/") else path + "/"
    if not twin or twin.startswith("//") or "\\" in twin:
        return None
    routes = request.app.router.routes

    def served(path: str) -> bool:
        scope = {**request.scope, "path": path}
        return any(route.matches(scope)[0] is not Match.NONE for route in routes)

    if served(path) or not served(twin):  # a route's own 404 (a missing static file) stays
        return None
    query = [*request.query_params.multi_items(), *request.scope.get(SCOPE_KEY, ())]
    return url(twin, query)


async def http_error_handler(request: Request, exc: HTTPException) -> Any:
    if exc.status_code == 404 and (twin := slash_twin(request)):
        return RedirectResponse(twin, status_code=307)
    if exc.status_code == 400:
        # FastAPI's "error parsing the body" (bytes that are not UTF-8, a number of more
        # digits than Python reads): input a student can fix, answered like every other.
        return invalid_input(request, [unreadable_body(exc.__cause__)])
    headers = dict(exc.headers or {})
    if exc.status_code == 405 and "GET" in headers.get("Allow", ""):
        headers["Allow"] += ", HEAD"  # the edge serves HEAD as GET
    return JSONResponse({"detail": exc.detail}, status_code=exc.status_code, headers=headers)
