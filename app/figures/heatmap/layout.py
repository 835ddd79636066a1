"""Where everything of a heatmap goes, in px at its natural size: cell size, whether the cells
carry numbers and whether they are drawn as SVG or as a PNG, which labels fit, the margins and
the legend. Pure arithmetic on the heatmap's shape and text; the markup is svg.py's."""

import math
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from itertools import chain

from app.figures.heatmap.model import Heatmap
from app.figures.heatmap.scale import Scale

# Numbers in cells up to this many rows and columns (the server's choice); the page hides them
# where the figure is scaled down so far that they would be smaller than Type.min_text_px.
NUMBERS_UP_TO = 16
# A PNG instead of SVG cells from this many cells on (n ≥ 64 for a square heatmap, summed
# over a group's panels), or where a cell would be smaller than PNG_BELOW_PX.
PNG_FROM_CELLS = 64 * 64
PNG_BELOW_PX = 6.0
MAX_LABEL_CHARS = 12  # a longer token is cut, "…" after it (the hover text has it whole)
PAD = 6.0


@dataclass(frozen=True)
class Type:
    """Font sizes (px at natural size) and cell sizes of one kind of figure."""

    label: float  # token labels
    number: float  # numbers in cells
    title: float  # axis titles, the colour bar's name
    tick: float  # colour bar ticks, the hidden look's name
    heading: float  # the title, in the standalone SVG
    side: float  # the longest side of the cells when they carry no numbers
    max_cell: float
    numbers_side: float  # the longest side of the cells with their numbers in them
    gap: float  # the line between cells (page background colour)
    # False: presenter mode, where the picture is never scaled below the size that keeps its
    # smallest text at `min_text_px` (it scrolls instead); True: it shrinks to fit, and its
    # numbers are hidden where they would be smaller than `min_text_px`
    shrinks: bool
    min_text_px: float

    @property
    def bar(self) -> float:
        return round(self.tick * 0.9, 2)


# (presenter mode, small multiple) → Type. Presenter mode: nothing below 16 px. A small
# multiple's cells are no larger than its labels need (every label kept at 16 px), so that a
# group of heads and a chosen head's weights share a 1280×720 projector.
TYPES = {
    (False, False): Type(12, 11, 12, 11, 15, 480, 28, 640, gap=1, shrinks=True, min_text_px=10),
    (False, True): Type(10, 10, 10, 11, 13, 168, 20, 0, gap=1, shrinks=True, min_text_px=10),
    (True, False): Type(17, 16, 17, 16, 22, 560, 44, 480, gap=2, shrinks=False, min_text_px=16),
    (True, True): Type(16, 16, 16, 16, 18, 240, 20, 0, gap=2, shrinks=False, min_text_px=16),
}


@lru_cache(maxsize=8192)
def text_width(text: str, size: float) -> float:
    """The width of a line of text in a sans-serif font, estimated from its characters
    (wide for CJK and capitals, narrow for i, l and punctuation)."""
    return size * sum(map(_em, text))


@lru_cache(maxsize=4096)
def _em(c: str) -> float:
    """A character's advance in em, on the wide side of common sans-serif fonts (DejaVu Sans,
    the widest of them, sets "−" and "∞" at 0.84 em)."""
    if c in "il.,:;'|!·ıj ":
        return 0.32
    if c in "frt()[]{}I-":
        return 0.42
    if unicodedata.east_asian_width(c) in "WF":
        return 1.0
    if c in "mwMW":
        return 1.0
    if c in "∞−+=×→<>&%" or c.isupper():
        return 0.84 if not c.isupper() else 0.74
    if c.isdigit():
        return 0.64
    return 0.62


@lru_cache(maxsize=8192)
def short_label(text: str) -> str:
    """A token as an axis label: control characters made visible, a long one cut."""
    text = "".join(c if c.isprintable() else "\ufffd" for c in text)
    return text if len(text) <= MAX_LABEL_CHARS else text[: MAX_LABEL_CHARS - 1] + "…"


def thinned(count: int, step: int, keep: int | None = None) -> list[int]:
    """The labels shown along an axis of `count` cells: every `step`-th from the first, and
    `keep` (the selected query) always, its neighbours nearer than `step` left out."""
    if step <= 1:
        return list(range(count))
    shown = set(range(0, count, step))
    if keep is not None:
        shown = {i for i in shown if abs(i - keep) >= step} | {keep}
    return sorted(shown)


@dataclass(frozen=True)
class Swatch:
    """One state of a categorical legend: its swatch's top left, and its name's lines."""

    x: float
    y: float
    lines: tuple[str, ...]


@dataclass(frozen=True)
class Legend:
    """The colour bar line: its name, the bar, then the hidden look (on a second line when
    the first has no room). x and y are offsets from the legend's top left. Where the name and
    the bar do not fit side by side, the name has a line of its own above (`bar_y` > 0), and
    where the five ticks still do not fit, only both ends and the middle are written
    (`tick_step` 2). A categorical scale has `swatches` instead of a bar: its name, then each
    state's colour and name (the hidden look, if any, last)."""

    label_width: float
    bar_x: float
    bar_width: float
    hidden_x: float  # the hidden look's swatch
    hidden_y: float
    width: float
    height: float
    swatches: tuple[Swatch, ...] = ()
    bar_y: float = 0.0  # the bar line's top: below the name when the name is on a line alone
    tick_step: int = 1  # every tick (1), or every other one (2: both ends and the middle)


def tick_gap(size: float) -> float:
    """The least space between two neighbouring tick texts: a character's width."""
    return text_width("0", size)


def legend_layout(type_: Type, scale: Scale, hidden: str | None, room: float) -> Legend:
    """The legend's parts for `scale` (its name and tick texts, or its states), and the
    hidden look's sentence `hidden` (None: nothing hidden), within `room` px if it can: the
    name beside the bar, else above it, else above it with fewer ticks."""
    if scale.categorical:
        return swatch_layout(type_, scale, hidden, room)
    label_width = text_width(scale.label, type_.title) + 8
    for above, step in ((False, 1), (True, 1), (True, 2)):
        plan = _bar_legend(type_, scale, hidden, room, label_width, above, step)
        if plan.width <= room:
            return plan
    return plan  # the narrowest there is: a picture narrower than its legend grows to hold it


def _bar_legend(
    type_: Type,
    scale: Scale,
    hidden: str | None,
    room: float,
    label_width: float,
    above: bool,
    step: int,
) -> Legend:
    tick = type_.tick
    ticks = scale.tick_texts()[::step]
    half_first = text_width(ticks[0], tick) / 2
    half_last = text_width(ticks[-1], tick) / 2
    bar_x = half_first + 2 if above else max(label_width, half_first + 2)
    # never so short that neighbouring ticks run into each other: a character between them
    widest = max(text_width(t, tick) for t in ticks)
    spaced = (len(ticks) - 1) * (widest + tick_gap(tick))
    bar_width = max(min(room - bar_x - half_last - 3, 16 * tick + 60), spaced)  # 3: ceil
    bar_y = type_.title * 1.3 if above else 0.0
    line = type_.bar + 3 + tick * 1.3
    after_bar = bar_x + bar_width + half_last + tick
    width, height = max(after_bar - tick + 2, label_width if above else 0.0), bar_y + line
    hidden_x = hidden_y = 0.0
    if hidden is not None:
        hidden_width = tick + 4 + text_width(hidden, tick)
        if after_bar + hidden_width <= room:
            hidden_x = after_bar
            width = after_bar + hidden_width
        else:
            hidden_y = line + 2
            width = max(width, hidden_width)
            height = bar_y + hidden_y + tick * 1.3
    return Legend(
        label_width,
        bar_x,
        bar_width,
        hidden_x,
        hidden_y,
        math.ceil(width),
        math.ceil(height),
        bar_y=bar_y,
        tick_step=step,
    )


def wrapped(text: str, size: float, room: float) -> tuple[str, ...]:
    """A text's lines at font `size`, broken at spaces to stay within `room` px where a
    word allows it."""
    lines: list[str] = []
    for word in text.split(" "):
        if lines and text_width(f"{lines[-1]} {word}", size) <= room:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return tuple(lines)


def swatch_layout(type_: Type, scale: Scale, hidden: str | None, room: float) -> Legend:
    """A categorical legend: its name on the first line, then each state (a swatch and its
    name, wrapped within `room`) side by side while they fit, on further lines when not; the
    hidden look last, as one more state."""
    tick = type_.tick
    line = tick * 1.35
    gap = tick
    names = [name for _, name in scale.states] + ([hidden] if hidden is not None else [])
    label_width = text_width(scale.label, type_.title) + 8
    x, y, row_height = label_width, 0.0, type_.title * 1.35
    width = label_width
    swatches = []
    for name in names:
        lines = wrapped(name, tick, max(room - tick - 4, 6 * tick))
        entry_width = tick + 4 + max(text_width(t, tick) for t in lines)
        if x > 0 and x + entry_width > room:
            x, y, row_height = 0.0, y + row_height + 2, 0.0
        swatches.append(Swatch(x, y, lines))
        row_height = max(row_height, line * len(lines))
        width = max(width, x + entry_width)
        x += entry_width + gap
    return Legend(label_width, 0.0, 0.0, 0.0, 0.0, width + 2, y + row_height, tuple(swatches))


@dataclass(frozen=True)
class Layout:
    """A heatmap's geometry at natural size (px): its cells from (left, top), `cell` px square;
    `width` × `height` the page's picture; the title (`heading` px tall) above it in the
    standalone SVG, which is `box_width` wide."""

    type: Type
    cell: float
    numbers: bool
    png: bool
    row_labels: list[tuple[int, str]]  # (row, label) of the labels shown
    col_labels: list[tuple[int, str]]
    cols_upright: bool  # column labels turned to read upwards (they would overlap flat)
    row_title_x: float  # 0: no axis titles (small multiples)
    col_title_y: float
    left: float
    top: float
    width: float
    height: float
    legend: Legend | None
    legend_y: float
    heading: float
    box_width: float


def cell_size(
    heatmap: Heatmap, type_: Type, compact: bool, across: float | None = None
) -> tuple[float, bool]:
    """The side of a cell and whether it carries its number: numbers up to NUMBERS_UP_TO
    cells a side when they fit in `type_.numbers_side` (and in `across` px, the room its
    columns have); otherwise the cells share `side` (or `across`)."""
    rows, cols = heatmap.shape
    longest = max(rows, cols)
    if not compact and longest <= NUMBERS_UP_TO:
        numbers = set(chain.from_iterable(heatmap.texts))
        widest = max(text_width(t, type_.number) for t in numbers)
        # wide enough for the numbers, and for short column labels to stay flat
        label = max(text_width(short_label(t), type_.label) for t in heatmap.col_labels)
        cell = round(max(widest + 8, type_.number * 2.4, min(label + 6, type_.number * 5)), 1)
        if cell * longest <= type_.numbers_side and (across is None or cell * cols <= across):
            return cell, True
    side = type_.side / longest if across is None else min(type_.side / longest, across / cols)
    return round(min(type_.max_cell, side), 2), False


def row_label_width(heatmap: Heatmap, type_: Type, rows: list[int]) -> float:
    """The width of the row labels shown (the selected query's is bold), and their gap."""
    widths = (
        text_width(short_label(heatmap.row_labels[i]), type_.label)
        * (1.2 if i == heatmap.selected_row else 1)
        for i in rows
    )
    return max(widths, default=0) + 8


def layout(
    heatmap: Heatmap,
    type_: Type,
    *,
    compact: bool = False,
    png: bool | None = None,
    legend: tuple[Scale, str | None] | None = None,
) -> Layout:
    """Where a heatmap's parts go. `png` forces the choice of raster cells (a group decides
    for all its panels); `legend` is (its scale, the hidden sentence or None)."""
    rows, cols = heatmap.shape
    titles = 0.0 if compact else type_.title * 1.5
    across = None
    if heatmap.room is not None and not type_.shrinks:  # every row label at most, beside
        across = heatmap.room - titles - row_label_width(heatmap, type_, list(range(rows))) - PAD
    cell, numbers = cell_size(heatmap, type_, compact, across)
    if png is None:
        png = rows * cols >= PNG_FROM_CELLS or cell < PNG_BELOW_PX
    numbers = numbers and not png
    label = type_.label
    step = math.ceil(label * 1.2 / cell)
    row_keep = thinned(rows, step, heatmap.selected_row)
    row_labels = [(i, short_label(heatmap.row_labels[i])) for i in row_keep]
    flat = [short_label(t) for t in heatmap.col_labels]
    upright = any(text_width(t, label) > cell - 3 for t in flat)
    col_keep = thinned(cols, step) if upright else list(range(cols))
    col_labels = [(j, flat[j]) for j in col_keep]

    col_label_h = (
        max((text_width(t, label) for _, t in col_labels), default=0) + 6
        if upright
        else label * 1.4
    )
    row_label_w = row_label_width(heatmap, type_, row_keep)
    left, top = titles + row_label_w, titles + col_label_h
    cells_w, cells_h = cols * cell, rows * cell
    width = left + cells_w + PAD
    height = top + cells_h + PAD
    if not compact:  # the axis titles need their length beside the cells
        row_title_w = text_width(heatmap.row_axis, type_.title)
        col_title_w = text_width(heatmap.col_axis, type_.title)
        width = max(width, col_title_w + PAD)
        height = max(height, top + row_title_w + PAD)
    legend_box = None
    legend_y = height
    if legend is not None:
        legend_box = legend_layout(type_, *legend, room=width)
        width = max(width, legend_box.width)
        height = legend_y + legend_box.height + PAD
    heading = type_.heading * 1.8
    box_width = max(width, text_width(heatmap.title, type_.heading) + PAD)
    return Layout(
        type=type_,
        cell=cell,
        numbers=numbers,
        png=png,
        row_labels=row_labels,
        col_labels=col_labels,
        cols_upright=upright,
        row_title_x=0.0 if compact else type_.title,
        col_title_y=0.0 if compact else type_.title * 1.05,
        left=round(left, 1),
        top=round(top, 1),
        # whole pixels: a browser lays boxes out in 1/64 px, which would shrink a width such
        # as 157.3 px (and its 10 px text) by a hair
        width=math.ceil(width),
        height=math.ceil(height),
        legend=legend_box,
        legend_y=round(legend_y, 1),
        heading=round(heading, 1),
        box_width=math.ceil(box_width),
    )
