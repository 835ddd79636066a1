"""The request and response shapes of POST /api/model and the /model page's URL."""

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

from app.core.limits import HARD_MAX_TOKENS, MAX_TEXT_CHARS, MAX_WORD_PIECES
from app.features.stages.schemas import HeadResponse, QueryBreakdown, field_error

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
            raise field_error(
                "missing_pair",
                f"{given} is given but {other} is not; give both to see one head, or neither",
                other,
            )
        if self.query is not None and self.layer is None:
            raise field_error(
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
