"""Heatmaps as plotly figure dicts, for the pages that still draw some in the browser (/heads
and /model, until their heatmaps are drawn by the server, app/figures/heatmap): then this
module and app/web/multiples.py go. Line charts are app/figures/charts.py's."""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from app.core.i18n import N_, format_rows, gettext
from app.figures.charts import plotly_text

# Colour-blind-safe scales: viridis for weights, always on [0, 1] so that a colour means the
# same weight in every figure; blue–red for signed values, symmetric about 0 so that white is 0.
SEQUENTIAL = "Viridis"
# ColorBrewer's RdBu, red for negative through white at 0 to blue for positive (plotly's own
# "RdBu" has a grey middle, which would read as "hidden").
DIVERGING = [
    [i / 10, c]
    for i, c in enumerate(
        ("#67001f", "#b2182b", "#d6604d", "#f4a582", "#fddbc7", "#f7f7f7",
         "#d1e5f0", "#92c5de", "#4393c3", "#2166ac", "#053061")
    )
]  # fmt: skip
WEIGHT_RANGE = (0.0, 1.0)
# Hidden cells: a neutral mid grey that neither scale contains (viridis has no grey, the
# diverging scale's middle is near white), with "−∞" in the cell and a legend entry.
HIDDEN_COLOUR = "#8a8a8a"
HIDDEN_LEGEND = N_("hidden (%(value)s)")
COLOUR_BAR = {
    "orientation": "h",
    "thickness": 10,
    "len": 1.0,
    "x": 0.5,
    "xanchor": "center",
    "y": -0.04,
    "yanchor": "top",
    "tickfont": {"size": 10},
}
CELL_FONT_PX = 11  # numbers in cells: never shrunk below this (figures.js drops them instead)
LABEL_CELLS_UP_TO = 12


def labels_cells(shape: Sequence[int]) -> bool:
    """Whether a heatmap of this shape prints its numbers in its cells (else only on hover)."""
    return max(shape) <= LABEL_CELLS_UP_TO


GAPS_UP_TO = 32  # one-pixel gaps between cells; past this they cost drawing time and vanish

Scale = Literal["sequential", "diverging"]


def plotly_rows(rows: list[list[str]]) -> list[list[str]]:
    """plotly_text of every text of a matrix (a heatmap's hover texts, n² of them): a row
    that holds none of the three characters is kept as it is, without a call per text."""
    return [
        [plotly_text(text) for text in row] if _has_markup("".join(row)) else row for row in rows
    ]


def _has_markup(text: str) -> bool:
    return "&" in text or "<" in text or ">" in text


def cell_text(
    z: np.ndarray,
    digits: int = 3,
    hidden_text: str = "−∞",
    texts: list[list[str]] | None = None,
) -> list[list[str]]:
    """Values printed in the cells as the tables print them (`texts`, when the caller has
    them formatted already); hidden (non-finite) entries read `hidden_text`."""
    z = np.asarray(z, dtype=float)
    finite = np.isfinite(z)
    if texts is None:
        texts = format_rows(np.where(finite, z, 0.0), digits)  # finite: the one-call way
    if finite.all():
        return texts
    return [
        [text if shown else hidden_text for text, shown in zip(row, seen, strict=True)]
        for row, seen in zip(texts, finite.tolist(), strict=True)
    ]


def heatmap(
    z: np.ndarray,
    x_labels: Sequence[str],
    y_labels: Sequence[str],
    title: str,
    scale: Scale = "sequential",
    x_title: str | None = None,
    y_title: str | None = None,
    hover: list[list[str]] | None = None,
    hidden: np.ndarray | None = None,
    hidden_text: str = "−∞",
    texts: list[list[str]] | None = None,
) -> dict[str, Any]:
    """One matrix as a heatmap: rows top to bottom as in the tables. Hidden cells (−∞, or
    where `hidden` is true) are left blank so the grey plot background shows through, and
    read `hidden_text` when the cells are labelled (with `texts`, z's numbers as the caller
    formatted them already). z is rounded to 4 decimals: it only picks colours, and the JSON
    stays small at n = 256."""
    z = np.asarray(z, dtype=float)
    if hidden is not None:
        z = np.where(hidden, -np.inf, z)
    finite = np.round(np.where(np.isfinite(z), z, np.nan), 4)
    trace: dict[str, Any] = {
        "type": "heatmap",
        "z": finite,  # orjson writes NaN as null: a gap, covered by the hidden-cell trace
        "x": _unique(x_labels),
        "y": _unique(y_labels),  # category labels, escaped by _unique
        "colorbar": COLOUR_BAR,  # below the cells: the cells keep the figure's width
        "hoverongaps": True,
        **colour_range(finite, scale),
    }
    if max(z.shape) <= GAPS_UP_TO:
        trace["xgap"] = trace["ygap"] = 1
    if labels_cells(z.shape):
        trace["text"] = cell_text(z, hidden_text=hidden_text, texts=texts)
        trace["texttemplate"] = "%{text}"
        trace["textfont"] = {"size": CELL_FONT_PX}
    if hover is not None:
        trace["customdata"] = plotly_rows(hover)
        trace["hovertemplate"] = "%{customdata}<extra></extra>"
    data = [trace]
    layout: dict[str, Any] = {
        # The title at the top of the figure pushes the plot down (automargin), so that the
        # key axis's title and tick labels, above the cells, start below it however long the
        # tokens; the top margin is the least, the rest is what the title and ticks take.
        "title": {
            "text": plotly_text(title),
            "yref": "container",
            "y": 1,
            "yanchor": "top",
            "pad": {"t": 6},
            "automargin": True,
        },
        # Flat, or upright where they do not fit: a slant lets long tokens run into each other.
        "xaxis": _axis(
            gettext("key") if x_title is None else x_title, side="top", autotickangles=[0, 90]
        ),
        "yaxis": _axis(gettext("query") if y_title is None else y_title, autorange="reversed"),
        "margin": {"l": 40, "r": 10, "t": 24, "b": 50},
        "height": 320,
    }
    covered = ~np.isfinite(z)
    if covered.any():
        data.append(hidden_trace(covered, trace, hidden_text))
        layout["showlegend"] = True
        layout["legend"] = {"orientation": "h", "x": 0, "y": -0.3, "yanchor": "top"}
        layout["margin"]["b"] = 80
        layout["height"] += 30
    return {"data": data, "layout": layout}


def colour_range(z: np.ndarray, scale: Scale) -> dict[str, Any]:
    """The colour scale and its fixed range: weights on [0, 1] whatever the data; signed
    values on [−m, m] with m the largest magnitude, so that 0 is the scale's white middle."""
    if scale == "sequential":
        return {"colorscale": SEQUENTIAL, "zmin": WEIGHT_RANGE[0], "zmax": WEIGHT_RANGE[1]}
    z = np.asarray(z, dtype=float)
    reach = float(np.nanmax(np.abs(z), initial=0.0)) if np.isfinite(z).any() else 0.0
    reach = reach if reach > 0 else 1.0
    return {
        "colorscale": DIVERGING,
        "zmid": 0.0,
        "zmin": -reach,
        "zmax": reach,
    }


def hidden_trace(
    covered: np.ndarray, like: dict[str, Any], hidden_text: str = "−∞"
) -> dict[str, Any]:
    """The hidden cells as a trace of their own: one flat colour no value can take, drawn
    over the gaps the main trace leaves, and named in the legend."""
    name = plotly_text(gettext(HIDDEN_LEGEND) % {"value": hidden_text})
    trace: dict[str, Any] = {
        "type": "heatmap",
        "name": name,
        "z": np.where(covered, 1.0, np.nan),
        "x": like["x"],
        "y": like["y"],
        "colorscale": [[0, HIDDEN_COLOUR], [1, HIDDEN_COLOUR]],
        "zmin": 0.0,
        "zmax": 1.0,
        "showscale": False,
        "showlegend": True,
        "hoverongaps": False,
        "hovertemplate": "%{y} → %{x}: " + name + "<extra></extra>",
    }
    for key in ("xgap", "ygap", "xaxis", "yaxis"):
        if key in like:
            trace[key] = like[key]
    if "text" in like:
        trace["text"] = [[hidden_text if c else "" for c in row] for row in covered.tolist()]
        trace["texttemplate"] = "%{text}"
        trace["textfont"] = {"size": CELL_FONT_PX, "color": "#ffffff"}
    return trace


def _axis(title: str, **extra: Any) -> dict[str, Any]:
    """A category axis whose title keeps clear of its tick labels, however long or rotated:
    automargin makes room for both, the standoff keeps a gap between them."""
    return {
        "title": {"text": title, "standoff": 6},
        "type": "category",
        "automargin": True,
        "tickfont": {"size": 11},
        **extra,
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


@dataclass(frozen=True)
class TitledFigure:
    """A figure with what a page shows beside it, so templates never read plotly's internals:
    its title (the caption and the table's) and the column labels of its table."""

    fig: dict[str, Any]
    title: str
    columns: list[str]
