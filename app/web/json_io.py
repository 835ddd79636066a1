"""JSON in and out with orjson: request bodies parsed for the routes whose bodies can be large,
answers serialized with numpy arrays written directly (and −∞ as null).

Requests:

FastAPI still validates the parsed body against the request model, answers problems with its
usual 422 and documents the model in OpenAPI; only the parser changes. orjson is about 6×
faster than the standard library's json on a 200 kB body of numbers and stops at 1024
levels of nesting instead of recursing without end.
Its errors are `json.JSONDecodeError`s, which FastAPI turns into a 422 `json_invalid`.
"""

import json
from collections.abc import Callable, Coroutine
from typing import Any

import numpy as np
import orjson
from fastapi import Request
from fastapi.routing import APIRoute
from starlette.responses import Response

NON_FINITE = ("NaN", "Infinity", "-Infinity")


class JSONRequest(Request):
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


class JSONRoute(APIRoute):
    """An APIRoute whose request body is parsed by orjson (FastAPI's custom-route pattern)."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def parse_with_orjson(request: Request) -> Response:
            return await handler(JSONRequest(request.scope, request.receive))

        return parse_with_orjson


ORJSON_OPTIONS = orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS
INT64_MAX = 2**63 - 1


def wide_ints_as_floats(value: Any) -> Any:
    """orjson writes integers up to 64 bits; a wider one (10⁹ tokens squared, times heads,
    layers and batch) goes out as the nearest float, which JSON readers parse anyway."""
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
