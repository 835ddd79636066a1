"""The head lab's state as a URL: one compact, readable encoding, parsed in this one place.

    /?tokens=The cat sleeps&d_model=2&d_k=2&d_v=2&x=1,0;0,1;1,1&w_q=1,0.5;0,1
      &w_k=0.5,1;1,0&w_v=1,-1;0.5,1&mask=causal&query=1

- `tokens`: the text, split into tokens at spaces.
- `x`, `w_q`, `w_k`, `w_v`: a matrix, rows separated by ";" and numbers by ",". A matrix left
  out is generated from the text and `seed` (or is the worked example's). A form without
  JavaScript sends every grid cell as its own value (x=1&x=0&…): those are read in row order.
- `mask`: causal | bidirectional | window (a causal sliding window of `window` keys) |
  custom (`allowed`: one row of 0/1 per query, or cell=i.j for each visible pair from a form).
- `pad`: padded positions, "3,4". `scale=0` switches √d_k off. `query`: the position shown
  key by key. `seed`: for whatever is generated. `positional`: none | sinusoidal | rope.
- `action` is a one-off command from a button, never part of a state.

Bad input never fails the page: each problem becomes a sentence naming the field."""

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from pydantic import BaseModel, Field

from app.core import rules
from app.core.i18n import gettext
from app.core.limits import MAX_GRID_WIDTH, MAX_MAGNITUDE, MAX_TOKEN_CHARS
from app.features.lab.schemas import AttentionRequest
from app.features.stages.schemas import MaskSpec
from app.features.stages.service import mask_of
from app.math.positional import KINDS, Positional
from app.settings import Settings

MATRICES = ("x", "w_q", "w_k", "w_v")


MASK_MODES = ("causal", "bidirectional", "window", "custom")


ACTIONS = (
    "generate-x",
    *(f"{kind}-{name}" for kind in ("randomize", "identity") for name in MATRICES[1:]),
)


DEFAULT_WINDOW = 2


LABELS = {"x": "x", "w_q": "W_Q", "w_k": "W_K", "w_v": "W_V"}

Text = str | None
Texts = list[str]  # a parameter a form may send several times (one value per grid cell)


class LabParams(BaseModel):
    """The lab state's URL parameters, declared: read by /, /lab.json, /lab.csv, /kernel and
    /walkthrough. Values stay text here; `parse_items` reads them, one sentence per problem."""

    tokens: Text = Field(None, description="The text, split into tokens at spaces.")
    d_model: Text = Field(None, description="Width of x, 1 to 8.")
    d_k: Text = Field(None, description="Width of q and k, 1 to 8.")
    d_v: Text = Field(None, description="Width of v, 1 to 8.")
    seed: Text = Field(None, description="Seed for whatever is generated.")
    x: Texts = Field([], description='x as "1,0;0,1", or one value per cell from a form.')
    w_q: Texts = Field([], description="W_Q, written like x.")
    w_k: Texts = Field([], description="W_K, written like x.")
    w_v: Texts = Field([], description="W_V, written like x.")
    mask: Text = Field(None, description="causal, bidirectional, window or custom.")
    window: Text = Field(None, description="Keys a query sees with the sliding window.")
    allowed: Text = Field(None, description='The custom pattern, rows of 0/1: "10;11".')
    cell: Texts = Field([], description="A visible pair i.j of the custom pattern, from a form.")
    pad: Texts = Field([], description='Padded positions, "2,3".')
    scale: Text = Field(None, description="0 switches the division by √d_k off.")
    query: Text = Field(None, description="The position broken down key by key.")
    positional: Text = Field(None, description="none, sinusoidal or rope.")
    action: Text = Field(None, description="A button's one-off command (never part of a state).")

    @staticmethod
    def text_limits(settings: Settings) -> dict[str, int]:
        """The longest text a field can usefully hold on this server (app/web/deps.page_query
        cuts a longer one): tokens, max_tokens labels of at most MAX_TOKEN_CHARS."""
        return {"tokens": settings.max_tokens * (MAX_TOKEN_CHARS + 1)}


@dataclass
class LabState:
    """Everything the URL says; None means "not given: use the default"."""

    tokens: list[str] | None = None
    d_model: int | None = None
    d_k: int | None = None
    d_v: int | None = None
    seed: int = 0
    matrices: dict[str, list[list[float]]] = field(default_factory=dict)
    mask: str = "causal"
    window: int = DEFAULT_WINDOW
    allowed: list[list[bool]] | None = None
    pad: list[int] = field(default_factory=list)
    scale: bool = True
    query: int | None = None
    positional: Positional = "none"

    @property
    def n(self) -> int:
        return len(self.tokens) if self.tokens is not None else len(rules.WORKED_TOKENS)

    def mask_spec(self) -> MaskSpec:
        """The mask of /api/attention for this mode, the padding flags included."""
        padding = [i in self.pad for i in range(self.n)] if self.pad else None
        if self.mask == "bidirectional":
            return MaskSpec(padding=padding)
        if self.mask == "window":
            return MaskSpec(causal=True, window=self.window, padding=padding)
        if self.mask == "custom":
            return MaskSpec(allowed=self.allowed, padding=padding)
        return MaskSpec(causal=True, padding=padding)

    def pattern(self) -> np.ndarray:
        """The mode's visibility pattern before padding: what the pattern grid shows."""
        return mask_of(self.mask_spec().model_copy(update={"padding": None}), self.n)

    def to_request(self) -> AttentionRequest:
        """The one translation from the lab's URL to the request /api/attention takes."""
        return AttentionRequest(
            tokens=self.tokens,
            d_model=self.d_model,
            d_k=self.d_k,
            d_v=self.d_v,
            seed=self.seed,
            mask=self.mask_spec(),
            scale=self.scale,
            query=self.query,
            positional=self.positional,
            **self.matrices,
        )


class StateError(ValueError):
    """A sentence a student can act on; raised while reading one field."""


def number(text: str, where: str) -> float:
    cleaned = text.strip().replace("−", "-")
    try:
        value = float(cleaned)
    except ValueError:
        value = float("nan")
    if not np.isfinite(value) or abs(value) > MAX_MAGNITUDE:
        raise StateError(
            gettext("%(where)s: “%(text)s” is not a number; write numbers like 0.5 or −1")
            % {"where": where, "text": text.strip()}
        )
    return value


def integer(text: str, name: str, low: int, high: int) -> int:
    try:
        value = int(text.strip())
    except ValueError:
        raise StateError(
            gettext("%(name)s: “%(text)s” is not a whole number")
            % {"name": name, "text": text.strip()}
        ) from None
    if not low <= value <= high:
        raise StateError(
            gettext("%(name)s is %(value)s; choose a whole number from %(low)s to %(high)s")
            % {"name": name, "value": value, "low": low, "high": high}
        )
    return value


def matrix(text: str, name: str) -> list[list[float]]:
    """ "1,0;0,1" → [[1, 0], [0, 1]]."""
    label = LABELS[name]
    rows = text.strip().strip(";").split(";")
    return [
        [
            number(
                cell,
                gettext("%(label)s row %(row)s, number %(col)s")
                % {"label": label, "row": i + 1, "col": j + 1},
            )
            for j, cell in enumerate(row.split(","))
        ]
        for i, row in enumerate(rows)
    ]


def bits(text: str) -> list[list[bool]]:
    """ "100;110;111" → the custom pattern, one row per query."""
    rows = text.strip().strip(";").split(";")
    if any(set(row) - {"0", "1"} or not row for row in rows):
        raise StateError("allowed: write the custom pattern as rows of 0 and 1 separated by “;”")
    return [[c == "1" for c in row] for row in rows]


def positions(values: list[str], name: str) -> list[int]:
    return sorted({integer(p, name, 0, 100_000) for v in values for p in v.split(",") if p.strip()})


def flag(text: str, name: str) -> bool:
    value = text.strip().lower()
    if value in ("1", "true", "on", "yes"):
        return True
    if value in ("0", "false", "off", "no"):
        return False
    raise StateError(
        gettext("%(name)s: “%(text)s” is neither on (1) nor off (0)") % {"name": name, "text": text}
    )


@dataclass
class Parsed:
    """What the query string said, field by field, with the problems found on the way."""

    state: LabState
    cells: dict[str, list[float]] = field(default_factory=dict)  # grid cells from a form
    visible_cells: set[tuple[int, int]] | None = None  # cell=i.j from a form
    action: str | None = None
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what was used instead, said


def parse_items(items: Iterable[tuple[str, str]], max_tokens: int) -> Parsed:
    """Read every field on its own: a bad one is reported and left at its default."""
    values: dict[str, list[str]] = {}
    for key, value in items:
        values.setdefault(key, []).append(value)
    parsed = Parsed(LabState())
    state = parsed.state

    if "tokens" in values and not " ".join(values["tokens"]).split():
        parsed.notes.append(
            gettext("tokens: the text is empty, so the worked example's “%(text)s” is shown")
            % {"text": " ".join(rules.WORKED_TOKENS)}
        )

    def read(name: str, parse: Any) -> None:
        if name in values and any(v.strip() for v in values[name]):
            try:
                parse([v for v in values[name] if v.strip()])
            except StateError as problem:
                parsed.problems.append(str(problem))

    def set_tokens(vs: list[str]) -> None:
        tokens = " ".join(vs).split()
        if len(tokens) > max_tokens:
            raise StateError(
                gettext("tokens: there are %(n)s tokens; this server takes %(max)s")
                % {"n": len(tokens), "max": max_tokens}
            )
        long = [t for t in tokens if len(t) > MAX_TOKEN_CHARS]
        if long:
            raise StateError(
                gettext("tokens: “%(token)s…” is longer than %(max)s characters; split it")
                % {"token": long[0][:MAX_TOKEN_CHARS], "max": MAX_TOKEN_CHARS}
            )
        state.tokens = tokens

    def set_width(name: str) -> Any:
        return lambda vs: setattr(state, name, integer(vs[-1], name, 1, MAX_GRID_WIDTH))

    def set_matrix(name: str) -> Any:
        def parse(vs: list[str]) -> None:
            if len(vs) == 1 and ("," in vs[0] or ";" in vs[0]):
                state.matrices[name] = matrix(vs[0], name)
            else:
                label = LABELS[name]
                where = gettext("%(label)s cell %(cell)s")
                parsed.cells[name] = [
                    number(v, where % {"label": label, "cell": i + 1}) for i, v in enumerate(vs)
                ]

        return parse

    def set_mode(vs: list[str]) -> None:
        mode = vs[-1].strip()
        if mode not in MASK_MODES:
            raise StateError(
                gettext("mask: “%(mode)s” is not a mask; choose one of %(modes)s")
                % {"mode": mode, "modes": ", ".join(MASK_MODES)}
            )
        state.mask = mode

    def set_cells(vs: list[str]) -> None:
        pairs = set()
        for v in vs:
            i, _, j = v.partition(".")
            pairs.add((integer(i, "cell", 0, max_tokens), integer(j, "cell", 0, max_tokens)))
        parsed.visible_cells = pairs

    def set_positional(vs: list[str]) -> None:
        kind = vs[-1].strip()
        if kind not in KINDS:
            raise StateError(f"positional: “{kind}” is not one of {', '.join(KINDS)}")
        state.positional = kind

    def set_action(vs: list[str]) -> None:
        if vs[-1] not in ACTIONS:
            raise StateError(
                gettext("action: “%(action)s” is not a button of this page") % {"action": vs[-1]}
            )
        parsed.action = vs[-1]

    read("tokens", set_tokens)
    for name in ("d_model", "d_k", "d_v"):
        read(name, set_width(name))
    read("seed", lambda vs: setattr(state, "seed", integer(vs[-1], "seed", 0, 2**32 - 1)))
    for name in MATRICES:
        read(name, set_matrix(name))
    read("mask", set_mode)
    read("window", lambda vs: setattr(state, "window", integer(vs[-1], "window", 1, max_tokens)))
    read("allowed", lambda vs: setattr(state, "allowed", bits(vs[-1])))
    read("cell", set_cells)
    read("pad", lambda vs: setattr(state, "pad", positions(vs, "pad")))
    read("scale", lambda vs: setattr(state, "scale", flag(vs[-1], "scale")))
    read("query", lambda vs: setattr(state, "query", integer(vs[-1], "query", 0, max_tokens)))
    read("positional", set_positional)
    read("action", set_action)
    return parsed
