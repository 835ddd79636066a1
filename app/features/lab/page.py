"""What the head lab shows for one state: the state computed once (`lab_head`, which /lab.json,
/lab.csv, /walkthrough and /kernel read too), and the page (`lab_page`): its controls, the
stage strip, the query key by key, the shuffle demo, the cost panel and the downloads."""

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
from pydantic import ValidationError

from app.core.errors import InputError, validation_errors
from app.core.formatting import number_text
from app.core.i18n import N_, format_number, format_size, gettext
from app.core.limits import MAX_GRID_WIDTH
from app.features.lab.form import LABELS, MASK_MODES, LabForm, text_limits
from app.features.lab.schemas import AttentionResult
from app.features.lab.service import checked, compute_attention, compute_head
from app.features.stages.page import HeadStages, head_stages
from app.features.stages.service import PositionDemo, mask_of, position_demo
from app.math.cost import score_bytes, score_entries
from app.settings import Settings
from app.web.pages import Page, Problem, state_query


@dataclass(frozen=True, kw_only=True)
class LabHead:
    """The lab's state computed once: the form as computed (fitted, every input resolved),
    its result, what could not be used and what was used instead, and after a button the
    state before it (one step of undo)."""

    form: LabForm
    result: AttentionResult
    problems: list[Problem]
    notes: list[str]
    before: list[tuple[str, Any]] | None = None

    @property
    def state(self) -> list[tuple[str, Any]]:
        """The canonical parameters, in URL order."""
        return self.form.state()

    def page(self, template: str, fragment: str, view: Any) -> Page:
        """A page of this state: its problems, its notes and its canonical state."""
        return Page(
            template=template,
            fragment=fragment,
            view=view,
            problems=self.problems,
            notes=self.notes,
            state=self.state,
        )


def as_problems(error: InputError | ValidationError) -> list[Problem]:
    if isinstance(error, InputError):
        return [Problem(str(error.loc[0]) if error.loc else "", error.msg)]
    return [
        Problem(str(e["loc"][0]) if e["loc"] else "", e["msg"])
        for e in validation_errors(error.errors())
    ]


def at_defaults(form: LabForm, names: Iterable[str]) -> LabForm:
    """The form with these lab fields back at their defaults."""
    fields = LabForm.model_fields
    return form.model_copy(
        update={n: fields[n].get_default(call_default_factory=True) for n in names if n in fields}
    )


def within_server(form: LabForm, settings: Settings) -> tuple[LabForm, list[str]]:
    """The text cut to the most this server reads (max_tokens labels at their longest, one
    space each), and said, as the form says of any text cut to its field."""
    limit = text_limits(settings)["tokens"]
    if form.tokens is None or len(form.tokens) <= limit:
        return form, []
    note = gettext(
        "%(field)s: longer than %(max)s characters; this page uses and carries the first %(max)s."
    ) % {"field": "tokens", "max": format_number(limit)}
    return form.model_copy(update={"tokens": form.tokens[:limit]}), [note]


def lab_head(
    form: LabForm, problems: list[Problem], notes: list[str], settings: Settings
) -> LabHead:
    """The form's state fitted and computed, once. What this server cannot compute (more
    tokens than it takes, RoPE on an odd d_k) is said, and that field is left at its default;
    should even that fail, the worked example is shown, and said."""
    form, cut_notes = within_server(form, settings)
    problems, notes = list(problems), [*notes, *cut_notes]
    for _ in range(2):
        try:
            fitted, inputs, fit_problems, fit_notes = form.fitted()
            result = compute_head(checked(inputs, settings), settings)
        except (InputError, ValidationError) as error:
            said = as_problems(error)
            problems += said
            form = at_defaults(form, {p.field for p in said})
            continue
        before = None
        if form.action is not None:
            before = form.model_copy(update={"action": None}).fitted()[0].state()
        return LabHead(
            form=fitted,
            result=result,
            problems=problems + fit_problems,
            notes=notes + fit_notes,
            before=before,
        )
    fitted, inputs, _, _ = at_defaults(form, LabForm.model_fields).fitted()
    notes.append(gettext("The page shows the worked example until that is fixed."))
    result = compute_head(checked(inputs, settings), settings)
    return LabHead(form=fitted, result=result, problems=problems, notes=notes)


# ---------------------------------------------------------------- the page

LONG_SENTENCE = (
    "On a quiet morning the old fisherman walked down to the harbour, checked the ropes of "
    "his small blue boat, and watched the gulls circle above the calm grey water until sunrise"
)
GENERATED = [("d_model", 4), ("d_k", 4), ("d_v", 4)]


def preset(tokens: str, *rest: tuple[str, Any]) -> str:
    return "/?" + state_query([("tokens", tokens), *GENERATED, *rest])


PRESETS: list[tuple[str, str, str]] = [
    (
        N_("Worked example"),
        "/",
        N_("“The cat sleeps”, causal: the numbers of the worked example."),
    ),
    (
        N_("Repeated tokens"),
        preset("the cat saw the cat", ("mask", "bidirectional"), ("query", 3)),
        N_("Equal words get equal rows when nothing marks their position."),
    ),
    (
        N_("Padded sequence"),
        preset("Hello world <pad> <pad>", ("mask", "bidirectional"), ("pad", "2,3"), ("query", 1)),
        N_("Two padding tokens that no query may look at."),
    ),
    (
        N_("Sliding window"),
        preset(
            "one two three four five six seven eight",
            ("mask", "window"),
            ("window", 3),
            ("query", 7),
        ),
        N_("Each token sees itself and the two tokens before it."),
    ),
    (
        N_("Longer sentence (n = 32)"),
        preset(LONG_SENTENCE, ("mask", "causal"), ("query", 31)),
        N_("Thirty-two tokens with generated vectors: a strip too big for printed values."),
    ),
]

# The px across each of the four stage heatmaps has in presenter mode: a quarter of a 1280 px
# projector, as static/css/lab.css lays the strip out (24 px margins, 12 px gaps).
STAGE_ROOM_PX = 296
PATTERN_UP_TO = 16  # the custom pattern is edited by ticking n × n boxes up to this n
REFERENCE_LENGTH = 4096  # the cost panel's comparison, as in the worked example's table


@dataclass(frozen=True, kw_only=True)
class Grid:
    """One matrix of the controls: a field per number, exact (the form sends back what it
    received)."""

    name: str
    label: str
    rows: list[tuple[str, list[str]]]  # (row label, the numbers as the URL writes them)
    cols: list[str]


@dataclass(frozen=True, kw_only=True)
class Editor:
    """The lab's controls, filled in with the state shown."""

    text: str
    tokens: list[str]
    dims: dict[str, int]
    widths: range
    seed: int
    grids: list[Grid]
    modes: list[tuple[str, str]]
    mask: str
    window: int
    pattern: list[list[bool]] | None  # the mode's pattern to tick, up to PATTERN_UP_TO tokens
    sees: str  # a box of the pattern, as a screen reader says it: "%(q)s sees %(k)s"
    pad: set[int]
    scale: bool
    positional: str
    query: int


def editor(head: LabHead) -> Editor:
    result, form = head.result, head.form
    tokens = list(result.tokens)
    inputs = [f"x{d}" for d in range(result.d_model)]
    shapes = {
        "x": (tokens, [f"d{d}" for d in range(result.d_model)]),
        "w_q": (inputs, [f"q{d}" for d in range(result.d_k)]),
        "w_k": (inputs, [f"k{d}" for d in range(result.d_k)]),
        "w_v": (inputs, [f"v{d}" for d in range(result.d_v)]),
    }
    grids = [
        Grid(
            name=name,
            label=LABELS[name],
            rows=[
                (rows[i], [number_text(v) for v in line])
                for i, line in enumerate(np.asarray(getattr(result, name)).tolist())
            ],
            cols=cols,
        )
        for name, (rows, cols) in shapes.items()
    ]
    n = len(tokens)
    pattern = None
    if n <= PATTERN_UP_TO:
        pattern = mask_of(form.mask_spec().model_copy(update={"padding": None}), n).tolist()
    return Editor(
        text=" ".join(tokens),
        tokens=tokens,
        dims={"d_model": result.d_model, "d_k": result.d_k, "d_v": result.d_v},
        widths=range(1, MAX_GRID_WIDTH + 1),
        seed=form.seed,
        grids=grids,
        modes=[(mode, gettext(label)) for mode, label in MASK_MODES],
        mask=form.mask,
        window=form.window,
        pattern=pattern,
        sees=gettext("%(q)s sees %(k)s"),  # each box's label, for a screen reader
        pad=set(form.pad),
        scale=form.scale,
        positional=form.positional,
        query=result.query.index,
    )


@dataclass(frozen=True, kw_only=True)
class CostPanel:
    """One head's score matrix now and at REFERENCE_LENGTH tokens (app/math/cost.py)."""

    n: int
    entries: str
    size: str
    reference: str
    reference_entries: str
    reference_size: str


def cost_panel(n: int) -> CostPanel:
    return CostPanel(
        n=n,
        entries=format_number(score_entries(n)),
        size=format_size(score_bytes(n)),
        reference=format_number(REFERENCE_LENGTH),
        reference_entries=format_number(score_entries(REFERENCE_LENGTH)),
        reference_size=format_size(score_bytes(REFERENCE_LENGTH)),
    )


@dataclass(frozen=True, kw_only=True)
class LabView:
    """Everything templates/lab/ shows for one state. The shuffle demo computes the head a
    second time, on the tokens in another order: it is a page of its own (/shuffle, `ShuffleView`)
    that this page links to, computed only when asked."""

    head: LabHead
    stages: HeadStages
    editor: Editor
    presets: list[tuple[str, str, str]]
    cost: CostPanel
    query: str  # the canonical state as a query string, for the page's links
    undo: str | None  # the address of the state before a button's change

    @property
    def result(self) -> AttentionResult:
        return self.head.result


def lab_page(form: LabForm, problems: list[Problem], notes: list[str], settings: Settings) -> Page:
    """The head lab for one state, computed once; what cannot be used is said."""
    head = lab_head(form, problems, notes, settings)
    result = head.result
    view = LabView(
        head=head,
        stages=head_stages(result.head(), room=STAGE_ROOM_PX),
        editor=editor(head),
        presets=PRESETS,
        cost=cost_panel(len(result.tokens)),
        query=state_query(head.state),
        undo="/?" + state_query(head.before) if head.before is not None else None,
    )
    return head.page("lab/lab.html", "lab/_live.html", view)


@dataclass(frozen=True, kw_only=True)
class ShuffleView:
    """The shuffle demo of one lab state (templates/lab/shuffle.html): the state's head, and
    the same head computed again on its tokens in another order."""

    head: LabHead
    demo: PositionDemo
    query: str  # the lab state as a query string, for the link back

    @property
    def result(self) -> AttentionResult:
        return self.head.result


def shuffle_page(
    form: LabForm, problems: list[Problem], notes: list[str], settings: Settings
) -> Page:
    """Does attention notice the order? The lab's state computed, then computed again with its
    tokens (their x rows, and the mask's per-token parts) shuffled."""
    head = lab_head(form.model_copy(update={"action": None}), problems, notes, settings)
    view = ShuffleView(
        head=head,
        demo=position_demo(head.form.request(), head.result, compute_attention, settings),
        query=state_query(head.state),
    )
    return head.page("lab/shuffle.html", "lab/_shuffle.html", view)
