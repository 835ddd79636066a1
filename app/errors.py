"""Errors with a type, and the one place that turns them into answers.

`InputError` is raised by the service when input is wrong in a way only visible after
defaults are filled in. Every input problem, from pydantic or from us, leaves as a 422
with FastAPI's usual body, each `msg` starting with the field it is about.
"""

from collections.abc import Sequence
from typing import Any

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException

from app.responses import JSONResponse


class InputError(Exception):
    """Input a student can fix: where it is (`loc`, without "body") and what to do."""

    def __init__(self, loc: Sequence[str | int], msg: str) -> None:
        super().__init__(msg)
        self.loc = tuple(loc)
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


def invalid_input(request: Request, errors: list[dict[str, Any]]) -> JSONResponse:
    """The 422 answer; the messages also go into the request's log line (app.requestlog)."""
    request.state.invalid = [e["msg"] for e in errors]
    return JSONResponse({"detail": errors}, status_code=422)


async def request_validation_handler(request: Request, exc: RequestValidationError) -> Any:
    return invalid_input(request, validation_errors(exc.errors()))


async def input_error_handler(request: Request, exc: InputError) -> Any:
    return invalid_input(
        request, [{"loc": ["body", *exc.loc], "msg": exc.msg, "type": "value_error"}]
    )


UNREADABLE_BODY = (
    "the request body could not be read as JSON; send UTF-8 text such as {} for the worked example"
)


async def http_error_handler(request: Request, exc: HTTPException) -> Any:
    if exc.status_code == 400:
        # FastAPI's "error parsing the body" (e.g. bytes that are not UTF-8): input a student
        # can fix, so it answers like every other input problem.
        return invalid_input(
            request, [{"loc": ["body"], "msg": UNREADABLE_BODY, "type": "json_invalid"}]
        )
    return JSONResponse({"detail": exc.detail}, status_code=exc.status_code, headers=exc.headers)
