"""Figure dicts in plotly's figure schema. Plain dicts: microseconds to build, validated by
plotly's own `go.Figure(fig)` in the tests. No web imports, no attention arithmetic."""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from app.core.i18n import N_, format_number, format_rows, gettext
from app.math.cost import BINARY_UNITS

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


def plotly_text(text: str) -> str:
    """Text shown as typed: plotly reads a few HTML tags in labels and decodes entities, so
    token text like "<b>" or "<img …>" is written as entities."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def plotly_rows(rows: list[list[str]]) -> list[list[str]]:
    """plotly_text of every text of a matrix (a heatmap's hover texts, n² of them): a row
    that holds none of the three characters is kept as it is, without a call per text."""
    return [
        [plotly_text(text) for text in row] if _has_markup("".join(row)) else row for row in rows
    ]


def _has_markup(text: str) -> bool:
    return "&" in text or "<" in text or ">" in text


def fmt(value: Any, digits: int = 3) -> str:
    """A number as the tables print it: three decimals by default, in the reader's
    convention (app.core.i18n.format_number); −∞ for hidden scores, − for negatives."""
    return format_number(None if value is None else float(value), digits)


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


# ---------------------------------------------------------------- growth against length

LINE_COLOURS = ("#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9")  # Okabe–Ito


@dataclass(frozen=True)
class Series:
    """One line: a name, its y values over the chart's x, hover text per point."""

    name: str
    y: Sequence[float]
    hover: Sequence[str] | None = None
    dash: str = "solid"


@dataclass(frozen=True)
class Marker:
    """One labelled point (the chosen length, the GPU's capacity)."""

    name: str
    x: float
    y: float
    text: str
    symbol: str = "circle"


def log_log_lines(
    x: Sequence[float],
    series: Sequence[Series],
    title: str,
    y_title: str,
    markers: Sequence[Marker] = (),
    x_title: str | None = None,
    y_ticks: dict[str, list[Any]] | None = None,
    mode: str = "lines",
) -> dict[str, Any]:
    """Curves against sequence length on log–log axes: a power law is a straight line,
    n² rising twice as steeply as n."""
    traces: list[dict[str, Any]] = []
    for i, s in enumerate(series):
        trace: dict[str, Any] = {
            "type": "scatter",
            "mode": mode,
            "name": s.name,
            "x": [float(v) for v in x],
            "y": [float(v) if v > 0 else None for v in s.y],
            "line": {"color": LINE_COLOURS[i % len(LINE_COLOURS)], "dash": s.dash},
        }
        if s.hover is not None:
            trace["customdata"] = list(s.hover)
            trace["hovertemplate"] = "n = %{x:,}<br>%{customdata}<extra>" + s.name + "</extra>"
        traces.append(trace)
    for m in markers:
        traces.append(
            {
                "type": "scatter",
                "mode": "markers+text",
                "name": m.name,
                "x": [float(m.x)],
                "y": [float(m.y)],
                "text": [m.text],
                "textposition": "top left",
                "marker": {
                    "size": 11,
                    "symbol": m.symbol,
                    "color": "#000000",
                    "line": {"width": 2, "color": "#ffffff"},
                },
                "hovertemplate": f"{m.name}<br>%{{text}}<extra></extra>",
            }
        )
    y_axis: dict[str, Any] = {"title": {"text": y_title}, "type": "log"}
    if y_ticks:
        y_axis.update(tickmode="array", **y_ticks)
    return {
        "data": traces,
        "layout": {
            "title": {"text": title},
            "xaxis": {
                "title": {"text": x_title or gettext("sequence length n (tokens)")},
                "type": "log",
            },
            "yaxis": y_axis,
            "legend": {"orientation": "h", "y": -0.25},
            "margin": {"l": 80, "r": 20, "t": 60, "b": 60},
            "height": 460,
        },
    }


def byte_ticks(lo: float, hi: float) -> dict[str, list[Any]]:
    """Ticks at 1 KiB, 1 MiB, 1 GiB … (every 2¹⁰) between lo and hi, labelled with the unit."""
    vals: list[float] = []
    text: list[str] = []
    for power, unit in enumerate(BINARY_UNITS):
        value = 1024.0**power
        if lo / 1024 <= value <= hi * 1024:
            vals.append(value)
            text.append(f"1 {unit.rstrip('s')}" if power == 0 else f"1 {unit}")
    return {"tickvals": vals, "ticktext": text}


# The states of a score entry in the tiled walk-through, each with its own colour (light
# grey, blue, orange, dark grey: distinguishable with every common colour-vision deficiency).
PROGRESS_LABELS = (
    N_("not computed yet"),
    N_("computed earlier, discarded"),
    N_("this tile: held now"),
    N_("this tile: skipped, the mask hides all of it"),
)
PROGRESS_COLOURS = ("#ececf1", "#6baed6", "#e6550d", "#7a7a85")


def progress_map(
    state: np.ndarray, text: list[list[str]] | None, labels: Sequence[str], title: str
) -> dict[str, Any]:
    """The n × n score matrix as the tiled kernel sees it: which entries are computed, which
    are held right now; `state` holds 0 … 3 (PROGRESS_LABELS), `text` the scores so far
    (None for a large n: the colours alone, and the page stays light)."""
    hover = None
    if text is not None:
        hover = [
            [
                f"{gettext(PROGRESS_LABELS[int(c)])}: {t}".removesuffix(": ")
                for c, t in zip(r, tr, strict=True)
            ]
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
    if text is not None and labels_cells(state.shape):
        fig["data"][0]["text"] = text
    return fig


@dataclass(frozen=True)
class TitledFigure:
    """A figure with what a page shows beside it, so templates never read plotly's internals:
    its title (the caption and the table's) and the column labels of its table."""

    fig: dict[str, Any]
    title: str
    columns: list[str]
