"""What /model shows for one state: the grid of every head, the reading of the heads (roles,
where attention goes, rollout, lines, heads switched off, a second sentence), and the chosen
head's stages (laid out for the shared stage strip); or how to install the model."""

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from pydantic import ValidationError

from app.core.errors import InputError, ModelUnavailableError, validation_errors
from app.core.i18n import DEFAULT_LOCALE, N_, current_locale, gettext
from app.core.limits import MAX_LINE_HEADS, MAX_RANKED_PIECES
from app.features.model.form import ModelForm, key_text
from app.features.model.reading import (
    MATTERS,
    ROLE_NAMES,
    LayerMeans,
    LineView,
    Ranking,
    RoleCard,
    RoleSummary,
    Rollout,
    StrongestKey,
    grid_group,
    head_name,
    layer_chart,
    layer_table,
    line_view,
    ranking_view,
    role_cards,
    role_summary,
    rollout_view,
    strongest_keys,
    thresholds_sentence,
)
from app.features.model.results import ModelHead
from app.features.model.service import ModelResult, compute_model, still_wanted
from app.features.model.store import MODEL_SHAPE, load_model, word_pieces
from app.features.stages.page import HeadStages, Stage, Table, head_stages, matrix_map
from app.features.stages.results import OneHead
from app.figures.charts import Chart
from app.figures.heatmap import HeatmapGroup, signed_scale
from app.settings import Settings
from app.web.classroom import url
from app.web.pages import Page, Problem

BY_TOKEN = ("q", "k", "v", "output")  # n × d_head: one row per token
BY_PAIR = ("scores", "scaled", "allowed", "masked", "weights")  # n × n: query row, key column
PROJECTIONS = {"q": "Q = x·W_Q + b_Q", "k": "K = x·W_K + b_K", "v": "V = x·W_V + b_V"}
# The px across the chosen head's n × n stages have in presenter mode: its weights beside the
# query's key-by-key table on a 1280 × 720 projector (static/css/model.css).
FOCUS_ROOM_PX = 420
# A short everyday sentence in the reader's language, split by the model's own tokenizer to
# show a reader of another language than English what the model makes of their words.
EXAMPLE_SENTENCE = N_("The cat sleeps")


def shown_positions(result: ModelResult, hide_special: bool) -> list[int]:
    """The positions the page shows: all, or all but [CLS] and [SEP]."""
    n = len(result.tokens)
    keep = [i for i in range(n) if not (hide_special and result.special[i])]
    return keep or list(range(n))  # a text of special pieces only


def shown_head(head: ModelHead, keep: list[int], tokens: list[str]) -> OneHead:
    """One trained head's stages at the shown positions, for the stage strip."""
    rows = np.asarray(keep)
    by_token = {name: np.asarray(getattr(head, name))[rows] for name in BY_TOKEN}
    by_pair = {name: np.asarray(getattr(head, name))[np.ix_(rows, rows)] for name in BY_PAIR}
    everything = len(keep) == len(head.q)
    return OneHead(
        **by_token,
        **by_pair,
        empty_rows=[keep.index(r) for r in head.empty_rows if r in keep],
        tokens=tokens,
        x=np.asarray(head.x)[rows],
        d_k=head.d_head,
        scale_factor=head.scale_factor,
        query=head.query if everything else None,  # nothing hidden: the service's own
    )


@dataclass(frozen=True)
class Projections:
    """Q, K and V of the chosen head, for the stage strip's macro."""

    stages: list[Stage]
    full_tables: bool = True


def projection(head: OneHead, name: str, title: str, tokens: list[str]) -> Stage:
    """Q, K or V of the head: a map whose colour bar says "value" (not a score), and its table."""
    matrix = getattr(head, name)
    dims = [f"d{j}" for j in range(np.shape(matrix)[1])]
    drawn = matrix_map(f"proj-{name}", matrix, tokens, dims, title, gettext("dimension"))
    return Stage(
        name,
        title,
        replace(drawn, scale=signed_scale(matrix, label=gettext("value"))),
        Table(np.asarray(matrix).tolist(), list(tokens), dims, title),
    )


@dataclass(frozen=True)
class LanguageNote:
    """For a reader of another language than English: an everyday sentence of theirs as the
    model's tokenizer splits it ([CLS] and [SEP] left out)."""

    sentence: str
    pieces: list[str]


def language_note(settings: Settings) -> LanguageNote | None:
    if current_locale() == DEFAULT_LOCALE:
        return None
    sentence = gettext(EXAMPLE_SENTENCE)
    pieces = word_pieces(load_model(settings.model_dir), sentence)
    return LanguageNote(
        sentence, [t for t, s in zip(pieces.tokens, pieces.special, strict=True) if not s]
    )


@dataclass(frozen=True, kw_only=True)
class ModelView:
    """Everything /model shows for one state; `result` is None when the model could not run
    (`unavailable` then says why, when it is the server's missing model)."""

    form: ModelForm
    link: Callable[[str], str]  # a local address as a link that keeps the reader's view
    shape: tuple[int, int] = MODEL_SHAPE  # layers, heads: the selects, before any run
    unavailable: str | None = None
    result: ModelResult | None = None
    query: int = 0  # the chosen query, within the sentence
    tokens: list[str] = field(default_factory=list)  # the word pieces the pictures show
    hidden: bool = False  # [CLS] and [SEP] left out of them
    grid: HeatmapGroup | None = None  # None: no head has the filter's label
    pooled: bool = False
    strongest: list[list[StrongestKey]] = field(default_factory=list)
    cards: list[list[RoleCard]] = field(default_factory=list)
    summary: list[RoleSummary] = field(default_factory=list)
    thresholds: str = ""
    layer_chart: Chart | None = None
    layer_table: list[LayerMeans] = field(default_factory=list)
    rollout: Rollout | None = None
    lines: LineView | None = None
    ranking: Ranking | None = None
    projections: Projections | None = None
    stages: HeadStages | None = None
    request_json: dict[str, Any] = field(default_factory=dict)
    source: str = ""
    language: LanguageNote | None = None
    ranked_pieces: int = MAX_RANKED_PIECES
    matters: float = MATTERS  # a change in similarity under this is small (our line)
    line_limit: int = MAX_LINE_HEADS

    def address(self, fragment: str = "", **changes: Any) -> str:
        """This page's link with some of its state changed."""
        return self.link(url("/model", self.form.state(**changes)) + fragment)

    def head_link(self, layer: int, head: int) -> str:
        return self.address("#head-title", layer=layer, head=head)

    def head_name(self, layer: int, head: int) -> str:
        return head_name(layer, head)

    @property
    def off(self) -> set[str]:
        return {key_text(h) for h in self.form.off}

    @property
    def chosen(self) -> tuple[int, int]:
        return self.form.layer, self.form.head

    @property
    def layer_lines_link(self) -> str:
        """The line view with every head of the chosen layer drawn."""
        heads = [(self.form.layer, h) for h in range(self.shape[1])]
        return self.address("#line-view", lines=heads)

    @property
    def filter_name(self) -> str:
        """The label the role filter keeps, as the page calls it."""
        return gettext(ROLE_NAMES[self.form.role]) if self.form.role else ""


def read_result(view: ModelView, result: ModelResult, settings: Settings) -> ModelView:
    """The view of a result: every reading of it, at the positions shown."""
    assert result.weights is not None
    assert result.head is not None
    n = len(result.tokens)
    form = view.form
    query = result.head.query.index
    if form.query is not None:  # a sentence typed shorter may leave it past the end
        query = min(form.query, n - 1)
        form = form.model_copy(update={"query": query})
        view = replace(view, form=form)
    keep = shown_positions(result, form.hide_special)
    tokens = [result.tokens[i] for i in keep]
    grid, pooled = grid_group(result, keep, form.role, view.head_link)
    shown = shown_head(result.head, keep, tokens)
    request: dict[str, Any] = {
        "text": form.text,
        "layer": form.layer,
        "head": form.head,
        "query": query,
    }
    if result.ablate:
        request["ablate"] = [list(pair) for pair in result.ablate]
    if result.compare is not None:
        request.update(compare_text=form.compare, rank_heads=result.ranking is not None)
    return replace(
        view,
        result=result,
        query=query,
        tokens=tokens,
        hidden=len(keep) < n,
        grid=grid,
        pooled=pooled,
        strongest=strongest_keys(result.weights[:, :, keep][:, :, :, keep], tokens),
        cards=role_cards(result, form.role),
        summary=role_summary(result),
        thresholds=thresholds_sentence(),
        layer_chart=layer_chart(result),
        layer_table=layer_table(result),
        rollout=rollout_view(result),
        lines=line_view(result, form.line_heads, form.start),
        ranking=ranking_view(result),
        projections=Projections(
            [projection(shown, name, title, tokens) for name, title in PROJECTIONS.items()]
        ),
        stages=head_stages(shown, keep.index(query) if query in keep else 0, room=FOCUS_ROOM_PX),
        request_json=request,
        source=load_model(settings.model_dir).source_text(),
        language=language_note(settings),
    )


def model_page(
    form: ModelForm,
    problems: list[Problem],
    notes: list[str],
    settings: Settings,
    link: Callable[[str], str] = str,
    check: Callable[[], None] = still_wanted,
) -> Page:
    """Everything /model shows for one state, the model run once; what cannot be used is
    said. `link` makes a local address a link that keeps the reader's view (language,
    presenter mode): the grid's panels are links built here. `check` may stop the ranking
    of the heads between its parts (a live update the reader has already replaced)."""
    form = form.opened()
    view = ModelView(form=form, link=link)
    try:
        result = compute_model(
            form.request(), settings, rank_if_short=True, as_json=False, check=check
        )
    except InputError as error:
        problems = [*problems, Problem(str(error.loc[0]), error.msg)]
    except ValidationError as error:
        found = validation_errors(error.errors(include_url=False))
        problems = [
            *problems,
            *(Problem(str(e["loc"][0]) if e["loc"] else "", e["msg"]) for e in found),
        ]
    except ModelUnavailableError as error:
        view = replace(view, unavailable=error.msg)
    else:
        view = read_result(view, result, settings)
        if form.query is not None and view.query != form.query:
            notes = [
                *notes,
                gettext(
                    "query %(asked)s is past the last word piece: showing the last one, %(last)s."
                )
                % {"asked": form.query, "last": view.query},
            ]
    return Page(
        template="model/model.html",
        fragment="model/_live.html",
        view=view,
        problems=problems,
        notes=notes,
        state=view.form.state(),
    )
