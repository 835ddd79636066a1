"""Many heatmaps in one figure: every head of every layer (/model), every head of a layer
(/heads), a thumbnail. One plotly figure draws many times faster than one per matrix; all
share one colour scale for weights, 0 to 1."""

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


def heatmap_grid(
    z: np.ndarray,
    labels: Sequence[str],
    row_titles: Sequence[str],
    col_titles: Sequence[str],
    selected: tuple[int, int] | None = None,
) -> dict[str, Any]:
    """A rows × cols grid of n × n heatmaps on one colour scale, 0 to 1: every head of every
    layer at a glance. One trace, the blocks side by side with a blank line between them
    (72 separate subplots cost plotly and the page ten times more). `meta.block` is n + 1:
    the cell at (i, j) belongs to block (i // block, j // block)."""
    rows, cols, n = z.shape[0], z.shape[1], z.shape[-1]
    block = n + 1
    weight = plotly_text(gettext("weight"))
    tiled = np.full((rows, block, cols, block), np.nan)
    tiled[:, :n, :, :n] = np.asarray(z, dtype=float).transpose(0, 2, 1, 3)
    tiled = tiled.reshape(rows * block, cols * block)[:-1, :-1]  # no gap after the last
    tokens = _unique(labels)
    key, query = plotly_text(gettext("key")), plotly_text(gettext("query"))
    x = [f"{title} · {key} {t}" for title in col_titles for t in [*tokens, ""]][:-1]
    y = [f"{title} · {query} {t}" for title in row_titles for t in [*tokens, ""]][:-1]
    layout: dict[str, Any] = {
        "xaxis": {"visible": False, "type": "category", "fixedrange": True, "constrain": "domain"},
        "yaxis": {"visible": False, "type": "category", "fixedrange": True,
                  "autorange": "reversed", "scaleanchor": "x", "constrain": "domain",
                  "constraintoward": "top"},
        "annotations": [
            *(_grid_title(t, x=c * block + (n - 1) / 2, y=-1, yanchor="bottom")
              for c, t in enumerate(col_titles)),
            *(_grid_title(t, x=-1, y=r * block + (n - 1) / 2, xanchor="right")
              for r, t in enumerate(row_titles)),
        ],
        "shapes": [],
        "margin": {"l": 64, "r": 10, "t": 30, "b": 10},
        "height": 60 + 90 * rows,
    }  # fmt: skip
    if selected is not None:
        r, c = selected
        corner = (c * block - 0.5, r * block - 0.5)
        layout["shapes"].append(
            {
                "type": "rect",
                "x0": corner[0],
                "x1": corner[0] + n,
                "y0": corner[1],
                "y1": corner[1] + n,
                "line": {"color": "#c2410c", "width": 3},
            }
        )
    trace = {
        "type": "heatmap",
        "z": np.round(tiled, 3),  # orjson writes NaN as null: the gaps between blocks
        "x": x,
        "y": y,
        "colorscale": SEQUENTIAL,
        "zmin": 0.0,
        "zmax": 1.0,
        "colorbar": {"thickness": 12, "len": 0.8, "title": {"text": weight}},
        "hoverongaps": False,
        "hovertemplate": "%{y}<br>%{x}<br>" + weight + " %{z:.3f}<extra></extra>",
        "meta": {"block": block},
    }
    return {"data": [trace], "layout": layout}


def _grid_title(text: str, **position: Any) -> dict[str, Any]:
    return {"text": text, "xref": "x", "yref": "y", "showarrow": False, **position}


def thumbnail(fig: dict[str, Any], title: str) -> dict[str, Any]:
    """A heatmap made small for side-by-side comparison: short title, small token labels on
    both axes, no colour bar or cell labels (its group shares one colour bar, the full-size
    figure and its table carry the numbers)."""
    trace = {k: v for k, v in fig["data"][0].items() if k not in ("text", "texttemplate")}
    trace["showscale"] = False
    small = {"title": {"text": ""}, "showticklabels": True, "tickfont": {"size": 9}}
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
    """Several n × n weight matrices (one per head) as one figure: a grid of panels with
    token labels on both axes of each, one shared colour bar on [0, 1] (layout.coloraxis),
    and hidden cells in the hidden colour. One plotly figure draws many times faster than
    one per head. Each panel's trace carries `meta.panel` (its entry of `ids`, by default
    its index) for a click; `selected` (an id) is outlined."""
    count = len(matrices)
    columns = max(1, min(columns, count))
    rows = math.ceil(count / columns)
    tokens = _unique(labels)
    weight = plotly_text(gettext("weight"))
    gap_x, gap_y = 0.06, 0.5 / max(rows, 1) * 0.45
    width = (1 - gap_x * (columns - 1)) / columns
    height = (1 - gap_y * (rows - 1)) / rows
    data: list[dict[str, Any]] = []
    layout: dict[str, Any] = {
        "coloraxis": {
            "colorscale": SEQUENTIAL,
            "cmin": WEIGHT_RANGE[0],
            "cmax": WEIGHT_RANGE[1],
            "colorbar": {"thickness": 12, "len": 0.9, "title": {"text": weight}},
        },
        "annotations": [],
        "shapes": [],
        "margin": {"l": 60, "r": 10, "t": 50, "b": 10},
        "height": 60 + 210 * rows,
    }
    covered = None if hidden is None else np.asarray(hidden, dtype=bool)
    for i, matrix in enumerate(matrices):
        r, c = divmod(i, columns)
        suffix = "" if i == 0 else str(i + 1)
        x0 = c * (width + gap_x)
        y1 = 1 - r * (height + gap_y)
        domain_x, domain_y = [x0, x0 + width], [y1 - height, y1]
        axis = {"type": "category", "tickfont": {"size": 9}, "fixedrange": True}
        layout[f"xaxis{suffix}"] = {**axis, "domain": domain_x, "anchor": f"y{suffix}",
                                    "side": "top"}  # fmt: skip
        layout[f"yaxis{suffix}"] = {**axis, "domain": domain_y, "anchor": f"x{suffix}",
                                    "autorange": "reversed"}  # fmt: skip
        z = np.asarray(matrix, dtype=float)
        if covered is not None:
            z = np.where(covered, np.nan, z)
        trace: dict[str, Any] = {
            "type": "heatmap",
            "z": np.round(z, 3),
            "x": tokens,
            "y": tokens,
            "xaxis": f"x{suffix}",
            "yaxis": f"y{suffix}",
            "coloraxis": "coloraxis",
            "hoverongaps": False,
            "hovertemplate": f"{plotly_text(titles[i])}<br>%{{y}} → %{{x}}<br>{weight} "
            "%{z:.3f}<extra></extra>",
            "meta": {"panel": ids[i] if ids is not None else i},
        }
        if len(tokens) <= GAPS_UP_TO:
            trace["xgap"] = trace["ygap"] = 1
        data.append(trace)
        if covered is not None and covered.any():
            over = hidden_trace(covered, trace)
            over["showlegend"] = i == 0
            over["legendgroup"] = "hidden"
            data.append(over)
        layout["annotations"].append(
            {"text": plotly_text(titles[i]), "xref": "paper", "yref": "paper", "showarrow": False,
             "x": x0 + width / 2, "y": y1, "yshift": 22, "yanchor": "bottom",
             "font": {"size": 12}}
        )  # fmt: skip
        if selected == (ids[i] if ids is not None else i):
            layout["shapes"].append(
                {"type": "rect", "xref": "paper", "yref": "paper", "x0": domain_x[0],
                 "x1": domain_x[1], "y0": domain_y[0], "y1": domain_y[1],
                 "line": {"color": "#c2410c", "width": 3}}
            )  # fmt: skip
    if covered is not None and covered.any():
        layout["showlegend"] = True
        layout["legend"] = {"orientation": "h", "x": 0, "y": 0, "yanchor": "top"}
        layout["margin"]["b"] = 40
    return {"data": data, "layout": layout}
