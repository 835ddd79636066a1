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
    cell_height: int = 96,
) -> dict[str, Any]:
    """A rows × cols grid of small n × n heatmaps on one colour scale, 0 to 1: every head of
    every layer at a glance. Each trace's `meta` is [row, col], for a click to pick it."""
    rows, cols = z.shape[:2]
    ticks = _unique(labels)
    gap = 0.006
    traces: list[dict[str, Any]] = []
    layout: dict[str, Any] = {
        "coloraxis": {
            "colorscale": SEQUENTIAL,
            "cmin": 0.0,
            "cmax": 1.0,
            "colorbar": {"thickness": 12, "len": 0.6, "title": {"text": "weight"}},
        },
        "annotations": [],
        "shapes": [],
        "margin": {"l": 64, "r": 10, "t": 36, "b": 10},
        "height": 46 + rows * cell_height,
        "showlegend": False,
    }
    for r in range(rows):
        for c in range(cols):
            axis = "" if r == 0 and c == 0 else str(r * cols + c + 1)
            x_domain = [c / cols + gap, (c + 1) / cols - gap]
            y_domain = [1 - (r + 1) / rows + gap, 1 - r / rows - gap]
            traces.append(
                {
                    "type": "heatmap",
                    "z": np.round(z[r, c].astype(float), 3).tolist(),
                    "x": ticks,
                    "y": ticks,
                    "xaxis": f"x{axis}",
                    "yaxis": f"y{axis}",
                    "coloraxis": "coloraxis",
                    "meta": [r, c],
                    "hovertemplate": f"{row_titles[r]} · {col_titles[c]}<br>"
                    "%{y} → %{x}: %{z:.3f}<extra></extra>",
                }
            )
            hidden = {"visible": False, "type": "category", "fixedrange": True}
            layout[f"xaxis{axis}"] = {**hidden, "domain": x_domain}
            layout[f"yaxis{axis}"] = {**hidden, "domain": y_domain, "autorange": "reversed"}
    for r, title in enumerate(row_titles):
        y = 1 - (r + 0.5) / rows
        layout["annotations"].append(_grid_title(title, x=0, y=y, xanchor="right"))
    for c, title in enumerate(col_titles):
        x = (c + 0.5) / cols
        layout["annotations"].append(_grid_title(title, x=x, y=1, yanchor="bottom"))
    if selected is not None:
        r, c = selected
        layout["shapes"].append(
            {
                "type": "rect",
                "xref": "paper",
                "yref": "paper",
                "x0": c / cols,
                "x1": (c + 1) / cols,
                "y0": 1 - (r + 1) / rows,
                "y1": 1 - r / rows,
                "line": {"color": "#c2410c", "width": 3},
            }
        )
    return {"data": traces, "layout": layout}


def _grid_title(text: str, **position: Any) -> dict[str, Any]:
    return {"text": text, "xref": "paper", "yref": "paper", "showarrow": False, **position}
