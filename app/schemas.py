"""Request and response shapes: the contract of shared/API.md, with the limits in Field(...).

Shape checks between given fields (x against W_Q, W_Q against W_K) live in the model
validator and raise `_fail(kind, message, loc)`: a sentence a student can act on, reported
at the field to change, like pydantic's own errors. What needs the defaults filled in (the
mask and the query against the number of tokens) or the settings (how many tokens, how
wide) is checked by `check_mask` and `check_limits`, which raise InputError at the field.
"""

from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import InitErrorDetails, PydanticCustomError

from app.attention import WORKED_TOKENS
from app.errors import InputError
from app.positional import KINDS, Positional

MAX_MAGNITUDE = 1e6
HARD_MAX_TOKENS = 4096
HARD_MAX_WIDTH = 1024
MAX_COUNTED_LENGTH = 2**24  # long sequences are counted, never built
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


def _fail(kind: str, message: str, loc: str | tuple[str | int, ...] = ()) -> ValidationError:
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
            raise _fail(
                "ragged_matrix",
                f"{name} row {i} has {len(row)} numbers but row 0 has {width}; "
                "every row of a matrix needs the same length",
                (*(loc or (name,)), i),
            )
    return width


def _positional_kind(value: object) -> object:
    if value not in KINDS:
        raise PydanticCustomError(
            "positional_kind",
            f"positional is {value!r} but must be one of {', '.join(KINDS)}; "
            "none leaves order out, sinusoidal adds it to x, rope rotates q and k",
        )
    return value


PositionalKind = Annotated[Positional, BeforeValidator(_positional_kind)]


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
    allowed: list[Annotated[list[Flag], Field(max_length=HARD_MAX_TOKENS)]] | None = Field(
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

    def first_given(self, names: tuple[str, ...], default: str = "") -> str:
        """The first of these fields the request gives (the one that fixes a width)."""
        return next((name for name in names if getattr(self, name) is not None), default)

    def given_d_model(self) -> int | None:
        """d_model as x's width or the d_model field fixes it (subclasses add their own)."""
        return len(self.x[0]) if self.x is not None else self.d_model

    def _check_x(self) -> None:
        if self.x is None:
            return
        width = matrix_width("x", self.x)
        n = len(self.tokens or WORKED_TOKENS)
        if len(self.x) != n:
            given = (
                f"there are {n} tokens"
                if self.tokens is not None
                else f"tokens was left out, so the worked example's {n} tokens are used"
            )
            raise _fail(
                "shape_mismatch",
                f"x has {len(self.x)} rows but {given}; give one row of x per token",
                "x",
            )
        if self.d_model is not None and width != self.d_model:
            raise _fail(
                "shape_mismatch",
                f"d_model is {self.d_model} but each x row has {width} numbers; "
                "leave d_model out or make them agree",
                "d_model",
            )


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
        """x, d_model and the projections must fit together; each error names the field to fix."""
        self._check_x()
        d_model, d_k = self.given_d_model(), self.given_d_k()
        for name in ("w_q", "w_k", "w_v"):
            w = getattr(self, name)
            if w is None:
                continue
            width = matrix_width(name, w)
            if len(w) != d_model:
                raise _fail(
                    "shape_mismatch",
                    f"{name} has {len(w)} rows but {self._d_model_source()} "
                    f"(d_model = {d_model}); {name} needs one row per number of an x row",
                    name,
                )
            expected, label = (self.d_v, "d_v") if name == "w_v" else (d_k, "d_k")
            if expected is not None and width != expected:
                source = self.first_given(("d_k", "w_q")) if label == "d_k" else "d_v"
                fix = (
                    f"leave {label} out or make them agree"
                    if source == label
                    else "queries and keys need the same width d_k so that Q·Kᵀ is defined"
                )
                said = f"{label} is {expected}" if source == label else f"{source} has {expected}"
                raise _fail("shape_mismatch", f"{name} has {width} columns but {said}; {fix}", name)
        return self

    def _d_model_source(self) -> str:
        """Which field fixes d_model, in words for a message."""
        source = self.first_given(("x", "d_model", "w_q", "w_k", "w_v"))
        if source == "x":
            return f"each x row has {self.given_d_model()} numbers"
        if source == "d_model":
            return f"d_model is {self.d_model}"
        return f"{source} has {self.given_d_model()} rows"

    def given_d_model(self) -> int | None:
        """d_model as the request fixes it: x's width, d_model, or a projection's rows."""
        rows = (len(w) for w in (self.w_q, self.w_k, self.w_v) if w is not None)
        return super().given_d_model() or next(rows, None)

    def given_d_k(self) -> int | None:
        """d_k as the request fixes it: d_k, or the columns of W_Q or W_K."""
        if self.d_k is not None:
            return self.d_k
        return next((len(w[0]) for w in (self.w_q, self.w_k) if w is not None), None)


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
            matrix_width(f"{info.field_name}[{i}]", matrix, (i,))  # pydantic adds the field
        return value

    def given_d_model(self) -> int | None:
        """d_model as the request fixes it: x's width, d_model, or a projection's rows."""
        rows = (len(w[0]) for w in (self.w_q, self.w_k, self.w_v) if w is not None)
        fixed = super().given_d_model() or next(rows, None)
        return fixed or (len(self.w_o[0]) if self.w_o is not None else None)

    @model_validator(mode="after")
    def heads_agree(self) -> "HeadsRequest":
        self._check_x()
        if self.w_o is not None:
            matrix_width("w_o", self.w_o)
        return self


def check_limits(
    n: int,
    widths: dict[str, int],
    max_tokens: int,
    max_width: int,
    fields: dict[str, str] | None = None,
) -> None:
    """The limits set for this server (settings), applied after defaults are filled in.

    `widths` maps d_model, d_k, … to their values; `fields` says which request field set each
    one (x sets d_model, for example), so the error points at the field to change.
    """
    if n > max_tokens:
        raise InputError(
            ("tokens",),
            f"tokens has {n} labels but this server allows at most {max_tokens}; send fewer tokens",
        )
    for label, width in widths.items():
        if width > max_width:
            field = (fields or {}).get(label, label)
            said = f"{label} is {width}" if field == label else f"{field} makes {label} = {width}"
            raise InputError(
                (field,),
                f"{said} but this server allows widths up to {max_width}; "
                + (f"use a smaller {label}" if field == label else f"make {field} narrower"),
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
        if len(rows) != n:
            raise InputError(
                ("mask", "allowed"),
                f"mask.allowed has {len(rows)} rows but there are {n} tokens; it must be "
                f"{n} × {n}, one row and one column per token",
            )
        for i, row in enumerate(rows):
            if len(row) != n:
                raise InputError(
                    ("mask", "allowed", i),
                    f"mask.allowed row {i} has {len(row)} flags but there are {n} tokens; "
                    f"it must be {n} × {n}, one row and one column per token",
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

    @field_validator("text", mode="before")
    @classmethod
    def not_blank(cls, text: Any) -> Any:
        if isinstance(text, str) and not text.strip():
            kind = "has no words, only spaces" if text else "is empty"
            raise PydanticCustomError("blank_text", f"text {kind}; type a sentence")
        return text

    @model_validator(mode="after")
    def layer_and_head_together(self) -> "ModelRequest":
        if (self.layer is None) != (self.head is None):
            given, other = ("layer", "head") if self.head is None else ("head", "layer")
            raise _fail(
                "missing_pair",
                f"{given} is given but {other} is not; give both to see one head, or neither",
                other,
            )
        if self.query is not None and self.layer is None:
            raise _fail(
                "missing_pair", "query needs layer and head: it is a row of that head", "query"
            )
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


class LongSequenceSpec(BaseModel):
    """A long sequence counted in closed form, never drawn: the sizes a GPU kernel sees."""

    model_config = ConfigDict(extra="forbid")

    seq_lens: Annotated[
        list[Annotated[int, Field(strict=True, ge=1, le=MAX_COUNTED_LENGTH)]],
        Field(min_length=1, max_length=8),
    ] = Field([4096, 16384, 131072], description="Sequence lengths to count.")
    block: Annotated[int, Field(strict=True, ge=1, le=MAX_COUNTED_LENGTH)] = Field(
        128, description="Tile size (rows of queries and of keys) for the counts."
    )
    head_dim: Width = Field(128, description="d_k = d_v for the counts.")


class KernelRequest(AttentionRequest):
    """A lab state (every field of /api/attention) plus the long sequence to count."""

    long_sequence: LongSequenceSpec = Field(
        default_factory=LongSequenceSpec, description="Counted without being computed."
    )


class TiledRequest(KernelRequest):
    """Tiled attention on a lab state: the fields of /api/attention plus the tile sizes."""

    model_config = ConfigDict(
        json_schema_extra={"examples": [{**WORKED_EXAMPLE_REQUEST, "block_q": 2, "block_k": 2}]}
    )

    block_q: Annotated[int, Field(strict=True)] | None = Field(
        None, description="Query rows per tile, b_q ≥ 1 (≥ n: one block); default ⌈n / 2⌉."
    )
    block_k: Annotated[int, Field(strict=True)] | None = Field(
        None, description="Key rows per tile, b_k ≥ 1 (≥ n: one block); default ⌈n / 2⌉."
    )

    @field_validator("block_q", "block_k")
    @classmethod
    def at_least_one_row(cls, value: int | None, info: ValidationInfo) -> int | None:
        if value is not None and value < 1:
            kind = "query" if info.field_name == "block_q" else "key"
            raise PydanticCustomError(
                "block_too_small",
                f"{info.field_name} is {value} but a tile needs at least one {kind} row; "
                "use 1 or more (a size of n or more makes a single block)",
            )
        return value


class DecodeRequest(KernelRequest):
    """Cached decoding of a lab state: prefill the first `prompt` tokens, then one at a time."""

    model_config = ConfigDict(
        json_schema_extra={"examples": [{**WORKED_EXAMPLE_REQUEST, "prompt": 1}]}
    )

    prompt: Annotated[int, Field(strict=True, ge=1, le=HARD_MAX_TOKENS)] | None = Field(
        None, description="Tokens in the prefill (1 … n); default ⌊n / 2⌋, at least 1."
    )


# ---------------------------------------------------------------- cost calculator

MAX_SEQ_LEN = 1_000_000_000
MAX_COUNT = 65_536
Count = Annotated[int, Field(ge=1, le=MAX_COUNT)]


class CostQuery(BaseModel):
    """GET /api/cost and the /cost page: one attention configuration at one length.

    Query parameters, so values arrive as text; an empty form field means "not given".
    A `preset` fills every attention field the query leaves out.
    """

    model_config = ConfigDict(extra="forbid")

    seq_len: int = Field(4096, ge=1, le=MAX_SEQ_LEN, description="Tokens in one sequence: n.")
    heads: Count | None = Field(None, description="Query heads h (default 1).")
    kv_heads: Count | None = Field(
        None, description="Key/value heads g, dividing h: g = h MHA, 1 < g < h GQA, g = 1 MQA."
    )
    head_dim: Count | None = Field(None, description="Width of one head, d_head (default 128).")
    layers: Count | None = Field(None, description="Layers L (default 1).")
    batch: int = Field(1, ge=1, le=MAX_COUNT, description="Sequences processed together.")
    bytes_per_element: float | None = Field(
        None,
        ge=0.5,
        le=8,
        multiple_of=0.5,
        allow_inf_nan=False,
        description="Bytes per stored number, in halves (default 2; 0.5 for int4); or `dtype`.",
    )
    dtype: Literal["fp32", "fp16", "bf16", "fp8", "int4"] | None = Field(
        None, description="Element type: fp32 4 bytes, fp16/bf16 2, fp8 1, int4 half a byte."
    )
    window: int | None = Field(
        None, ge=1, le=MAX_SEQ_LEN, description="Sliding window w; none: full attention."
    )
    window_layers: Count | None = Field(
        None, description="How many layers use the window (default all); the rest are global."
    )
    gpu_memory_gib: float = Field(
        24.0, ge=0.001, le=1_048_576, allow_inf_nan=False, description="GPU memory in GiB (2³⁰ B)."
    )
    preset: str | None = Field(
        None, max_length=64, description="A model id from GET /api/cost/models."
    )

    @model_validator(mode="before")
    @classmethod
    def empty_means_absent(cls, data: Any) -> Any:
        """A blank form field (`window=`) is a field left out, not the text ""."""
        if isinstance(data, dict):
            return {k: v for k, v in data.items() if v != ""}
        return data


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


class ResolvedInputs(BaseModel):
    """The inputs actually used: generated ones included."""

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


class AttentionResponse(HeadResponse, ResolvedInputs):
    query: QueryBreakdown


class InputsUsed(ResolvedInputs):
    """The lab state as resolved on the server, with its projections and mask."""

    scale: bool
    q: list[list[float]]
    k: list[list[float]]
    v: list[list[float]]
    allowed: list[list[bool]]
    empty_rows: list[int]


class DecodeCountsResponse(BaseModel):
    n: int
    last_step_cached: int = Field(description="Dot products for the last token with a cache: n.")
    last_step_uncached: int = Field(description="Recomputing the whole matrix: n².")
    total_cached: int = Field(description="All n tokens with a cache: n(n + 1)/2.")
    total_uncached: int = Field(description="All n tokens without one: n(n + 1)(2n + 1)/6.")
    cache_entries: int = Field(description="K and V of n tokens: n · (d_k + d_v).")


class TiledCountsResponse(BaseModel):
    """Full (unmasked) attention of n tokens, counted in closed form."""

    n: int
    block_q: int
    block_k: int
    steps: int
    dense_score_entries: int = Field(description="n²: the whole score matrix at once.")
    tiled_score_entries: int = Field(description="One tile: min(b_q, n) · min(b_k, n).")
    dot_products: int = Field(description="n², the same for both paths.")
    dense_traffic: int = Field(description="Numbers moved to and from slow memory, dense.")
    tiled_traffic: int = Field(description="Numbers moved to and from slow memory, tiled.")


class LongSequenceResponse(TiledCountsResponse):
    dense_score_bytes: int = Field(description="dense_score_entries × 2 bytes.")
    tiled_score_bytes: int = Field(description="tiled_score_entries × 2 bytes.")
    decode: DecodeCountsResponse


class TileStepResponse(BaseModel):
    index: int
    query_block: list[int] = Field(description="[start, stop) of the query rows.")
    key_block: list[int] = Field(description="[start, stop) of the key rows.")
    skipped: bool = Field(description="Every pair hidden: nothing loaded, state unchanged.")
    allowed: list[list[bool]]
    scores: list[list[NumberOrNull]] = Field(description="S = Q_i·K_jᵀ/√d_k; null where hidden.")
    m_before: list[NumberOrNull] = Field(description="Running row maximum before; null is −∞.")
    m: list[NumberOrNull] = Field(description="Running row maximum after.")
    grew: list[bool] = Field(description="Rows whose maximum rose, so the sums were rescaled.")
    rescale: list[float] = Field(description="exp(m_before − m) per row.")
    p: list[list[float]] = Field(description="exp(S − m); 0 where hidden.")
    l_before: list[float]
    l: list[float] = Field(description="Running sum: rescale · l_before + rowsum(p).")  # noqa: E741
    o_before: list[list[float]]
    o: list[list[float]] = Field(description="Unnormalised output: rescale · o_before + p · V_j.")
    output_rows: list[list[float]] | None = Field(
        description="o / l, written after the last key block of this query block."
    )
    score_entries: int = Field(description="Score entries alive during this step.")
    touched: list[list[bool]] = Field(description="n × n: scores computed so far.")
    touched_entries: int


class TiledMemory(BaseModel):
    dense_score_entries: int
    peak_score_entries: int
    dense_dot_products: int
    tiled_dot_products: int
    skipped_steps: int
    full_attention: TiledCountsResponse


class KernelResponse(InputsUsed):
    long_sequence: LongSequenceSpec
    long_sequences: list[LongSequenceResponse]


class TiledResponse(KernelResponse):
    block_q: int
    block_k: int
    steps: list[TileStepResponse]
    output: list[list[float]] = Field(description="The tiled result, n × d_v.")
    dense_output: list[list[float]] = Field(description="weights · V, as /api/attention.")
    max_abs_difference: float
    memory: TiledMemory


class PrefillResponse(BaseModel):
    tokens: list[str]
    scores: list[list[float]]
    scaled: list[list[float]]
    allowed: list[list[bool]]
    weights: list[list[float]]
    output: list[list[float]]
    dots: int
    cache_length: int


class DecodeStepResponse(BaseModel):
    position: int
    token: str
    q: list[float]
    k: list[float] = Field(description="Appended to the K cache.")
    v: list[float] = Field(description="Appended to the V cache.")
    cache_length: int
    scores: list[float]
    scaled: list[float]
    allowed: list[bool]
    weights: list[float]
    output: list[float]
    full_output: list[float] = Field(description="The same row of full causal attention.")
    max_abs_difference: float
    dots_cached: int
    dots_uncached: int
    dots_cached_total: int
    dots_uncached_total: int
    cache_entries: int


class DecodeResponse(KernelResponse):
    forced_causal: bool = Field(description="The state was not causal; decoding made it so.")
    prompt: int
    prefill: PrefillResponse
    steps: list[DecodeStepResponse]
    output: list[list[float]]
    full_output: list[list[float]]
    max_abs_difference: float


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
