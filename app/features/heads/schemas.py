"""The request and response shapes of POST /api/heads."""

from dataclasses import dataclass
from typing import Any

from pydantic import (
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from app.core import arrays
from app.core.budget import sized
from app.features.stages.results import OneHead, StageFields
from app.features.stages.schemas import (
    HeadCount,
    InputMatrix,
    InputTensor,
    SequenceRequest,
    Width,
    matrix_width,
)
from app.math.positional import Positional

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
    w_q: InputTensor | None = Field(None, description="h × d_model × d_head query projections.")
    w_k: InputTensor | None = Field(None, description="g × d_model × d_head key projections.")
    w_v: InputTensor | None = Field(None, description="g × d_model × d_head value projections.")
    w_o: InputMatrix | None = Field(None, description="(h · d_head) × d_model output projection.")

    @field_validator("w_q", "w_k", "w_v")
    @classmethod
    def matrices_not_ragged(cls, value: list[InputMatrix] | None, info: ValidationInfo) -> Any:
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


@dataclass(frozen=True, kw_only=True)
class QueryHead(StageFields):
    """One query head's stages, and the key/value head it used: ⌊i / (h / g)⌋."""

    kv_head: int


@dataclass(frozen=True, kw_only=True)
class KvCachePerToken:
    """K and V bytes per token for one layer: this configuration, and plain multi-head."""

    bytes_per_element: int
    this: int  # g key/value heads
    multi_head: int  # the same with g = h


@dataclass(frozen=True, kw_only=True)
class HeadsResult:
    """The whole /api/heads answer: the inputs used, every head's stages, concat, W_O, output."""

    tokens: list[str]
    d_model: int
    d_head: int
    kv_heads: int
    scale_factor: float
    positional: Positional
    x: arrays.Matrix  # (n, d_model)
    x_positioned: arrays.Matrix  # what the projections saw: x + PE for sinusoidal, else x
    w_q: arrays.Tensor3  # (h, d_model, d_head)
    w_k: arrays.Tensor3  # (g, d_model, d_head)
    w_v: arrays.Tensor3  # (g, d_model, d_head)
    w_o: arrays.Matrix  # (h·d_head, d_model)
    mask: dict[str, Any]
    heads: list[QueryHead]
    concat: arrays.Matrix  # (n, h·d_head): the heads' outputs side by side, in head order
    output: arrays.Matrix  # (n, d_model): concat · W_O
    kv_cache_bytes_per_token: KvCachePerToken

    @staticmethod
    def answer_bytes(n: int, h: int, g: int, d_model: int, d_head: int) -> int:
        """The JSON size of this answer (app/core/budget.py): h heads' stages, the inputs and
        projections (W_Q per query head, W_K and W_V per key/value head, W_O), the
        concatenation and the output."""
        per_head = StageFields.answer_bytes(n, d_head, d_head) + sized(keys=2)
        numbers = 2 * n * d_model + (h + 2 * g) * d_model * d_head + h * d_head * d_model
        numbers += n * h * d_head + n * d_model
        return h * per_head + sized(numbers=numbers, labels=n, keys=20)

    def head(self, i: int) -> OneHead:
        """Query head i for the stage strip: its projections saw x with position added."""
        return OneHead(
            **self.heads[i].fields(),
            tokens=self.tokens,
            x=self.x_positioned,
            d_k=self.d_head,
            scale_factor=self.scale_factor,
        )
