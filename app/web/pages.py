"""The one pattern every page follows:

    form = SomeForm.read(query)            a typed form from the query string; a value that
                                           does not parse keeps its default and becomes a
                                           Problem (a sentence naming the field)
    result = compute(form…)                the result, computed once (a service)
    view = some_view(result, form)         one typed view: what the template formats
    return respond(request, Page(…))       the whole page, or its live fragment

One status rule for every page: input problems answer 422 (the page still shows what it
could, with the sentences beside the controls); a live update (`?fragment=1`, sent by
static/js/live.js) answers its fragment 200 with the real status in X-Input-Status, since a
half-typed number is a normal moment of editing, not a failed request.
"""

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Self, get_origin
from urllib.parse import urlencode

from fastapi import Request
from fastapi.responses import HTMLResponse
from pydantic import BaseModel, BeforeValidator, ConfigDict, ValidationError, model_validator
from pydantic_core import PydanticCustomError
from starlette.datastructures import QueryParams

from app.core.errors import validation_errors
from app.core.i18n import format_number, gettext
from app.web.templating import templates

FRAGMENT = "fragment"  # ?fragment=1: the page's live part only, the same way on every page
INPUT_STATUS = "X-Input-Status"
PAGE_STATE = "X-Page-State"  # a fragment's canonical state: what the address bar shows


# The one rule for numbers in a query string: ASCII digits (a true minus sign is read as
# "-"), at most 15 of them before an exponent; no Unicode digits, no thousand separators.
WHOLE = re.compile(r"[+-]?[0-9]{1,15}", re.ASCII)
DECIMAL = re.compile(
    r"[+-]?([0-9]{1,15}(\.[0-9]{0,15})?|\.[0-9]{1,15})([eE][+-]?[0-9]{1,3})?", re.ASCII
)


def whole(value: Any) -> Any:
    if isinstance(value, str):
        text = value.strip().replace("−", "-")
        if not WHOLE.fullmatch(text):
            raise PydanticCustomError("int_parsing", "not a whole number")
        return int(text)
    return value


def decimal(value: Any) -> Any:
    if isinstance(value, str):
        text = value.strip().replace("−", "-")
        if not DECIMAL.fullmatch(text):
            raise PydanticCustomError("float_parsing", "not a number")
        return float(text)
    return value


Whole = Annotated[int, BeforeValidator(whole)]
Decimal = Annotated[float, BeforeValidator(decimal)]


class BlankIsAbsent(BaseModel):
    """A model whose blank fields (`window=` from a form field left empty) are fields not
    given, so they take their defaults rather than failing as the text ""."""

    @model_validator(mode="before")
    @classmethod
    def blank_is_absent(cls, data: Any) -> Any:
        if isinstance(data, dict):
            return {k: v for k, v in data.items() if v != ""}
        return data


@dataclass(frozen=True)
class Problem:
    """Input a page could not use: the field, and a sentence saying what to do."""

    field: str
    message: str

    def __str__(self) -> str:
        return self.message


class PageForm(BaseModel):
    """A page's state as its query string says it: typed fields with their defaults and
    limits (pydantic `Field`s). Text fields with a `max_length` are cut to it, and said."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    @classmethod
    def read(cls, query: QueryParams) -> tuple[Self, list[Problem], list[str]]:
        """The form from a query string, its problems, and notes on what was used instead
        (a text cut to its length)."""
        values: dict[str, Any] = {}
        notes: list[str] = []
        for name, field in cls.model_fields.items():
            given = query.getlist(name)
            if not given:
                continue
            if get_origin(field.annotation) is list:
                values[name] = given
                continue
            value = given[-1]
            limit = max_length(field)
            if limit is not None and len(value) > limit:
                value = value[:limit]
                notes.append(
                    gettext(
                        "%(field)s: longer than %(max)s characters; this page uses and carries "
                        "the first %(max)s."
                    )
                    % {"field": name, "max": format_number(limit)}
                )
            values[name] = value
        try:
            return cls.model_validate(values), [], notes
        except ValidationError as error:
            problems = [
                Problem(str(e["loc"][0]) if e["loc"] else "", e["msg"])
                for e in validation_errors(error.errors(include_url=False))
            ]
        kept = {k: v for k, v in values.items() if k not in {p.field for p in problems}}
        try:
            return cls.model_validate(kept), problems, notes
        except ValidationError:  # a rule between fields: every field at its default
            return cls(), problems, notes

    def without(self, *names: str) -> Self:
        """The same form with these fields at their defaults: what a page computes instead of
        input its service could not use."""
        fields = type(self).model_fields
        return self.model_copy(update={name: fields[name].default for name in names})


def max_length(field: Any) -> int | None:
    return next((m.max_length for m in field.metadata if hasattr(m, "max_length")), None)


@dataclass(frozen=True)
class Page:
    """What a page route hands to `respond`: its two templates (the whole page, which
    includes the fragment, and the fragment alone), the typed view they format, the problems
    and notes to show, and the canonical state the page's links carry."""

    template: str
    fragment: str
    view: Any
    problems: Sequence[Problem] = ()
    notes: Sequence[str] = ()
    state: Sequence[tuple[str, Any]] = ()


def state_query(state: Sequence[tuple[str, Any]]) -> str:
    """A state as a query string that stays readable: "," and ";" are left as they are."""
    return urlencode([(k, str(v)) for k, v in state], safe=",;")


def respond(request: Request, page: Page) -> HTMLResponse:
    """The whole page, or its fragment for a live update, with the status rule above."""
    request.state.page_state = tuple((k, str(v)) for k, v in page.state)
    live = request.query_params.get(FRAGMENT) == "1"
    status = 422 if page.problems else 200
    headers = {INPUT_STATUS: str(status), PAGE_STATE: state_query(page.state)} if live else None
    return templates.TemplateResponse(
        request,
        page.fragment if live else page.template,
        {"view": page.view, "page": page},
        status_code=200 if live else status,
        headers=headers,
    )
