"""GET /api/cost and the /cost page: one attention configuration at one length."""

from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    model_validator,
)

from app.core.limits import MAX_COUNT, MAX_SEQ_LEN

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
    rope_head_dim: int | None = Field(
        None, ge=0, le=MAX_COUNT, description="MLA's shared RoPE key width (with kv_lora_rank)."
    )
    sinks: int | None = Field(
        None, ge=0, le=MAX_SEQ_LEN, description="Tokens from the start that windowed layers keep."
    )
    weight_bytes: int | None = Field(
        None, ge=0, le=2**60, description="Memory the model's weights take on the GPU, in bytes."
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
