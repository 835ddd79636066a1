"""Figure dicts in plotly's figure schema. Plain dicts: microseconds to build, validated by
plotly's own `go.Figure(fig)` in the tests. No web imports, no attention arithmetic."""

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np

# Colour-blind-safe scales: viridis for magnitudes (weights), blue–red centred on 0 for signs.
SEQUENTIAL = "Viridis"
DIVERGING = "RdBu"
LABEL_CELLS_UP_TO = 12

Scale = Literal["sequential", "diverging"]


def cell_text(z: np.ndarray, digits: int = 3, hidden_text: str = "−∞") -> list[list[str]]:
    """Values printed in the cells; hidden (non-finite) entries read `hidden_text`."""
    return [[f"{v:.{digits}f}" if np.isfinite(v) else hidden_text for v in row] for row in z]


def heatmap(
    z: np.ndarray,
    x_labels: Sequence[str],
    y_labels: Sequence[str],
    title: str,
    scale: Scale = "sequential",
    x_title: str = "key",
    y_title: str = "query",
    hover: list[list[str]] | None = None,
    hidden: np.ndarray | None = None,
    hidden_text: str = "−∞",
) -> dict[str, Any]:
    """One matrix as a heatmap: rows top to bottom as in the tables. Hidden cells (−∞, or
    where `hidden` is true) are left blank so the grey plot background shows through, and
    read `hidden_text` when the cells are labelled. z is rounded to 4 decimals: it only
    picks colours, and the JSON stays small at n = 256."""
    z = np.asarray(z, dtype=float)
    if hidden is not None:
        z = np.where(hidden, -np.inf, z)
    finite = np.round(np.where(np.isfinite(z), z, np.nan), 4)
    trace: dict[str, Any] = {
        "type": "heatmap",
        "z": finite,  # orjson writes NaN as null: a gap
        "x": _unique(x_labels),
        "y": _unique(y_labels),
        "colorscale": SEQUENTIAL if scale == "sequential" else DIVERGING,
        "colorbar": {"thickness": 12, "len": 0.9},
        "xgap": 1,
        "ygap": 1,
        "hoverongaps": True,
    }
    if scale == "diverging":
        trace["zmid"] = 0.0
        trace["reversescale"] = True
    else:
        trace["zmin"] = 0.0 if np.nanmin(finite, initial=0.0) >= 0 else None
    if max(z.shape) <= LABEL_CELLS_UP_TO:
        trace["text"] = cell_text(z, hidden_text=hidden_text)
        trace["texttemplate"] = "%{text}"
    if hover is not None:
        trace["customdata"] = hover
        trace["hovertemplate"] = "%{customdata}<extra></extra>"
    return {
        "data": [trace],
        "layout": {
            "title": {"text": title, "y": 0.98, "yanchor": "top"},
            "xaxis": {"title": {"text": x_title}, "side": "top", "type": "category"},
            "yaxis": {"title": {"text": y_title}, "autorange": "reversed", "type": "category"},
            "margin": {"l": 70, "r": 10, "t": 90, "b": 10},
            "height": 320,
        },
    }


def _unique(labels: Sequence[str]) -> list[str]:
    """Category axes merge equal labels; number repeats so every row keeps its own line."""
    seen: dict[str, int] = {}
    out = []
    for label in labels:
        seen[label] = seen.get(label, 0) + 1
        out.append(label if seen[label] == 1 else f"{label} ({seen[label]})")
    return out


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
    tiled = np.full((rows, block, cols, block), np.nan)
    tiled[:, :n, :, :n] = np.asarray(z, dtype=float).transpose(0, 2, 1, 3)
    tiled = tiled.reshape(rows * block, cols * block)[:-1, :-1]  # no gap after the last
    tokens = _unique(labels)
    x = [f"{title} · key {t}" for title in col_titles for t in [*tokens, ""]][:-1]
    y = [f"{title} · query {t}" for title in row_titles for t in [*tokens, ""]][:-1]
    layout: dict[str, Any] = {
        "xaxis": {"visible": False, "type": "category", "fixedrange": True, "constrain": "domain"},
        "yaxis": {"visible": False, "type": "category", "fixedrange": True,
                  "autorange": "reversed", "scaleanchor": "x", "constrain": "domain"},
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
        "colorbar": {"thickness": 12, "len": 0.8, "title": {"text": "weight"}},
        "hoverongaps": False,
        "hovertemplate": "%{y}<br>%{x}<br>weight %{z:.3f}<extra></extra>",
        "meta": {"block": block},
    }
    return {"data": [trace], "layout": layout}


def _grid_title(text: str, **position: Any) -> dict[str, Any]:
    return {"text": text, "xref": "x", "yref": "y", "showarrow": False, **position}
