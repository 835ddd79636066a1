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


# Three states of a score entry in the tiled walk-through, each with its own colour
# (light grey, blue, orange: distinguishable with every common colour-vision deficiency).
PROGRESS_LABELS = ("not computed yet", "computed earlier, discarded", "this tile: held now")
PROGRESS_COLOURS = ("#ececf1", "#6baed6", "#e6550d")


def progress_map(
    state: np.ndarray, text: list[list[str]], labels: Sequence[str], title: str
) -> dict[str, Any]:
    """The n × n score matrix as the tiled kernel sees it: which entries are computed, which
    are held right now; `state` holds 0, 1, 2 (PROGRESS_LABELS), `text` the scores so far."""
    hover = [
        [f"{PROGRESS_LABELS[int(c)]}: {t}".removesuffix(": ") for c, t in zip(r, tr, strict=True)]
        for r, tr in zip(state, text, strict=True)
    ]
    fig = heatmap(state, labels, labels, title, hover=hover)
    last = len(PROGRESS_COLOURS) - 1
    scale = []
    for i, colour in enumerate(PROGRESS_COLOURS):
        scale += [[max(i - 0.5, 0) / last, colour], [min(i + 0.5, last) / last, colour]]
    fig["data"][0].update(
        colorscale=scale,
        zmin=0,
        zmax=last,
        showscale=False,  # three colours, named in the caption and the hover text
    )
    if max(state.shape) <= LABEL_CELLS_UP_TO:
        fig["data"][0]["text"] = text
    return fig
