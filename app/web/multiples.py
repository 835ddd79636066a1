"""Many heatmaps in one figure: every head of every layer (/model), a thumbnail. One plotly
figure draws many times faster than one per matrix; all share one colour scale for weights,
0 to 1."""

from collections.abc import Sequence
from typing import Any

import numpy as np

from app.core.i18n import gettext
from app.web.figures import SEQUENTIAL, _unique, plotly_text

TICK_FONT_PX = 10  # token labels of small multiples: no smaller (figures.js thins them instead)


def heatmap_grid(
    z: np.ndarray,
    labels: Sequence[str],
    row_titles: Sequence[str],
    col_titles: Sequence[str],
    axis_names: tuple[str, str],
    selected: tuple[int, int] | None = None,
) -> dict[str, Any]:
    """A rows × cols grid of n × n heatmaps on one colour scale, 0 to 1: every head of every
    layer at a glance. One trace, the blocks side by side with a blank line between them
    (72 separate subplots cost plotly and the page ten times more). `meta.block` is n + 1:
    the cell at (i, j) belongs to block (i // block, j // block). Rows and columns are
    labelled by their index, under a corner that names both (`axis_names`, e.g. layer and
    head), so that twelve columns stay apart on a phone; the hover text has the titles.
    Every block has its tokens on both axes: keys under each column of blocks, queries left
    of each row (TICK_FONT_PX; static/js/figures.js keeps every k-th where the cells are
    smaller than the font), the row numbers further left, past the longest token."""
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
    shown = [plotly_text(t) for t in labels]
    token_px = round(TICK_FONT_PX * 0.6 * max(len(t) for t in labels)) + 8  # the longest
    ticks = {
        "type": "category",
        "fixedrange": True,
        "constrain": "domain",
        "showgrid": False,
        "ticks": "",
        "tickfont": {"size": TICK_FONT_PX},
    }
    layout: dict[str, Any] = {
        # Fixed ranges: plotly would widen them to take in the number annotations.
        "xaxis": {**ticks, "tickangle": -90, "range": [-0.5, cols * block - 1.5],
                  "tickvals": [x[c * block + j] for c in range(cols) for j in range(n)],
                  "ticktext": shown * cols},
        "yaxis": {**ticks, "range": [rows * block - 1.5, -0.5], "scaleanchor": "x",
                  "constraintoward": "top",
                  "tickvals": [y[r * block + i] for r in range(rows) for i in range(n)],
                  "ticktext": shown * rows},
        # The numbers sit just outside the cells (paper coordinates on one side: plotly
        # draws no annotation outside a data range).
        "annotations": [
            *(_grid_title(str(c), x=c * block + (n - 1) / 2, yref="paper", y=1,
                          yanchor="bottom") for c in range(cols)),
            *(_grid_title(str(r), xref="paper", x=0, y=r * block + (n - 1) / 2,
                          xanchor="right", xshift=-token_px) for r in range(rows)),
            # "head →" beside the column numbers, "layer ↓" above the row numbers.
            _grid_title(f"{plotly_text(axis_names[1])} →", xref="paper", x=0, yref="paper",
                        y=1, xanchor="right", yanchor="bottom"),
            _grid_title(f"{plotly_text(axis_names[0])} ↓", xref="paper", x=0, yref="paper",
                        y=1, xanchor="right", yanchor="bottom", yshift=16, xshift=-token_px),
        ],
        "shapes": [],
        "margin": {"l": 64 + token_px, "r": 10, "t": 46, "b": 10 + token_px},
        "height": 76 + 90 * rows + token_px,
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
