"""The /model page's state, as its query string says it."""

import re
from typing import Annotated, Any

from pydantic import BeforeValidator, Field, ValidationInfo, field_validator
from pydantic_core import PydanticCustomError

from app.core.i18n import gettext
from app.core.limits import HARD_MAX_TOKENS, MAX_LINE_HEADS, MAX_TEXT_CHARS
from app.features.model.schemas import ModelRequest
from app.features.model.store import MODEL_SHAPE
from app.web.pages import PageForm, Whole

LAYERS, HEADS = MODEL_SHAPE
DEFAULT_TEXT = "The cat sat on the mat because it was tired."
ROLE_FILTERS = ("", "previous", "next", "self", "cls", "sep", "broad")
# A head in the address: "layer.head" in ASCII digits (off=3.5 switches off layer 3 · head 5).
HEAD_KEY = re.compile(r"([0-9]{1,2})\.([0-9]{1,2})", re.ASCII)


def head_key(value: Any) -> Any:
    """ "3.5" → (3, 5): one of the model's heads, or a sentence saying what is wrong."""
    if not isinstance(value, str):
        return value
    match = HEAD_KEY.fullmatch(value.strip())
    if match is None:
        raise PydanticCustomError(
            "head_key",
            gettext(
                "“{value}” is not a head: the address writes a head as its layer and its "
                "head, whole numbers joined by a dot"
            ).format(value=value[:12]),
        )
    layer, head = int(match[1]), int(match[2])
    if layer >= LAYERS or head >= HEADS:
        raise PydanticCustomError(
            "head_key",
            gettext(
                "{value} is not a head of the model, which has layers 0 to {last_layer} and "
                "heads 0 to {last_head} in each; untick it"
            ).format(value=value.strip(), last_layer=LAYERS - 1, last_head=HEADS - 1),
        )
    return layer, head


HeadKey = Annotated[tuple[int, int], BeforeValidator(head_key)]


def key_text(head: tuple[int, int]) -> str:
    """(3, 5) → "3.5", as the address writes it."""
    return f"{head[0]}.{head[1]}"


class ModelForm(PageForm):
    text: str = Field(DEFAULT_TEXT, max_length=MAX_TEXT_CHARS)
    layer: Whole = Field(0, ge=0, le=LAYERS - 1)
    head: Whole = Field(0, ge=0, le=HEADS - 1)
    query: Whole | None = Field(None, ge=0, le=HARD_MAX_TOKENS)
    hide_special: bool = False  # leave [CLS] and [SEP] out of the pictures
    off: list[HeadKey] = Field(default_factory=list)  # heads switched off
    compare: str = Field("", max_length=MAX_TEXT_CHARS)  # a second sentence (empty: none)
    role: str = ""  # show only the heads with this label (empty: every head)
    lines: list[HeadKey] = Field(
        default_factory=list
    )  # heads drawn in the line view (none: the chosen head)
    start: Whole = Field(0, ge=0)  # the first word piece of the line view's window
    open: HeadKey | None = None  # a button's one-off choice of layer and head

    @field_validator("role")
    @classmethod
    def known_role(cls, role: str) -> str:
        if role not in ROLE_FILTERS:
            raise PydanticCustomError(
                "role",
                gettext("role “{role}” is not one of {choices}").format(
                    role=role[:20], choices=", ".join(r for r in ROLE_FILTERS if r)
                ),
            )
        return role

    @field_validator("compare")
    @classmethod
    def compare_has_words(cls, compare: str) -> str:
        if compare and not compare.strip():
            raise PydanticCustomError(
                "blank_text",
                gettext(
                    "%(field)s has no words, only spaces; type a second sentence to compare, "
                    "or leave it empty"
                )
                % {"field": "compare"},
            )
        return compare

    @field_validator("lines", mode="before")
    @classmethod
    def earlier_line_links(cls, lines: Any, info: ValidationInfo) -> Any:
        """Links saved before any set of heads could be drawn say lines=head (the chosen one)
        or lines=layer (every head of the chosen layer): they still draw what they did."""
        if not isinstance(lines, list):
            return lines
        layer = info.data.get("layer", 0)
        drawn: list[Any] = []
        for item in lines:
            if item == "layer":
                drawn += [f"{layer}.{h}" for h in range(HEADS)]
            elif item != "head":
                drawn.append(item)
        return drawn

    @field_validator("lines")
    @classmethod
    def few_line_heads(cls, lines: list[tuple[int, int]]) -> list[tuple[int, int]]:
        drawn = sorted(set(lines))
        if len(drawn) > MAX_LINE_HEADS:
            raise PydanticCustomError(
                "line_heads",
                gettext(
                    "{count} heads are ticked for the line view, which draws at most {most} "
                    "at once (a colour each); untick some"
                ).format(count=len(drawn), most=MAX_LINE_HEADS),
            )
        return drawn

    @field_validator("off")
    @classmethod
    def each_head_once(cls, off: list[tuple[int, int]]) -> list[tuple[int, int]]:
        return sorted(set(off))

    def opened(self) -> "ModelForm":
        """The form with a button's choice of head applied (it is never part of a state)."""
        if self.open is None:
            return self
        layer, head = self.open
        return self.model_copy(update={"layer": layer, "head": head, "open": None})

    @property
    def line_heads(self) -> list[tuple[int, int]]:
        """The heads the line view draws: those ticked, or the chosen head when none is."""
        return self.lines or [(self.layer, self.head)]

    def state(self, **changes: Any) -> list[tuple[str, Any]]:
        """The state as the page's links write it: only what applies, a list once per item."""
        values = self.model_dump(exclude={"open"}) | changes
        pairs: list[tuple[str, Any]] = [
            ("text", values["text"]),
            ("layer", values["layer"]),
            ("head", values["head"]),
        ]
        if values["query"] is not None:
            pairs.append(("query", values["query"]))
        if values["hide_special"]:
            pairs.append(("hide_special", "on"))
        pairs += [("off", key_text(h)) for h in values["off"]]
        if values["compare"].strip():
            pairs.append(("compare", values["compare"]))
        if values["role"]:
            pairs.append(("role", values["role"]))
        pairs += [("lines", key_text(h)) for h in values["lines"]]
        if values["start"]:
            pairs.append(("start", values["start"]))
        return pairs

    def request(self) -> ModelRequest:
        """The /api/model request of this state (the page picks its query itself, since a
        sentence typed shorter may leave it past the last word piece); ValidationError when
        a sentence is blank."""
        return ModelRequest(
            text=self.text,
            layer=self.layer,
            head=self.head,
            ablate=[list(h) for h in self.off],
            compare_text=self.compare if self.compare.strip() else None,
        )
