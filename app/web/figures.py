"""Figure dicts in plotly's figure schema. Plain dicts: microseconds to build, validated by
plotly's own `go.Figure(fig)` in the tests. No web imports, no attention arithmetic."""

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from app.core.i18n import N_, gettext
from app.math.cost import BINARY_UNITS

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
    x_title: str | None = None,
    y_title: str | None = None,
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
            "xaxis": {
                "title": {"text": gettext("key") if x_title is None else x_title},
                "side": "top",
                "type": "category",
            },
            "yaxis": {
                "title": {"text": gettext("query") if y_title is None else y_title},
                "autorange": "reversed",
                "type": "category",
            },
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
        "colorbar": {"thickness": 12, "len": 0.8, "title": {"text": weight}},
        "hoverongaps": False,
        "hovertemplate": "%{y}<br>%{x}<br>" + weight + " %{z:.3f}<extra></extra>",
        "meta": {"block": block},
    }
    return {"data": [trace], "layout": layout}


def _grid_title(text: str, **position: Any) -> dict[str, Any]:
    return {"text": text, "xref": "x", "yref": "y", "showarrow": False, **position}


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
    if text is not None and max(state.shape) <= LABEL_CELLS_UP_TO:
        fig["data"][0]["text"] = text
    return fig


@dataclass(frozen=True)
class TitledFigure:
    """A figure with what a page shows beside it, so templates never read plotly's internals:
    its title (the caption and the table's) and the column labels of its table."""

    fig: dict[str, Any]
    title: str
    columns: list[str]
