"""Shapes shared by every attention request: number, matrix and width types with their limits
in Field(...), the mask, the token sequence, and the stage fields of one head.

Shape checks between given fields (x against W_Q, W_Q against W_K) live in the model
validators and raise `field_error(kind, message, loc)`: a sentence a student can act on,
reported at the field to change, like pydantic's own errors. What needs the defaults filled in
(the mask and the query against the number of tokens) or the settings (how many tokens, how
wide) is checked by `check_mask` and `check_limits`, which raise InputError at the field."""

from collections.abc import Callable
from typing import Annotated

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    StringConstraints,
    ValidationError,
    model_validator,
)
from pydantic_core import InitErrorDetails, PydanticCustomError

from app.core.errors import InputError
from app.core.i18n import gettext
from app.core.limits import (
    HARD_MAX_HEADS,
    HARD_MAX_TOKENS,
    HARD_MAX_WIDTH,
    MAX_MAGNITUDE,
    MAX_TOKEN_CHARS,
)
from app.core.rules import WORKED_TOKENS
from app.math import decoding as dc
from app.math.positional import KINDS, Positional

Number = Annotated[
    float, Field(strict=True, allow_inf_nan=False, ge=-MAX_MAGNITUDE, le=MAX_MAGNITUDE)
]


Row = Annotated[list[Number], Field(min_length=1, max_length=HARD_MAX_WIDTH)]


InputMatrix = Annotated[list[Row], Field(min_length=1, max_length=HARD_MAX_TOKENS)]


Token = Annotated[str, StringConstraints(min_length=1, max_length=MAX_TOKEN_CHARS)]


Width = Annotated[int, Field(strict=True, ge=1, le=HARD_MAX_WIDTH)]


Seed = Annotated[int, Field(strict=True, ge=0, le=2**32 - 1)]


HeadCount = Annotated[int, Field(strict=True, ge=1, le=HARD_MAX_HEADS)]


InputTensor = Annotated[list[InputMatrix], Field(min_length=1, max_length=HARD_MAX_HEADS)]


def field_error(kind: str, message: str, loc: str | tuple[str | int, ...] = ()) -> ValidationError:
    """A problem found by comparing fields, reported at the field to fix (`loc`, as pydantic
    reports its own errors) rather than at the whole body. Raised inside a validator, it
    reaches the caller as it is, loc and all."""
    line = InitErrorDetails(
        type=PydanticCustomError(kind, message),
        loc=(loc,) if isinstance(loc, str) else loc,
        input=None,
    )
    return ValidationError.from_exception_data("request", [line])


def matrix_width(name: str, matrix: list[list[float]], loc: tuple[str | int, ...] = ()) -> int:
    """The common row length of a matrix, or a clear error at the ragged row (`loc` + (i,))."""
    width = len(matrix[0])
    for i, row in enumerate(matrix):
        if len(row) != width:
            raise field_error(
                "ragged_matrix",
                gettext(
                    "%(name)s row %(row)s has %(n)s numbers but row 0 has %(width)s; every row "
                    "of a matrix needs the same length"
                )
                % {"name": name, "row": i, "n": len(row), "width": width},
                (*(loc or (name,)), i),
            )
    return width


def _positional_kind(value: object) -> object:
    if value not in KINDS:
        raise PydanticCustomError(
            "positional_kind",
            gettext(
                "positional is %(value)s but must be one of %(kinds)s; none leaves order out, "
                "sinusoidal adds it to x, rope rotates q and k"
            )
            % {"value": repr(value), "kinds": ", ".join(KINDS)},
        )
    return value


PositionalKind = Annotated[Positional, BeforeValidator(_positional_kind)]


class MaskSpec(BaseModel):
    """Restrictions that combine with AND; none at all is bidirectional (an encoder)."""

    model_config = ConfigDict(extra="forbid")

    causal: StrictBool = Field(False, description="Hide every key after the query (a decoder).")
    padding: list[StrictBool] | None = Field(
        None, max_length=HARD_MAX_TOKENS, description="One flag per token: true = padding."
    )
    window: Annotated[int, Field(strict=True, ge=1, le=HARD_MAX_TOKENS)] | None = Field(
        None, description="Sliding window w: see keys fewer than w positions away."
    )
    allowed: list[Annotated[list[StrictBool], Field(max_length=HARD_MAX_TOKENS)]] | None = Field(
        None, max_length=HARD_MAX_TOKENS, description="A custom n × n pattern: true = visible."
    )


class SequenceRequest(BaseModel):
    """What every attention request shares: the tokens, their vectors, mask, scale, position."""

    model_config = ConfigDict(extra="forbid")

    tokens: Annotated[list[Token], Field(min_length=1, max_length=HARD_MAX_TOKENS)] | None = Field(
        None, description="Token labels; default the worked example's three words."
    )
    x: InputMatrix | None = Field(
        None, description="n × d_model input rows; generated when omitted."
    )
    d_model: Width | None = Field(None, description="Width of generated x rows (default 4).")
    mask: MaskSpec = Field(
        default_factory=lambda: MaskSpec(causal=True),
        description="Omitted: causal, as in the worked example. {}: bidirectional.",
    )
    scale: StrictBool = Field(True, description="Divide Q·Kᵀ by √d_k.")
    seed: Seed = Field(0, description="Seed for whatever is generated.")
    positional: PositionalKind = Field(
        "none",
        description="none; sinusoidal (PE added to x before the projections); "
        "rope (q and k rows rotated by position after the projections).",
    )

    def first_given(self, names: tuple[str, ...], default: str = "") -> str:
        """The first of these fields the request gives (the one that fixes a width)."""
        return next((name for name in names if getattr(self, name) is not None), default)

    def given_d_model(self) -> int | None:
        """d_model as x's width or the d_model field fixes it (subclasses add their own)."""
        return len(self.x[0]) if self.x is not None else self.d_model

    def length(self) -> int:
        """n, the number of tokens: the worked example's when tokens is left out."""
        return len(self.tokens or WORKED_TOKENS)

    def _check_x(self) -> None:
        if self.x is None:
            return
        width = matrix_width("x", self.x)
        n = self.length()
        if len(self.x) != n:
            if self.tokens is not None:
                message = gettext("x has %(rows)s rows but there are %(n)s tokens")
            else:
                message = gettext(
                    "x has %(rows)s rows but tokens was left out, so the worked example's "
                    "%(n)s tokens are used"
                )
            raise field_error(
                "shape_mismatch",
                (message + gettext("; give one row of x per token"))
                % {"rows": len(self.x), "n": n},
                "x",
            )
        if self.d_model is not None and width != self.d_model:
            raise field_error(
                "shape_mismatch",
                gettext(
                    "d_model is %(d_model)s but each x row has %(width)s numbers; leave "
                    "d_model out or make them agree"
                )
                % {"d_model": self.d_model, "width": width},
                "d_model",
            )


def check_limits(
    n: int,
    widths: dict[str, int],
    max_tokens: int,
    max_width: int,
    field_of: Callable[[str], str] | None = None,
) -> None:
    """The limits set for this server (settings), applied after defaults are filled in.

    `widths` maps d_model, d_k, … to their values; `field_of(label)` says which request field
    set one (x sets d_model, for example), so the error points at the field to change. It is
    asked only about a width over the limit.
    """
    if n > max_tokens:
        raise InputError(
            ("tokens",),
            gettext(
                "tokens has %(n)s labels but this server allows at most %(max)s; send fewer tokens"
            )
            % {"n": n, "max": max_tokens},
        )
    for label, width in widths.items():
        if width > max_width:
            field = field_of(label) if field_of is not None else label
            values = {"label": label, "width": width, "field": field, "max": max_width}
            if field == label:
                message = gettext(
                    "%(label)s is %(width)s but this server allows widths up to %(max)s; use a "
                    "smaller %(label)s"
                )
            else:
                message = gettext(
                    "%(field)s makes %(label)s = %(width)s but this server allows widths up to "
                    "%(max)s; make %(field)s narrower"
                )
            raise InputError((field,), message % values)


def check_mask(mask: MaskSpec, n: int) -> None:
    """The mask's per-token parts must match the number of tokens."""
    if mask.padding is not None and len(mask.padding) != n:
        raise InputError(
            ("mask", "padding"),
            gettext(
                "mask.padding has %(flags)s flags but there are %(n)s tokens; give one flag "
                "per token"
            )
            % {"flags": len(mask.padding), "n": n},
        )
    if mask.allowed is not None:
        rows = mask.allowed
        if len(rows) != n:
            raise InputError(
                ("mask", "allowed"),
                gettext(
                    "mask.allowed has %(rows)s rows but there are %(n)s tokens; it must be "
                    "%(n)s × %(n)s, one row and one column per token"
                )
                % {"rows": len(rows), "n": n},
            )
        for i, row in enumerate(rows):
            if len(row) != n:
                raise InputError(
                    ("mask", "allowed", i),
                    gettext(
                        "mask.allowed row %(row)s has %(flags)s flags but there are %(n)s "
                        "tokens; it must be %(n)s × %(n)s, one row and one column per token"
                    )
                    % {"row": i, "flags": len(row), "n": n},
                )


class CacheSpec(BaseModel):
    """What the cache keeps while decoding: everything, the last w positions, or the first s
    as well (attention sinks, StreamingLLM)."""

    model_config = ConfigDict(extra="forbid")

    policy: dc.Policy = Field(
        "full",
        description="full: every position; window: the last w; sinks: the first s and the last w.",
    )
    window: Annotated[int, Field(strict=True, ge=1, le=HARD_MAX_TOKENS)] | None = Field(
        None, description="w: how many of the latest positions are kept (window and sinks)."
    )
    sinks: Annotated[int, Field(strict=True, ge=0, le=HARD_MAX_TOKENS)] | None = Field(
        None, description="s: how many positions from the start are kept (sinks; default 1)."
    )

    def policy_used(self) -> dc.CachePolicy:
        """The policy these fields ask for (sinks: one position unless said otherwise)."""
        sinks = (1 if self.sinks is None else self.sinks) if self.policy == "sinks" else 0
        return dc.CachePolicy(self.policy, self.window, sinks)

    @model_validator(mode="after")
    def fields_of_the_policy(self) -> "CacheSpec":
        if self.policy != "full" and self.window is None:
            raise field_error(
                "window_missing",
                f"the {self.policy} policy keeps the last w positions; give window, a whole "
                "number of 1 or more",
                "window",
            )
        if self.policy == "full" and self.window is not None:
            raise field_error(
                "window_unused",
                "the full policy keeps every position, so a window has no effect; use policy "
                '"window" or "sinks", or leave window out',
                "window",
            )
        if self.policy != "sinks" and self.sinks is not None:
            raise field_error(
                "sinks_unused",
                'sinks are kept only by the "sinks" policy; set policy to "sinks", or leave '
                "sinks out",
                "sinks",
            )
        return self
