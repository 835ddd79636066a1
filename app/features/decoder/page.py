"""What /decoder shows for one state: the next-token bars, the surprisal of every token,
generation step by step, the heads grouped by the key/value head they share with one head's
stages, the KV cache measured against the cost calculator, the cache policies on a long text,
the heads' roles, the induction test and heads switched off. Computed once per request; the
long text's three runs and the induction test do not depend on the prompt and are kept."""

import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from pydantic import ValidationError

from app.core.background import OnceInBackground
from app.core.errors import BusyError, InputError, ModelUnavailableError, validation_errors
from app.core.i18n import N_, format_numbers, format_rows, gettext
from app.features.decoder.charts import Bar, LineChart, bars, line_chart, shown_piece
from app.features.decoder.form import MODEL_HEADS, MODEL_LAYERS, DecoderForm
from app.features.decoder.measure import DecodeTiming, decode_timing
from app.features.decoder.results import Candidate, DecoderResult
from app.features.decoder.schemas import DecoderRequest, RepeatSpec
from app.features.decoder.service import compute_decoder, loaded_decoder
from app.features.decoder.store import LoadedDecoder
from app.features.stages.page import HeadStages, head_stages
from app.features.stages.results import OneHead
from app.features.stages.schemas import CacheSpec
from app.figures.heatmap import Heatmap, HeatmapGroup, weights_scale
from app.math.cost import kv_cache_bytes
from app.math.llama import keep_going
from app.settings import Settings
from app.web.classroom import url
from app.web.pages import Page, Problem

# Our own text for the cache policies: long enough that a window of 16 slides far past the
# first token.
LONG_TEXT = (
    "The lighthouse keeper climbed the stairs every evening at six. He wound the clock, "
    "cleaned the glass and lit the lamp, and then he sat by the window with a cup of tea. "
    "Ships passed in the dark, far from the rocks, because the light told them where the "
    "rocks were. In the morning he put the lamp out, wrote the night in his book and walked "
    "down to the village for bread. Nobody in the village had ever seen a ship hit the rocks, "
    "and nobody thanked him, and he did not mind."
)
INDUCTION = RepeatSpec(length=24, seed=0)
INDUCTION_SHOWN = 6  # the strongest heads listed
INDUCTION_LABEL = 0.4  # a score above this marks the head "induction" in the grid
ROLE_NAMES = {  # as the grid's cells name them, short (the legend says them in full)
    "previous": N_("prev."),
    "self": N_("self"),
    "first": N_("first"),
    "broad": N_("broad"),
    "induction": N_("induct."),
}
KEPT_RUNS = 24
KEPT_WAIT_S = 600.0  # only a caller that chooses to wait for one (a test, a benchmark) waits
KEPT_BUSY = "the decoder's runs on the long text are still going on this server"
ROLE_NUMBERS = ("previous", "self", "first", "entropy")
# The head's stages on this page: "weight × V for the query" is left out, its numbers being
# the "Weight × V" column of the query's table right below the strip.
HEAD_STAGES = ("scores", "scaled", "masked", "weights", "output")
DTYPE_NAMES = {"float32": "fp32", "float16": "fp16"}  # numpy's name → the cost calculator's


@dataclass(frozen=True)
class TokenSurprisal:
    token: str
    surprisal: float | None  # nats; None for the first token
    height: float  # the little bar's height, % of the sequence's largest surprisal
    generated: bool


@dataclass(frozen=True)
class StepView:
    index: int
    token: str
    p: float
    p_sampled: float
    rows: int  # cache rows (per layer and key/value head) this step read
    bytes: int  # those rows' K and V, every layer
    candidates: list[Bar]


@dataclass(frozen=True)
class HeadCell:
    """One head in the grid of every head: what it mostly does. Its cell is a button of the
    page's form (pick=layer.head), not a link: the state is written once, in the form."""

    layer: int
    head: int
    role: str  # the role's key in ROLE_NAMES, or "" when it has none
    name: str  # the role as the cell shows it, translated
    value: float | None  # that role's mean weight (or the induction score)
    numbers: str  # previous, self, first, entropy, induction: the cell's title
    off: bool
    selected: bool


@dataclass(frozen=True)
class CacheView:
    """The KV cache after the last step, measured, beside the cost calculator."""

    rows: int  # positions held per layer and key/value head
    layers: int
    kv_heads: int
    d_head: int
    itemsize: int
    dtype: str
    bytes: int  # measured from the arrays held
    bytes_per_token: int
    formula_bytes_per_token: int
    cost_bytes: int  # GET /api/cost for this model, length and policy
    tokens: int  # the whole sequence

    @property
    def agrees(self) -> bool:
        return self.bytes == self.cost_bytes == self.rows * self.formula_bytes_per_token


@dataclass(frozen=True)
class PolicyView:
    """The same long text under full attention, a window, and sinks + window."""

    chart: LineChart
    means: dict[str, float]  # policy → mean surprisal over the positions past the window
    tokens: list[str]
    surprisal: dict[str, list[float]]  # policy → per position 1 … n − 1
    window: int
    sinks: int
    first_token: str
    first_weight: float  # mean weight on position 0 over every head and query (full)
    sink_heads: int  # heads whose mean weight on position 0 is above one half
    heads: int


@dataclass(frozen=True)
class InductionView:
    length: int
    best: list[tuple[int, int, float]]  # (layer, head, score), strongest first
    first_copy: float
    second_copy: float


@dataclass(frozen=True, kw_only=True)
class DecoderView:
    form: DecoderForm
    unavailable: str | None = None  # the model is missing or unreadable (503)
    loading: str | None = None  # the model is still loading (503, Retry-After)
    result: DecoderResult | None = None
    next_bars: list[Bar] = field(default_factory=list)
    unablated_bars: list[Bar] | None = None
    surprisal: list[TokenSurprisal] = field(default_factory=list)
    prompt_mean: float | None = None
    steps: list[StepView] = field(default_factory=list)
    text: str = ""
    groups: list[list[int]] = field(default_factory=list)
    layer_maps: HeatmapGroup | None = None
    head: HeadStages | None = None
    kv_head: int | None = None
    group_mates: list[int] = field(default_factory=list)
    grid: list[list[HeadCell]] = field(default_factory=list)
    cache: CacheView | None = None
    timing: DecodeTiming | None = None
    policies: PolicyView | None = None
    induction: InductionView | None = None
    source: str = ""
    undo_generate: str | None = None
    all_on: str | None = None
    toggle_head: str | None = None
    close_head: str | None = None
    off_names: list[str] = field(default_factory=list)  # the heads switched off, in words
    request_json: dict[str, Any] | None = None

    @property
    def retry_after(self) -> int | None:
        return 5 if self.loading else None

    @property
    def status(self) -> int | None:
        return 503 if self.loading or self.unavailable else None

    @property
    def head_stages(self) -> tuple[str, ...]:
        return HEAD_STAGES

    @property
    def layer_choices(self) -> list[tuple[str, str]]:
        return [("", gettext("none open")), *((str(i), str(i)) for i in range(MODEL_LAYERS))]

    @property
    def head_choices(self) -> list[tuple[str, str]]:
        return [("", gettext("none open")), *((str(i), str(i)) for i in range(MODEL_HEADS))]

    @property
    def query_choices(self) -> list[tuple[str, str]]:
        """The last token (the default), or any token of the prompt, once a head is open."""
        last = [("", gettext("the last token"))]
        if self.result is None or self.form.opened is None:
            return last
        prompt = self.result.tokens[: self.result.prompt_length]
        return last + [(str(i), f"{i}: {shown_piece(t)}") for i, t in enumerate(prompt)]

    def head_link(self, layer: int, head: int) -> str:
        """This state with another head open (the layer maps' titles, the induction list)."""
        return url("/decoder", self.form.state(layer=layer, head=head, query=None))


# ---------------------------------------------------------------- runs kept per process


_kept: dict[tuple[Any, ...], OnceInBackground[DecoderResult]] = {}
_kept_lock = threading.Lock()
_kept_turn = threading.Lock()  # one kept run computes at a time: they share the cores


def kept_run(
    loaded: LoadedDecoder, req: DecoderRequest, settings: Settings
) -> OnceInBackground[DecoderResult]:
    """A run that does not depend on the prompt (the long text, the induction test): started
    in the background once per process and model, shown by the pages once it is done. At
    most KEPT_RUNS are kept (a reader trying window after window), the oldest dropped."""
    key = (id(loaded.weights), req.model_dump_json())

    def compute() -> DecoderResult:
        with _kept_turn:
            return compute_decoder(req, settings, remember=False)

    with _kept_lock:
        run = _kept.pop(key, None) or OnceInBackground(compute, KEPT_WAIT_S, KEPT_BUSY)
        _kept[key] = run  # the newest last
        while len(_kept) > KEPT_RUNS:
            del _kept[next(iter(_kept))]
    run.start()
    return run


# ---------------------------------------------------------------- the parts of the view


def candidate_pairs(candidates: list[Candidate]) -> list[tuple[str, float]]:
    return [(c.token, c.p) for c in candidates]


def token_surprisal(result: DecoderResult) -> list[TokenSurprisal]:
    known = [s for s in result.surprisal if s is not None]
    top = max(known, default=1.0) or 1.0
    return [
        TokenSurprisal(
            shown_piece(token),
            s,
            0.0 if s is None else round(100 * s / top, 1),
            i >= result.prompt_length,
        )
        for i, (token, s) in enumerate(zip(result.tokens, result.surprisal, strict=True))
    ]


def step_views(result: DecoderResult) -> list[StepView]:
    per_token = result.kv_cache.formula_bytes_per_token
    return [
        StepView(
            index=i + 1,
            token=shown_piece(step.token),
            p=step.p,
            p_sampled=step.p_sampled,
            rows=len(step.cached_positions),
            bytes=len(step.cached_positions) * per_token,
            candidates=bars(candidate_pairs(step.top[:5])),
        )
        for i, step in enumerate(result.steps)
    ]


def layer_maps(
    result: DecoderResult, view: DecoderView, tokens: list[str], link: Callable[[str], str]
) -> HeatmapGroup:
    """The chosen layer's nine heads, a row per key/value head, on one scale."""
    assert result.weights is not None
    layer = result.weights_layer or 0
    heads = result.model.heads
    kv = {h: g for g, group in enumerate(result.model.kv_groups) for h in group}
    panels = [
        Heatmap(
            id=f"layer-head-{h}",
            title=gettext("head %(h)s · KV %(g)s") % {"h": h, "g": kv[h]},
            values=np.asarray(result.weights[h]),
            row_labels=tokens,
            col_labels=tokens,
            scale=weights_scale(),
            hidden=~np.tri(len(tokens), dtype=bool),
            hidden_text="0",
            href=link(view.head_link(layer, h)),
        )
        for h in range(heads)
    ]
    return HeatmapGroup(
        id="layer-heads",
        title=gettext("Layer %(layer)s: softmax weights of its 9 query heads") % {"layer": layer},
        panels=panels,
        columns=len(result.model.kv_groups[0]),
        selected=view.form.head,
    )


def one_head(result: DecoderResult, tokens: list[str]) -> HeadStages:
    stages = result.stages
    assert stages is not None
    shown = OneHead(
        **stages.fields(),
        tokens=tokens,
        x=stages.x,
        d_k=stages.d_head,
        scale_factor=stages.scale_factor,
    )  # its query broken down again below, with the tokens as the page labels them
    return head_stages(shown, stages.query.index, prefix="head")


def role_of(role: dict[str, Any], induction: float | None) -> tuple[str, float | None]:
    """The role a grid cell names: induction when the test found it, else the strongest of
    previous, self and first token, else broad."""
    if induction is not None and induction > INDUCTION_LABEL:
        return "induction", induction
    named = [label for label in role["labels"] if label in ("previous", "self", "first")]
    if named:
        best = max(named, key=lambda label: role[label])
        return best, role[best]
    if "broad" in role["labels"]:
        return "broad", None
    return "", None


def head_grid(
    result: DecoderResult, view: DecoderView, induction: DecoderResult | None
) -> list[list[HeadCell]]:
    """Every head, a row per layer, its columns in key/value groups; the 270 cells' numbers
    formatted in one pass."""
    off = {tuple(pair) for pair in result.ablate}
    chosen = (view.form.layer, view.form.head)
    scores = (
        None
        if induction is None or induction.induction is None
        else np.asarray(induction.induction)
    )
    roles = [[dict(role) for role in row] for row in result.roles]
    numbers = [[role[k] for k in ROLE_NUMBERS] for row in roles for role in row]
    shown = iter(format_rows(numbers, 2))
    shown_scores = iter(format_numbers([] if scores is None else scores.ravel(), 2))
    sentence = gettext(
        "layer %(layer)s head %(head)s: previous %(previous)s, self %(self)s, "
        "first token %(first)s, entropy %(entropy)s nats"
    )
    induction_sentence = gettext("induction %(score)s")
    names = {kind: gettext(name) for kind, name in ROLE_NAMES.items()} | {"": ""}
    grid = []
    for layer, row in enumerate(roles):
        cells = []
        for head, role in enumerate(row):
            score = None if scores is None else float(scores[layer, head])
            kind, value = role_of(role, score)
            texts = dict(zip(ROLE_NUMBERS, next(shown), strict=True))
            title = sentence % {"layer": layer, "head": head, **texts}
            if score is not None:
                title += " · " + induction_sentence % {"score": next(shown_scores)}
            cells.append(
                HeadCell(
                    layer, head, kind, names[kind], value, title,
                    (layer, head) in off, (layer, head) == chosen,
                )
            )  # fmt: skip
        grid.append(cells)
    return grid


def cache_view(result: DecoderResult, form: DecoderForm) -> CacheView:
    """The cache measured, and the cost calculator's formula (app/math/cost.py, as
    GET /api/cost computes it) for this model, this length and this policy."""
    kv = result.kv_cache
    n = len(result.tokens)
    spec = form.cache()
    itemsize = kv.formula_bytes_per_token // (2 * kv.layers * kv.kv_heads * kv.d_head)
    sinks = spec.policy_used().sinks
    return CacheView(
        rows=kv.positions,
        layers=kv.layers,
        kv_heads=kv.kv_heads,
        d_head=kv.d_head,
        itemsize=itemsize,
        dtype=DTYPE_NAMES[kv.dtype],
        bytes=kv.bytes,
        bytes_per_token=kv.bytes_per_token,
        formula_bytes_per_token=kv.formula_bytes_per_token,
        cost_bytes=kv_cache_bytes(
            n, kv.layers, kv.kv_heads, kv.d_head, itemsize, window=spec.window, sinks=sinks
        ),
        tokens=n,
    )


POLICIES = ("full", "window", "sinks")


def kept_runs(
    loaded: LoadedDecoder, form: DecoderForm, settings: Settings
) -> dict[str, OnceInBackground[DecoderResult]]:
    """The runs a page shows that do not depend on its prompt: the long text under each
    policy (with the form's window and sinks), and the induction test."""
    specs = {
        "full": CacheSpec(),
        "window": CacheSpec(policy="window", window=form.window),
        "sinks": CacheSpec(policy="sinks", window=form.window, sinks=form.sinks),
    }
    runs = {
        name: kept_run(loaded, DecoderRequest(text=LONG_TEXT, cache=spec), settings)
        for name, spec in specs.items()
    }
    return {
        **runs,
        "induction": kept_run(loaded, DecoderRequest(repeat_random=INDUCTION), settings),
    }


def policy_view(form: DecoderForm, kept: dict[str, DecoderResult | None]) -> PolicyView | None:
    """The long text under the three policies (None while those runs still compute)."""
    runs = {name: kept[name] for name in POLICIES}
    if any(run is None for run in runs.values()):
        return None
    surprisal = {name: [float(s) for s in run.surprisal[1:]] for name, run in runs.items() if run}
    names = {
        "full": gettext("full cache"),
        "window": gettext("window of %(w)s") % {"w": form.window},
        "sinks": gettext("%(s)s sinks + window of %(w)s") % {"s": form.sinks, "w": form.window},
    }
    past = form.window + form.sinks  # positions from here on have lost the first token
    chart = line_chart(
        [(names[name], values) for name, values in surprisal.items()],
        marker=(past, gettext("the window slides past the first token")),
    )
    full = kept["full"]
    assert full is not None
    first = np.array([[role["first"] for role in row] for row in full.roles])
    return PolicyView(
        chart=chart,
        means={
            name: float(np.mean(values[past - 1 :])) if len(values) >= past else float("nan")
            for name, values in surprisal.items()
        },
        tokens=[shown_piece(t) for t in full.tokens[1:]],
        surprisal=surprisal,
        window=form.window,
        sinks=form.sinks,
        first_token=shown_piece(full.tokens[0]),
        first_weight=float(first.mean()),
        sink_heads=int((first > 0.5).sum()),
        heads=first.size,
    )


def induction_view(result: DecoderResult) -> InductionView:
    assert result.induction is not None
    assert result.repeat is not None
    scores = np.asarray(result.induction)
    order = np.argsort(scores.ravel())[::-1][:INDUCTION_SHOWN]
    heads = scores.shape[1]
    return InductionView(
        length=result.repeat.length,
        best=[(int(i) // heads, int(i) % heads, float(scores.ravel()[i])) for i in order],
        first_copy=result.repeat.first_copy_surprisal,
        second_copy=result.repeat.second_copy_surprisal,
    )


def problem_of(error: InputError | ValidationError) -> list[Problem]:
    if isinstance(error, InputError):
        return [Problem(str(error.loc[0]) if error.loc else "", error.msg)]
    return [Problem("", e["msg"]) for e in validation_errors(error.errors())]


def chosen_query(form: DecoderForm, loaded: LoadedDecoder) -> tuple[int | None, str | None]:
    """The query asked for, when it lies in the prompt (generation may stop early); else
    the last token, and a note saying so."""
    if form.query is None:
        return None, None
    n = len(loaded.tokenizer.encode(form.text).ids)
    if form.query < n:
        return form.query, None
    note = gettext(
        "query %(q)s lies beyond the prompt's %(n)s tokens; the head shows the last token instead"
    ) % {"q": form.query, "n": n}
    return None, note


def decoder_page(
    form: DecoderForm,
    problems: list[Problem],
    notes: list[str],
    settings: Settings,
    check: Callable[[], None] = keep_going,
    link: Callable[[str], str] = str,
) -> Page:
    """Everything /decoder shows for one state, computed once; what cannot be used is said.
    `check` is called between the model's layers and may raise to abandon the work; `link`
    keeps the reader's view (language, presenter) in the links the figures carry."""
    form = form.snapped()
    view = DecoderView(form=form)
    try:
        loaded = loaded_decoder(settings)
    except BusyError as error:
        view = replace(view, loading=error.msg)
        loaded = None
    except ModelUnavailableError as error:
        view = replace(view, unavailable=error.msg)
        loaded = None
    if loaded is not None:
        try:
            query, note = chosen_query(form, loaded)
            notes = [*notes, note] if note else notes
            req = form.request(query)
            result = compute_decoder(req, settings, check)
        except (InputError, ValidationError) as error:
            problems = [*problems, *problem_of(error)]
        else:
            view = full_view(view, loaded, req, result, settings, link)
    return Page(
        template="decoder/decoder.html",
        fragment="decoder/_live.html",
        view=view,
        problems=problems,
        notes=notes,
        state=form.state(),
    )


def full_view(
    view: DecoderView,
    loaded: LoadedDecoder,
    req: DecoderRequest,
    result: DecoderResult,
    settings: Settings,
    link: Callable[[str], str],
) -> DecoderView:
    form = view.form
    tokens = [shown_piece(t) for t in result.tokens]
    kept = {name: run.result for name, run in kept_runs(loaded, form, settings).items()}
    induction = kept["induction"]
    timing = decode_timing(
        loaded.weights, settings.measure_time_cap_seconds, settings.measure_wait_seconds
    )
    timing.start()
    known = [s for s in result.surprisal[1 : result.prompt_length] if s is not None]
    off = {tuple(pair) for pair in result.ablate}
    view = replace(
        view,
        result=result,
        next_bars=bars(candidate_pairs(result.steps[0].top if result.steps else result.next)),
        unablated_bars=(
            None
            if result.unablated_p is None
            else bars(candidate_pairs(result.next), result.unablated_p)
        ),
        surprisal=token_surprisal(result),
        prompt_mean=float(np.mean(known)) if known else None,
        steps=step_views(result),
        text=result.text,
        groups=result.model.kv_groups,
        cache=cache_view(result, form),
        timing=timing.result,
        policies=policy_view(form, kept),
        induction=None if induction is None else induction_view(induction),
        source=loaded.source_text(),
        undo_generate=url("/decoder", form.state(generate=0)) if form.generate else None,
        all_on=url("/decoder", form.state(off=[])) if off else None,
        off_names=[
            gettext("layer %(layer)s head %(head)s") % {"layer": a, "head": b}
            for a, b in sorted(off)
        ],
        request_json=req.model_dump(exclude_defaults=True),
    )
    view = replace(view, grid=head_grid(result, view, induction))
    return view if form.opened is None else open_head(view, result, tokens, link)


def open_head(
    view: DecoderView, result: DecoderResult, tokens: list[str], link: Callable[[str], str]
) -> DecoderView:
    """The open head's stages, its group and its layer's nine maps."""
    form = view.form
    kv_head = result.kv_head or 0
    off = {tuple(pair) for pair in result.ablate}
    return replace(
        view,
        head=one_head(result, tokens),
        kv_head=kv_head,
        group_mates=[h for h in result.model.kv_groups[kv_head] if h != form.head],
        toggle_head=url("/decoder", form.state(off=sorted(off ^ {form.opened}))),
        close_head=url("/decoder", form.state(layer=None, head=None)),
        layer_maps=layer_maps(result, view, tokens, link),
    )
