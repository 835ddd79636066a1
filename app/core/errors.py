"""Errors with a type (no web framework here), and the sentences that name a field and say what
to fix, in the reader's language.

`InputError` is raised by a service when input is wrong in a way only visible after defaults
are filled in. pydantic's own errors are rewritten by `validation_errors` into sentences that
start with the field they are about; app/web/errors.py turns both into 422 answers."""

import math
from collections.abc import Sequence
from typing import Any

from app.core.i18n import N_, gettext
from app.core.limits import MAX_ECHO_CHARS


class InputError(Exception):
    """Input a student can fix: where it is (`loc`, without "body") and what to do.

    `source` is where the field came from: "body" (JSON) or "query" (URL parameters).
    """

    def __init__(self, loc: Sequence[str | int], msg: str, source: str = "body") -> None:
        super().__init__(msg)
        self.loc = tuple(loc)
        self.msg = msg
        self.source = source


class BusyError(Exception):
    """The server is doing this work for someone else right now: 503, try again shortly."""

    def __init__(self, msg: str, retry_after_s: int = 10) -> None:
        super().__init__(msg)
        self.msg = msg
        self.retry_after_s = retry_after_s


class ModelUnavailableError(Exception):
    """The trained model's files are not on this server: a sentence saying how to install them."""

    def __init__(self, msg: str) -> None:
        super().__init__(msg)
        self.msg = msg


def field_name(loc: Sequence[str | int]) -> str:
    """("body", "x", 0, 1) → "x[0][1]": the field as a student would write it.

    FastAPI puts where a value came from first ("body", or "query" for a query parameter);
    a model validated in Python has no such prefix, and ("query",) is its field `query`."""
    where = loc[0] if loc else None
    parts = loc[1:] if where == "body" or (where in LOCATIONS and len(loc) > 1) else loc
    name = ""
    for part in parts:
        name += f"[{part}]" if isinstance(part, int) else (f".{part}" if name else str(part))
    return cut(name, MAX_ECHO_CHARS)


def cut(text: str, limit: int) -> str:
    """Text as an answer repeats it back: at most `limit` characters, "…" where cut."""
    return text if len(text) <= limit else text[:limit] + "…"


LOCATIONS = ("body", "query", "path", "header", "cookie")


# pydantic's own error types as sentences that name the field and say what to send instead.
SENTENCES = {
    "float_type": N_("{field} must be a number such as 0.5, not {got}"),
    "float_parsing": N_("{field} must be a number such as 0.5, not {got}"),
    "int_type": N_("{field} must be a whole number such as 2, not {got}"),
    "int_parsing": N_("{field} must be a whole number such as 2, not {got}"),
    "int_from_float": N_("{field} must be a whole number such as 2, not {got}"),
    "bool_type": N_("{field} must be true or false, not {got}"),
    "bool_parsing": N_("{field} must be true or false, not {got}"),
    "string_type": N_('{field} must be text in quotes such as "cat", not {got}'),
    "list_type": N_("{field} must be a list in square brackets, not {got}"),
    "dict_type": N_("{field} must be an object in curly braces, not {got}"),
    "model_type": N_("{field} must be an object in curly braces, not {got}"),
    "model_attributes_type": N_("{field} must be an object in curly braces, not {got}"),
    "finite_number": N_("{field} must be a finite number, not {got}; JSON has no NaN or Infinity"),
    "literal_error": N_("{field} is {got} but must be one of {expected}"),
    "enum": N_("{field} is {got} but must be one of {expected}"),
    "greater_than_equal": N_("{field} is {got} but must be at least {ge}"),
    "greater_than": N_("{field} is {got} but must be above {gt}"),
    "less_than_equal": N_("{field} is {got} but must be at most {le}"),
    "too_short": N_(
        "{field} has {actual_length} entries but needs at least {min_length}; add more"
    ),
    "too_long": N_(
        "{field} has {actual_length} entries but may have at most {max_length}; remove some"
    ),
    "string_too_short": N_(
        "{field} is empty but needs at least {min_length} character; give a label"
    ),
    "string_too_long": N_("{field} is longer than {max_length} characters; shorten it"),
    "missing": N_("{field} is required; add it to the request"),
    "extra_forbidden": N_(
        "{field} is not a field of this request; check its spelling "
        "against the request schema at /docs"
    ),
}


def describe(value: Any) -> str:
    """A value as a short piece of JSON for a message (containers by kind, not content)."""
    if isinstance(value, bool) or value is None:
        return {True: "true", False: "false", None: "null"}[value]
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return f'"{cut(value, 20)}"'
    if isinstance(value, bytes | bytearray):
        return gettext("a body that is not JSON")
    if isinstance(value, list):
        return gettext("a list")
    if isinstance(value, dict):
        return gettext("an object")
    return type(value).__name__


def sentence(kind: str, name: str, value: Any, ctx: dict[str, Any]) -> str | None:
    """Our sentence for one of pydantic's error types, or None when we have none."""
    got = describe(value)
    if not name:  # the body as a whole
        if kind == "missing":
            return gettext("the request needs a JSON body; send {} for the worked example")
        if isinstance(value, bytes | bytearray):
            return gettext(
                "the request body must be JSON sent with the header "
                "content-type: application/json; send {} for the worked example"
            )
        if kind in ("model_attributes_type", "model_type", "dict_type"):
            return gettext("the request body must be a JSON object such as {}, not %(got)s") % {
                "got": got
            }
        return None
    try:
        return gettext(SENTENCES[kind]).format(field=name, got=got, **ctx)
    except (KeyError, IndexError, ValueError):
        return None


def readable(error: dict[str, Any]) -> dict[str, Any]:
    """One pydantic error as a sentence that names its field and says what to fix."""
    loc = [
        cut(part, MAX_ECHO_CHARS) if isinstance(part, str) else part
        for part in error.get("loc", ())
    ]
    kind = str(error.get("type", "value_error"))
    ctx = error.get("ctx") or {}
    if kind == "json_invalid":
        reason = str(ctx.get("error", "it cannot be read"))
        if loc and isinstance(loc[-1], int):
            msg = gettext(
                "the request body is not valid JSON at character %(at)s (%(reason)s); check "
                "quotes, commas and brackets"
            ) % {"at": loc[-1], "reason": reason}
        else:
            msg = gettext(
                "the request body is not valid JSON (%(reason)s); check quotes, commas and brackets"
            ) % {"reason": reason}
        return {"loc": loc, "msg": msg, "type": kind}
    name = field_name(loc)
    msg = sentence(kind, name, error.get("input"), ctx)
    if msg is None:  # our own sentences (they start with the field) and the rare rest
        msg = str(error.get("msg", "invalid input")).removeprefix("Value error, ")
        if name and not msg.startswith(name.split("[")[0].split(".")[0]):
            msg = f"{name}: {msg[:1].lower()}{msg[1:]}"
    return {"loc": loc, "msg": msg, "type": kind}


MAX_ERRORS = 20  # listed one by one; the rest are counted in one more entry


def validation_errors(errors: Sequence[Any]) -> list[dict[str, Any]]:
    """The first MAX_ERRORS problems as sentences, then one entry counting the others: a body
    of a million NaNs gets 21 entries, not a million (nor the CPU to word them)."""
    listed = [readable(dict(e)) for e in errors[:MAX_ERRORS]]
    more = len(errors) - MAX_ERRORS
    if more > 0:
        message = gettext(
            "and %(more)s more problems of the same request; fix the ones above and send it again"
        )
        listed.append(
            {"loc": ["body"], "msg": message % {"more": f"{more:,}"}, "type": "too_many_errors"}
        )
    return listed


def unreadable_body(cause: BaseException | None) -> dict[str, Any]:
    """The 422 entry for a body the JSON reader refused before validation."""
    if isinstance(cause, RecursionError):
        msg = gettext(
            "the request body nests lists or objects too deeply to read; send the matrices as "
            "lists of rows of numbers"
        )
    elif isinstance(cause, ValueError) and "digits" in str(cause):
        msg = gettext(
            "the request body holds a number with more than 4,300 digits, more than any "
            "field takes; send a smaller number"
        )
    else:
        msg = gettext(
            "the request body could not be read as JSON; send UTF-8 text such as {} for the "
            "worked example"
        )
    return {"loc": ["body"], "msg": msg, "type": "json_invalid"}
