"""The /kernel page's own parameters, as its query string says them: the tiling, the cache
and where each walk-through stands. The head itself is the lab's state (app/features/lab),
read from the same query string by the lab."""

from typing import Any

from pydantic import Field

from app.core.limits import HARD_MAX_TOKENS
from app.features.kernel.schemas import MAX_SRAM_ELEMENTS
from app.math import decoding as dc
from app.math import flash as fl
from app.web.pages import BlankIsAbsent, PageForm, Whole

LAST_STEP = 10**6  # a step past the end shows the last one
DEFAULT_CACHE_WINDOW = 2  # a window or sinks policy whose window is left empty
DEFAULT_SINKS = 1


class KernelForm(PageForm, BlankIsAbsent):
    block_q: Whole | None = Field(None, ge=1, le=HARD_MAX_TOKENS)
    block_k: Whole | None = Field(None, ge=1, le=HARD_MAX_TOKENS)
    order: fl.LoopOrder = "fa2"
    sram_elements: Whole | None = Field(None, ge=1, le=MAX_SRAM_ELEMENTS)
    prompt: Whole | None = Field(None, ge=1, le=HARD_MAX_TOKENS)
    cache: dc.Policy = "full"
    cache_window: Whole | None = Field(None, ge=1, le=HARD_MAX_TOKENS)
    sinks: Whole | None = Field(None, ge=0, le=HARD_MAX_TOKENS)
    step: Whole = Field(0, ge=0, le=LAST_STEP)
    decode_step: Whole = Field(0, ge=0, le=LAST_STEP)

    def tiling(self) -> dict[str, Any]:
        """The /api/kernel/tiled fields this form gives (the rest take the API's defaults)."""
        sizes = ("block_q", "block_k", "sram_elements")
        given = {k: getattr(self, k) for k in sizes if getattr(self, k) is not None}
        return {"order": self.order} | given

    def decoding(self) -> dict[str, Any]:
        """The /api/kernel/decode fields this form gives: the prompt and the cache policy (a
        window or sinks policy left without its window keeps DEFAULT_CACHE_WINDOW positions;
        a window or sinks that its policy does not use is left out)."""
        cache: dict[str, Any] = {"policy": self.cache}
        if self.cache != "full":
            cache["window"] = self.cache_window or DEFAULT_CACHE_WINDOW
        if self.cache == "sinks":
            cache["sinks"] = DEFAULT_SINKS if self.sinks is None else self.sinks
        return {"cache": cache} | ({} if self.prompt is None else {"prompt": self.prompt})
