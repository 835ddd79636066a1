"""What routes share: the settings dependency and the shape of the error answers they document."""

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any

import anyio.from_thread
from annotated_types import MaxLen
from fastapi import Depends, Request
from pydantic import BaseModel
from pydantic.fields import FieldInfo

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


@dataclass(frozen=True)
class PageQuery:
    """The parameters a page declares, as its URL gave them (text, in URL order). A page's
    own parser turns them into numbers, so that bad input becomes a sentence on the page
    rather than a failed request; parameters the page does not declare never reach it."""

    items: tuple[tuple[str, str], ...]

    def last(self) -> dict[str, str]:
        """Each parameter's last value (a form sends a single value for most fields)."""
        return dict(self.items)


def max_length(field: FieldInfo) -> int | None:
    """The longest value a declared text field documents (its `max_length`), if any."""
    return next((m.max_length for m in field.metadata if isinstance(m, MaxLen)), None)


def page_query(declared: type[BaseModel], *more: str) -> Any:
    """A dependency reading the query parameters named by `declared`'s fields (and `more`).
    A text longer than its field's `max_length` (or than `declared.text_limits(settings)`
    says, for limits that follow the settings) is cut to it, and the page says so.

    The names are kept on the dependency (`declared_names`), so the code and the tests know
    what each page reads from its URL. Async, as it does no I/O: an async page that then
    awaits (the /cost measurement) holds no worker thread while it waits."""
    names = frozenset(declared.model_fields) | frozenset(more)
    longest = {name: n for name, f in declared.model_fields.items() if (n := max_length(f))}
    server_limits = getattr(declared, "text_limits", None)  # limits that follow the settings

    async def read(request: Request) -> PageQuery:
        limits = longest
        if server_limits is not None:
            limits = {**longest, **server_limits(request.app.state.settings)}
        pairs, cuts = [], []
        for name, value in request.query_params.multi_items():
            if name not in names:
                continue
            limit = limits.get(name)
            if limit is not None and len(value) > limit:
                value = value[:limit]
                cuts.append((name, limit))
            pairs.append((name, value))
        # what the page's links carry, and what the page says it cut (web/classroom.py)
        request.state.page_state, request.state.page_cuts = tuple(pairs), cuts
        return PageQuery(tuple(pairs))

    read.declared_names = names  # type: ignore[attr-defined]
    return Depends(read)
