"""The request shapes of POST /api/kernel/tiled and /api/kernel/decode (their results are
in results.py)."""

from typing import Annotated

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from app.core.i18n import gettext
from app.core.limits import HARD_MAX_TOKENS, MAX_COUNTED_LENGTH
from app.core.rules import WORKED_EXAMPLE_REQUEST
from app.features.lab.schemas import AttentionRequest
from app.features.stages.schemas import CacheSpec, Width, field_error
from app.math import flash as fl

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
    order: fl.LoopOrder = Field(
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
                gettext(
                    "sram_elements sets the tile sizes (b_k = ⌈M / 4d⌉, b_q = min(b_k, d)), but "
                    "block_q and block_k are given too; leave out sram_elements, or one or both "
                    "block sizes"
                ),
                "sram_elements",
            )
        return self

    @field_validator("block_q", "block_k")
    @classmethod
    def at_least_one_row(cls, value: int | None, info: ValidationInfo) -> int | None:
        if value is not None and value < 1:
            sentence = (
                gettext(
                    "block_q is %(value)s but a tile needs at least one query row; use 1 or "
                    "more (a size of n or more makes a single block)"
                )
                if info.field_name == "block_q"
                else gettext(
                    "block_k is %(value)s but a tile needs at least one key row; use 1 or "
                    "more (a size of n or more makes a single block)"
                )
            )
            raise PydanticCustomError("block_too_small", sentence % {"value": value})
        return value


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
