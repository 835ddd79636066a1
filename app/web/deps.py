"""What routes share: the settings dependency and the shape of the error answers they document."""

from dataclasses import dataclass
from typing import Annotated, Any

from annotated_types import MaxLen
from fastapi import Depends, Request
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from app.settings import Settings, get_settings

SettingsDep = Annotated[Settings, Depends(get_settings)]


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
