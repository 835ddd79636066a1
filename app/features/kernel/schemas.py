"""The request and response shapes of POST /api/kernel/tiled and /api/kernel/decode."""

from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from app.core.limits import HARD_MAX_TOKENS, MAX_COUNTED_LENGTH
from app.core.rules import WORKED_EXAMPLE_REQUEST
from app.features.lab.schemas import AttentionRequest
from app.features.stages.schemas import NumberOrNull, Width, field_error
from app.math.positional import Positional

MAX_SRAM_ELEMENTS = 2**24  # 16 Mi numbers: far more on-chip memory than any GPU has
DEFAULT_CHART_SRAM = 100_000  # about 192 KiB of on-chip memory per SM, in fp16 numbers


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
    sram_elements: Annotated[int, Field(strict=True, ge=1, le=MAX_SRAM_ELEMENTS)] = Field(
        DEFAULT_CHART_SRAM,
        description="On-chip memory M, in elements, for the traffic counts of both loop orders "
        "(B_c = ⌈M / 4d⌉, B_r = min(B_c, d)).",
    )


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
    order: Literal["fa1", "fa2"] = Field(
        "fa2",
        description="Loop order: fa1, key/value blocks outside with O, l, m written back every "
        "step (FlashAttention-1); fa2, query blocks outside with one rescale at the end "
        "(FlashAttention-2).",
    )
    sram_elements: Annotated[int, Field(strict=True, ge=1, le=MAX_SRAM_ELEMENTS)] | None = Field(
        None,
        description="On-chip memory M in elements; without block sizes, b_k = B_c = ⌈M / 4d⌉ "
        "and b_q = B_r = min(B_c, d), d = d_k.",
    )

    @model_validator(mode="after")
    def blocks_or_memory(self) -> "TiledRequest":
        if self.sram_elements is not None and self.block_q is not None and self.block_k is not None:
            raise field_error(
                "sram_with_blocks",
                "sram_elements sets the tile sizes (b_k = ⌈M / 4d⌉, b_q = min(b_k, d)), but "
                "block_q and block_k are given too; leave out sram_elements, or one or both "
                "block sizes",
                "sram_elements",
            )
        return self

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


class CacheSpec(BaseModel):
    """What the cache keeps while decoding: everything, the last w positions, or the first s
    as well (attention sinks, StreamingLLM)."""

    model_config = ConfigDict(extra="forbid")

    policy: Literal["full", "window", "sinks"] = Field(
        "full",
        description="full: every position; window: the last w; sinks: the first s and the last w.",
    )
    window: Annotated[int, Field(strict=True, ge=1, le=HARD_MAX_TOKENS)] | None = Field(
        None, description="w: how many of the latest positions are kept (window and sinks)."
    )
    sinks: Annotated[int, Field(strict=True, ge=0, le=HARD_MAX_TOKENS)] | None = Field(
        None, description="s: how many positions from the start are kept (sinks; default 1)."
    )

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


class DecodeRequest(KernelRequest):
    """Cached decoding of a lab state: prefill the first `prompt` tokens, then one at a time."""

    model_config = ConfigDict(
        json_schema_extra={"examples": [{**WORKED_EXAMPLE_REQUEST, "prompt": 1}]}
    )

    prompt: Annotated[int, Field(strict=True, ge=1, le=HARD_MAX_TOKENS)] | None = Field(
        None, description="Tokens in the prefill (1 … n); default ⌊n / 2⌋, at least 1."
    )
    cache: CacheSpec = Field(
        default_factory=CacheSpec, description="Which positions the cache keeps (default full)."
    )


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


class TrafficCount(BaseModel):
    reads: int = Field(description="Elements read from slow memory.")
    writes: int = Field(description="Elements written to slow memory.")


class OrderTraffic(TrafficCount):
    tiles: int
    skipped_tiles: int = Field(description="Tiles the mask hides entirely: nothing moved.")


class LongTraffic(BaseModel):
    """Slow-memory traffic of one head at this length, counted in closed form."""

    sram_elements: int
    block_q: int = Field(description="B_r = min(B_c, d).")
    block_k: int = Field(description="B_c = ⌈M / 4d⌉.")
    standard: TrafficCount
    fa1: OrderTraffic
    fa2: OrderTraffic
    fa1_causal: OrderTraffic
    fa2_causal: OrderTraffic


class LongSequenceResponse(TiledCountsResponse):
    dense_score_bytes: int = Field(description="dense_score_entries × 2 bytes.")
    tiled_score_bytes: int = Field(description="tiled_score_entries × 2 bytes.")
    decode: DecodeCountsResponse
    traffic: LongTraffic


class TransferResponse(BaseModel):
    name: str = Field(description="Q, K, V, O, l, m, or L (the log-sum-exp).")
    rows: list[int] = Field(description="[start, stop) of the rows moved.")
    elements: int


class TileStepResponse(BaseModel):
    order: Literal["fa1", "fa2"]
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
    m_tile: list[NumberOrNull] = Field(description="rowmax S of this tile (fa1's m̃).")
    p_scale: list[float] = Field(description="fa1: exp(m̃ − m) on the new tile; fa2: 1.")
    logsumexp_rows: list[NumberOrNull] | None = Field(
        description="fa2, last key block of the rows: L = m + log l, written with O."
    )
    final_rescale: bool = Field(description="fa2's one division by l, at the rows' end.")
    reads: list[TransferResponse] = Field(description="Read from slow memory in this step.")
    writes: list[TransferResponse] = Field(description="Written to slow memory in this step.")
    elements_read: int
    elements_written: int
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


class TrafficCurve(BaseModel):
    """Reads + writes of one head against n, for the chart."""

    seq_len: list[int]
    standard: list[int]
    fa1: list[int]
    fa2: list[int]
    fa1_causal: list[int]
    fa2_causal: list[int]


class KernelResponse(InputsUsed):
    long_sequence: LongSequenceSpec
    long_sequences: list[LongSequenceResponse]
    traffic_curve: TrafficCurve


class TiledTraffic(BaseModel):
    """Elements of slow memory moved by this run and by standard attention."""

    order: Literal["fa1", "fa2"]
    tiled: TrafficCount
    standard: TrafficCount
    setup_writes: int = Field(description="fa1 first writes O = 0, l = 0, m = −∞: n·d_v + 2n.")
    tiles: int
    skipped_tiles: int


class TiledResponse(KernelResponse):
    order: Literal["fa1", "fa2"]
    sram_elements: int | None
    block_q: int
    block_k: int
    blocks_from_sram: bool = Field(description="The tile sizes came from sram_elements.")
    logsumexp: list[NumberOrNull] = Field(description="L = m + log l per row; null: no key seen.")
    traffic: TiledTraffic
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
    cached_positions: list[int] = Field(description="What the cache keeps after the prefill.")


class CacheResponse(BaseModel):
    policy: Literal["full", "window", "sinks"]
    window: int | None
    sinks: int
    capacity: int | None = Field(description="Most positions ever held: none for full.")


class DecodeStepResponse(BaseModel):
    position: int
    token: str
    cached_positions: list[int] = Field(description="Positions the cache holds after the step.")
    cached_tokens: list[str]
    evicted: list[int] = Field(description="Positions dropped in this step.")
    cache_elements: int = Field(description="Numbers the cache holds: positions · (d_k + d_v).")
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
    max_abs_difference: float = Field(description="Largest |output − full_output|: 0 for full.")
    dots_cached: int
    dots_uncached: int
    dots_cached_total: int
    dots_uncached_total: int
    cache_entries: int


class DecodeResponse(KernelResponse):
    forced_causal: bool = Field(description="The state was not causal; decoding made it so.")
    prompt: int
    cache: CacheResponse
    policy_mask_difference: float = Field(
        description="Largest difference from the dense head given the policy as a mask: ~0."
    )
    prefill: PrefillResponse
    steps: list[DecodeStepResponse]
    output: list[list[float]]
    full_output: list[list[float]] = Field(description="Full causal attention, nothing dropped.")
    max_abs_difference: float
