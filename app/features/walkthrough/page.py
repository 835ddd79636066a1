"""The guided walk-through of one head: x → Q, K, V → Q·Kᵀ → ÷√d_k → + M → softmax → × V → Σ.

One step at a time, on any state of the head lab: the page reads the lab state from its URL
(LabForm, computed once by the lab's lab_head) and shows, for the step it is on, that step's
heatmaps (the shared stage strip's, app/features/stages/page.py), a sentence worded from its
numbers (sentences.py), the selected query's keys as a table of what goes into the step and
what comes out, and, in "predict first" mode, a guess of one weight that the server checks
before it reveals the weights.
"""

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from app.core.i18n import N_, gettext
from app.features.lab.form import LabForm
from app.features.lab.page import lab_head
from app.features.stages.page import head_stages, matrix_map
from app.features.stages.results import OneHead, QueryBreakdown, QueryRow
from app.features.walkthrough import sentences as say
from app.features.walkthrough.form import STEP_NAMES, WalkForm
from app.figures.heatmap import Heatmap, signed_scale
from app.settings import Settings
from app.web.classroom import url
from app.web.pages import Page, Problem

# (name in the URL, the short label in the step list)
STEPS: tuple[tuple[str, str], ...] = tuple(
    zip(STEP_NAMES, ("x", "Q, K, V", "Q·Kᵀ", "÷ √d_k", "+ M", "softmax", "× V", "Σ"), strict=True)
)
PATH = "/walkthrough"

# How far a guess may be from the weight and still count as spot on / close.
VERDICTS = (
    (0.05, N_("Spot on.")),
    (0.15, N_("Close.")),
    (float("inf"), N_("Not quite.")),
)


@dataclass(frozen=True)
class Guess:
    """The class's guess of the weight the query gives one key, and how far off it is: both
    as the page prints them (three decimals), so that the difference shown is theirs."""

    key: int
    token: str  # the key's token
    value: float | None  # None until the class has guessed
    weight: float

    @property
    def made(self) -> bool:
        return self.value is not None

    @property
    def off_by(self) -> float:
        return abs(say.shown(self.value or 0.0) - say.shown(self.weight))

    @property
    def verdict(self) -> str:
        return gettext(next(text for limit, text in VERDICTS if self.off_by <= limit))


@dataclass(frozen=True)
class StepLink:
    name: str
    label: str
    href: str
    current: bool


@dataclass(frozen=True)
class Column:
    name: str  # what the column holds: dot, scaled, mask, masked, weight, k, v, weighted
    header: str


@dataclass(frozen=True)
class KeyRow:
    token: str
    cells: tuple[str, ...]
    hidden: bool  # the mask hides this key from the query


@dataclass(frozen=True)
class KeyTable:
    """The selected query's keys: what goes into the step and what comes out, and the sum of
    a column where the step adds one up. `rounded` says that a sum of parts rounded to three
    decimals differs in its last decimal from the sum shown (the page then says why)."""

    caption: str
    columns: tuple[Column, ...]
    rows: tuple[KeyRow, ...]
    total: tuple[str, ...] | None = None  # one text per column, "" where nothing is summed
    rounded: bool = False


@dataclass(frozen=True, kw_only=True)
class WalkView:
    """Everything templates/walkthrough/ shows for one step of one lab state."""

    query: str  # the selected query's token
    steps: tuple[StepLink, ...]
    step: str
    number: int
    label: str
    sentence: str
    figures: tuple[Heatmap, ...]
    table: KeyTable | None
    guess: Guess | None  # in "predict first" on the weights step, when a key can be guessed
    choices: tuple[tuple[int, str], ...]  # the keys the guess may be for
    hold_back: bool  # the weights are not shown until the class has guessed
    predict: bool
    previous: str | None
    next: str | None
    lab_link: str  # the same head in the lab
    state: list[tuple[str, str]]  # the lab state, for the forms' hidden fields

    @property
    def total(self) -> int:
        return len(self.steps)


def walkthrough_page(
    form: WalkForm,
    problems: list[Problem],
    notes: list[str],
    lab: tuple[LabForm, list[Problem], list[str]],
    settings: Settings,
) -> Page:
    """One step of the walk-through for the lab state read from the same query (LabForm),
    computed once. The lab's buttons are not on this page: an `action` is left out."""
    lab_form, lab_problems, lab_notes = lab
    head = lab_head(
        lab_form.model_copy(update={"action": None}),
        [*problems, *lab_problems],
        [*notes, *lab_notes],
        settings,
    )
    problems, notes = list(head.problems), list(head.notes)
    state = [(name, str(value)) for name, value in head.state]
    view, note = walk_view(head.result.head(), head.result.positional, form, state)
    if note:
        notes.append(note)
    guess_key = view.guess.key if view.guess and view.guess.made else None
    return Page(
        template="walkthrough/walkthrough.html",
        fragment="walkthrough/_live.html",
        view=view,
        problems=problems,
        notes=notes,
        state=[*state, *form.state(guess_key)],
    )


def walk_view(
    head: OneHead, positional: str, form: WalkForm, state: Sequence[tuple[str, str]]
) -> tuple[WalkView, str | None]:
    """The view of one step, and a note when the guessed key had to be another one."""
    stages = head_stages(head, prefix="walk")
    query = stages.query
    step = form.step
    index = STEP_NAMES.index(step)
    walk = [*state, *([("predict", "1")] if form.predict else [])]

    def link(name: str) -> str:
        return url(PATH, [*walk, ("step", name)])

    guess, note = guess_of(query, form) if form.predict and step == "weights" else (None, None)
    hold_back = guess is not None and not guess.made
    by = stages.scale_label
    if step == "x":
        figures = (matrix_figure("x", head.x, head.tokens, "x", "x"),)
    elif step == "qkv":
        figures = (
            matrix_figure("q", head.q, head.tokens, "Q = x·W_Q", "Q"),
            matrix_figure("k", head.k, head.tokens, "K = x·W_K", "K"),
            matrix_figure("v", head.v, head.tokens, "V = x·W_V", "V"),
        )
    else:
        figures = (stages.stage("masked" if hold_back else step).map,)
    view = WalkView(
        query=query.token,
        steps=tuple(StepLink(name, label, link(name), name == step) for name, label in STEPS),
        step=step,
        number=index + 1,
        label=STEPS[index][1],
        sentence=sentence(step, head, positional, query, by, hold_back),
        figures=figures,
        table=key_table(step, head, query, by, hold_back),
        guess=guess,
        choices=tuple((row.key_index, row.key_token) for row in query.rows if row.visible),
        hold_back=hold_back,
        predict=form.predict,
        previous=link(STEP_NAMES[index - 1]) if index > 0 else None,
        next=link(STEP_NAMES[index + 1]) if index + 1 < len(STEP_NAMES) else None,
        lab_link=url("/", state),
        state=list(state),
    )
    return view, note


def matrix_figure(
    name: str, matrix: object, tokens: Sequence[str], title: str, label: str
) -> Heatmap:
    """x, Q, K or V: a row per token, a column per dimension, its colour bar named after it."""
    dims = [f"d{j}" for j in range(np.shape(matrix)[1])]
    picture = matrix_map(f"walk-{name}", matrix, tokens, dims, title, gettext("dimension"))
    return replace(picture, scale=signed_scale(matrix, label=label))


def guess_of(query: QueryBreakdown, form: WalkForm) -> tuple[Guess | None, str | None]:
    """The key guessed (the form's when the query sees it, else the first key it sees) and
    the guess; a note when the form's key could not be used. None when it sees no key."""
    visible = [row for row in query.rows if row.visible]
    if not visible:
        return None, None
    chosen = next((row for row in visible if row.key_index == form.key), visible[0])
    note = None
    if form.key is not None and chosen.key_index != form.key:
        given = (
            gettext("key %(key)s (“%(token)s”) is hidden from “%(query)s”")
            % {"key": form.key, "token": query.rows[form.key].key_token, "query": query.token}
            if 0 <= form.key < len(query.rows)
            else gettext("key %(key)s is not a position of these tokens (0 to %(last)s)")
            % {"key": form.key, "last": len(query.rows) - 1}
        )
        note = gettext("%(given)s: the guess is for “%(token)s”.") % {
            "given": given,
            "token": chosen.key_token,
        }
    return Guess(chosen.key_index, chosen.key_token, form.guess, chosen.weight), note


def sentence(
    step: str, head: OneHead, positional: str, query: QueryBreakdown, by: str, hold_back: bool
) -> str:
    token, rows = query.token, query.rows
    match step:
        case "x":
            return say.x_sentence(head, positional)
        case "qkv":
            return say.qkv_sentence(head, positional)
        case "scores":
            return say.scores_sentence(token, rows)
        case "scaled":
            return say.scaled_sentence(head, token, rows, by)
        case "masked":
            return say.masked_sentence(token, rows)
        case "weights":
            return say.weights_sentence(token, rows, hold_back)
        case "weighted":
            return say.weighted_sentence(token, rows)
        case _:
            return say.output_sentence(token, rows, query.output)


def key_table(
    step: str, head: OneHead, query: QueryBreakdown, by: str, hold_back: bool
) -> KeyTable | None:
    """The query's keys for this step: its inputs, then its result; None before Q·Kᵀ."""
    if step in ("x", "qkv"):
        return None
    rows = query.rows
    q_text = say.vector(np.asarray(head.q)[query.index])
    masked = Column("masked", f"÷ {by} + M")
    weight = Column("weight", gettext("weight"))
    weighted = Column("weighted", gettext("weight × V"))
    columns: dict[str, tuple[Column, ...]] = {
        "scores": (Column("k", "k_j"), Column("dot", "q · k_j")),
        "scaled": (Column("dot", "Q·Kᵀ"), Column("scaled", f"÷ {by}")),
        "masked": (Column("scaled", f"÷ {by}"), Column("mask", "+ M"), masked),
        "weights": (masked,) if hold_back else (masked, weight),
        "weighted": (weight, Column("v", "v_j"), weighted),
        "output": (weight, weighted),
    }
    chosen = columns[step]

    def cell(row: QueryRow, name: str) -> str:
        match name:
            case "k":
                return say.vector(np.asarray(head.k)[row.key_index])
            case "v":
                return say.vector(np.asarray(head.v)[row.key_index])
            case "dot" | "scaled" | "weight":
                return say.number(getattr(row, name))
            case "mask":
                return "0" if row.visible else "−∞"
            case "masked":
                return say.number(row.scaled) if row.visible else "−∞"
            case _:
                return say.vector(row.weighted_value)

    table_rows = tuple(
        KeyRow(row.key_token, tuple(cell(row, c.name) for c in chosen), not row.visible)
        for row in rows
    )
    caption = (
        gettext("The query “%(token)s”, q = %(q)s, against each key")
        % {"token": query.token, "q": q_text}
        if step == "scores"
        else gettext("The query “%(token)s”, key by key") % {"token": query.token}
    )
    total, rounded = sums(step, chosen, query, hold_back)
    return KeyTable(caption, chosen, table_rows, total, rounded)


def sums(
    step: str, columns: Sequence[Column], query: QueryBreakdown, hold_back: bool
) -> tuple[tuple[str, ...] | None, bool]:
    """The Σ row where the step adds a column up (the weights from softmax on, the weighted
    values at Σ), and whether its parts, rounded as shown, add up to something else."""
    if step not in ("weights", "output") or hold_back:
        return None, False
    weights = [row.weight for row in query.rows]
    parts = {"weight": [[w] for w in weights], "weighted": [r.weighted_value for r in query.rows]}
    totals = {"weight": [sum(weights)], "weighted": list(query.output)}
    texts, rounded = [], False
    for column in columns:
        if column.name not in totals:
            texts.append("")
            continue
        total = totals[column.name]
        shown_sum = np.sum([[say.shown(x) for x in part] for part in parts[column.name]], axis=0)
        rounded |= any(say.shown(a) != say.shown(b) for a, b in zip(shown_sum, total, strict=True))
        texts.append(say.vector(total) if column.name == "weighted" else say.number(total[0]))
    return tuple(texts), rounded
