"""The request and response shapes of POST /api/model and the /model page's URL."""

from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from app.core.limits import (
    HARD_MAX_TOKENS,
    MAX_LINE_HEADS,
    MAX_RANKED_PIECES,
    MAX_TEXT_CHARS,
    MAX_WORD_PIECES,
)
from app.features.model.store import MODEL_SHAPE
from app.features.stages.schemas import field_error

Index = Annotated[int, Field(strict=True, ge=0, le=HARD_MAX_TOKENS)]


ModelText = Annotated[str, StringConstraints(min_length=1, max_length=MAX_TEXT_CHARS)]


HeadPair = Annotated[
    list[Index], Field(min_length=2, max_length=2, description="[layer, head], 0-based.")
]


def _not_blank(name: str, text: Any) -> Any:
    if isinstance(text, str) and not text.strip():
        kind = "has no words, only spaces" if text else "is empty"
        raise PydanticCustomError("blank_text", f"{name} {kind}; type a sentence")
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
        f"much the similarity moves (144 runs; both sentences at most {MAX_RANKED_PIECES} "
        "word pieces).",
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
                f"{given} is given but {other} is not; give both to see one head, or neither",
                other,
            )
        if self.query is not None and self.layer is None:
            raise field_error(
                "missing_pair", "query needs layer and head: it is a row of that head", "query"
            )
        if self.rank_heads and self.compare_text is None:
            raise field_error(
                "missing_pair",
                "rank_heads compares two sentences: give compare_text as well",
                "rank_heads",
            )
        return self


MODEL_PAGE_DEFAULTS = {
    "text": "The cat sat on the mat because it was tired.",
    "layer": "0",
    "head": "0",
}


ROLE_FILTERS = ("", "previous", "next", "self", "cls", "sep", "broad")


class ModelPageParams(BaseModel):
    """The /model page's URL: a ModelRequest from query-string text, plus view options."""

    model_config = ConfigDict(extra="ignore")

    text: str = Field(max_length=MAX_TEXT_CHARS)
    layer: int
    head: int
    query: int | None = None
    hide_special: bool = Field(False, description="Leave [CLS] and [SEP] out of the view.")
    off: list[str] = Field([], description='Heads switched off, each "layer.head".')
    compare: str = Field(
        "", max_length=MAX_TEXT_CHARS, description="A second sentence (empty: none)."
    )
    role: str = Field("", description="Show only the heads with this label (empty: all).")
    lines: list[str] = Field(
        [], description='Heads drawn in the line view, each "layer.head" (none: the chosen head).'
    )
    start: int = Field(0, ge=0, description="First word piece of the line view's window.")

    @field_validator("role")
    @classmethod
    def known_role(cls, role: str) -> str:
        if role not in ROLE_FILTERS:
            choices = ", ".join(r for r in ROLE_FILTERS if r)
            raise PydanticCustomError("role", f"role {role!r} is not one of {choices}")
        return role

    @field_validator("lines", mode="before")
    @classmethod
    def earlier_line_links(cls, lines: Any, info: ValidationInfo) -> Any:
        """Links saved before any set of heads could be drawn say lines=head (the chosen one)
        or lines=layer (all heads of the chosen layer): they still draw what they did."""
        if not isinstance(lines, list):
            return lines
        layer = info.data.get("layer")
        drawn: list[Any] = []
        for item in lines:
            if item == "layer" and isinstance(layer, int):
                drawn += [f"{layer}.{h}" for h in range(MODEL_SHAPE[1])]
            elif item != "head":
                drawn.append(item)
        return drawn

    @field_validator("off", "lines")
    @classmethod
    def head_pairs(cls, items: list[str], info: ValidationInfo) -> list[str]:
        for item in items:
            layer, dot, head = item.partition(".")
            if not (dot and layer.isdigit() and head.isdigit()):
                raise PydanticCustomError(
                    "head_pair", f'{info.field_name}={item!r} should be "layer.head", such as "0.2"'
                )
        return items

    @field_validator("lines")
    @classmethod
    def few_line_heads(cls, lines: list[str]) -> list[str]:
        drawn = len(set(lines))
        if drawn > MAX_LINE_HEADS:
            raise PydanticCustomError(
                "line_heads",
                f"{drawn} heads are ticked for the line view, which draws at most "
                f"{MAX_LINE_HEADS} at once (a colour each); untick some",
            )
        return lines

    def ablate(self) -> list[list[int]]:
        return [[int(part) for part in item.split(".")] for item in self.off]

    def line_heads(self) -> list[tuple[int, int]]:
        """The heads the line view draws, in (layer, head) order; none ticked: the chosen one."""
        pairs = {(int(a), int(b)) for a, _, b in (item.partition(".") for item in self.lines)}
        return sorted(pairs) or [(self.layer, self.head)]

    def request(self) -> ModelRequest:
        compare = self.compare if self.compare.strip() else None
        return ModelRequest(
            text=self.text,
            layer=self.layer,
            head=self.head,
            query=self.query,
            ablate=self.ablate(),  # type: ignore[arg-type]
            compare_text=compare,
        )
