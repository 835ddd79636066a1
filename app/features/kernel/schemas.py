"""The request and response shapes of POST /api/kernel/tiled and /api/kernel/decode."""

from typing import Annotated

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
)
from pydantic_core import PydanticCustomError

from app.core.limits import HARD_MAX_TOKENS, MAX_COUNTED_LENGTH
from app.features.lab.schemas import AttentionRequest, InputsUsed
from app.features.stages.schemas import WORKED_EXAMPLE_REQUEST, NumberOrNull, Width


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
