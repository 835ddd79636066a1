"""Figure dicts in plotly's figure schema. Plain dicts: microseconds to build, validated by
plotly's own `go.Figure(fig)` in the tests. No web imports, no attention arithmetic."""

import math
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np

# Colour-blind-safe scales: viridis for magnitudes (weights), blue–red centred on 0 for signs.
SEQUENTIAL = "Viridis"
DIVERGING = "RdBu"
LABEL_CELLS_UP_TO = 12
GAPS_UP_TO = 32  # one-pixel gaps between cells; past this they cost drawing time and vanish

Scale = Literal["sequential", "diverging"]


def plotly_text(text: str) -> str:
    """Text shown as typed: plotly reads a few HTML tags in labels and decodes entities, so
    token text like "<b>" or "<img …>" is written as entities."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def fmt(value: Any, digits: int = 3) -> str:
    """A number as the tables print it; −∞ for hidden scores, − for negatives."""
    if value is None:
        return "−∞"
    number = float(value)
    if math.isinf(number):
        return "−∞" if number < 0 else "∞"
    text = f"{number:.{digits}f}"
    if text.startswith("-"):  # −0.000 reads as 0.000; a real negative gets a true minus sign
        text = text[1:] if float(text) == 0 else "−" + text[1:]
    return text


def cell_text(z: np.ndarray, digits: int = 3, hidden_text: str = "−∞") -> list[list[str]]:
    """Values printed in the cells as the tables print them; hidden (non-finite) entries
    read `hidden_text`."""
    return [[fmt(v, digits) if np.isfinite(v) else hidden_text for v in row] for row in z]


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
        "y": _unique(y_labels),  # category labels, escaped by _unique
        "colorscale": SEQUENTIAL if scale == "sequential" else DIVERGING,
        "colorbar": {"thickness": 12, "len": 0.9},
        "hoverongaps": True,
    }
    if scale == "diverging":
        trace["zmid"] = 0.0
        trace["reversescale"] = True
    else:
        trace["zmin"] = 0.0 if np.nanmin(finite, initial=0.0) >= 0 else None
    if max(z.shape) <= GAPS_UP_TO:
        trace["xgap"] = trace["ygap"] = 1
    if max(z.shape) <= LABEL_CELLS_UP_TO:
        trace["text"] = cell_text(z, hidden_text=hidden_text)
        trace["texttemplate"] = "%{text}"
    if hover is not None:
        trace["customdata"] = [[plotly_text(h) for h in row] for row in hover]
        trace["hovertemplate"] = "%{customdata}<extra></extra>"
    return {
        "data": [trace],
        "layout": {
            "title": {"text": plotly_text(title), "y": 0.98, "yanchor": "top"},
            "xaxis": {"title": {"text": x_title}, "side": "top", "type": "category"},
            "yaxis": {"title": {"text": y_title}, "autorange": "reversed", "type": "category"},
            "margin": {"l": 70, "r": 10, "t": 90, "b": 10},
            "height": 320,
        },
    }


def _unique(labels: Sequence[str]) -> list[str]:
    """Category axes merge equal labels; number repeats so every row keeps its own line.
    Labels are escaped for plotly."""
    seen: dict[str, int] = {}
    out = []
    for label in labels:
        seen[label] = seen.get(label, 0) + 1
        out.append(plotly_text(label if seen[label] == 1 else f"{label} ({seen[label]})"))
    return out
