"""What the /model page shows of a result: the grid of every head, its text version, and the
selected head's stages (laid out for the shared stage strip)."""

from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlencode

import numpy as np
from pydantic import ValidationError

from app.core.errors import InputError, ModelUnavailableError, validation_errors
from app.core.i18n import gettext
from app.core.limits import MAX_LINE_HEADS, MAX_RANKED_PIECES
from app.features.model.reading import (
    GRID_CELLS,
    badge_annotations,
    layer_chart,
    layer_table,
    line_view,
    pooled,
    ranking_view,
    role_cards,
    role_summary,
    rollout_view,
)
from app.features.model.results import ModelHead
from app.features.model.schemas import MODEL_PAGE_DEFAULTS, ModelPageParams
from app.features.model.service import ModelResult, compute_model
from app.features.model.store import MODEL_SHAPE, load_model
from app.features.stages.page import Stage, Table, head_stages, matrix_map
from app.features.stages.results import OneHead
from app.settings import Settings
from app.web.multiples import heatmap_grid


def shown_positions(result: ModelResult, hide_special: bool) -> list[int]:
    """The positions the page shows: all, or all but [CLS] and [SEP]."""
    n = len(result.tokens)
    keep = [i for i in range(n) if not (hide_special and result.special[i])]
    return keep or list(range(n))  # a text of special pieces only


def strongest_keys(weights: np.ndarray, tokens: Sequence[str]) -> list[list[dict[str, Any]]]:
    """For each layer and head: the key that gets the most weight, averaged over the
    queries. A text version of the grid, and its links to each head."""
    mean = weights.mean(axis=2)  # (layers, heads, n): each key's average weight
    best = mean.argmax(axis=-1)  # (layers, heads)
    return [
        [{"token": tokens[j], "weight": float(row[h, j])} for h, j in enumerate(bests)]
        for row, bests in zip(mean, best, strict=True)
    ]


BY_TOKEN = ("q", "k", "v", "output")  # n × d_head: one row per token


BY_PAIR = ("scores", "scaled", "allowed", "masked", "weights")  # n × n: query row, key column


PROJECTIONS = {"q": "Q = x·W_Q + b_Q", "k": "K = x·W_K + b_K", "v": "V = x·W_V + b_V"}


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


def page_link(page: ModelPageParams, **changes: Any) -> str:
    """This page's URL with some parameters changed (defaults left out)."""
    state: dict[str, Any] = {
        "text": page.text,
        "layer": page.layer,
        "head": page.head,
        "hide_special": "on" if page.hide_special else None,
        "off": page.off,
        "compare": page.compare or None,
        "role": page.role or None,
        "lines": page.lines,
        "start": page.start or None,
    }
    state.update(changes)
    return "/model?" + urlencode({k: v for k, v in state.items() if v is not None}, doseq=True)


def head_links(page: ModelPageParams, layers: int, heads: int) -> list[list[str]]:
    """page_link(page, layer=a, head=b) for every head of the model, the rest of the query
    encoded once rather than 72 times."""
    text = urlencode({"text": page.text})
    rest = page_link(page, text=None, layer=None, head=None).partition("?")[2]
    tail = "&" + rest if rest else ""
    return [
        [f"/model?{text}&layer={a}&head={b}{tail}" for b in range(heads)] for a in range(layers)
    ]


def grid_figure(result: ModelResult, keep: list[int], role: str) -> dict[str, Any]:
    """Every head's weights at the shown positions as one grid of thumbnails (pooled over
    neighbouring pieces for long inputs), with role badges and veils over the heads that
    the filter hides or that are switched off."""
    assert result.weights is not None
    tokens = [result.tokens[i] for i in keep]
    weights = result.weights[:, :, keep][:, :, :, keep]  # (layers, heads, m, m)
    cells, labels = pooled(weights, tokens)
    selected = (result.head.layer, result.head.head) if result.head else None
    fig = heatmap_grid(
        cells,
        labels,
        [gettext("layer %(i)s") % {"i": i} for i in range(result.model.layers)],
        [gettext("head %(h)s") % {"h": i} for i in range(result.model.heads)],
        (gettext("layer"), gettext("head")),
        selected,
    )
    m = cells.shape[-1]
    notes, veils = badge_annotations(result, role, m + 1, m)
    fig["layout"]["annotations"].extend(notes)
    fig["layout"]["shapes"] = veils + fig["layout"]["shapes"]
    return fig


def drawn_heads(page: ModelPageParams, result: ModelResult) -> list[tuple[int, int]]:
    """The heads the line view draws: those ticked (checked against the model), or the
    chosen head when none is."""
    heads = page.line_heads()
    layers, per_layer = result.model.layers, result.model.heads
    for layer, head in heads:
        if layer >= layers or head >= per_layer:
            raise InputError(
                ("lines",),
                f"lines={layer}.{head} is not a head of the model, which has layers 0 to "
                f"{layers - 1} and heads 0 to {per_layer - 1} in each; untick it",
                source="query",
            )
    return heads


def model_view(
    result: ModelResult, page: ModelPageParams, line_heads: list[tuple[int, int]]
) -> dict[str, Any]:
    """What the /model page shows of a result: the grid of every head with its badges, the
    reading of the heads (roles, where attention goes by layer, rollout, lines), the
    ablation and the second sentence, and the selected head's stages: its 32-wide Q, K, V,
    then the lab's strip and query table. [CLS] and [SEP] may be left out of the grid and
    the stages."""
    assert result.weights is not None
    assert result.head is not None
    keep = shown_positions(result, page.hide_special)
    tokens = [result.tokens[i] for i in keep]
    weights = result.weights[:, :, keep][:, :, :, keep]  # (layers, heads, m, m)
    layer, chosen = result.head.layer, result.head.head
    view: dict[str, Any] = {
        "tokens": tokens,
        "hidden": len(keep) < len(result.tokens),
        "grid": grid_figure(result, keep, page.role),
        "pooled": len(keep) > GRID_CELLS,
        "strongest": strongest_keys(weights, tokens),
        "cards": role_cards(result, page.role),
        "summary": role_summary(result),
        "layer_chart": layer_chart(result),
        "layer_table": layer_table(result),
        "rollout": rollout_view(result),
        "lines": line_view(result, line_heads, page.start),
        "ranking": ranking_view(result),
        "off": {f"{a}.{b}" for a, b in result.ablate},
        "links": head_links(page, result.model.layers, result.model.heads),
    }
    view["all_on"] = page_link(page, off=[])
    view["lines_links"] = {
        "chosen": page_link(page, lines=[]) + "#line-view",
        "layer": page_link(page, lines=[f"{layer}.{h}" for h in range(result.model.heads)])
        + "#line-view",
    }
    request = {
        "text": page.text,
        "layer": layer,
        "head": chosen,
        "query": result.head.query.index,
    }
    if result.ablate:
        request["ablate"] = [list(pair) for pair in result.ablate]
    if result.compare is not None:
        request.update(compare_text=page.compare, rank_heads=result.ranking is not None)
    view["request_json"] = request
    view["ranked_pieces"] = MAX_RANKED_PIECES
    lines = view["lines"]
    view["drawn"] = {h["key"]: h["colour"] for h in lines["heads"]} if page.lines else {}
    view["line_limit"] = MAX_LINE_HEADS
    view["window_links"] = {
        side: None if lines[side] is None else page_link(page, start=lines[side]) + "#line-view"
        for side in ("earlier", "later")
    }
    head = result.head
    shown = shown_head(head, keep, tokens)
    query = head.query.index
    dims = [f"d{j}" for j in range(head.d_head)]
    projections = [
        Stage(
            name,
            title,
            matrix_map(
                f"proj-{name}", getattr(shown, name), tokens, dims, title, gettext("dimension")
            ),
            Table(np.asarray(getattr(shown, name)).tolist(), list(tokens), dims, title),
        )
        for name, title in PROJECTIONS.items()
    ]
    view["projections"] = {"stages": projections, "full_tables": True}
    view["stages"] = head_stages(shown, keep.index(query) if query in keep else 0)
    return view


def model_page(params: Mapping[str, Any], settings: Settings) -> tuple[dict[str, Any], int]:
    """The /model page's context and status: the view of the URL's sentence and head, or
    the sentences saying what to fix (422) or how to install the model (503)."""
    form = {**MODEL_PAGE_DEFAULTS, **params}
    context: dict[str, Any] = {"form": form, "errors": [], "result": None, "shape": MODEL_SHAPE}
    try:
        page = ModelPageParams.model_validate(form)
        result = compute_model(page.request(), settings, rank_if_short=True, as_json=False)
        line_heads = drawn_heads(page, result)
    except ValidationError as exc:
        context["errors"] = [e["msg"] for e in validation_errors(exc.errors())]
        return context, 422
    except InputError as exc:
        context["errors"] = [exc.msg]
        return context, 422
    except ModelUnavailableError as exc:
        context.update(errors=[exc.msg], unavailable=True)
        return context, 503
    shape = (result.model.layers, result.model.heads)
    view = model_view(result, page, line_heads)
    context.update(result=result, view=view, shape=shape, page=page)
    context["source"] = load_model(settings.model_dir).source_text()
    return context, 200
