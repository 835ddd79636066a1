"""JSON in and out: request bodies validated straight from their bytes into the request
model, answers serialized by orjson with numpy arrays written directly (and −∞ as null).

Requests (`JSONRoute`, the route class of every JSON API):

pydantic-core reads the body's bytes into the route's request model in one pass
(`TypeAdapter.validate_json`), without the dict FastAPI's generic handling would build and
walk again; FastAPI then finds the model already made, still documents it in OpenAPI and
still answers a body that is missing or not JSON. Bodies over `INLINE_BYTES` are validated
in a worker thread, in arrival order with the rest of the heavy work (app/web/work.py), so
that a 1 MB body of numbers does not hold the event loop. A body pydantic-core cannot read
as JSON is read once more by orjson (`parse`), for the character position and the message
of the 422 FastAPI has always answered; validation problems are the same errors FastAPI
reports (loc starting with "body"), which app/web/handlers.py words and caps at 20.

Once the body is made, a route whose other parameters are all simple dependencies (an async
function of the request alone, such as the settings, or `cacheable`) calls them and its
endpoint itself (`DirectCall`) instead of through FastAPI's general dependency solving, which
costs more than the rest of a small request's routing; any other route, and a body that is
missing or not JSON, goes through FastAPI as before. The route, its URL, its OpenAPI schema
and its errors are FastAPI's either way.

Such a route with a fixed path, once FastAPI has routed a POST to it, also puts itself
(`DirectRoute`) in the table of app/web/middleware/direct.py, which then calls it for every
POST of a JSON body to that path without FastAPI's routing and request layers.
"""

import dataclasses
import inspect
import json
from collections.abc import Callable, Coroutine
from typing import Any

import numpy as np
import orjson
from fastapi import Request
from fastapi import routing as fastapi_routing
from fastapi.dependencies.models import Dependant
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from fastapi.security.base import SecurityBase
from pydantic import TypeAdapter, ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from app.web.middleware.body_limits import is_json
from app.web.middleware.cache import read_body
from app.web.work import run_work

NON_FINITE = ("NaN", "Infinity", "-Infinity")
INLINE_BYTES = 64 * 1024  # larger bodies are validated in the worker thread


class JSONRequest(Request):
    """A request whose `json()` is the body already validated by JSONRoute (else parsed)."""

    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            self._json = parse(await self.body())
        return self._json


def parse(body: bytes) -> Any:
    """orjson.loads; NaN, Infinity and overflowing numbers are read the way Python's json reads
    them, so that the request model can name the field that holds one (they are not JSON, but
    a common slip, and "x[0][1] must be a finite number" says more than a character position).
    """
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError as error:
        if not (error.doc[error.pos :].startswith(NON_FINITE) or "infinity" in error.msg):
            raise
        try:
            return json.loads(body)
        except (ValueError, RecursionError):
            raise error from None


# FastAPI validates a parsed body with from_attributes=True, so a value that is not an object
# where a model belongs is a model_attributes_type error there: the answers keep that type.
AS_FASTAPI_TYPES = {"model_type": "model_attributes_type"}


def body_errors(errors: list[Any]) -> list[Any]:
    """pydantic's errors for the body, located and typed as FastAPI reports them."""
    return [
        {**e, "loc": ("body", *e["loc"]), "type": AS_FASTAPI_TYPES.get(e["type"], e["type"])}
        for e in errors
    ]


def validated(adapter: TypeAdapter[Any], body: bytes) -> Any:
    """The body as the request model, or RequestValidationError with FastAPI's errors."""
    try:
        return adapter.validate_json(body)
    except ValidationError as error:
        errors = error.errors(include_url=False)
    if errors[0]["type"] != "json_invalid":
        raise RequestValidationError(body_errors(errors))
    try:
        value = parse(body)
    except json.JSONDecodeError as error:  # orjson's errors are JSONDecodeErrors
        invalid = {"type": "json_invalid", "loc": ("body", error.pos), "msg": "JSON decode error"}
        ctx = {"error": error.msg}
        raise RequestValidationError([{**invalid, "input": {}, "ctx": ctx}]) from None
    try:  # JSON that only Python's reader takes (NaN, 1e999): name the fields that hold them
        return adapter.validate_python(value)
    except ValidationError as error:
        raise RequestValidationError(body_errors(error.errors(include_url=False))) from None


@dataclasses.dataclass(frozen=True)
class DirectCall:
    """An endpoint whose parameters are its body and simple dependencies: each dependency an
    async function of the request alone, called once, its value passed under `name` (None for
    a route's `dependencies=[...]`, called for its effect)."""

    endpoint: Callable[..., Any]
    body_name: str
    dependencies: tuple[tuple[str | None, Callable[..., Any], str], ...]
    asynchronous: bool  # the endpoint is a coroutine function (else it runs in the threadpool)

    @classmethod
    def of(cls, dependant: Dependant) -> "DirectCall | None":
        """The direct call of a route's dependant, or None when FastAPI must solve it (or
        serialize what it returns: only an endpoint declared to return a Response is called
        directly)."""
        assert dependant.call is not None
        if (
            len(dependant.body_params) != 1
            or dependant.request_param_name
            or _takes_more(dependant)
        ):
            return None
        returns = inspect.signature(dependant.call, eval_str=True).return_annotation
        if not (inspect.isclass(returns) and issubclass(returns, Response)):
            return None
        dependencies = []
        for sub in dependant.dependencies:
            simple = (
                sub.request_param_name is not None
                and not sub.body_params
                and not sub.dependencies
                and not _takes_more(sub)
                and inspect.iscoroutinefunction(sub.call)
                and not isinstance(sub.call, SecurityBase)
            )
            if not simple:
                return None
            dependencies.append((sub.name, sub.call, sub.request_param_name))
        return cls(
            dependant.call,
            dependant.body_params[0].name,
            tuple(dependencies),
            inspect.iscoroutinefunction(dependant.call),
        )

    async def __call__(self, request: Request, body: Any) -> Response:
        values = {self.body_name: body}
        for name, call, request_name in self.dependencies:
            value = await call(**{request_name: request})
            if name is not None:
                values[name] = value
        if self.asynchronous:
            response = await self.endpoint(**values)
        else:
            response = await run_in_threadpool(self.endpoint, **values)
        if not isinstance(response, Response):
            raise TypeError(f"{self.endpoint.__name__} is declared to return a Response")
        return response


def _takes_more(dependant: Dependant) -> bool:
    """Whether a dependant reads anything but its body and the request: path, query, header
    or cookie parameters, the response, background tasks, security scopes, a websocket."""
    return bool(
        dependant.path_params
        or dependant.query_params
        or dependant.header_params
        or dependant.cookie_params
        or dependant.response_param_name
        or dependant.background_tasks_param_name
        or dependant.security_scopes_param_name
        or dependant.websocket_param_name
        or dependant.http_connection_param_name
        or dependant.own_oauth_scopes
    )


def included(route: APIRoute) -> APIRoute | None:
    """The route as included (its router's dependencies added), found the way FastAPI's own
    get_route_handler finds it. Those are FastAPI internals: a FastAPI without them (another
    release than the one tested) gets None, and so its own handling of every route."""
    context_var = getattr(fastapi_routing, "_effective_route_context_var", None)
    if context_var is None or not hasattr(route, "_embed_body_fields"):
        return None
    context = context_var.get()
    return context if context is not None and context.original_route is route else route


class JSONRoute(APIRoute):
    """An APIRoute whose JSON body is validated from its bytes (see the module docstring)."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()
        if self.body_field is None:
            return handler
        adapter: TypeAdapter[Any] = TypeAdapter(self.body_field.field_info.annotation)
        route = included(self)
        direct = (
            None if route is None or route._embed_body_fields else DirectCall.of(route.dependant)
        )
        # An app's dependency_overrides (none here; tests may set them) are FastAPI's to apply.
        overrides = getattr(
            route and route.dependency_overrides_provider, "dependency_overrides", {}
        )
        known = (
            DirectRoute(adapter, direct, overrides)
            if direct is not None and route is not None and fixed_path(route)
            else None
        )

        async def validate_json_body(request: Request) -> Response:
            request = JSONRequest(request.scope, request.receive)
            body = await request.body()
            if not body or not is_json(request.headers.get("content-type", "").encode("latin-1")):
                return await handler(request)  # FastAPI's answers to no body or another type
            value = await validated_body(request, adapter)
            if direct is None or overrides:
                return await handler(request)
            table = request.scope.get(DIRECT_ROUTES)
            if known is not None and table is not None:
                table[request.scope["path"]] = known  # FastAPI resolved it: once is enough
            return await direct(request, value)

        return validate_json_body


async def validated_body(request: "JSONRequest", adapter: TypeAdapter[Any]) -> Any:
    """The request's body as the route's model (in the work thread when it is large), kept
    as the request's json()."""
    body = await request.body()
    if len(body) > INLINE_BYTES:
        request._json = await run_work(validated, adapter, body)
    else:
        request._json = validated(adapter, body)
    return request._json


def fixed_path(route: Any) -> bool:
    """Whether a route answers one path only, as one POST, with no limit of its own on the
    body: then the path alone says which route a POST to it reaches."""
    path = getattr(route, "path", None)
    return (
        isinstance(path, str)
        and "{" not in path
        and getattr(route, "methods", None) == {"POST"}
        and getattr(route, "max_body_size", None) is None
    )


# The scope key under which app/web/middleware/direct.py hands its table (path → DirectRoute)
# to the routes: a JSON route that FastAPI resolved for a POST to a path puts itself there.
DIRECT_ROUTES = "attention_lab.direct_routes"


@dataclasses.dataclass(frozen=True)
class DirectRoute:
    """A JSON route called without FastAPI's routing, for a POST of a JSON body to its path:
    the body validated from its bytes, the endpoint called directly (DirectCall), an error
    answered by the app's exception handler for it, as FastAPI would have."""

    adapter: TypeAdapter[Any]
    call: DirectCall
    overrides: dict[Any, Any]  # the app's dependency_overrides: while any is set, FastAPI's

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = JSONRequest(scope, receive)
        try:
            request._body = await whole_body(receive)  # what request.body() would read
            response = await self.call(request, await validated_body(request, self.adapter))
        except Exception as error:
            handler = exception_handler(scope["app"], error)
            if handler is None:
                raise
            if inspect.iscoroutinefunction(handler):
                response = await handler(request, error)
            else:
                response = await run_in_threadpool(handler, request, error)
        await response(scope, receive, send)


async def whole_body(receive: Receive) -> bytes:
    """The request's body, read as Request.body() reads it (ClientDisconnect if the client
    leaves first), without its stream of chunks."""
    body = await read_body(receive)
    if body is None:
        raise ClientDisconnect()
    return body


def exception_handler(app: Any, error: Exception) -> Callable[..., Any] | None:
    """The app's handler for `error`, found as Starlette's ExceptionMiddleware finds it (an
    HTTP error's status first, then the error's classes); None for what the server error
    layer answers (Exception itself, 500)."""
    handlers = getattr(app, "exception_handlers", {})
    if isinstance(error, HTTPException) and error.status_code in handlers:
        return handlers[error.status_code]
    for kind in type(error).__mro__:
        if kind is Exception:
            return None
        if kind in handlers:
            return handlers[kind]
    return None


ORJSON_OPTIONS = orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS
INT64_MAX = 2**63 - 1


def wide_ints_as_floats(value: Any) -> Any:
    """orjson writes integers up to 64 bits; a wider one (10⁹ tokens squared, times heads,
    layers and batch) goes out as the nearest float, which JSON readers parse anyway.
    A typed result (a dataclass) is walked field by field, as orjson would write it."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            f.name: wide_ints_as_floats(getattr(value, f.name)) for f in dataclasses.fields(value)
        }
    if isinstance(value, dict):
        return {k: wide_ints_as_floats(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [wide_ints_as_floats(v) for v in value]
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > INT64_MAX:
        return float(value)
    return value


def _contiguous(value: Any) -> Any:
    """orjson writes C-contiguous arrays only; a sliced view is copied into one."""
    if isinstance(value, np.ndarray):
        return np.ascontiguousarray(value)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def dumps(content: Any) -> bytes:
    try:
        return orjson.dumps(content, option=ORJSON_OPTIONS, default=_contiguous)
    except orjson.JSONEncodeError:
        wide = wide_ints_as_floats(content)
        return orjson.dumps(wide, option=ORJSON_OPTIONS, default=_contiguous)


class JSONResponse(Response):
    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return dumps(content)
