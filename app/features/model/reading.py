"""The /model page's reading of a result: role badges and their summary, the per-layer chart
of where attention goes, rollout, the line view's geometry, the ablation and the ranking.

Everything here formats what the service computed; no attention arithmetic is done twice.
"""

from collections.abc import Sequence
from typing import Any

import numpy as np

from app.core.i18n import N_, format_number, format_numbers, gettext
from app.features.model.service import ModelResult
from app.math.roles import LABELS, POSITION_THRESHOLD, SPECIAL_THRESHOLD, broad_threshold
from app.web.figures import heatmap, plotly_text

ROLE_NAMES = {  # API label → what the page calls it
    "previous": N_("previous token"),
    "next": N_("next token"),
    "self": N_("itself"),
    "cls": N_("[CLS]"),
    "sep": N_("[SEP]"),
    "broad": N_("broad"),
}
ROLE_SHORT = {
    "previous": N_("prev"),
    "next": N_("next"),
    "self": N_("self"),
    "cls": "CLS",
    "sep": "SEP",
    "broad": N_("broad"),
}  # fmt: skip  (the grid's badges)
HEAD_COLOURS = (
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf",
    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#393b79", "#637939",
)  # fmt: skip
LINE_WINDOW = 40  # word pieces per column of the line view
LINE_MIN_WEIGHT = 0.02  # lighter lines are not drawn (they would be invisible anyway)
GRID_CELLS = 32  # a head's thumbnail in the grid has at most this many rows and columns


def head_name(layer: int, head: int) -> str:
    return gettext("layer %(layer)s head %(head)s") % {"layer": layer, "head": head}


def role_cards(result: ModelResult, role: str) -> list[list[dict[str, Any]]]:
    """layers × heads: each head's badges (the label and the number that decided it)."""
    n = len(result.tokens)
    cards = []
    for layer, row in enumerate(result.roles):
        cards_row = []
        for head, means in enumerate(row):
            badges = [
                {
                    "label": label,
                    "name": gettext(ROLE_NAMES[label]),
                    "value": means["entropy"] if label == "broad" else means[label],  # type: ignore[literal-required]
                }
                for label in means["labels"]
            ]
            cards_row.append(
                {
                    "layer": layer,
                    "head": head,
                    "badges": badges,
                    "labels": means["labels"],
                    "means": means,
                    "ablated": (layer, head) in result.ablate,
                    "shown": not role or role in means["labels"],
                    "broad_at": broad_threshold(n),
                }
            )
        cards.append(cards_row)
    return cards


def role_summary(result: ModelResult) -> list[dict[str, Any]]:
    """For each role: the heads that carry it, named, and the rule that gave the label."""
    n = len(result.tokens)
    rules = {
        "previous": gettext("mean weight on the piece before > %(t)s")
        % {"t": format_number(POSITION_THRESHOLD)},
        "next": gettext("mean weight on the piece after > %(t)s")
        % {"t": format_number(POSITION_THRESHOLD)},
        "self": gettext("mean weight on itself > %(t)s") % {"t": format_number(POSITION_THRESHOLD)},
        "cls": gettext("mean weight on [CLS] > %(t)s") % {"t": format_number(SPECIAL_THRESHOLD)},
        "sep": gettext("mean weight on [SEP] > %(t)s") % {"t": format_number(SPECIAL_THRESHOLD)},
        "broad": gettext("mean entropy ≥ 0.8 · ln %(n)s = %(v)s nats")
        % {"n": n, "v": format_number(broad_threshold(n), 2)},
    }
    summary = []
    for label in LABELS:
        heads = [
            (layer, head)
            for layer, row in enumerate(result.roles)
            for head, means in enumerate(row)
            if label in means["labels"]
        ]
        summary.append(
            {
                "label": label,
                "name": gettext(ROLE_NAMES[label]),
                "rule": rules[label],
                "count": len(heads),
                "heads": ", ".join(head_name(*h) for h in heads),
            }
        )
    return summary


def badge_annotations(
    result: ModelResult, role: str, block: int, cells: int
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Badges written on the grid's blocks, and grey veils over the heads the filter hides
    or that are switched off."""
    notes, veils = [], []
    for layer, row in enumerate(result.roles):
        for head, means in enumerate(row):
            x0, y0 = head * block - 0.5, layer * block - 0.5
            if means["labels"]:
                notes.append(
                    {
                        "x": x0 + 0.5,
                        "y": y0 + 0.5,
                        "xref": "x",
                        "yref": "y",
                        "xanchor": "left",
                        "yanchor": "top",
                        "showarrow": False,
                        "text": plotly_text(
                            " ".join(gettext(ROLE_SHORT[x]) for x in means["labels"])
                        ),
                        "font": {"size": 10, "color": "#ffffff"},
                        "bgcolor": "rgba(0,0,0,0.6)",
                    }
                )
            off = (layer, head) in result.ablate
            if off or (role and role not in means["labels"]):
                veils.append(
                    {
                        "type": "rect",
                        "x0": x0,
                        "x1": x0 + cells,
                        "y0": y0,
                        "y1": y0 + cells,
                        "fillcolor": "rgba(128,128,128,0.75)" if not off else "rgba(0,0,0,0.55)",
                        "line": {"width": 0},
                    }
                )
    return notes, veils


def pooled(weights: np.ndarray, tokens: Sequence[str]) -> tuple[np.ndarray, list[str]]:
    """Each head's n × n weights averaged over blocks of neighbouring pieces, so that a
    thumbnail has at most GRID_CELLS rows and columns; the blocks' labels ("pieces 3–9")."""
    n = len(tokens)
    if n <= GRID_CELLS:
        return weights, list(tokens)
    bins = np.array_split(np.arange(n), GRID_CELLS)
    rows = np.stack([weights[..., b, :].mean(axis=-2) for b in bins], axis=-2)
    cells = np.stack([rows[..., b].mean(axis=-1) for b in bins], axis=-1)
    labels = [gettext("pieces %(a)s–%(b)s") % {"a": b[0], "b": b[-1]} for b in bins]
    return cells, labels


def layer_chart(result: ModelResult) -> dict[str, Any]:
    """Mean attention to [CLS], [SEP] and punctuation by layer (Clark et al., Figure 2):
    a line through each layer's mean over heads, and a dot per head."""
    layers = list(range(result.model.layers))
    series = (
        (result.attention_to.cls, "[CLS]", "#1f77b4"),
        (result.attention_to.sep, "[SEP]", "#d62728"),
        (result.attention_to.punctuation, plotly_text(gettext("punctuation")), "#2ca02c"),
    )
    data: list[dict[str, Any]] = []
    for values, name, colour in series:
        heads = np.asarray(values)
        data.append(
            {
                "type": "scatter",
                "mode": "markers",
                "x": np.repeat(layers, heads.shape[1]).tolist(),
                "y": np.round(heads.ravel(), 4),
                "name": name,
                "legendgroup": name,
                "showlegend": False,
                "marker": {"color": colour, "opacity": 0.35, "size": 6},
                "hovertemplate": name + ": %{y:.2f}<extra></extra>",
            }
        )
        data.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "x": layers,
                "y": np.round(heads.mean(axis=1), 4),
                "name": name,
                "legendgroup": name,
                "line": {"color": colour, "width": 3},
            }
        )
    return {
        "data": data,
        "layout": {
            "xaxis": {"title": {"text": plotly_text(gettext("layer"))}, "dtick": 1},
            "yaxis": {
                "title": {"text": plotly_text(gettext("mean attention"))},
                "range": [0, 1],
            },
            "margin": {"l": 60, "r": 10, "t": 20, "b": 50},
            "height": 320,
            "legend": {"orientation": "h", "y": 1.12},
        },
    }


def layer_table(result: ModelResult) -> list[dict[str, Any]]:
    return [
        {
            "layer": layer,
            "cls": float(np.mean(result.attention_to.cls[layer])),
            "sep": float(np.mean(result.attention_to.sep[layer])),
            "punctuation": float(np.mean(result.attention_to.punctuation[layer])),
        }
        for layer in range(result.model.layers)
    ]


def rollout_view(result: ModelResult) -> dict[str, Any]:
    tokens = result.tokens
    share = np.asarray(result.input_share)
    order = np.argsort(-share, kind="stable")
    return {
        "fig": heatmap(
            result.rollout,
            tokens,
            tokens,
            gettext("attention rollout after the last layer"),
            x_title=gettext("input piece"),
            y_title=gettext("piece at the top"),
        ),
        "share_fig": {
            "data": [
                {
                    "type": "bar",
                    "x": [plotly_text(f"{i}: {t}") for i, t in enumerate(tokens)],
                    "y": np.round(share, 4),
                    "marker": {"color": "#6a51a3"},
                    "hovertemplate": "%{x}: %{y:.3f}<extra></extra>",
                }
            ],
            "layout": {
                "xaxis": {"type": "category", "tickangle": -60},
                "yaxis": {"title": {"text": plotly_text(gettext("share"))}},
                "margin": {"l": 60, "r": 10, "t": 10, "b": 90},
                "height": 300,
            },
        },
        "share": [{"index": int(i), "token": tokens[i], "share": float(share[i])} for i in order],
    }


def line_view(result: ModelResult, heads: Sequence[tuple[int, int]], start: int) -> dict[str, Any]:
    """The line view's SVG geometry: the pieces start … start + LINE_WINDOW − 1 in two
    columns, a line per query, key and head (at most MAX_LINE_HEADS, a colour each) whose
    width and opacity follow the weight."""
    assert result.weights is not None
    n = len(result.tokens)
    start = max(0, min(start, max(0, n - LINE_WINDOW)))
    window = list(range(start, min(n, start + LINE_WINDOW)))
    row_h, top, left, right, width = 22, 30, 150, 410, 560
    y = {i: top + row_h * k for k, i in enumerate(window)}
    lines = []
    label = gettext("%(q)s → %(k)s: %(w)s (%(head)s)")
    for colour_index, (layer, head) in enumerate(heads):
        w = result.weights[layer, head][np.ix_(window, window)].tolist()
        drawn = [
            (i, j, weight)
            for i, row in zip(window, w, strict=True)
            for j, weight in zip(window, row, strict=True)
            if weight >= LINE_MIN_WEIGHT
        ]
        colour, name = HEAD_COLOURS[colour_index], head_name(layer, head)
        texts = format_numbers([weight for _, _, weight in drawn], 2)
        lines.extend(
            {
                "q": i,
                "k": j,
                "y1": y[i],
                "y2": y[j],
                "w": weight,
                "width": round(0.5 + 5 * weight, 2),
                "opacity": round(min(1.0, 0.15 + 0.85 * weight), 3),
                "colour": colour,
                "label": label
                % {"q": result.tokens[i], "k": result.tokens[j], "w": text, "head": name},
            }
            for (i, j, weight), text in zip(drawn, texts, strict=True)
        )
    table = []
    for i in window:
        cells = []
        for layer, head in heads:
            row = result.weights[layer, head, i, window]
            best = int(np.argmax(row))
            cells.append({"token": result.tokens[window[best]], "weight": float(row[best])})
        table.append({"index": i, "token": result.tokens[i], "cells": cells})
    return {
        "start": start,
        "end": window[-1],
        "n": n,
        "window": LINE_WINDOW,
        "tokens": [{"index": i, "token": result.tokens[i], "y": y[i]} for i in window],
        "lines": lines,
        "heads": [
            {"key": f"{layer}.{head}", "name": head_name(layer, head), "colour": HEAD_COLOURS[c]}
            for c, (layer, head) in enumerate(heads)
        ],
        "height": top + row_h * len(window) + 10,
        "width": width,
        "left": left,
        "right": right,
        "table": table,
        "earlier": max(0, start - LINE_WINDOW) if start > 0 else None,
        "later": start + LINE_WINDOW if start + LINE_WINDOW < n else None,
    }


def ranking_view(result: ModelResult, shown: int = 10) -> dict[str, Any] | None:
    if result.ranking is None:
        return None
    rows = [
        {"name": head_name(e.layer, e.head), "layer": e.layer, "head": e.head,
         "similarity": e.similarity, "change": e.change}
        for e in result.ranking
    ]  # fmt: skip
    return {"top": rows[:shown], "rest": rows[shown:]}
