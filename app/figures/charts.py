"""Line and bar charts, drawn by plotly.js in the browser: the cost curves, the kernel's memory
traffic, the measured scaling, the √d_k panel, /model's attention by layer and shares of the
embedding. Heatmaps are never charts (app/figures/heatmap draws
them on the server).

A view builds a `Chart` from its typed result; a template places it with
`{{ chart(view.some_chart, caption) }}` (templates/_macros.html). The title, the legend and
the download buttons are the page's own HTML, so they wrap instead of being cut, read in the
page's language, and are there before plotly.js is: static/js/figures.js loads it only when a
chart comes near the screen and draws the axes, the lines and their hover text into a box
whose size the stylesheet sets. The figure is a plain dict in plotly's figure schema
(validated by plotly's own `go.Figure` in the tests).

    Chart = log_log_lines(
        "fig-traffic",
        lengths,
        [Series(gettext("standard"), standard), Series("fa2", fa2, dash="dash")],
        title=gettext("Elements moved to and from slow memory"),
        y_title=gettext("elements read + written"),
        x_title="n",
    )
"""

import re
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from app.core.i18n import plotly_separators
from app.math.cost import BINARY_UNITS

LINE_COLOURS = ("#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9")  # Okabe–Ito
MARKER_COLOUR = "#000000"
Dash = Literal["solid", "dash", "dot"]
Symbol = Literal["circle", "diamond", "square"]  # square: a bar
# The legend's line samples draw plotly's dashes (stroke-dasharray, in px).
DASH_ARRAYS: dict[str, str | None] = {"solid": None, "dash": "9 5", "dot": "2 4"}
# A download: the figure at this size, its title above and its legend below (the page's own
# title and legend are HTML, outside plotly's picture).
DOWNLOAD_SIZE = (1000, 640)
DOWNLOAD_TITLE_CHARS = 70  # a longer title is set on two or more lines
ID_PATTERN = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")


def plotly_text(text: str) -> str:
    """Text shown as typed: plotly reads a few HTML tags in labels and decodes entities, so
    token text like "<b>" or "<img …>" is written as entities."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


@dataclass(frozen=True)
class Series:
    """One line: a name, its y values over the chart's x, hover text per point."""

    name: str
    y: Sequence[float]
    hover: Sequence[str] | None = None
    dash: Dash = "solid"


@dataclass(frozen=True)
class Marker:
    """One labelled point (the chosen length, where the GPU fills): its name and what it
    says (in the legend and on hover)."""

    name: str
    x: float
    y: float
    text: str
    symbol: Symbol = "circle"


@dataclass(frozen=True)
class LegendEntry:
    """A line or a marker as the HTML legend shows it: a sample in its colour and look."""

    name: str
    colour: str
    dash_array: str | None = None  # a line's dashes; None: solid
    symbol: Symbol | None = None  # a marker instead of a line
    text: str = ""  # what a marker says ("n = 4,096: 32 MiB")


@dataclass(frozen=True, kw_only=True)
class Chart:
    """A plotly chart with what the page shows around it: its title and legend (HTML), and
    the figure dict that plotly.js draws (no title, no legend of its own)."""

    id: str
    title: str
    figure: dict[str, Any]
    legend: tuple[LegendEntry, ...]

    def __post_init__(self) -> None:
        if not ID_PATTERN.fullmatch(self.id):
            raise ValueError(f"chart id {self.id!r}: letters, digits, - and _ only")

    def file_name(self) -> str:
        """The downloads' name (without extension): the title, path and shell characters
        and spaces as "_"."""
        name = re.sub(r'[\s/\\:*?"<>|]+', "_", self.title).strip("_.")
        return name[:60] or "chart"

    def download_layout(self) -> dict[str, Any]:
        """What a download adds to the figure's layout: its title (wrapped) above and the
        legend below, on white, at DOWNLOAD_SIZE."""
        lines = textwrap.wrap(self.title, DOWNLOAD_TITLE_CHARS) or [""]
        entries = len(self.figure["data"])
        return {
            "title": {"text": "<br>".join(map(plotly_text, lines)), "x": 0.02},
            "showlegend": True,
            "legend": {"orientation": "h", "x": 0, "y": -0.16, "yanchor": "top"},
            "margin": {"l": 80, "r": 30, "t": 40 + 26 * len(lines), "b": 90 + 22 * entries},
            "width": DOWNLOAD_SIZE[0],
            "height": DOWNLOAD_SIZE[1],
            "paper_bgcolor": "#ffffff",
            "plot_bgcolor": "#eeeeee",
            "font": {"color": "#1d1d1f"},
        }

    def data_block(self) -> dict[str, Any]:
        """The JSON the page carries for static/js/figures.js: the figure, with the reader's
        decimal and group marks, and what its downloads need."""
        layout = {**self.figure["layout"], "separators": plotly_separators()}
        return {
            "figure": {**self.figure, "layout": layout},
            "download": {"layout": self.download_layout(), "file": self.file_name()},
        }


def _line(x: Sequence[float], series: Series, colour: str, mode: str) -> dict[str, Any]:
    trace: dict[str, Any] = {
        "type": "scatter",
        "mode": mode,
        "name": plotly_text(series.name),
        "x": [float(v) for v in x],
        "y": [float(v) if v > 0 else None for v in series.y],  # log axes: no 0
        "line": {"color": colour, "dash": series.dash},
    }
    if series.hover is not None:
        trace["customdata"] = [plotly_text(h) for h in series.hover]
        trace["hovertemplate"] = "n = %{x:,}<br>%{customdata}<extra>" + trace["name"] + "</extra>"
    return trace


def _marker(marker: Marker) -> dict[str, Any]:
    return {
        "type": "scatter",
        "mode": "markers",
        "name": plotly_text(marker.name),
        "x": [float(marker.x)],
        "y": [float(marker.y)],
        "marker": {
            "size": 11,
            "symbol": marker.symbol,
            "color": MARKER_COLOUR,
            "line": {"width": 2, "color": "#ffffff"},
        },
        "hovertemplate": plotly_text(f"{marker.name}: {marker.text}") + "<extra></extra>",
    }


def _axis(title: str, kind: str = "log", **extra: Any) -> dict[str, Any]:
    """An axis (log by default) that a class cannot zoom by accident (a drag or a pinch on a
    phone), its title kept clear of its tick labels."""
    return {
        "title": {"text": plotly_text(title), "standoff": 8},
        "type": kind,
        "fixedrange": True,
        "automargin": True,  # room for the tick labels and the title, whatever their size
        **extra,
    }


def log_log_lines(
    chart_id: str,
    x: Sequence[float],
    series: Sequence[Series],
    *,
    title: str,
    y_title: str,
    x_title: str,
    markers: Sequence[Marker] = (),
    y_ticks: dict[str, list[Any]] | None = None,
    mode: Literal["lines", "lines+markers"] = "lines",
) -> Chart:
    """Curves against a length on log–log axes: a power law is a straight line, n² rising
    twice as steeply as n. Colours are Okabe–Ito's, in the order of `series`."""
    colours = [LINE_COLOURS[i % len(LINE_COLOURS)] for i in range(len(series))]
    traces = [_line(x, s, c, mode) for s, c in zip(series, colours, strict=True)]
    traces += [_marker(m) for m in markers]
    legend = [
        LegendEntry(s.name, c, dash_array=DASH_ARRAYS[s.dash])
        for s, c in zip(series, colours, strict=True)
    ]
    # a marker's sample takes the page's text colour (black on white, white on black)
    legend += [LegendEntry(m.name, "currentColor", symbol=m.symbol, text=m.text) for m in markers]
    y_axis = _axis(y_title)
    if y_ticks:
        y_axis.update(tickmode="array", **y_ticks)
    # a label at every power of 10 on x, no 2s and 5s
    figure = {"data": traces, "layout": _layout(_axis(x_title, dtick=1), y_axis)}
    return Chart(id=chart_id, title=title, figure=figure, legend=tuple(legend))


def _layout(x_axis: dict[str, Any], y_axis: dict[str, Any]) -> dict[str, Any]:
    return {
        "xaxis": x_axis,
        "yaxis": y_axis,
        "showlegend": False,  # the page's own legend, in HTML, under the chart
        "margin": {"l": 70, "r": 16, "t": 12, "b": 48},
        "hovermode": "closest",
    }


def mean_lines(
    chart_id: str,
    x: Sequence[int],
    series: Sequence[Series],
    members: Sequence[Sequence[Sequence[float]]],
    *,
    title: str,
    y_title: str,
    x_title: str,
    y_range: tuple[float, float] | None = None,
) -> Chart:
    """Means against a small whole number (a layer), on linear axes: a line through each
    series' means (`series[i].y`) and a faint dot for every value it is the mean of
    (`members[i][j]`: the values at x[j], one per head)."""
    if len(members) != len(series) or any(len(m) != len(x) for m in members):
        raise ValueError("mean_lines: one list of members per series and per x")
    colours = [LINE_COLOURS[i % len(LINE_COLOURS)] for i in range(len(series))]
    traces: list[dict[str, Any]] = []
    for s, dots, colour in zip(series, members, colours, strict=True):
        name = plotly_text(s.name)
        traces.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": name,
                "x": [float(v) for v, values in zip(x, dots, strict=True) for _ in values],
                "y": [round(float(v), 4) for values in dots for v in values],
                "marker": {"color": colour, "opacity": 0.35, "size": 6},
                "hovertemplate": name + ": %{y:.2f}<extra></extra>",
            }
        )
        traces.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": name,
                "x": [float(v) for v in x],
                "y": [round(float(v), 4) for v in s.y],
                "line": {"color": colour, "width": 3, "dash": s.dash},
                "hovertemplate": plotly_text(x_title)
                + " %{x}<br>"
                + name
                + ": %{y:.3f}<extra></extra>",
            }
        )
    legend = [
        LegendEntry(s.name, c, dash_array=DASH_ARRAYS[s.dash])
        for s, c in zip(series, colours, strict=True)
    ]
    y_axis = _axis(y_title, "linear")
    if y_range is not None:
        y_axis["range"] = list(y_range)
    figure = {"data": traces, "layout": _layout(_axis(x_title, "linear", dtick=1), y_axis)}
    return Chart(id=chart_id, title=title, figure=figure, legend=tuple(legend))


def bars(
    chart_id: str,
    labels: Sequence[str],
    values: Sequence[float],
    *,
    name: str,
    title: str,
    y_title: str,
    x_title: str,
) -> Chart:
    """One bar per label, in the order given (labels must differ: plotly stacks repeats)."""
    if len(set(labels)) != len(labels):
        raise ValueError("bars: every label once (number repeated tokens)")
    colour = LINE_COLOURS[0]
    trace = {
        "type": "bar",
        "name": plotly_text(name),
        "x": [plotly_text(label) for label in labels],
        "y": [round(float(v), 4) for v in values],
        "marker": {"color": colour},
        "hovertemplate": "%{x}: %{y:.3f}<extra></extra>",
    }
    x_axis = _axis(x_title, "category", tickangle=-60)
    figure = {"data": [trace], "layout": _layout(x_axis, _axis(y_title, "linear"))}
    legend = (LegendEntry(name, colour, symbol="square"),)
    return Chart(id=chart_id, title=title, figure=figure, legend=legend)


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
