"""Request and response shapes: the contract of shared/API.md, with the limits in Field(...).

Shape checks that involve several fields (x against W_Q, padding against the tokens) live in
model validators and raise a sentence a student can act on. Limits that come from the
settings (how many tokens, how wide) are checked by `check_limits`, since they can change.
"""

from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from app.errors import InputError

MAX_MAGNITUDE = 1e6
HARD_MAX_TOKENS = 4096
HARD_MAX_WIDTH = 1024

Number = Annotated[
    float, Field(strict=True, allow_inf_nan=False, ge=-MAX_MAGNITUDE, le=MAX_MAGNITUDE)
]
Row = Annotated[list[Number], Field(min_length=1, max_length=HARD_MAX_WIDTH)]
Matrix = Annotated[list[Row], Field(min_length=1, max_length=HARD_MAX_TOKENS)]
Token = Annotated[str, StringConstraints(min_length=1, max_length=40)]
Width = Annotated[int, Field(strict=True, ge=1, le=HARD_MAX_WIDTH)]
Flag = Annotated[bool, Field(strict=True)]
Seed = Annotated[int, Field(strict=True, ge=0, le=2**32 - 1)]


def _fail(kind: str, message: str) -> PydanticCustomError:
    return PydanticCustomError(kind, message)


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


class AttentionRequest(BaseModel):
    """One head. Every field is optional: `{}` is the worked example "The cat sleeps"."""

    model_config = ConfigDict(
        extra="forbid", json_schema_extra={"examples": [WORKED_EXAMPLE_REQUEST]}
    )

    tokens: Annotated[list[Token], Field(min_length=1, max_length=HARD_MAX_TOKENS)] | None = Field(
        None, description="Token labels; default the worked example's three words."
    )
    x: Matrix | None = Field(None, description="n × d_model input rows; generated when omitted.")
    d_model: Width | None = Field(None, description="Width of generated x rows (default 4).")
    d_k: Width | None = Field(None, description="Width of generated W_Q and W_K columns.")
    d_v: Width | None = Field(None, description="Width of generated W_V columns.")
    w_q: Matrix | None = Field(None, description="d_model × d_k query projection.")
    w_k: Matrix | None = Field(None, description="d_model × d_k key projection.")
    w_v: Matrix | None = Field(None, description="d_model × d_v value projection.")
    mask: MaskSpec = Field(
        default_factory=lambda: MaskSpec(causal=True),
        description="Omitted: causal, as in the worked example. {}: bidirectional.",
    )
    scale: Flag = Field(True, description="Divide Q·Kᵀ by √d_k.")
    query: Annotated[int, Field(strict=True, ge=0, le=HARD_MAX_TOKENS)] | None = Field(
        None, description="Position broken down in `query`; default 1 for the worked example."
    )
    seed: Seed = Field(0, description="Seed for whatever is generated.")

    @model_validator(mode="after")
    def shapes_agree(self) -> "AttentionRequest":
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
        d_model = x_width or self.d_model
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


MAX_TEXT_CHARS = 1000
MAX_WORD_PIECES = 128  # what all-MiniLM-L6-v2 was trained to read, [CLS] and [SEP] included
Index = Annotated[int, Field(strict=True, ge=0, le=HARD_MAX_TOKENS)]
ModelText = Annotated[str, StringConstraints(min_length=1, max_length=MAX_TEXT_CHARS)]


class ModelRequest(BaseModel):
    """A sentence for the trained model; `layer` and `head` together pick one head's stages."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [{"text": "The cat sat on the mat.", "layer": 0, "head": 0}]
        },
    )

    text: ModelText = Field(
        description=f"The sentence: 1 to {MAX_TEXT_CHARS} characters, at most "
        f"{MAX_WORD_PIECES} word pieces once tokenized ([CLS] and [SEP] included)."
    )
    layer: Index | None = Field(None, description="0-based layer of the head to break down.")
    head: Index | None = Field(None, description="0-based head within that layer.")
    query: Index | None = Field(
        None, description="Position broken down key by key in head.query; default 1."
    )

    @field_validator("text")
    @classmethod
    def not_blank(cls, text: str) -> str:
        if not text.strip():
            raise _fail("blank_text", "text has no words, only spaces; type a sentence")
        return text

    @model_validator(mode="after")
    def layer_and_head_together(self) -> "ModelRequest":
        if (self.layer is None) != (self.head is None):
            given, other = ("layer", "head") if self.head is None else ("head", "layer")
            raise _fail(
                "missing_pair",
                f"{given} is given but {other} is not; give both to see one head, or neither",
            )
        if self.query is not None and self.layer is None:
            raise _fail("missing_pair", "query needs layer and head: it is a row of that head")
        return self


MODEL_PAGE_DEFAULTS = {
    "text": "The cat sat on the mat because it was tired.",
    "layer": "0",
    "head": "0",
}


class ModelPageParams(BaseModel):
    """The /model page's URL: a ModelRequest from query-string text, plus a view option."""

    model_config = ConfigDict(extra="ignore")

    text: str
    layer: int
    head: int
    query: int | None = None
    hide_special: bool = Field(False, description="Leave [CLS] and [SEP] out of the view.")

    def request(self) -> ModelRequest:
        return ModelRequest(text=self.text, layer=self.layer, head=self.head, query=self.query)


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
    x: list[list[float]]
    w_q: list[list[float]]
    w_k: list[list[float]]
    w_v: list[list[float]]
    mask: dict[str, Any]
    query: QueryBreakdown


class ErrorItem(BaseModel):
    loc: list[str | int]
    msg: str
    type: str


class ErrorResponse(BaseModel):
    detail: list[ErrorItem] | str


class ModelInfo(BaseModel):
    name: str
    layers: int
    heads: int
    d_head: int
    d_model: int
    source: str = Field(description="Where the weights came from.")


class ModelHead(HeadResponse):
    """One trained head: x is the hidden state entering the layer; q = x·W_Q + b_Q, …"""

    layer: int
    head: int
    d_head: int
    scale_factor: float
    x: list[list[float]]
    query: QueryBreakdown


class ModelResponse(BaseModel):
    model: ModelInfo
    tokens: list[str] = Field(description="Word pieces, [CLS] first and [SEP] last.")
    ids: list[int] = Field(description="Their ids in the model's vocabulary.")
    special: list[bool] = Field(description="True for the special pieces [CLS] and [SEP].")
    weights: list[list[list[list[float]]]] = Field(
        description="layers × heads × n × n softmax weights."
    )
    embedding: list[float] = Field(
        description="The sentence embedding: mean of the last hidden states, length 1."
    )
    head: ModelHead | None = Field(None, description="Only when layer and head are given.")
