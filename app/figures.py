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


def thumbnail(fig: dict[str, Any], title: str) -> dict[str, Any]:
    """A heatmap made small for side-by-side comparison: short title, no colour bar or
    cell labels (the full-size figure and its table carry the numbers)."""
    trace = {k: v for k, v in fig["data"][0].items() if k not in ("text", "texttemplate")}
    trace["showscale"] = False
    layout = {
        **fig["layout"],
        "title": {"text": title, "font": {"size": 13}},
        "xaxis": {**fig["layout"]["xaxis"], "title": {"text": ""}, "showticklabels": False},
        "yaxis": {**fig["layout"]["yaxis"], "title": {"text": ""}, "showticklabels": False},
        "margin": {"l": 8, "r": 8, "t": 30, "b": 8},
        "height": 170,
    }
    return {"data": [trace], "layout": layout}


def lines(
    x: Sequence[float],
    series: Sequence[tuple[str, Sequence[float]]],
    title: str,
    x_title: str,
    y_title: str,
    log_x: bool = False,
    log_y: bool = False,
) -> dict[str, Any]:
    """Curves against one x axis, markers on the measured points; the first series solid,
    the others dashed, so they differ by more than colour."""
    dashes = ("solid", "dash", "dot", "dashdot")
    data = [
        {
            "type": "scatter",
            "mode": "lines+markers",
            "name": name,
            "x": list(x),
            "y": [float(v) for v in values],
            "line": {"dash": dashes[i % len(dashes)]},
        }
        for i, (name, values) in enumerate(series)
    ]
    axis_x: dict[str, Any] = {"title": {"text": x_title}, "type": "log" if log_x else "linear"}
    if log_x:
        axis_x.update(tickvals=list(x), ticktext=[f"{v:g}" for v in x])
    return {
        "data": data,
        "layout": {
            "title": {"text": title},
            "xaxis": axis_x,
            "yaxis": {"title": {"text": y_title}, "type": "log" if log_y else "linear"},
            "legend": {"orientation": "h", "y": -0.25},
            "margin": {"l": 60, "r": 10, "t": 50, "b": 10},
            "height": 300,
        },
    }
