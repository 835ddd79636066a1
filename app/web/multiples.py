"""Many heatmaps in one figure: every head of a layer (/heads), a thumbnail. One plotly
figure draws many times faster than one per matrix; all share one colour scale for weights,
0 to 1."""

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from app.core.i18n import gettext
from app.web.figures import (
    GAPS_UP_TO,
    SEQUENTIAL,
    WEIGHT_RANGE,
    _unique,
    hidden_trace,
    plotly_text,
)

TICK_FONT_PX = 10  # token labels of small multiples: no smaller (figures.js thins them instead)


def thumbnail(fig: dict[str, Any], title: str) -> dict[str, Any]:
    """A heatmap made small for side-by-side comparison: short title, small token labels on
    both axes, no colour bar or cell labels (its group shares one colour bar, the full-size
    figure and its table carry the numbers)."""
    trace = {k: v for k, v in fig["data"][0].items() if k not in ("text", "texttemplate")}
    trace["showscale"] = False
    small = {"title": {"text": ""}, "showticklabels": True, "tickfont": {"size": TICK_FONT_PX}}
    layout = {
        **fig["layout"],
        "title": {"text": title, "font": {"size": 13}},
        "xaxis": {**fig["layout"]["xaxis"], **small},
        "yaxis": {**fig["layout"]["yaxis"], **small},
        "margin": {"l": 8, "r": 8, "t": 30, "b": 8},
        "height": 190,
        "showlegend": False,
    }
    hidden = [{k: v for k, v in t.items() if k not in ("text", "texttemplate")}
              for t in fig["data"][1:]]  # fmt: skip
    return {"data": [trace, *hidden], "layout": layout}


def small_multiples(
    matrices: Sequence[np.ndarray],
    labels: Sequence[str],
    titles: Sequence[str],
    hidden: np.ndarray | None = None,
    columns: int = 4,
    selected: int | None = None,
    ids: Sequence[int] | None = None,
) -> dict[str, Any]:
    """Several n × n weight matrices (one per head) as one heatmap trace: the panels tiled in
    a grid with blank cells between them, each titled in the blank rows above it, the key
    tokens along the top and the query tokens down the left (every column and row of panels
    shares them), one colour bar on [0, 1] (layout.coloraxis), hidden cells in the hidden
    colour. One trace on one pair of axes draws several times faster than a subplot per
    head. `meta` says which panel a clicked cell belongs to: panels[cell row // rows][cell
    column // cols], an entry of `ids` (by default the panel's index); `selected` (an id) is
    outlined."""
    count, n = len(matrices), len(labels)
    columns = max(1, min(columns, count))
    rows = math.ceil(count / columns)
    ids = list(range(count)) if ids is None else list(ids)
    above = max(1, math.ceil(n / 8))  # blank rows for a title: about 12 px at any n
    step_x, step_y = n + 1, above + n
    z = np.full((rows * step_y, columns * step_x - 1), np.nan)
    covered = np.zeros(z.shape, dtype=bool)
    hide = None if hidden is None else np.asarray(hidden, dtype=bool)
    tokens = _unique(labels)
    weight = plotly_text(gettext("weight"))
    panel_titles = [plotly_text(t) for t in titles]
    hover = np.full(z.shape, "", dtype=object)
    pairs = np.array([[f"{q} → {k}" for k in tokens] for q in tokens], dtype=object)
    for i, matrix in enumerate(matrices):
        r, c = divmod(i, columns)
        cells = np.s_[r * step_y + above : (r + 1) * step_y, c * step_x : c * step_x + n]
        block = np.asarray(matrix, dtype=float)
        if hide is not None:
            block = np.where(hide, np.nan, block)
            covered[cells] = hide
        z[cells] = block
        hover[cells] = panel_titles[i] + "<br>" + pairs
    x = [f"{c}·{j}" for c in range(columns) for j in range(step_x)][: z.shape[1]]
    y = [f"{r}·{i}" for r in range(rows) for i in range(step_y)]
    shown = [plotly_text(t) for t in labels]  # the tokens as typed ("the", not "the (2)")
    key_ticks = [(x[c * step_x + j], shown[j]) for c in range(columns) for j in range(n)]
    query_ticks = [(y[r * step_y + above + i], shown[i]) for r in range(rows) for i in range(n)]
    trace: dict[str, Any] = {
        "type": "heatmap",
        "z": np.round(z, 3),  # orjson writes NaN as null: the blank cells between panels
        "x": x,
        "y": y,
        "coloraxis": "coloraxis",
        "customdata": hover.tolist(),
        "hoverongaps": False,
        "hovertemplate": "%{customdata}<br>" + weight + " %{z:.3f}<extra></extra>",
        "meta": {
            "rows": step_y,
            "cols": step_x,
            "panels": [ids[r * columns : (r + 1) * columns] for r in range(rows)],
        },
    }
    if n <= GAPS_UP_TO:
        trace["xgap"] = trace["ygap"] = 1
    axis = {
        "type": "category",
        "tickfont": {"size": TICK_FONT_PX},
        "fixedrange": True,
        "showgrid": False,
    }
    layout: dict[str, Any] = {
        "coloraxis": {
            "colorscale": SEQUENTIAL,
            "cmin": WEIGHT_RANGE[0],
            "cmax": WEIGHT_RANGE[1],
            "colorbar": {"thickness": 12, "len": 0.9, "title": {"text": weight}},
        },
        # Flat, or upright where they do not fit: a slant lets long tokens run into each other.
        "xaxis": {**axis, "side": "top", "constrain": "domain", "autotickangles": [0, 90],
                  "tickvals": [v for v, _ in key_ticks], "ticktext": [t for _, t in key_ticks]},
        "yaxis": {**axis, "autorange": "reversed", "scaleanchor": "x", "constrain": "domain",
                  "tickvals": [v for v, _ in query_ticks],
                  "ticktext": [t for _, t in query_ticks]},
        "annotations": [
            {"text": panel_titles[i], "xref": "x", "yref": "y", "showarrow": False,
             "x": (i % columns) * step_x + (n - 1) / 2,
             "y": (i // columns) * step_y + above - 0.5, "yanchor": "bottom",
             "font": {"size": 12}}
            for i in range(count)
        ],
        "shapes": [],
        "margin": {"l": 60, "r": 10, "t": 44, "b": 10},
        # Two rows of panels (the default h = 4, g = 2) fit the first screen at 1280×800.
        "height": 54 + 170 * rows,
    }  # fmt: skip
    if selected is not None and selected in ids:
        r, c = divmod(ids.index(selected), columns)
        top = r * step_y + above
        layout["shapes"].append(
            {"type": "rect", "xref": "x", "yref": "y", "x0": c * step_x - 0.5,
             "x1": c * step_x + n - 0.5, "y0": top - 0.5, "y1": top + n - 0.5,
             "line": {"color": "#c2410c", "width": 3}}
        )  # fmt: skip
    data = [trace]
    if covered.any():
        over = hidden_trace(covered, trace)
        over["customdata"] = trace["customdata"]  # which head, query and key, then "hidden"
        over["hovertemplate"] = "%{customdata}<br>" + over["name"] + "<extra></extra>"
        data.append(over)
        layout["showlegend"] = True
        layout["legend"] = {"orientation": "h", "x": 0, "y": 0, "yanchor": "top"}
        layout["margin"]["b"] = 40
    return {"data": data, "layout": layout}
