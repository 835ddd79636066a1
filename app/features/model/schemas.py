"""The request of POST /api/model (its answer is app/features/model/results.py)."""

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

from app.core.i18n import gettext
from app.core.limits import HARD_MAX_TOKENS, MAX_RANKED_PIECES, MAX_TEXT_CHARS, MAX_WORD_PIECES
from app.features.stages.schemas import field_error

Index = Annotated[int, Field(strict=True, ge=0, le=HARD_MAX_TOKENS)]


ModelText = Annotated[str, StringConstraints(min_length=1, max_length=MAX_TEXT_CHARS)]


HeadPair = Annotated[
    list[Index], Field(min_length=2, max_length=2, description="[layer, head], 0-based.")
]


def _not_blank(name: str, text: Any) -> Any:
    if isinstance(text, str) and not text.strip():
        message = (
            gettext("%(field)s has no words, only spaces; type a sentence")
            if text
            else gettext("%(field)s is empty; type a sentence")
        )
        raise PydanticCustomError("blank_text", message % {"field": name})
    return text


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
    ablate: Annotated[list[HeadPair], Field(max_length=72)] = Field(
        [],
        description="[layer, head] pairs switched off: each one's attention output (its slice "
        "of the concatenated heads, before the output projection) is zeroed and everything "
        "after it recomputed.",
    )
    compare_text: ModelText | None = Field(
        None, description="A second sentence, run with the same ablate; gives similarity."
    )
    include_weights: bool = Field(
        True, description="false leaves out weights (layers × heads × n × n numbers)."
    )
    rank_heads: bool = Field(
        False,
        description="With compare_text: switch each head off alone and rank the heads by how "
        "much the similarity drops without them, the largest drop first (144 runs; both "
        f"sentences at most {MAX_RANKED_PIECES} word pieces).",
    )

    @field_validator("text", mode="before")
    @classmethod
    def not_blank(cls, text: Any) -> Any:
        return _not_blank("text", text)

    @field_validator("compare_text", mode="before")
    @classmethod
    def compare_not_blank(cls, text: Any) -> Any:
        return _not_blank("compare_text", text)

    @model_validator(mode="after")
    def layer_and_head_together(self) -> "ModelRequest":
        if (self.layer is None) != (self.head is None):
            given, other = ("layer", "head") if self.head is None else ("head", "layer")
            raise field_error(
                "missing_pair",
                gettext(
                    "%(given)s is given but %(other)s is not; give both to see one head, or neither"
                )
                % {"given": given, "other": other},
                other,
            )
        if self.query is not None and self.layer is None:
            raise field_error(
                "missing_pair",
                gettext("query needs layer and head: it is a row of that head"),
                "query",
            )
        if self.rank_heads and self.compare_text is None:
            raise field_error(
                "missing_pair",
                gettext("rank_heads compares two sentences: give compare_text as well"),
                "rank_heads",
            )
        return self
