"""GET /api/cost and the /cost page: the query (one attention configuration at one length)
and the typed results of GET /api/cost and /api/cost/models."""

from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import (
    ConfigDict,
    Field,
)

from app.core.limits import MAX_COUNT, MAX_SEQ_LEN
from app.web.pages import BlankIsAbsent, Decimal, Whole

Count = Annotated[Whole, Field(ge=1, le=MAX_COUNT)]


class CostQuery(BlankIsAbsent):
    """GET /api/cost and the /cost page: one attention configuration at one length.

    Query parameters, so values arrive as text, and numbers are read by the one rule for
    numbers in a query string (`Whole`, `Decimal`: ASCII digits, bounded length); an empty
    form field means "not given". A `preset` fills every attention field the query leaves out.
    """

    model_config = ConfigDict(extra="forbid")

    seq_len: Whole = Field(4096, ge=1, le=MAX_SEQ_LEN, description="Tokens in one sequence: n.")
    heads: Count | None = Field(None, description="Query heads h (default 1).")
    kv_heads: Count | None = Field(
        None, description="Key/value heads g, dividing h: g = h MHA, 1 < g < h GQA, g = 1 MQA."
    )
    head_dim: Count | None = Field(None, description="Width of one head, d_head (default 128).")
    layers: Count | None = Field(None, description="Layers L (default 1).")
    batch: Whole = Field(1, ge=1, le=MAX_COUNT, description="Sequences processed together.")
    bytes_per_element: Decimal | None = Field(
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
    window: Whole | None = Field(
        None, ge=1, le=MAX_SEQ_LEN, description="Sliding window w; none: full attention."
    )
    window_layers: Count | None = Field(
        None, description="How many layers use the window (default all); the rest are global."
    )
    kv_dtype: Literal["fp32", "fp16", "bf16", "fp8", "int4", "q8_0", "q4_0"] | None = Field(
        None,
        description="The KV cache's element type (default: dtype); q8_0 stores 32 values in 34 "
        "bytes, q4_0 in 18 (llama.cpp's blocks).",
    )
    kv_lora_rank: Count | None = Field(
        None,
        description="Multi-head latent attention: the cache holds kv_lora_rank + rope_head_dim "
        "numbers per token per layer instead of K and V per key/value head.",
    )
    rope_head_dim: Whole | None = Field(
        None, ge=0, le=MAX_COUNT, description="MLA's shared RoPE key width (with kv_lora_rank)."
    )
    sinks: Whole | None = Field(
        None, ge=0, le=MAX_SEQ_LEN, description="Tokens from the start that windowed layers keep."
    )
    weight_bytes: Whole | None = Field(
        None, ge=0, le=2**60, description="Memory the model's weights take on the GPU, in bytes."
    )
    gpu_memory_gib: Decimal = Field(
        24.0, ge=0.001, le=1_048_576, allow_inf_nan=False, description="GPU memory in GiB (2³⁰ B)."
    )
    preset: str | None = Field(
        None, max_length=64, description="A model id from GET /api/cost/models."
    )


# ---------------------------------------------------------------- the typed results

WIDE = (
    "An exact whole number; beyond 64 bits (2⁶³ − 1) it is written as the nearest float, "
    "which JSON readers parse anyway."
)
WideInt = Annotated[int, Field(description=WIDE)]


@dataclass(frozen=True, kw_only=True)
class PresetInfo:
    """A model preset as GET /api/cost/models lists it: the attention configuration its
    config.json gives, and where the numbers come from."""

    id: str
    name: str
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    hidden_size: int
    max_context: int
    window: int | None
    window_layers: int | None
    window_layer_indices: list[int]
    kv_lora_rank: int | None
    rope_head_dim: int | None
    attention: Annotated[str, Field(description="MHA, GQA, MQA or MLA.")]
    decoder: bool
    source: str
    config_fields: Annotated[
        dict[str, int | bool],
        Field(description="The attention fields of the model's config.json, as published."),
    ]
    notes: str


@dataclass(frozen=True, kw_only=True)
class PresetList:
    """GET /api/cost/models."""

    models: list[PresetInfo]


@dataclass(frozen=True, kw_only=True)
class Size:
    """A byte count and the same amount in the largest binary unit that keeps it ≥ 1."""

    bytes: WideInt
    value: float
    unit: str
    text: Annotated[str, Field(description="For instance 32 MiB or 1.5 GiB.")]


@dataclass(frozen=True, kw_only=True)
class Sizes:
    """The byte counts of the answer, each in binary units."""

    score_bytes_per_head: Size
    score_bytes_per_layer: Size
    score_bytes_model: Size
    row_stats_bytes_per_layer: Size
    qkvo_bytes_per_layer: Size
    kv_cache_bytes_per_token: Size
    kv_cache_bytes: Size
    weight_bytes: Size
    kv_and_weights: Size
    gpu_memory: Size


@dataclass(frozen=True, kw_only=True)
class GpuFit:
    """What fits in the GPU's memory."""

    memory_gib: float
    memory_bytes: int
    kv_cache_fits: bool
    kv_cache_share: float
    score_layer_fits: bool
    score_layer_share: float
    longest_kv_fit: Annotated[int, Field(description="The longest n whose KV cache fits.")]
    longest_dense_layer_fit: Annotated[
        int, Field(description="The longest n whose layer of scores fits.")
    ]


@dataclass(frozen=True, kw_only=True)
class ScalingRow:
    """Score memory of one head at n, 2n or 4n."""

    seq_len: int
    score_entries_per_head: WideInt
    score_bytes_per_head: WideInt
    size: Size


@dataclass(frozen=True, kw_only=True)
class KvSeries:
    """The KV cache of one configuration compared, against sequence length."""

    id: Annotated[str, Field(description="mha, gqa, mqa, mla or window.")]
    attention: str  # MHA, GQA, MQA or MLA
    kv_heads: int
    window: int | None  # the sliding window of its windowed layers
    sinks: int | None  # first tokens its windowed layers keep
    windowed_layers: int
    latent_width: int | None  # MLA: kv_lora_rank + rope_head_dim elements per token
    bytes: list[WideInt]


@dataclass(frozen=True, kw_only=True)
class Curves:
    """Every chart's series against sequence length, on a log grid."""

    seq_len: list[int]
    dense_score_bytes_per_layer: list[WideInt]
    row_stats_bytes_per_layer: list[WideInt]
    qkvo_bytes_per_layer: list[WideInt]
    kv_cache_bytes: Annotated[
        list[KvSeries], Field(description="One series per configuration compared.")
    ]
    kv_chosen: Annotated[str, Field(description="The id of the configuration asked about.")]


@dataclass(frozen=True, kw_only=True)
class CostResult:
    """The whole GET /api/cost answer: one attention configuration at one length."""

    seq_len: int
    heads: int
    kv_heads: int
    head_dim: int
    layers: int
    batch: int
    bytes_per_element: float
    bits_per_element: int
    dtype: str | None
    window: int | None
    window_layers: int | None
    global_layers: int
    attention: Annotated[str, Field(description="MHA, GQA, MQA or MLA.")]
    preset: PresetInfo | None
    score_entries_per_head: WideInt
    score_bytes_per_head: WideInt
    score_bytes_per_layer: WideInt
    score_bytes_model: WideInt
    row_stats_bytes_per_layer: WideInt
    qkvo_bytes_per_layer: WideInt
    prefill_flops_per_head: WideInt
    prefill_flops: WideInt
    causal_prefill_flops: WideInt
    decode_flops_per_head: WideInt
    decode_flops: WideInt
    kv_cache_bytes_per_token: WideInt
    kv_cache_bytes_per_token_global: WideInt | None
    kv_cache_bytes: WideInt
    kv_cached_tokens_windowed: int | None
    kv_dtype: str
    kv_dtype_requested: str | None
    kv_bytes_per_element: float
    kv_bytes_per_element_exact: Annotated[list[int], Field(description="[numerator, denominator].")]
    kv_elements_per_token_layer: int
    kv_lora_rank: int | None
    rope_head_dim: int | None
    sinks: int | None
    weight_bytes: int
    fits: bool
    max_seq_len: int
    max_batch: int
    warnings: list[str]
    gpu: GpuFit
    sizes: Sizes
    scaling: list[ScalingRow]
    curves: Curves
