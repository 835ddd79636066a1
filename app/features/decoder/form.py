"""The /decoder page's state, as its query string says it."""

import re
from typing import Annotated, Literal, Self

from pydantic import BeforeValidator, Field, ValidationInfo
from pydantic_core import PydanticCustomError

from app.core.errors import InputError
from app.core.i18n import gettext
from app.core.limits import (
    MAX_GENERATED,
    MAX_PROMPT_CHARS,
    MAX_PROMPT_TOKENS,
    MAX_TEMPERATURE,
    MAX_TOP_K,
)
from app.features.decoder.schemas import DecoderRequest, SamplingSpec
from app.features.stages.schemas import CacheSpec
from app.web.pages import Decimal, PageForm, Whole, whole

GENERATE_BUTTON = 8  # what "Generate" asks for when the length is still 0
CANDIDATES = 10  # next-token bars
MODEL_LAYERS, MODEL_HEADS = 30, 9  # SmolLM2-135M's shape (its GGUF file says so too)
HEAD_KEY = re.compile(r"([0-9]{1,2})\.([0-9])", re.ASCII)  # "17.4": layer 17, query head 4


def head_key(value: object, info: ValidationInfo) -> object:
    """ "17.4" → (17, 4): a head (switched off, or picked in the grid) as the page writes it."""
    if isinstance(value, str):
        found = HEAD_KEY.fullmatch(value.strip())
        if not found or int(found[1]) >= MODEL_LAYERS or int(found[2]) >= MODEL_HEADS:
            raise PydanticCustomError(
                "head_key",
                gettext(
                    "%(field)s takes a head as layer.head, layer 0 to %(layers)s and head 0 to "
                    "%(heads)s, such as 17.4; not {value}"
                )
                % {"field": info.field_name, "layers": MODEL_LAYERS - 1, "heads": MODEL_HEADS - 1},
                {"value": value[:12]},
            )
        return int(found[1]), int(found[2])
    return value


def optional_whole(value: object) -> object:
    """A select's empty choice ("the last token", "no head open") is None."""
    return None if value == "" else whole(value)


OptionalWhole = Annotated[int | None, BeforeValidator(optional_whole)]
HeadKey = Annotated[tuple[int, int], BeforeValidator(head_key)]


class DecoderForm(PageForm):
    text: str = Field("The capital of France is", max_length=MAX_PROMPT_CHARS)
    generate: Whole = Field(0, ge=0, le=MAX_GENERATED)
    method: Literal["greedy", "sample"] = "greedy"
    temperature: Decimal = Field(1.0, gt=0, le=MAX_TEMPERATURE)
    top_k: Whole = Field(50, ge=1, le=MAX_TOP_K)
    seed: Whole = Field(0, ge=0, le=2**32 - 1)
    policy: Literal["full", "window", "sinks"] = "full"
    window: Whole = Field(16, ge=1, le=MAX_PROMPT_TOKENS + MAX_GENERATED)
    sinks: Whole = Field(4, ge=1, le=MAX_PROMPT_TOKENS)
    # The head whose stages are open: none until the reader opens one (a cell of the grid, a
    # heatmap's title, the selects), since its strip is most of what a key would redraw.
    layer: OptionalWhole = Field(None, ge=0, le=MODEL_LAYERS - 1)
    head: OptionalWhole = Field(None, ge=0, le=MODEL_HEADS - 1)
    query: OptionalWhole = Field(None, ge=0, le=MAX_PROMPT_TOKENS - 1)
    off: list[HeadKey] = Field([], max_length=270)
    go: Literal["generate"] | None = None  # the Generate button's one-off value
    pick: HeadKey | None = None  # a cell of the grid of every head: open that head

    def snapped(self) -> Self:
        """The one-off buttons applied: Generate makes a length of 0 GENERATE_BUTTON; a
        head picked in the grid becomes the layer and head shown, at the last token. A layer
        chosen without a head opens its head 0, and a head without a layer, layer 0's."""
        changes: dict[str, object] = {"go": None, "pick": None}
        if self.go and self.generate == 0:
            changes["generate"] = GENERATE_BUTTON
        if self.pick is not None:
            changes.update(layer=self.pick[0], head=self.pick[1], query=None)
        elif self.layer is not None or self.head is not None:
            changes.update(layer=self.layer or 0, head=self.head or 0)
        else:
            changes["query"] = None  # a query is a row of an open head
        return self.model_copy(update=changes)

    @property
    def opened(self) -> tuple[int, int] | None:
        """(layer, head) of the head whose stages are open, once snapped; None when none is."""
        if self.layer is None or self.head is None:
            return None
        return self.layer, self.head

    def state(self, **changes: object) -> list[tuple[str, object]]:
        """The parameters this state's links carry: only those that apply."""
        values = self.model_dump(exclude={"go", "off", "pick"}) | changes
        if values["method"] == "greedy":
            for name in ("temperature", "top_k", "seed"):
                values.pop(name)
        if values["policy"] == "full":
            values.pop("window")
        if values["policy"] != "sinks":
            values.pop("sinks")
        if values["layer"] is None or values["head"] is None:  # no head open
            values.update(layer=None, head=None, query=None)
        for name in ("layer", "head", "query"):
            if values[name] is None:
                values.pop(name)
        off = changes.get("off", self.off)
        return [*values.items(), *(("off", f"{a}.{b}") for a, b in off)]  # type: ignore[attr-defined]

    def cache(self) -> CacheSpec:
        if self.policy == "full":
            return CacheSpec()
        return CacheSpec(
            policy=self.policy,
            window=self.window,
            sinks=self.sinks if self.policy == "sinks" else None,
        )

    def request(self, query: int | None = None) -> DecoderRequest:
        """The /api/decoder request of this state; InputError when the prompt is blank."""
        if not self.text.strip():
            raise InputError(
                ("text",), gettext("text is empty; type a prompt for the model to continue")
            )
        return DecoderRequest(
            text=self.text,
            generate=self.generate,
            sampling=SamplingSpec(
                method=self.method, temperature=self.temperature, top_k=self.top_k, seed=self.seed
            ),
            top=CANDIDATES,
            cache=self.cache(),
            ablate=[list(pair) for pair in sorted(set(self.off))],
            weights="none" if self.opened is None else "layer",
            layer=self.layer,
            head=self.head,
            query=None if self.opened is None else query,
        )
