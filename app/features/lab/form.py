"""The head lab's state, as its query string says it: read, fitted and written back here.

    /?tokens=The cat sleeps&d_model=2&d_k=2&d_v=2&x=1,0;0,1;1,1&w_q=1,0.5;0,1
      &w_k=0.5,1;1,0&w_v=1,-1;0.5,1&mask=causal&query=1

- `tokens`: the text, split into tokens at spaces.
- `x`, `w_q`, `w_k`, `w_v`: a matrix, rows separated by ";" and numbers by ","; a form
  without JavaScript sends every grid cell as its own value (x=1&x=0&…), read in row order.
  A matrix left out is generated from the text and `seed` (or is the worked example's).
- `mask`: causal | bidirectional | window (a causal sliding window of `window` keys) |
  custom (`allowed`: one row of 0/1 per query, or cell=i.j for each visible pair from a form).
- `pad`: padded positions, "3,4". `scale=0` switches √d_k off. `query`: the position shown
  key by key. `seed`: for whatever is generated. `positional`: none | sinusoidal | rope.
- `action`: a button's one-off command (generate x, randomize or reset a projection), never
  part of a state.

`LabForm.read(query)` reads it: a field that does not parse keeps its default and becomes a
Problem. `form.fitted()` makes the parts agree and resolves every input once: the form as it
is computed, each width and the query filled in, a matrix written out only where leaving it
out would give other numbers. Its `request()` is the /api/attention request, its `state()`
the canonical URL.
"""

from typing import Annotated, Any, Literal, NamedTuple

import numpy as np
from pydantic import BeforeValidator, Field, ValidationInfo, model_validator
from pydantic_core import PydanticCustomError

from app.core import rules
from app.core.errors import cut
from app.core.formatting import matrix_text
from app.core.i18n import N_, format_number, gettext, ngettext
from app.core.limits import (
    HARD_MAX_TOKENS,
    MAX_ECHO_CHARS,
    MAX_GRID_WIDTH,
    MAX_MAGNITUDE,
    MAX_TOKEN_CHARS,
)
from app.features.lab.schemas import AttentionRequest
from app.features.lab.service import (
    HeadInputs,
    default_query,
    generated_projection,
    generated_x,
)
from app.features.stages.schemas import MaskSpec
from app.math import attention as att
from app.math.positional import KINDS, Positional
from app.settings import Settings
from app.web.pages import DECIMAL, PageForm, Problem, Whole

MATRICES = ("x", "w_q", "w_k", "w_v")
PROJECTIONS = ("w_q", "w_k", "w_v")
LABELS = {"x": "x", "w_q": "W_Q", "w_k": "W_K", "w_v": "W_V"}

MaskMode = Literal["causal", "bidirectional", "window", "custom"]
MASK_MODES: tuple[tuple[MaskMode, str], ...] = (
    ("causal", N_("Causal (a decoder)")),
    ("bidirectional", N_("Bidirectional (an encoder)")),
    ("window", N_("Sliding window")),
    ("custom", N_("Custom pattern")),
)
ACTIONS = (
    "generate-x",
    *(f"{kind}-{name}" for kind in ("randomize", "identity") for name in PROJECTIONS),
)
DEFAULT_WINDOW = 2
# The longest text worth reading: the most tokens a server may take, each at its longest.
TOKENS_MAX_CHARS = HARD_MAX_TOKENS * (MAX_TOKEN_CHARS + 1)

GridRows = list[list[float]]  # the numbers of one grid field, row by row, as typed


def text_limits(settings: Settings) -> dict[str, int]:
    """The longest text this server reads for the lab's fields: `tokens`, max_tokens labels at
    their longest with a space each (the pages that read the lab's state cut it there)."""
    return {"tokens": settings.max_tokens * (MAX_TOKEN_CHARS + 1)}


def problem(message: str) -> PydanticCustomError:
    """A field's problem, said in a sentence that starts with the field's name."""
    return PydanticCustomError("lab_input", message)


def echoed(text: str) -> str:
    return cut(text.strip(), MAX_ECHO_CHARS)


def number(text: str, where: str) -> float:
    """A matrix entry: the one rule for numbers in a query string, within ±MAX_MAGNITUDE."""
    cleaned = text.strip().replace("−", "-")
    if DECIMAL.fullmatch(cleaned) and abs(float(cleaned)) <= MAX_MAGNITUDE:
        return float(cleaned)
    raise problem(
        gettext(
            "%(where)s: “%(text)s” is not a number from −%(max)s to %(max)s; write numbers "
            "like 0.5 or −1"
        )
        % {"where": where, "text": echoed(text), "max": format_number(MAX_MAGNITUDE)}
    )


def grid(values: Any, info: ValidationInfo) -> GridRows:
    """ "1,0;0,1" → [[1, 0], [0, 1]]; one value per cell (a form without JavaScript) → one
    row of all the cells in order, which `fitted` splits into rows of the matrix's width.
    Nothing but empty values: not given."""
    name = info.field_name or ""
    texts = [values] if isinstance(values, str) else list(values)
    if not any(text.strip() for text in texts):
        return []
    if len(texts) > 1:
        where = gettext("%(name)s cell %(cell)s")
        return [[number(t, where % {"name": name, "cell": i + 1}) for i, t in enumerate(texts)]]
    where = gettext("%(name)s row %(row)s, number %(col)s")
    rows = [
        [
            number(cell, where % {"name": name, "row": i + 1, "col": j + 1})
            for j, cell in enumerate(row.split(","))
        ]
        for i, row in enumerate(texts[0].strip().strip(";").split(";"))
    ]
    for i, row in enumerate(rows):
        if len(row) != len(rows[0]):
            raise problem(
                ngettext(
                    "%(name)s row %(row)s has %(n)s number but row 1 has %(width)s; every "
                    "row of a matrix needs the same length",
                    "%(name)s row %(row)s has %(n)s numbers but row 1 has %(width)s; every "
                    "row of a matrix needs the same length",
                    len(row),
                )
                % {"name": name, "row": i + 1, "n": len(row), "width": len(rows[0])}
            )
    return rows


def pattern(value: Any) -> list[list[bool]]:
    """ "100;110;111" → the custom pattern, one row of 0 and 1 per query."""
    rows = str(value).strip().strip(";").split(";")
    if any(set(row) - {"0", "1"} or not row for row in rows):
        raise problem(
            gettext("allowed: write the custom pattern as rows of 0 and 1 separated by “;”")
        )
    return [[c == "1" for c in row] for row in rows]


def positions(values: Any) -> list[int]:
    """ "2,3" (or one value per ticked box) → the padded positions, in order."""
    texts = [values] if isinstance(values, str) else list(values)
    found = set()
    for text in (t.strip() for v in texts for t in v.split(",")):
        if not text:
            continue
        if not text.isascii() or not text.isdigit() or int(text) >= HARD_MAX_TOKENS:
            raise problem(
                gettext("pad: “%(text)s” is not a position; write positions like 2,3")
                % {"text": echoed(text)}
            )
        found.add(int(text))
    return sorted(found)


def pairs(values: Any) -> list[tuple[int, int]]:
    """cell=i.j, one per ticked box of the pattern: the visible (query, key) pairs."""
    texts = [values] if isinstance(values, str) else list(values)
    found = []
    for text in texts:
        i, dot, j = text.strip().partition(".")
        if not (dot and i.isascii() and j.isascii() and i.isdigit() and j.isdigit()):
            raise problem(
                gettext("cell: “%(text)s” is not a pair of positions such as 0.1")
                % {"text": echoed(text)}
            )
        found.append((int(i), int(j)))
    return found


def tokens_text(value: Any) -> Any:
    """The text as typed; a token longer than MAX_TOKEN_CHARS is a problem."""
    long = next((t for t in str(value).split() if len(t) > MAX_TOKEN_CHARS), None)
    if long is not None:
        raise problem(
            gettext("tokens: “%(token)s…” is longer than %(max)s characters; split it")
            % {"token": long[:MAX_TOKEN_CHARS], "max": MAX_TOKEN_CHARS}
        )
    return value


def one_of(choices: tuple[str, ...], sentence: str) -> BeforeValidator:
    """A choice among `choices`, or `sentence` (with %(text)s and %(choices)s) translated."""

    def check(value: Any) -> Any:
        if value not in choices:
            raise problem(
                gettext(sentence) % {"text": echoed(str(value)), "choices": ", ".join(choices)}
            )
        return value

    return BeforeValidator(check)


Grid = Annotated[GridRows, BeforeValidator(grid)]


class Fitted(NamedTuple):
    """A state fitted (LabForm.fitted): the form as computed, its inputs resolved once, what
    the URL asked for that cannot be, and what was adjusted to the tokens."""

    form: "LabForm"
    inputs: HeadInputs
    problems: list[Problem]
    notes: list[str]


class LabForm(PageForm):
    """The lab's state as its query string says it (see the module's docstring)."""

    tokens: Annotated[str | None, BeforeValidator(tokens_text)] = Field(
        None, max_length=TOKENS_MAX_CHARS
    )
    d_model: Whole | None = Field(None, ge=1, le=MAX_GRID_WIDTH)
    d_k: Whole | None = Field(None, ge=1, le=MAX_GRID_WIDTH)
    d_v: Whole | None = Field(None, ge=1, le=MAX_GRID_WIDTH)
    seed: Whole = Field(0, ge=0, le=2**32 - 1)
    x: Grid = Field(default_factory=list)
    w_q: Grid = Field(default_factory=list)
    w_k: Grid = Field(default_factory=list)
    w_v: Grid = Field(default_factory=list)
    mask: Annotated[
        MaskMode,
        one_of(
            tuple(mode for mode, _ in MASK_MODES),
            N_("mask: “%(text)s” is not a mask; choose one of %(choices)s"),
        ),
    ] = "causal"
    window: Whole = Field(DEFAULT_WINDOW, ge=1, le=HARD_MAX_TOKENS)
    allowed: Annotated[list[list[bool]] | None, BeforeValidator(pattern)] = None
    cell: Annotated[list[tuple[int, int]], BeforeValidator(pairs)] = Field(default_factory=list)
    pad: Annotated[list[int], BeforeValidator(positions)] = Field(default_factory=list)
    scale: bool = True
    query: Whole | None = Field(None, ge=0, le=HARD_MAX_TOKENS)
    positional: Annotated[
        Positional,
        one_of(KINDS, N_("positional: “%(text)s” is not one of %(choices)s")),
    ] = "none"
    action: Annotated[
        str | None,
        one_of(ACTIONS, N_("action: “%(text)s” is not a button of this page")),
    ] = None

    @model_validator(mode="before")
    @classmethod
    def empty_means_absent(cls, data: Any) -> Any:
        """A field left empty (`seed=`) is a field not given; only an empty text is said."""
        if isinstance(data, dict):
            return {k: v for k, v in data.items() if k == "tokens" or v != ""}
        return data

    # ------------------------------------------------------------------ fitting

    def fitted(self) -> Fitted:
        """The parts made to agree and every input resolved, once; what the URL asked for that
        cannot be (an empty text, a query past the last token) is a problem, said with what
        is shown instead, and what was only adjusted to the tokens is a note.

        An edit changes only what was edited: the tokens that stay keep their x rows and only
        new tokens get generated ones; a wider d_model, d_k or d_v keeps every column there is
        and generates only the new ones (a narrower one drops the last); the padding, the
        custom pattern and the query follow the number of tokens. A button's action is
        applied here (generating everything again is what the buttons are for). The form
        returned writes out every width, the query, and the matrices that differ from what
        the text and seed generate."""
        problems: list[Problem] = []
        notes: list[str] = []
        text = self.tokens
        if text is not None and not text.split():
            said = gettext("tokens: the text is empty, so the worked example's “%(text)s” is shown")
            problems.append(Problem("tokens", said % {"text": " ".join(rules.WORKED_TOKENS)}))
            text = None
        tokens = text.split() if text is not None else list(rules.WORKED_TOKENS)
        n = len(tokens)
        x_given = self.x or None
        rows = next((len(getattr(self, p)) for p in PROJECTIONS if getattr(self, p)), None)
        x_default, worked_text = generated_x(
            tokens, self.d_model or (len(x_given[0]) if x_given else rows), self.seed
        )
        d_model = x_default.shape[1]
        d_k = self.d_k or next((len(w[0]) for w in (self.w_q, self.w_k) if w), d_model)
        d_v = self.d_v or (len(self.w_v[0]) if self.w_v else d_model)
        widths = {"x": d_model, "w_q": d_k, "w_k": d_k, "w_v": d_v}
        cells: dict[str, GridRows | None] = {}
        for name in MATRICES:
            given = getattr(self, name)
            cells[name] = (
                in_rows(given, widths[name], n if name == "x" else d_model) if given else None
            )
            if given and cells[name] is None:
                notes.append(
                    gettext("%(label)s did not fill whole rows, so it was generated again")
                    % {"label": LABELS[name]}
                )

        x = grown(cells["x"], x_default) if cells["x"] else x_default
        worked = worked_text and np.array_equal(x, x_default)
        defaults = {"x": x_default, **projection_defaults(widths, self.seed, worked)}
        used = {"x": x} | {
            p: grown(cells[p], defaults[p]) if cells[p] else defaults[p] for p in PROJECTIONS
        }
        query = default_query(n, worked) if self.query is None else self.query
        if query >= n:
            said = gettext("query %(given)s is past the last token (%(last)s): showing %(last)s")
            problems.append(Problem("query", said % {"given": query, "last": n - 1}))
            query = n - 1
        seed = self.seed
        if self.action is not None:  # what leaving a matrix out gives may change with it
            seed = acted(self.action, used, tokens, widths, seed)
            if seed != self.seed:
                x_default, worked_text = generated_x(tokens, d_model, seed)
            worked = worked_text and np.array_equal(used["x"], x_default)
            defaults = {"x": x_default, **projection_defaults(widths, seed, worked)}
        written = {
            name: used[name].tolist()
            for name in MATRICES
            if not np.array_equal(used[name], defaults[name])
        }
        fitted = self.model_copy(
            update={
                "tokens": " ".join(tokens),
                "d_model": d_model,
                "d_k": d_k,
                "d_v": d_v,
                "seed": seed,
                **{name: written.get(name, []) for name in MATRICES},
                "allowed": self.fitted_pattern(n),
                "cell": [],
                "pad": [p for p in self.pad if p < n],
                "query": query,
                "action": None,
            }
        )
        past = [p for p in self.pad if p >= n]
        if past:
            notes.append(
                ngettext(
                    "pad %(positions)s is past the last token (%(last)s): left out",
                    "pad %(positions)s are past the last token (%(last)s): left out",
                    len(past),
                )
                % {"positions": ", ".join(map(str, past)), "last": n - 1}
            )
        inputs = HeadInputs(
            tokens,
            used["x"],
            used["w_q"],
            used["w_k"],
            used["w_v"],
            fitted.mask_spec(),
            fitted.scale,
            query,
            fitted.positional,
            given=("d_model", "d_k", "d_v", *written),
        )
        return Fitted(fitted, inputs, problems, notes)

    def fitted_pattern(self, n: int) -> list[list[bool]] | None:
        """The custom pattern, n × n: as given (the URL's rows or a form's ticked cells),
        causal where it says nothing; None for the other masks."""
        if self.mask != "custom":
            return None
        start = self.allowed
        if start is None and self.cell:
            ticked = set(self.cell)
            start = [[(i, j) in ticked for j in range(n)] for i in range(n)]
        causal = att.causal_mask(n)
        return [
            [
                bool(start[i][j]) if start and i < len(start) and j < len(start[i]) else bool(seen)
                for j, seen in enumerate(row)
            ]
            for i, row in enumerate(causal)
        ]

    # ------------------------------------------------------------------ what a fitted form means

    @property
    def token_list(self) -> list[str]:
        return self.tokens.split() if self.tokens else list(rules.WORKED_TOKENS)

    def mask_spec(self) -> MaskSpec:
        """The mask of /api/attention for this mode, the padding flags included."""
        n = len(self.token_list)
        padding = [i in self.pad for i in range(n)] if self.pad else None
        if self.mask == "bidirectional":
            return MaskSpec(padding=padding)
        if self.mask == "window":
            return MaskSpec(causal=True, window=self.window, padding=padding)
        if self.mask == "custom":
            return MaskSpec(allowed=self.allowed, padding=padding)
        return MaskSpec(causal=True, padding=padding)

    def request(self) -> AttentionRequest:
        """The /api/attention request of this state (of a fitted form: every input it
        writes out; the rest is generated the same way by the service)."""
        return AttentionRequest(
            tokens=self.token_list,
            d_model=self.d_model,
            d_k=self.d_k,
            d_v=self.d_v,
            seed=self.seed,
            mask=self.mask_spec(),
            scale=self.scale,
            query=self.query,
            positional=self.positional,
            **{name: getattr(self, name) for name in MATRICES if getattr(self, name)},
        )

    def state(self) -> list[tuple[str, Any]]:
        """The canonical parameters of a fitted form, in the URL's order: what applies, never
        a button's one-off action."""
        params: list[tuple[str, Any]] = [
            ("tokens", " ".join(self.token_list)),
            ("d_model", self.d_model),
            ("d_k", self.d_k),
            ("d_v", self.d_v),
        ]
        if self.seed:
            params.append(("seed", self.seed))
        params += [
            (name, matrix_text(getattr(self, name))) for name in MATRICES if getattr(self, name)
        ]
        params.append(("mask", self.mask))
        if self.mask == "window":
            params.append(("window", self.window))
        if self.mask == "custom" and self.allowed is not None:
            bits = ";".join("".join("01"[b] for b in row) for row in self.allowed)
            params.append(("allowed", bits))
        if self.pad:
            params.append(("pad", ",".join(map(str, self.pad))))
        if not self.scale:
            params.append(("scale", 0))
        if self.positional != "none":
            params.append(("positional", self.positional))
        params.append(("query", self.query))
        return params


def in_rows(cells: GridRows, width: int, height: int) -> GridRows | None:
    """A grid as rows: as given, or a form's cells (one row holding all of them) split into
    rows of `width`; None when those cells do not fill whole rows."""
    if height == 1 or len(cells) != 1 or len(cells[0]) == width:
        return cells
    flat = cells[0]
    if len(flat) % width:
        return None
    return [flat[r : r + width] for r in range(0, len(flat), width)]


def grown(matrix: GridRows, fresh: np.ndarray) -> np.ndarray:
    """`fresh`'s shape, with the entries `matrix` has where the two overlap."""
    old = np.asarray(matrix, dtype=float)
    out = fresh.copy()
    rows, cols = min(old.shape[0], out.shape[0]), min(old.shape[1], out.shape[1])
    out[:rows, :cols] = old[:rows, :cols]
    return out


def acted(
    action: str, used: dict[str, np.ndarray], tokens: list[str], widths: dict[str, int], seed: int
) -> int:
    """A button's effect on the inputs in use (changed in place), and the seed after it:
    generate x from the text, or fill one projection with the next seed's numbers or the
    identity. Every other matrix stays exactly as it is."""
    d_model = widths["x"]
    if action == "generate-x":
        used["x"] = att.token_vectors(tokens, d_model, seed)
        return seed
    kind, name = action.split("-", 1)
    if kind == "identity":
        used[name] = np.eye(d_model, widths[name])
        return seed
    seed = (seed + 1) % 2**32
    used[name] = att.random_projection(d_model, widths[name], seed, name)
    return seed


def projection_defaults(widths: dict[str, int], seed: int, worked: bool) -> dict[str, np.ndarray]:
    """What leaving each projection out gives (the worked example's while x is its rows)."""
    return {
        name: generated_projection(name, widths["x"], widths[name], seed, worked)
        for name in PROJECTIONS
    }
