"""The /heads page's state, as its query string says it."""

from typing import Literal, Self

from pydantic import Field

from app.core.errors import InputError
from app.core.i18n import gettext, ngettext
from app.core.limits import HARD_MAX_HEADS, HARD_MAX_WIDTH
from app.core.rules import grouped_query_kv_heads, nearest_kv_heads
from app.features.heads.schemas import HeadsRequest
from app.features.stages.schemas import MaskSpec, PositionalKind
from app.web.pages import PageForm, Whole

HEADS_PAGE_MAX_TOKENS = 32


class HeadsForm(PageForm):
    text: str = Field("the cat sat on the mat", max_length=2000)
    d_model: Whole = Field(8, ge=1, le=HARD_MAX_WIDTH)
    heads: Whole = Field(4, ge=1, le=HARD_MAX_HEADS)
    kv_heads: Whole = Field(2, ge=1, le=HARD_MAX_HEADS)
    d_head: Whole = Field(4, ge=1, le=HARD_MAX_WIDTH)
    mask: Literal["bidirectional", "causal"] = "bidirectional"
    positional: PositionalKind = "none"
    scale: Literal["on", "off"] = "on"
    seed: Whole = Field(0, ge=0, le=2**32 - 1)
    head: Whole = Field(0, ge=0, le=HARD_MAX_HEADS - 1)
    preset: Literal["mha", "gqa", "mqa"] | None = None  # a button's one-off choice of g

    def snapped(self) -> tuple[Self, str | None]:
        """The preset applied, and a g that does not divide h moved to the nearest divisor
        below (with a sentence saying so); the chosen head kept within h."""
        h = self.heads
        wanted = {"mha": h, "gqa": grouped_query_kv_heads(h) or h, "mqa": 1}.get(
            self.preset or "", self.kv_heads
        )
        g = nearest_kv_heads(h, wanted)
        note = None
        if g != wanted:
            note = ngettext(
                "%(wanted)s key/value heads cannot be shared evenly by %(h)s query head; "
                "showing g = %(g)s.",
                "%(wanted)s key/value heads cannot be shared evenly by %(h)s query heads; "
                "showing g = %(g)s.",
                h,
            ) % {"wanted": wanted, "h": h, "g": g}
        snapped = self.model_copy(
            update={"kv_heads": g, "preset": None, "head": min(self.head, h - 1)}
        )
        return snapped, note

    def state(self, **changes: object) -> list[tuple[str, object]]:
        """The state as the page's links write it (a preset is never part of a state)."""
        return list((self.model_dump(exclude={"preset"}) | changes).items())

    def request(self) -> HeadsRequest:
        """The /api/heads request of this state; InputError when the text cannot be used."""
        tokens = self.text.split()
        if not tokens:
            raise InputError(
                ("text",), gettext("text is empty; type at least one word to have tokens")
            )
        if len(tokens) > HEADS_PAGE_MAX_TOKENS:
            raise InputError(
                ("text",),
                gettext(
                    "text has %(n)s tokens but this page shows at most %(max)s; shorten it "
                    "(the API takes more)"
                )
                % {"n": len(tokens), "max": HEADS_PAGE_MAX_TOKENS},
            )
        return HeadsRequest(
            tokens=tokens,
            d_model=self.d_model,
            heads=self.heads,
            kv_heads=self.kv_heads,
            d_head=self.d_head,
            mask=MaskSpec(causal=self.mask == "causal"),
            positional=self.positional,
            scale=self.scale == "on",
            seed=self.seed,
        )
