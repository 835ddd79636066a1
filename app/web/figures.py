"""Figure dicts in plotly's figure schema. Plain dicts: microseconds to build, validated by
plotly's own `go.Figure(fig)` in the tests. No web imports, no attention arithmetic."""

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from app.core.i18n import N_, gettext
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
        "z": finite,  # orjson writes NaN as null: a gap, covered by the hidden-cell trace
        "x": _unique(x_labels),
        "y": _unique(y_labels),  # category labels, escaped by _unique
        "colorbar": COLOUR_BAR,  # below the cells: the cells keep the figure's width
        "hoverongaps": True,
        **colour_range(finite, scale),
    }
    if max(z.shape) <= GAPS_UP_TO:
        trace["xgap"] = trace["ygap"] = 1
    if max(z.shape) <= LABEL_CELLS_UP_TO:
        trace["text"] = cell_text(z, hidden_text=hidden_text)
        trace["texttemplate"] = "%{text}"
        trace["textfont"] = {"size": CELL_FONT_PX}
    if hover is not None:
        trace["customdata"] = [[plotly_text(h) for h in row] for row in hover]
        trace["hovertemplate"] = "%{customdata}<extra></extra>"
    data = [trace]
    layout: dict[str, Any] = {
        "title": {"text": plotly_text(title), "y": 0.98, "yanchor": "top"},
        "xaxis": _axis(gettext("key") if x_title is None else x_title, side="top"),
        "yaxis": _axis(gettext("query") if y_title is None else y_title, autorange="reversed"),
        "margin": {"l": 40, "r": 10, "t": 80, "b": 50},
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
    """A heatmap made small for side-by-side comparison: short title, small token labels on
    both axes, no colour bar or cell labels (its group shares one colour bar, the full-size
    figure and its table carry the numbers)."""
    trace = {k: v for k, v in fig["data"][0].items() if k not in ("text", "texttemplate")}
    trace["showscale"] = False
    small = {"title": {"text": ""}, "showticklabels": True, "tickfont": {"size": 9}}
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


def small_multiples(
    matrices: Sequence[np.ndarray],
    labels: Sequence[str],
    titles: Sequence[str],
    hidden: np.ndarray | None = None,
    columns: int = 4,
    selected: int | None = None,
    ids: Sequence[int] | None = None,
) -> dict[str, Any]:
    """Several n × n weight matrices (one per head) as one figure: a grid of panels with
    token labels on both axes of each, one shared colour bar on [0, 1] (layout.coloraxis),
    and hidden cells in the hidden colour. One plotly figure draws many times faster than
    one per head. Each panel's trace carries `meta.panel` (its entry of `ids`, by default
    its index) for a click; `selected` (an id) is outlined."""
    count = len(matrices)
    columns = max(1, min(columns, count))
    rows = math.ceil(count / columns)
    tokens = _unique(labels)
    weight = plotly_text(gettext("weight"))
    gap_x, gap_y = 0.06, 0.5 / max(rows, 1) * 0.45
    width = (1 - gap_x * (columns - 1)) / columns
    height = (1 - gap_y * (rows - 1)) / rows
    data: list[dict[str, Any]] = []
    layout: dict[str, Any] = {
        "coloraxis": {
            "colorscale": SEQUENTIAL,
            "cmin": WEIGHT_RANGE[0],
            "cmax": WEIGHT_RANGE[1],
            "colorbar": {"thickness": 12, "len": 0.9, "title": {"text": weight}},
        },
        "annotations": [],
        "shapes": [],
        "margin": {"l": 60, "r": 10, "t": 50, "b": 10},
        "height": 60 + 210 * rows,
    }
    covered = None if hidden is None else np.asarray(hidden, dtype=bool)
    for i, matrix in enumerate(matrices):
        r, c = divmod(i, columns)
        suffix = "" if i == 0 else str(i + 1)
        x0 = c * (width + gap_x)
        y1 = 1 - r * (height + gap_y)
        domain_x, domain_y = [x0, x0 + width], [y1 - height, y1]
        axis = {"type": "category", "tickfont": {"size": 9}, "fixedrange": True}
        layout[f"xaxis{suffix}"] = {**axis, "domain": domain_x, "anchor": f"y{suffix}",
                                    "side": "top"}  # fmt: skip
        layout[f"yaxis{suffix}"] = {**axis, "domain": domain_y, "anchor": f"x{suffix}",
                                    "autorange": "reversed"}  # fmt: skip
        z = np.asarray(matrix, dtype=float)
        if covered is not None:
            z = np.where(covered, np.nan, z)
        trace: dict[str, Any] = {
            "type": "heatmap",
            "z": np.round(z, 3),
            "x": tokens,
            "y": tokens,
            "xaxis": f"x{suffix}",
            "yaxis": f"y{suffix}",
            "coloraxis": "coloraxis",
            "hoverongaps": False,
            "hovertemplate": f"{plotly_text(titles[i])}<br>%{{y}} → %{{x}}<br>{weight} "
            "%{z:.3f}<extra></extra>",
            "meta": {"panel": ids[i] if ids is not None else i},
        }
        if len(tokens) <= GAPS_UP_TO:
            trace["xgap"] = trace["ygap"] = 1
        data.append(trace)
        if covered is not None and covered.any():
            over = hidden_trace(covered, trace)
            over["showlegend"] = i == 0
            over["legendgroup"] = "hidden"
            data.append(over)
        layout["annotations"].append(
            {"text": plotly_text(titles[i]), "xref": "paper", "yref": "paper", "showarrow": False,
             "x": x0 + width / 2, "y": y1, "yshift": 22, "yanchor": "bottom",
             "font": {"size": 12}}
        )  # fmt: skip
        if selected == (ids[i] if ids is not None else i):
            layout["shapes"].append(
                {"type": "rect", "xref": "paper", "yref": "paper", "x0": domain_x[0],
                 "x1": domain_x[1], "y0": domain_y[0], "y1": domain_y[1],
                 "line": {"color": "#c2410c", "width": 3}}
            )  # fmt: skip
    if covered is not None and covered.any():
        layout["showlegend"] = True
        layout["legend"] = {"orientation": "h", "x": 0, "y": 0, "yanchor": "top"}
        layout["margin"]["b"] = 40
    return {"data": data, "layout": layout}


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
