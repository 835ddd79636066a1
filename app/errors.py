"""Errors with a type, and the one place that turns them into answers.

`InputError` is raised by the service when input is wrong in a way only visible after
defaults are filled in. Every input problem, from pydantic or from us, leaves as a 422
with FastAPI's usual body, each `msg` starting with the field it is about.
"""

import logging
import uuid
from collections.abc import Sequence
from typing import Any

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException

from app.responses import JSONResponse

log = logging.getLogger("attention_lab")


class InputError(Exception):
    """Input a student can fix: where it is (`loc`, without "body") and what to do."""

    def __init__(self, loc: Sequence[str | int], msg: str) -> None:
        super().__init__(msg)
        self.loc = tuple(loc)
        self.msg = msg


class ModelUnavailableError(Exception):
    """The trained model's files are not on this server: a sentence saying how to install them."""

    def __init__(self, msg: str) -> None:
        super().__init__(msg)
        self.msg = msg


def field_name(loc: Sequence[str | int]) -> str:
    """("body", "x", 0, 1) → "x[0][1]": the field as a student would write it."""
    parts = [p for p in loc if p not in ("body", "query", "path")]
    name = ""
    for part in parts:
        name += f"[{part}]" if isinstance(part, int) else (f".{part}" if name else str(part))
    return name


def readable(error: dict[str, Any]) -> dict[str, Any]:
    """One pydantic error as a sentence that names its field."""
    loc = list(error.get("loc", ()))
    msg = str(error.get("msg", "invalid input"))
    kind = str(error.get("type", "value_error"))
    if kind == "json_invalid":
        reason = error.get("ctx", {}).get("error", "")
        msg = f"the request body is not valid JSON ({reason}); check quotes, commas and brackets"
    elif kind == "missing" and loc == ["body"]:
        msg = "the request needs a JSON body; send {} for the worked example"
    else:
        msg = msg.removeprefix("Value error, ")
        name = field_name(loc)
        if name and not msg.startswith(name.split("[")[0].split(".")[0]):
            msg = f"{name}: {msg[:1].lower()}{msg[1:]}"
    return {"loc": loc, "msg": msg, "type": kind}


def validation_errors(errors: Sequence[Any]) -> list[dict[str, Any]]:
    return [readable(dict(e)) for e in errors]


async def request_validation_handler(request: Request, exc: RequestValidationError) -> Any:
    return JSONResponse({"detail": validation_errors(exc.errors())}, status_code=422)


async def input_error_handler(request: Request, exc: InputError) -> Any:
    error = {"loc": ["body", *exc.loc], "msg": exc.msg, "type": "value_error"}
    return JSONResponse({"detail": [error]}, status_code=422)


async def model_unavailable_handler(request: Request, exc: ModelUnavailableError) -> Any:
    return JSONResponse({"detail": exc.msg}, status_code=503)


async def http_error_handler(request: Request, exc: HTTPException) -> Any:
    return JSONResponse({"detail": exc.detail}, status_code=exc.status_code, headers=exc.headers)


async def unexpected_error_handler(request: Request, exc: Exception) -> Any:
    """A bug of ours: log it with an id the user can quote, show no internals."""
    request_id = uuid.uuid4().hex[:12]
    log.exception("unhandled error %s on %s %s", request_id, request.method, request.url.path)
    return JSONResponse(
        {"detail": f"Something went wrong on the server (error id {request_id})."},
        status_code=500,
    )
