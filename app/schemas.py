"""Request and response shapes: the contract of shared/API.md, with the limits in Field(...).

Shape checks that involve several fields (x against W_Q, padding against the tokens) live in
model validators and raise a sentence a student can act on. Limits that come from the
settings (how many tokens, how wide) are checked by `check_limits`, since they can change.
"""

from typing import Annotated, Any

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from app.errors import InputError
from app.positional import KINDS, Positional

MAX_MAGNITUDE = 1e6
HARD_MAX_TOKENS = 4096
HARD_MAX_WIDTH = 1024
HARD_MAX_HEADS = 64

Number = Annotated[
    float, Field(strict=True, allow_inf_nan=False, ge=-MAX_MAGNITUDE, le=MAX_MAGNITUDE)
]
Row = Annotated[list[Number], Field(min_length=1, max_length=HARD_MAX_WIDTH)]
Matrix = Annotated[list[Row], Field(min_length=1, max_length=HARD_MAX_TOKENS)]
Token = Annotated[str, StringConstraints(min_length=1, max_length=40)]
Width = Annotated[int, Field(strict=True, ge=1, le=HARD_MAX_WIDTH)]
Flag = Annotated[bool, Field(strict=True)]
Seed = Annotated[int, Field(strict=True, ge=0, le=2**32 - 1)]
HeadCount = Annotated[int, Field(strict=True, ge=1, le=HARD_MAX_HEADS)]
Tensor = Annotated[list[Matrix], Field(min_length=1, max_length=HARD_MAX_HEADS)]


def _fail(kind: str, message: str) -> PydanticCustomError:
    return PydanticCustomError(kind, message)


def _positional_kind(value: object) -> object:
    if value not in KINDS:
        raise _fail(
            "positional_kind",
            f"positional is {value!r} but must be one of {', '.join(KINDS)}; "
            "none leaves order out, sinusoidal adds it to x, rope rotates q and k",
        )
    return value


PositionalKind = Annotated[Positional, BeforeValidator(_positional_kind)]


def matrix_width(name: str, matrix: list[list[float]]) -> int:
    """The common row length of a matrix, or a clear error naming the ragged row."""
    width = len(matrix[0])
    for i, row in enumerate(matrix):
        if len(row) != width:
            raise _fail(
                "ragged_matrix",
                f"{name} row {i} has {len(row)} numbers but row 0 has {width}; "
                "every row of a matrix needs the same length",
            )
    return width


class MaskSpec(BaseModel):
    """Restrictions that combine with AND; none at all is bidirectional (an encoder)."""

    model_config = ConfigDict(extra="forbid")

    causal: Flag = Field(False, description="Hide every key after the query (a decoder).")
    padding: list[Flag] | None = Field(
        None, max_length=HARD_MAX_TOKENS, description="One flag per token: true = padding."
    )
    window: Annotated[int, Field(strict=True, ge=1, le=HARD_MAX_TOKENS)] | None = Field(
        None, description="Sliding window w: see keys fewer than w positions away."
    )
    allowed: list[list[Flag]] | None = Field(
        None, max_length=HARD_MAX_TOKENS, description="A custom n × n pattern: true = visible."
    )


WORKED_EXAMPLE_REQUEST: dict[str, Any] = {
    "tokens": ["The", "cat", "sleeps"],
    "x": [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]],
    "w_q": [[1.0, 0.5], [0.0, 1.0]],
    "w_k": [[0.5, 1.0], [1.0, 0.0]],
    "w_v": [[1.0, -1.0], [0.5, 1.0]],
    "mask": {"causal": True},
    "scale": True,
    "query": 1,
}


class SequenceRequest(BaseModel):
    """What every attention request shares: the tokens, their vectors, mask, scale, position."""

    model_config = ConfigDict(extra="forbid")

    tokens: Annotated[list[Token], Field(min_length=1, max_length=HARD_MAX_TOKENS)] | None = Field(
        None, description="Token labels; default the worked example's three words."
    )
    x: Matrix | None = Field(None, description="n × d_model input rows; generated when omitted.")
    d_model: Width | None = Field(None, description="Width of generated x rows (default 4).")
    mask: MaskSpec = Field(
        default_factory=lambda: MaskSpec(causal=True),
        description="Omitted: causal, as in the worked example. {}: bidirectional.",
    )
    scale: Flag = Field(True, description="Divide Q·Kᵀ by √d_k.")
    seed: Seed = Field(0, description="Seed for whatever is generated.")
    positional: PositionalKind = Field(
        "none",
        description="none; sinusoidal (PE added to x before the projections); "
        "rope (q and k rows rotated by position after the projections).",
    )

    def x_width(self) -> int | None:
        """d_model as far as the request says it; checks x against the tokens and d_model."""
        x_width = matrix_width("x", self.x) if self.x is not None else None
        if self.x is not None and self.tokens is not None and len(self.x) != len(self.tokens):
            raise _fail(
                "shape_mismatch",
                f"x has {len(self.x)} rows but there are {len(self.tokens)} tokens; "
                "give one row per token",
            )
        if x_width is not None and self.d_model is not None and x_width != self.d_model:
            raise _fail(
                "shape_mismatch",
                f"d_model is {self.d_model} but each x row has {x_width} numbers; "
                "leave d_model out or make them agree",
            )
        return x_width or self.d_model


class AttentionRequest(SequenceRequest):
    """One head. Every field is optional: `{}` is the worked example "The cat sleeps"."""

    model_config = ConfigDict(
        extra="forbid", json_schema_extra={"examples": [WORKED_EXAMPLE_REQUEST]}
    )

    d_k: Width | None = Field(None, description="Width of generated W_Q and W_K columns.")
    d_v: Width | None = Field(None, description="Width of generated W_V columns.")
    w_q: Matrix | None = Field(None, description="d_model × d_k query projection.")
    w_k: Matrix | None = Field(None, description="d_model × d_k key projection.")
    w_v: Matrix | None = Field(None, description="d_model × d_v value projection.")
    query: Annotated[int, Field(strict=True, ge=0, le=HARD_MAX_TOKENS)] | None = Field(
        None, description="Position broken down in `query`; default 1 for the worked example."
    )

    @model_validator(mode="after")
    def shapes_agree(self) -> "AttentionRequest":
        d_model = self.x_width()
        widths: dict[str, int] = {}
        for name in ("w_q", "w_k", "w_v"):
            w = getattr(self, name)
            if w is None:
                continue
            widths[name] = matrix_width(name, w)
            if d_model is not None and len(w) != d_model:
                raise _fail(
                    "shape_mismatch",
                    f"{name} has {len(w)} rows but each x row has {d_model} numbers "
                    f"(d_model = {d_model}); {name} needs one row per input number",
                )
            d_model = d_model or len(w)
        _check_width("w_q", widths.get("w_q"), "d_k", self.d_k)
        _check_width("w_k", widths.get("w_k"), "d_k", self.d_k)
        _check_width("w_v", widths.get("w_v"), "d_v", self.d_v)
        if "w_q" in widths and "w_k" in widths and widths["w_q"] != widths["w_k"]:
            raise _fail(
                "shape_mismatch",
                f"w_q has {widths['w_q']} columns but w_k has {widths['w_k']}; queries and "
                "keys need the same width d_k so that Q·Kᵀ is defined",
            )
        return self


def _check_width(name: str, width: int | None, label: str, expected: int | None) -> None:
    if width is not None and expected is not None and width != expected:
        raise _fail(
            "shape_mismatch",
            f"{label} is {expected} but {name} has {width} columns; leave {label} out "
            "or make them agree",
        )


HEADS_EXAMPLE_REQUEST: dict[str, Any] = {
    "tokens": ["the", "cat", "sat", "on", "the", "mat"],
    "d_model": 8,
    "heads": 4,
    "kv_heads": 2,
    "d_head": 2,
    "mask": {"causal": True},
    "positional": "rope",
}


class HeadsRequest(SequenceRequest):
    """h query heads over g key/value heads, then W_O. Omitted projections are seeded."""

    model_config = ConfigDict(
        extra="forbid", json_schema_extra={"examples": [HEADS_EXAMPLE_REQUEST]}
    )

    heads: HeadCount = Field(4, description="h, the number of query heads.")
    kv_heads: HeadCount | None = Field(
        None,
        description="g key/value heads, dividing h (default h): g = h multi-head, "
        "1 < g < h grouped-query, g = 1 multi-query. Query head i uses ⌊i / (h / g)⌋.",
    )
    d_head: Width | None = Field(
        None, description="Width of every head's q, k and v (default: from w_q, else 2)."
    )
    w_q: Tensor | None = Field(None, description="h × d_model × d_head query projections.")
    w_k: Tensor | None = Field(None, description="g × d_model × d_head key projections.")
    w_v: Tensor | None = Field(None, description="g × d_model × d_head value projections.")
    w_o: Matrix | None = Field(None, description="(h · d_head) × d_model output projection.")

    @field_validator("w_q", "w_k", "w_v")
    @classmethod
    def matrices_not_ragged(cls, value: list[Matrix] | None, info: ValidationInfo) -> Any:
        for i, matrix in enumerate(value or []):
            matrix_width(f"{info.field_name}[{i}]", matrix)
        return value

    @model_validator(mode="after")
    def heads_agree(self) -> "HeadsRequest":
        self.x_width()
        if self.w_o is not None:
            matrix_width("w_o", self.w_o)
        return self


def check_limits(n: int, widths: dict[str, int], max_tokens: int, max_width: int) -> None:
    """The limits set for this server (settings), applied after defaults are filled in."""
    if n > max_tokens:
        raise InputError(
            ("tokens",), f"there are {n} tokens but this server allows at most {max_tokens}"
        )
    for name, width in widths.items():
        if width > max_width:
            raise InputError(
                (name,), f"{name} is {width} wide but this server allows at most {max_width}"
            )


def check_mask(mask: MaskSpec, n: int) -> None:
    """The mask's per-token parts must match the number of tokens."""
    if mask.padding is not None and len(mask.padding) != n:
        raise InputError(
            ("mask", "padding"),
            f"mask.padding has {len(mask.padding)} flags but there are {n} tokens; "
            "give one flag per token",
        )
    if mask.allowed is not None:
        rows = mask.allowed
        bad = [i for i, row in enumerate(rows) if len(row) != n]
        if len(rows) != n or bad:
            shape = f"row {bad[0]} has {len(rows[bad[0]])} flags" if bad else f"{len(rows)} rows"
            raise InputError(
                ("mask", "allowed"),
                f"mask.allowed must be {n} × {n} (one row and one column per token) but {shape}",
            )


# ---------------------------------------------------------------- responses

NumberOrNull = float | None


class QueryRow(BaseModel):
    key_index: int
    key_token: str
    dot: float
    scaled: float
    visible: bool
    weight: float
    weighted_value: list[float]


class QueryBreakdown(BaseModel):
    index: int
    token: str
    rows: list[QueryRow]
    output: list[float]


class HeadResponse(BaseModel):
    """The stage fields of one head."""

    q: list[list[float]]
    k: list[list[float]]
    v: list[list[float]]
    scores: list[list[float]]
    scaled: list[list[float]]
    allowed: list[list[bool]]
    masked: list[list[NumberOrNull]] = Field(description="scaled + M; null where hidden (−∞).")
    weights: list[list[float]]
    output: list[list[float]]
    empty_rows: list[int]


class AttentionResponse(HeadResponse):
    tokens: list[str]
    d_model: int
    d_k: int
    d_v: int
    scale_factor: float
    positional: Positional
    x: list[list[float]]
    x_positioned: list[list[float]] = Field(
        description="What the projections saw: x + PE for sinusoidal, else x."
    )
    w_q: list[list[float]]
    w_k: list[list[float]]
    w_v: list[list[float]]
    mask: dict[str, Any]
    query: QueryBreakdown


class HeadsHeadResponse(HeadResponse):
    kv_head: int = Field(description="The key/value head this query head used: ⌊i / (h / g)⌋.")


class KvCacheResponse(BaseModel):
    bytes_per_element: int
    this: int = Field(description="K and V bytes per token, one layer, this configuration.")
    multi_head: int = Field(description="The same with g = h (plain multi-head attention).")


class HeadsResponse(BaseModel):
    tokens: list[str]
    d_model: int
    d_head: int
    kv_heads: int
    scale_factor: float
    positional: Positional
    x: list[list[float]]
    x_positioned: list[list[float]]
    w_q: list[list[list[float]]]
    w_k: list[list[list[float]]]
    w_v: list[list[list[float]]]
    w_o: list[list[float]]
    mask: dict[str, Any]
    heads: list[HeadsHeadResponse]
    concat: list[list[float]] = Field(description="n × h·d_head: head outputs in head order.")
    output: list[list[float]] = Field(description="n × d_model: concat · W_O.")
    kv_cache_bytes_per_token: KvCacheResponse


class ErrorItem(BaseModel):
    loc: list[str | int]
    msg: str
    type: str


class ErrorResponse(BaseModel):
    detail: list[ErrorItem] | str
