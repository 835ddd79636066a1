"""What routes share: the settings dependency and the shape of the error answers they document."""

import time
from collections.abc import Callable
from typing import Annotated

import anyio.from_thread
from fastapi import Depends, Request
from pydantic import BaseModel

from app.settings import Settings, get_settings

SettingsDep = Annotated[Settings, Depends(get_settings)]
# How often heavy work asks whether its client is still there: each question is a round trip
# to the event loop, so not between every small part.
CLIENT_CHECK_INTERVAL_S = 0.05


class ClientLeftError(Exception):
    """The client closed its connection while its answer was being computed: the work stops,
    and the request is logged as 499 (app/web/edge.py)."""


async def client_check(request: Request) -> Callable[[], None]:
    """For heavy work in a sync route (run in a worker thread): a callable to call between
    its parts, which raises ClientLeftError once the client has gone."""
    last_asked = 0.0

    def check() -> None:
        nonlocal last_asked
        now = time.monotonic()
        if now - last_asked < CLIENT_CHECK_INTERVAL_S:
            return
        last_asked = now
        if anyio.from_thread.run(request.is_disconnected):
            raise ClientLeftError

    return check


ClientCheck = Annotated[Callable[[], None], Depends(client_check)]


class ErrorItem(BaseModel):
    loc: list[str | int]
    msg: str
    type: str


class ErrorResponse(BaseModel):
    detail: list[ErrorItem] | str


ERRORS = {
    422: {"model": ErrorResponse},
    413: {"model": ErrorResponse},
    415: {"model": ErrorResponse, "description": "The body was not sent as application/json."},
}
