"""The head lab's state as a URL: one compact, readable encoding, parsed in this one place.

    /?tokens=The cat sleeps&d_model=2&d_k=2&d_v=2&x=1,0;0,1;1,1&w_q=1,0.5;0,1
      &w_k=0.5,1;1,0&w_v=1,-1;0.5,1&mask=causal&query=1

- `tokens`: the text, split into tokens at spaces.
- `x`, `w_q`, `w_k`, `w_v`: a matrix, rows separated by ";" and numbers by ",". A matrix left
  out is generated from the text and `seed` (or is the worked example's). A form without
  JavaScript sends every grid cell as its own value (x=1&x=0&…): those are read in row order,
  d_model (x) or d_k (w_q, w_k) or d_v (w_v) numbers per row.
- `mask`: causal | bidirectional | window (a causal sliding window of `window` keys) |
  custom (`allowed`: one row of 0/1 per query, or cell=i.j for each visible pair from a form).
- `pad`: padded positions, "3,4". `scale=0` switches √d_k off. `query`: the position shown
  key by key. `seed`: for whatever is generated. `positional`: none | sinusoidal | rope.
- `action` is a one-off command from a button, never part of a state: generate-x,
  randomize-w_q, identity-w_v, …

Bad input never fails the page: each problem becomes a sentence naming the field, and the
page shows what it could compute. `lab_page` is the whole way from query items to a page.
"""

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import urlencode

import numpy as np
from pydantic import ValidationError

from app import attention as att
from app.config import Settings
from app.errors import InputError, validation_errors
from app.i18n import gettext
from app.positional import KINDS, Positional
from app.schemas import AttentionRequest, MaskSpec
from app.service import compute_attention, mask_of, position_demo, resolve_inputs

MATRICES = ("x", "w_q", "w_k", "w_v")
MASK_MODES = ("causal", "bidirectional", "window", "custom")
ACTIONS = (
    "generate-x",
    *(f"{kind}-{name}" for kind in ("randomize", "identity") for name in MATRICES[1:]),
)
MAX_GRID_WIDTH = 8  # d_model, d_k and d_v are edited cell by cell: 1 to 8 columns
DEFAULT_WINDOW = 2
LABELS = {"x": "x", "w_q": "W_Q", "w_k": "W_K", "w_v": "W_V"}


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
        return len(self.tokens) if self.tokens is not None else len(att.WORKED_TOKENS)

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


# ---------------------------------------------------------------- parsing


class StateError(ValueError):
    """A sentence a student can act on; raised while reading one field."""


def number(text: str, where: str) -> float:
    cleaned = text.strip().replace("−", "-")
    try:
        value = float(cleaned)
    except ValueError:
        value = float("nan")
    if not np.isfinite(value) or abs(value) > 1e6:
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


def parse_items(items: Iterable[tuple[str, str]], max_tokens: int) -> Parsed:
    """Read every field on its own: a bad one is reported and left at its default."""
    values: dict[str, list[str]] = {}
    for key, value in items:
        values.setdefault(key, []).append(value)
    parsed = Parsed(LabState())
    state = parsed.state

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
        long = [t for t in tokens if len(t) > 40]
        if long:
            raise StateError(
                gettext("tokens: “%(token)s…” is longer than 40 characters; split it")
                % {"token": long[0][:40]}
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


# ---------------------------------------------------------------- fitting shapes


def fit(parsed: Parsed) -> tuple[LabState, list[str]]:
    """Make the parts agree after an edit changed a size, and say what was regenerated.

    New tokens keep the x rows they had and get generated rows; a matrix whose width no
    longer matches d_model, d_k or d_v is generated again; the padding, the custom pattern
    and the query follow the number of tokens.
    """
    state = replace(parsed.state, matrices=dict(parsed.state.matrices))
    notes: list[str] = []
    n = state.n
    tokens = state.tokens if state.tokens is not None else list(att.WORKED_TOKENS)
    heights = {"x": n, "w_q": state.d_model, "w_k": state.d_model, "w_v": state.d_model}
    widths = {"x": state.d_model, "w_q": state.d_k, "w_k": state.d_k, "w_v": state.d_v}
    for name, cells in parsed.cells.items():
        width = widths[name] or (len(cells) // heights[name] if heights[name] else None)
        if width and len(cells) % width == 0:
            state.matrices[name] = [cells[r : r + width] for r in range(0, len(cells), width)]
        else:
            notes.append(
                gettext("%(label)s did not fill whole rows, so it was generated again")
                % {"label": LABELS[name]}
            )

    x = state.matrices.get("x")
    if x is not None and len({len(row) for row in x}) == 1:
        width = len(x[0])
        if state.d_model is not None and width != state.d_model:
            del state.matrices["x"]
            notes.append(
                gettext("x was generated again from the text for d_model = %(d_model)s")
                % {"d_model": state.d_model}
            )
        elif len(x) != n:
            extra = att.token_vectors(tokens[len(x) :], width, state.seed).tolist()
            state.matrices["x"] = (x + extra)[:n]
    d_model = state.d_model or (len(x[0]) if x else None)
    for name in MATRICES[1:]:
        w = state.matrices.get(name)
        if w is None or len({len(row) for row in w}) != 1 or d_model is None:
            continue
        if len(w) != d_model or (widths[name] is not None and len(w[0]) != widths[name]):
            del state.matrices[name]
            notes.append(
                gettext("%(label)s was generated again to fit the new widths")
                % {"label": LABELS[name]}
            )

    state.pad = [p for p in state.pad if p < n]
    if state.mask == "custom":
        start = state.allowed
        if start is None and parsed.visible_cells is not None:
            start = [[(i, j) in parsed.visible_cells for j in range(n)] for i in range(n)]
        causal = att.causal_mask(n)
        state.allowed = [
            [
                bool(start[i][j])
                if start and i < len(start) and j < len(start[i])
                else bool(causal[i, j])
                for j in range(n)
            ]
            for i in range(n)
        ]
    else:
        state.allowed = None
    if state.query is not None and state.query >= n:
        state.query = n - 1
    return state, notes


# ---------------------------------------------------------------- actions


def apply_action(state: LabState, result: dict[str, Any], action: str) -> LabState:
    """A button's effect on a computed state: generate x, or fill one projection."""
    d_model = int(result["d_model"])
    state = replace(state, query=int(result["query"]["index"]))
    if action == "generate-x":
        x = att.token_vectors(result["tokens"], d_model, state.seed).tolist()
        return replace(state, matrices={**state.matrices, "x": x})
    kind, name = action.split("-", 1)
    width = int(result["d_v"] if name == "w_v" else result["d_k"])
    # Keep every other matrix exactly as it is now, whatever the seed generates next.
    frozen = {m: np.asarray(result[m]).tolist() for m in MATRICES}
    if kind == "identity":
        frozen[name] = np.eye(d_model, width).tolist()
        return replace(state, matrices=frozen)
    seed = (state.seed + 1) % 2**32
    frozen[name] = att.random_projection(d_model, width, seed, name).tolist()
    return replace(state, seed=seed, matrices=frozen)


# ---------------------------------------------------------------- encoding


def number_text(value: float) -> str:
    """The shortest text that reads back as the same float: 1, 0.5, -0.34, 1e-07."""
    value = float(value)
    if value == 0:
        return "0"
    text = repr(value)
    return text[:-2] if text.endswith(".0") else text


def matrix_text(m: Any) -> str:
    return ";".join(",".join(number_text(v) for v in row) for row in np.asarray(m).tolist())


def state_params(
    state: LabState, result: dict[str, Any], settings: Settings
) -> list[tuple[str, Any]]:
    """The canonical parameters of a computed state. A matrix is written out only when
    leaving it out would give different numbers, so generated states stay short."""
    tokens = list(result["tokens"])
    dims = {name: int(result[name]) for name in ("d_model", "d_k", "d_v")}
    params: list[tuple[str, Any]] = [("tokens", " ".join(tokens)), *dims.items()]
    if state.seed:
        params.append(("seed", state.seed))
    defaults = resolve_inputs(AttentionRequest(tokens=tokens, seed=state.seed, **dims), settings)
    for name in MATRICES:
        if not np.array_equal(result[name], getattr(defaults, name)):
            params.append((name, matrix_text(result[name])))
    params.append(("mask", state.mask))
    if state.mask == "window":
        params.append(("window", state.window))
    if state.mask == "custom" and state.allowed is not None:
        params.append(("allowed", ";".join("".join("01"[b] for b in row) for row in state.allowed)))
    if state.pad:
        params.append(("pad", ",".join(map(str, state.pad))))
    if not state.scale:
        params.append(("scale", 0))
    if state.positional != "none":
        params.append(("positional", state.positional))
    params.append(("query", result["query"]["index"]))
    return params


def encode(params: list[tuple[str, Any]]) -> str:
    """A query string that stays readable: "," and ";" are left as they are."""
    return urlencode(params, safe=",;")


# ---------------------------------------------------------------- the page


@dataclass
class LabPage:
    """A computed lab: the state shown, its result, its URL, and what went wrong."""

    state: LabState
    result: dict[str, Any]
    params: list[tuple[str, Any]]  # the canonical state, in URL order
    problems: list[str]
    notes: list[str]
    action: str | None
    demo: dict[str, Any] | None = None  # shuffle the tokens: does the head notice? (_position.html)

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def query(self) -> str:
        """The canonical query string (without "?")."""
        return encode(self.params)

    @property
    def given(self) -> set[str]:
        """The matrices the URL writes out (the others are generated)."""
        return {name for name, _ in self.params if name in MATRICES}


def _compute(state: LabState, settings: Settings) -> dict[str, Any]:
    """Raises StateError with readable sentences when the request or its limits are wrong."""
    try:
        return compute_attention(state.to_request(), settings)
    except ValidationError as error:
        raise StateError(" ".join(e["msg"] for e in validation_errors(error.errors()))) from None
    except InputError as error:
        raise StateError(error.msg) from None


def lab_page(items: Iterable[tuple[str, str]], settings: Settings) -> LabPage:
    """Query items → the lab to show. Never raises for bad input: when the state cannot be
    computed, its numbers are generated from the text instead, or the worked example is
    shown, and `problems` says why."""
    parsed = parse_items(items, settings.max_tokens)
    state, notes = fit(parsed)
    problems = list(parsed.problems)
    fallbacks = [
        state,
        replace(state, matrices={}, mask="causal", allowed=None, query=None),
        LabState(),
    ]
    for attempt, candidate in enumerate(fallbacks):
        try:
            result = _compute(candidate, settings)
        except StateError as problem:
            if attempt == 0:
                problems.append(str(problem))
            continue
        if attempt == 1:
            notes.append(
                gettext("The numbers below are generated from the text until that is fixed.")
            )
        elif attempt == 2:
            notes.append(gettext("The page shows the worked example until that is fixed."))
        state = candidate
        break
    if parsed.action and not problems:
        state = apply_action(state, result, parsed.action)
        result = _compute(state, settings)
    params = state_params(state, result, settings)
    demo = position_demo(state.to_request(), result, compute_attention, settings)
    return LabPage(state, result, params, problems, notes, parsed.action, demo)
