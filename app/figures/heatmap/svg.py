"""The markup of heatmaps: the <figure> a page places, and the standalone SVG a download gives.

One SVG serves both. Its presentation attributes give the standalone look (dark text on white,
a font-family stack, the selected query outlined in orange); in the page, static/heatmap.css
overrides them (text and lines in currentColor, the theme's background between cells, the
focus colour), so presenter mode and the dark scheme need no second drawing. Cell fills and
their numbers' colours are fixed by the scale. The SVG holds its own title above the page's
view (y < 0), shown only in the standalone document (`data-box` is its viewBox).
"""

import re
from dataclasses import replace
from itertools import chain

from markupsafe import Markup, escape

from app.core.i18n import gettext, ngettext
from app.figures.heatmap.layout import (
    PNG_BELOW_PX,
    PNG_FROM_CELLS,
    TYPES,
    Layout,
    Legend,
    Swatch,
    Type,
    cell_size,
    layout,
    text_width,
)
from app.figures.heatmap.layout import legend_layout as plan_legend
from app.figures.heatmap.model import Heatmap, HeatmapGroup
from app.figures.heatmap.raster import png_data_uri
from app.figures.heatmap.scale import HIDDEN_COLOUR, HIDDEN_LEGEND, Scale, rgb_to_hex, text_colours

FONT_STACK = 'system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif'
INK = "#1d1d1f"  # text and lines of the standalone SVG (in the page: currentColor)
PAPER = "#ffffff"
MARK = "#c2410c"  # the selected query's outline (in the page: the theme's focus colour)
SVG_NS = "http://www.w3.org/2000/svg"
GROUP_GAP = 16.0  # between the panels of a standalone group


def _n(x: float) -> str:
    """A coordinate: at most two decimals, no trailing zeros."""
    return f"{x:.2f}".rstrip("0").rstrip(".")


def _escaped(texts: list[str]) -> list[str]:
    """markupsafe.escape of many texts in one call (a figure has up to 4,095 cell tips)."""
    return str(escape("\x00".join(texts))).split("\x00")


def file_name(title: str) -> str:
    """A download's file name (without extension) from a title: path and shell characters
    and spaces become "_"."""
    name = re.sub(r'[\s/\\:*?"<>|]+', "_", title).strip("_.")
    return name[:60] or "heatmap"


def hidden_sentence(hidden_text: str) -> str:
    return gettext(HIDDEN_LEGEND) % {"value": hidden_text}


# ---------------------------------------------------------------- the SVG


def _root(
    heatmap_id: str,
    lay: Layout,
    *,
    standalone: bool,
    described_by: str,
    place: tuple[float, float] | None,
    focusable: bool,
    extra: str = "",
) -> str:
    """The <svg> start tag: the page's view, or the standalone box (the title above)."""
    box = (0.0, -lay.heading, lay.box_width, lay.height + lay.heading)
    view = box if standalone else (0.0, 0.0, lay.width, lay.height)
    parts = ['<svg class="hm-svg"']
    if standalone and place is None:
        parts.append(f' xmlns="{SVG_NS}"')
    if place is not None and standalone:
        parts.append(f' x="{_n(place[0])}" y="{_n(place[1])}"')
    parts.append(
        f' viewBox="{" ".join(map(_n, view))}" width="{_n(view[2])}" height="{_n(view[3])}"'
        f' data-box="{" ".join(map(_n, box))}"'
    )
    if place is not None:
        parts.append(f' data-place="{_n(place[0])} {_n(place[1])}"')
    parts.append(
        f' role="img" aria-labelledby="{heatmap_id}-title" aria-describedby="{described_by}"'
        f' font-family="{escape(FONT_STACK)}" color="{INK}"'
    )
    if focusable:
        parts.append(' tabindex="0"')
    if not standalone and not lay.type.shrinks:
        smallest = min(lay.type.label, lay.type.tick, lay.type.number)
        parts.append(f' style="min-width: {_n(lay.width * lay.type.min_text_px / smallest)}px"')
    parts.append(extra + ">")
    return "".join(parts)


def _heading(title: str, lay: Layout) -> str:
    h = lay.heading
    return (
        f'<rect class="hm-paper" x="0" y="{_n(-h)}" width="{_n(lay.box_width)}"'
        f' height="{_n(lay.height + h)}" fill="{PAPER}"/>'
        f'<text class="hm-heading" x="0" y="{_n(-h + lay.type.heading * 1.25)}"'
        f' font-size="{_n(lay.type.heading)}" font-weight="bold" fill="currentColor">'
        f"{escape(title)}</text>"
    )


def _axes(heatmap: Heatmap, lay: Layout) -> str:
    """The axis titles ("key" above, "query" on the left, reading upwards) and the labels."""
    t = lay.type
    cell = lay.cell
    rows, cols = heatmap.shape
    out = []
    if lay.row_title_x:
        col_title, row_title = heatmap.col_axis, heatmap.row_axis
        # centred on the cells, but never past the picture's edges
        half = text_width(col_title, t.title) / 2
        cx = min(max(lay.left + cols * cell / 2, half), lay.width - half)
        half = text_width(row_title, t.title) / 2
        cy = min(max(lay.top + rows * cell / 2, half), lay.height - half)
        out.append(
            f'<g class="hm-axes" font-size="{_n(t.title)}" fill="currentColor"'
            f' text-anchor="middle" font-style="italic">'
            f'<text x="{_n(cx)}" y="{_n(lay.col_title_y)}">{escape(col_title)}</text>'
            f'<text transform="rotate(-90 {_n(lay.row_title_x)} {_n(cy)})"'
            f' x="{_n(lay.row_title_x)}" y="{_n(cy)}">{escape(row_title)}</text></g>'
        )
    row_x = lay.left - 4
    rows_out = [
        f'<g class="hm-rows" font-size="{_n(t.label)}" fill="currentColor" text-anchor="end">'
    ]
    row_texts = _escaped([text for _, text in lay.row_labels])
    for (i, _), text in zip(lay.row_labels, row_texts, strict=True):
        y = _n(lay.top + (i + 0.5) * cell)
        bold = ' class="hm-sel" font-weight="bold"' if i == heatmap.selected_row else ""
        rows_out.append(f'<text x="{_n(row_x)}" y="{y}" dy=".35em"{bold}>{text}</text>')
    rows_out.append("</g>")
    col_texts = _escaped([text for _, text in lay.col_labels])
    y = lay.top - 4
    if lay.cols_upright:
        cols_out = [
            f'<g class="hm-cols" font-size="{_n(t.label)}" fill="currentColor" text-anchor="start">'
        ]
        for (j, _), text in zip(lay.col_labels, col_texts, strict=True):
            x = _n(lay.left + (j + 0.5) * cell)
            cols_out.append(
                f'<text transform="rotate(-90 {x} {_n(y)})" x="{x}" y="{_n(y)}"'
                f' dy=".35em">{text}</text>'
            )
    else:
        cols_out = [
            f'<g class="hm-cols" font-size="{_n(t.label)}" fill="currentColor"'
            ' text-anchor="middle">'
        ]
        for (j, _), text in zip(lay.col_labels, col_texts, strict=True):
            x = _n(lay.left + (j + 0.5) * cell)
            cols_out.append(f'<text x="{x}" y="{_n(y)}">{text}</text>')
    cols_out.append("</g>")
    return "".join(out + rows_out + cols_out)


def _grid(lay: Layout) -> str:
    """The start of a group drawn in cell units: cell (i, j) is the unit square at (j, i)."""
    return f'<g transform="translate({_n(lay.left)} {_n(lay.top)}) scale({_n(lay.cell)})">'


def _unit(px: float, lay: Layout) -> str:
    """A stroke of `px` pixels, in cell units."""
    return f"{px / lay.cell:.4g}"


def _cells(heatmap: Heatmap, lay: Layout) -> str:
    """The cells as unit squares in cell units, row by row (cell (i, j) is child i × cols + j
    of .hm-cells, at x = j, y = i; what each says on hover is in the figure's tip data), then
    their numbers, if they carry them (black, or white where that reads better on the fill)."""
    rows, cols = heatmap.shape
    cell = lay.cell
    fills = rgb_to_hex(heatmap.rgb)
    hidden = heatmap.mask.ravel().tolist()
    stroke = (
        f' stroke="{PAPER}" stroke-width="{_unit(lay.type.gap, lay)}"' if cell >= 10 else ""
    )  # a line of the background between cells, where they are large enough to spare it
    out = [f'{_grid(lay)}<g class="hm-cells"{stroke}>']
    k = 0
    for i in range(rows):
        y = f'" y="{i}" width="1" height="1" fill="'
        for j in range(cols):
            cls = ' class="hm-hid"' if hidden[k] else ""
            out.append(f'<rect{cls} x="{j}{y}{fills[k]}"/>')
            k += 1
    out.append("</g></g>")
    if lay.numbers:
        white = text_colours(heatmap.rgb).ravel().tolist()
        texts = _escaped(list(chain.from_iterable(heatmap.texts)))
        half = cell / 2
        centres = [_n(lay.left + j * cell + half) for j in range(cols)]
        out.append(
            f'<g class="hm-nums" font-size="{_n(lay.type.number)}" text-anchor="middle"'
            ' fill="#000000" pointer-events="none">'
        )
        k = 0
        for i in range(rows):
            y = f'" y="{_n(lay.top + i * cell + half)}" dy=".35em"'
            for x in centres:
                fill = ' fill="#ffffff">' if white[k] else ">"
                out.append(f'<text x="{x}{y}{fill}{texts[k]}</text>')
                k += 1
        out.append("</g>")
    return "".join(out)


def _image(heatmap: Heatmap, lay: Layout) -> str:
    rows, cols = heatmap.shape
    return (
        f'<image class="hm-image" x="{_n(lay.left)}" y="{_n(lay.top)}"'
        f' width="{_n(cols * lay.cell)}" height="{_n(rows * lay.cell)}"'
        f' preserveAspectRatio="none" style="image-rendering: pixelated"'
        f' href="{png_data_uri(heatmap)}"/>'
    )


def _marks(heatmap: Heatmap, lay: Layout, *, chosen: bool, focusable: bool) -> str:
    """The selected query's outline, the chosen panel's frame, and the cursor the script
    moves to the hovered or focused cell (a dark and a light ring: seen on every fill)."""
    rows, cols = heatmap.shape
    cell = lay.cell
    out = []
    if heatmap.selected_row is not None or focusable:
        out.append(_grid(lay))  # in cell units, as the cells
        if heatmap.selected_row is not None:
            out.append(
                f'<rect class="hm-mark" x="0" y="{heatmap.selected_row}" width="{cols}"'
                f' height="1" fill="none" stroke="{MARK}"'
                f' stroke-width="{_unit(lay.type.gap * 2.5, lay)}" pointer-events="none"/>'
            )
        if focusable:  # moved by the script to the cell's x and y
            out.append(
                '<g class="hm-cursor" visibility="hidden" pointer-events="none" fill="none">'
                f'<rect width="1" height="1" stroke="#000000" stroke-width="{_unit(3, lay)}"/>'
                f'<rect width="1" height="1" stroke="#ffffff" stroke-width="{_unit(1.5, lay)}"/>'
                "</g>"
            )
        out.append("</g>")
    if chosen:
        out.append(
            f'<rect class="hm-chosen" x="{_n(lay.left - 2)}" y="{_n(lay.top - 2)}"'
            f' width="{_n(cols * cell + 4)}" height="{_n(rows * cell + 4)}" fill="none"'
            f' stroke="{MARK}" stroke-width="3" pointer-events="none"/>'
        )
    return "".join(out)


def _legend(
    figure_id: str, scale: Scale, type_: Type, hidden: str | None, room: float
) -> tuple[str, float, float]:
    """The colour bar (a gradient through the scale's own stops, so it shows exactly the
    colours the cells take), its ticks, and the hidden look named in words; or, for a
    categorical scale, each state's colour and name. Returns the markup and its size."""
    plan = plan_legend(type_, scale, hidden, room)
    bar = type_.bar
    out = [
        f'<g class="hm-legend-parts" fill="currentColor" font-size="{_n(type_.tick)}">'
        f'<text x="0" y="{_n(bar / 2 if not plan.bar_y else plan.bar_y / 2)}" dy=".35em"'
        f' font-size="{_n(type_.title)}">{escape(scale.label)}</text>'
    ]
    if plan.bar_y:  # the name on a line of its own, the bar and what follows it below
        out.append(f'<g transform="translate(0 {_n(plan.bar_y)})">')
    if scale.categorical:  # the hidden look, if any, is one more state
        colours = [colour for colour, _ in scale.states] + [HIDDEN_COLOUR] * (hidden is not None)
        out += [_swatch(c, s, type_) for c, s in zip(colours, plan.swatches, strict=True)]
    else:
        out.insert(0, _gradient(figure_id, scale))
        out.append(_bar(figure_id, scale, type_, plan))
    if hidden is not None and not scale.categorical:
        size = type_.tick
        y = plan.hidden_y + bar / 2
        out.append(
            f'<rect class="hm-hidden-key" x="{_n(plan.hidden_x)}" y="{_n(y - size / 2)}"'
            f' width="{_n(size)}" height="{_n(size)}" fill="{HIDDEN_COLOUR}"/>'
            f'<text x="{_n(plan.hidden_x + size + 4)}" y="{_n(y)}" dy=".35em">'
            f"{escape(hidden)}</text>"
        )
    out.append("</g></g>" if plan.bar_y else "</g>")
    return "".join(out), plan.width, plan.height


def _gradient(figure_id: str, scale: Scale) -> str:
    stops = scale.stops
    gradient = "".join(
        f'<stop offset="{_n(100 * k / (len(stops) - 1))}%" stop-color="{c}"/>'
        for k, c in enumerate(stops)
    )
    return f'<defs><linearGradient id="{figure_id}-bar">{gradient}</linearGradient></defs>'


def _bar(figure_id: str, scale: Scale, type_: Type, plan: Legend) -> str:
    """The colour bar and its ticks."""
    bar = type_.bar
    out = [
        f'<rect class="hm-bar" x="{_n(plan.bar_x)}" y="0" width="{_n(plan.bar_width)}"'
        f' height="{_n(bar)}" fill="url(#{figure_id}-bar)"/>'
    ]
    span = scale.high - scale.low
    ticks = zip(scale.ticks(), scale.tick_texts(), strict=True)
    for value, text in list(ticks)[:: plan.tick_step]:
        x = _n(plan.bar_x + plan.bar_width * (value - scale.low) / span)
        out.append(
            f'<path d="M{x} {_n(bar)}v3" stroke="currentColor"/>'
            f'<text x="{x}" y="{_n(bar + 3 + type_.tick * 0.95)}" text-anchor="middle">'
            f"{escape(text)}</text>"
        )
    return "".join(out)


def _swatch(colour: str, swatch: Swatch, type_: Type) -> str:
    """One state of a categorical legend: its colour, then its name (one line or more)."""
    size = type_.tick
    line = size * 1.35
    x = _n(swatch.x + size + 4)
    lines = "".join(
        f'<tspan x="{x}" y="{_n(swatch.y + line * (k + 0.5))}">{escape(text)}</tspan>'
        for k, text in enumerate(swatch.lines)
    )
    return (
        f'<rect class="hm-swatch" x="{_n(swatch.x)}" y="{_n(swatch.y + (line - size) / 2)}"'
        f' width="{_n(size)}" height="{_n(size)}" fill="{colour}" stroke="#767676"'
        f' stroke-width="0.5"/><text dy=".35em">{lines}</text>'
    )


def _numbers_rule(figure_id: str, lay: Layout) -> str:
    """Numbers smaller than min_text_px are hidden: below this width of the figure's frame
    (a CSS container) the SVG is scaled down that far."""
    below = lay.width * lay.type.min_text_px / lay.type.number
    return (
        f"<style>@container (max-width: {_n(below - 0.01)}px) "
        f"{{ #{figure_id} .hm-nums {{ display: none; }} }}</style>"
    )


def heatmap_svg(
    heatmap: Heatmap,
    lay: Layout,
    *,
    standalone: bool,
    described_by: str,
    legend: bool = True,
    place: tuple[float, float] | None = None,
    chosen: bool = False,
) -> str:
    """The SVG of one heatmap: the page's (standalone=False) or the download's."""
    focusable = not lay.png and not standalone
    rows, cols = heatmap.shape
    extra = ""
    if not lay.png:
        start = heatmap.selected_row or 0
        extra = f' data-rows="{rows}" data-cols="{cols}" data-start="{start}"'
    out = [
        _root(
            heatmap.id,
            lay,
            standalone=standalone,
            described_by=described_by,
            place=place,
            focusable=focusable,
            extra=extra,
        ),
        _heading(heatmap.title, lay),
    ]
    if lay.numbers and lay.type.shrinks:
        out.append(_numbers_rule(heatmap.id, lay))
    out.append(_axes(heatmap, lay))
    out.append(_image(heatmap, lay) if lay.png else _cells(heatmap, lay))
    out.append(_marks(heatmap, lay, chosen=chosen, focusable=focusable))
    if legend and lay.legend is not None:
        hidden = hidden_sentence(heatmap.hidden_text) if heatmap.mask.any() else None
        markup, _, _ = _legend(heatmap.id, heatmap.scale, lay.type, hidden, lay.width)
        out.append(f'<g class="hm-legend" transform="translate(0 {_n(lay.legend_y)})">')
        out.append(markup + "</g>")
    out.append("</svg>")
    return "".join(out)


def _single_layout(heatmap: Heatmap, present: bool) -> Layout:
    hidden = hidden_sentence(heatmap.hidden_text) if heatmap.mask.any() else None
    return layout(heatmap, TYPES[(present, False)], legend=(heatmap.scale, hidden))


# ---------------------------------------------------------------- the page's figures


def _description(
    rows: int,
    cols: int,
    row_axis: str,
    col_axis: str,
    scale: Scale,
    hidden: str | None,
    *,
    png: bool,
    panels: int = 1,
) -> str:
    """The text alternative: what the picture shows, in words."""
    parts = []
    if panels > 1:
        parts.append(
            ngettext("%(num)d heatmap side by side.", "%(num)d heatmaps side by side.", panels)
            % {"num": panels}
        )
    shape = {"rows": rows, "cols": cols, "row_axis": row_axis, "col_axis": col_axis}
    if scale.categorical:
        states = "; ".join(name for _, name in scale.states)
        parts.append(
            gettext(
                "Heatmap of %(rows)d × %(cols)d cells (rows: %(row_axis)s, columns: "
                "%(col_axis)s); colour: %(label)s (%(states)s)."
            )
            % {**shape, "label": scale.label, "states": states}
        )
    else:
        ticks = scale.tick_texts()
        parts.append(
            gettext(
                "Heatmap of %(rows)d × %(cols)d cells (rows: %(row_axis)s, columns: "
                "%(col_axis)s); colour: %(label)s from %(low)s to %(high)s."
            )
            % {**shape, "label": scale.label, "low": ticks[0], "high": ticks[-1]}
        )
    if hidden is not None:
        parts.append(gettext("Grey cells: %(hidden)s.") % {"hidden": hidden})
    if not png:
        parts.append(
            gettext("Point at a cell, or focus the picture and use the arrow keys, to read it.")
        )
    return " ".join(parts)


def _caption(heatmap_id: str, title: str, href: str | None, cls: str = "hm-title") -> str:
    text = f'<a href="{escape(href)}">{escape(title)}</a>' if href else str(escape(title))
    return f'<figcaption class="{cls}" id="{heatmap_id}-title">{text}</figcaption>'


def _tools(title: str) -> str:
    label = gettext("Download “%(title)s” as %(format)s")
    buttons = "".join(
        f'<button type="button" class="hm-download" data-hm-download="{kind}"'
        f' aria-label="{escape(label % {"title": title, "format": kind.upper()})}">'
        f"{kind.upper()}</button>"
        for kind in ("svg", "png")
    )
    return f'<div class="hm-tools">{buttons}</div>'


def _plot(svg: str, heatmap: Heatmap, lay: Layout) -> str:
    """The picture in its frame (a CSS container), then the place the hover text appears
    (outside the frame, which would clip it) and, for SVG cells, what the script fills it
    with (a PNG's cells are too small to point at)."""
    data = (
        ""
        if lay.png
        else f'<script type="application/json" class="hm-data">{heatmap.tip_data()}</script>'
    )
    return f'<div class="hm-plot">{svg}</div><p class="hm-tip" role="status"></p>{data}'


def render_heatmap(heatmap: Heatmap, *, present: bool = False) -> Markup:
    """One heatmap as the <figure> a page places: its title, the picture (SVG cells, or a
    PNG of them where they are smaller than text), the labels and the legend, a text
    alternative, and the SVG and PNG download buttons. Its natural width is the CSS
    variable --hm-width, for a layout that gives each picture the room it needs."""
    lay = _single_layout(heatmap, present)
    rows, cols = heatmap.shape
    hidden = hidden_sentence(heatmap.hidden_text) if heatmap.mask.any() else None
    desc_id = f"{heatmap.id}-desc"
    svg = heatmap_svg(heatmap, lay, standalone=False, described_by=desc_id)
    description = _description(
        rows, cols, heatmap.row_axis, heatmap.col_axis, heatmap.scale, hidden, png=lay.png
    )
    return Markup(
        f'<figure class="hm" id="{heatmap.id}" data-file="{escape(file_name(heatmap.title))}"'
        f' style="--hm-width: {_n(lay.width)}px">'
        f"{_caption(heatmap.id, heatmap.title, heatmap.href)}{_plot(svg, heatmap, lay)}"
        f'<p class="visually-hidden" id="{desc_id}">{escape(description)}</p>'
        f"{_tools(heatmap.title)}</figure>"
    )


def svg_document(figure: Heatmap | HeatmapGroup) -> str:
    """The standalone SVG of a heatmap or a group, as its download gives it: the title, the
    picture and the legend, with its own font-family stack and colours (dark text on white),
    opening correctly on its own."""
    if isinstance(figure, HeatmapGroup):
        return _group_document(figure)
    lay = _single_layout(figure, False)
    return heatmap_svg(figure, lay, standalone=True, described_by=f"{figure.id}-desc")


# ---------------------------------------------------------------- small multiples


def section_cells(sizes: list[int], columns: int) -> tuple[list[tuple[int, int]], list[int]]:
    """Where a group's panels go in a grid of `columns`: (row, column) of each panel, and the
    first row of each section. A section goes on the current row where its panels fit in
    what is left of it, else it starts a new one; one larger than a row takes rows of its own.
    Without sections (one section of every panel) the panels simply fill the rows."""
    cells: list[tuple[int, int]] = []
    starts: list[int] = []
    row = col = 0
    for size in sizes:
        if col and col + size > columns:
            row, col = row + 1, 0
        starts.append(row)
        cells.extend((row + j // columns, col + j % columns) for j in range(size))
        if col + size >= columns:
            row, col = row + -(-(col + size) // columns), 0
        else:
            col += size
    return cells, starts


class _GroupPlan:
    """Every panel's layout, the shared legend, and where each panel and section title goes
    in the standalone SVG."""

    def __init__(self, group: HeatmapGroup, present: bool) -> None:
        usual = TYPES[(present, True)]
        panel_type = replace(
            usual, side=usual.side * group.panel_size, max_cell=usual.max_cell * group.panel_size
        )
        self.type = TYPES[(present, False)]
        cells = sum(p.shape[0] * p.shape[1] for p in group.panels)
        small = [cell_size(p, panel_type, compact=True)[0] for p in group.panels]
        png = cells >= PNG_FROM_CELLS or min(small) < PNG_BELOW_PX
        self.layouts = [layout(p, panel_type, compact=True, png=png) for p in group.panels]
        self.png = png
        self.hidden = hidden_sentence(group.hidden_text) if group.has_hidden else None
        widest = max(lay.box_width for lay in self.layouts)
        tallest = max(lay.height + lay.heading for lay in self.layouts)
        columns = min(group.columns, len(group.panels))
        self.columns = columns
        self.heading = self.type.heading * 1.8
        step_x, step_y = widest + GROUP_GAP, tallest + GROUP_GAP
        sizes = [s.size for s in group.sections] or [len(group.panels)]
        grid, starts = section_cells(sizes, columns)
        titled = set(starts) if group.sections else set()
        title_h = self.type.title * 1.6
        tops = [self.heading]  # the top of each row of panels, its section titles included
        for row in range(grid[-1][0] + 1):
            tops.append(tops[-1] + step_y + (title_h if row in titled else 0))
        self.places = [
            (col * step_x, tops[row] + (title_h if row in titled else 0)) for row, col in grid
        ]
        first = [sum(sizes[:k]) for k in range(len(sizes))]
        self.section_titles = [
            (section.title, grid[k][1] * step_x, tops[grid[k][0]] + title_h * 0.75)
            for section, k in zip(group.sections, first, strict=False)
        ]
        room = columns * step_x - GROUP_GAP
        self.legend, legend_w, legend_h = _legend(
            group.id, group.scale, self.type, self.hidden, max(room, 360)
        )
        self.legend_size = (legend_w, legend_h)
        self.legend_place = (0.0, tops[-1])
        self.size = (max(room, legend_w), self.legend_place[1] + legend_h)
        # in the page a panel's title is its caption, which wraps: the picture sets the width
        self.panel_width = max(lay.width for lay in self.layouts)


def _plain_svg(cls: str, size: tuple[float, float], attributes: str) -> str:
    """The start tag of a group's legend or frame: its box at natural size, and the
    standalone font and colour."""
    w, h = size
    box = f"0 0 {_n(w)} {_n(h)}"
    return (
        f'<svg class="{cls}"{attributes} viewBox="{box}" width="{_n(w)}" height="{_n(h)}"'
        f' data-box="{box}" font-family="{escape(FONT_STACK)}" color="{INK}">'
    )


def _legend_svg(group: HeatmapGroup, plan: _GroupPlan, *, standalone: bool) -> str:
    x, y = plan.legend_place
    at = f' x="{_n(x)}" y="{_n(y)}"' if standalone else ""
    attributes = (
        f'{at} data-place="{_n(x)} {_n(y)}" role="img" aria-labelledby="{group.id}-title"'
        f' aria-describedby="{group.id}-desc"'
    )
    return _plain_svg("hm-legend-svg", plan.legend_size, attributes) + plan.legend + "</svg>"


def _frame_svg(group: HeatmapGroup, plan: _GroupPlan, *, standalone: bool) -> str:
    """The standalone group's outer SVG (left open for the panels): its box, white paper and
    title (the page has the title as a caption, and keeps this out of sight)."""
    w, h = plan.size
    ns = f' xmlns="{SVG_NS}"' if standalone else ' aria-hidden="true"'
    return (
        _plain_svg("hm-frame", plan.size, ns)
        + f'<rect x="0" y="0" width="{_n(w)}" height="{_n(h)}" fill="{PAPER}"/>'
        f'<text x="0" y="{_n(plan.type.heading * 1.25)}" font-size="{_n(plan.type.heading)}"'
        f' font-weight="bold" fill="currentColor">{escape(group.title)}</text>'
        + "".join(
            f'<text x="{_n(x)}" y="{_n(y)}" font-size="{_n(plan.type.title)}" font-weight="bold"'
            f' fill="currentColor">{escape(title)}</text>'
            for title, x, y in plan.section_titles
        )
    )


def _sections(group: HeatmapGroup, panels: list[str]) -> str:
    """The panels' markup in the page: one grid, or one titled run per section."""
    if not group.sections:
        return f'<div class="hm-panels">{"".join(panels)}</div>'
    out = []
    start = 0
    for k, section in enumerate(group.sections):
        title_id = f"{group.id}-section-{k}"
        out.append(
            f'<div class="hm-section" role="group" aria-labelledby="{title_id}">'
            f'<p class="hm-section-title" id="{title_id}">{escape(section.title)}</p>'
            f'<div class="hm-panels">{"".join(panels[start : start + section.size])}</div></div>'
        )
        start += section.size
    return f'<div class="hm-sections">{"".join(out)}</div>'


def render_group(group: HeatmapGroup, *, present: bool = False) -> Markup:
    """Small multiples as the <figure> a page places: the group's title, a grid of panels
    (each titled, its tokens on both axes; fewer columns on narrow screens), in titled
    sections if it has them, one colour bar for all, a text alternative and the downloads
    of the whole group."""
    plan = _GroupPlan(group, present)
    desc_id = f"{group.id}-desc"
    panels = []
    for k, (panel, lay) in enumerate(zip(group.panels, plan.layouts, strict=True)):
        chosen = k == group.selected
        svg = heatmap_svg(
            panel,
            lay,
            standalone=False,
            described_by=desc_id,
            place=plan.places[k],
            chosen=chosen,
        )
        cls = "hm hm-panel hm-chosen-panel" if chosen else "hm hm-panel"
        panels.append(
            f'<figure class="{cls}" id="{panel.id}">'
            f"{_caption(panel.id, panel.title, panel.href)}{_plot(svg, panel, lay)}</figure>"
        )
    first = group.panels[0]
    rows, cols = first.shape
    description = _description(
        rows,
        cols,
        first.row_axis,
        first.col_axis,
        group.scale,
        plan.hidden,
        png=plan.png,
        panels=len(group.panels),
    )
    style = f"--hm-columns: {plan.columns}; --hm-panel: {_n(plan.panel_width)}px"
    return Markup(
        f'<figure class="hm-group" id="{group.id}" data-file="{escape(file_name(group.title))}"'
        f' style="{style}">{_caption(group.id, group.title, None)}{_sections(group, panels)}'
        f"{_legend_svg(group, plan, standalone=False)}"
        f"{_frame_svg(group, plan, standalone=False)}</svg>"
        f'<p class="visually-hidden" id="{desc_id}">{escape(description)}</p>'
        f"{_tools(group.title)}</figure>"
    )


def _group_document(group: HeatmapGroup) -> str:
    plan = _GroupPlan(group, False)
    out = [_frame_svg(group, plan, standalone=True)]
    for k, (panel, lay) in enumerate(zip(group.panels, plan.layouts, strict=True)):
        out.append(
            heatmap_svg(
                panel,
                lay,
                standalone=True,
                described_by=f"{group.id}-desc",
                place=plan.places[k],
                chosen=k == group.selected,
            )
        )
    out.append(_legend_svg(group, plan, standalone=True))
    out.append("</svg>")
    return "".join(out)


def render(figure: Heatmap | HeatmapGroup, *, present: bool = False) -> Markup:
    """A heatmap or a group of them as the <figure> a page places (`present`: presenter
    mode's sizes, no text below 16 px)."""
    if isinstance(figure, HeatmapGroup):
        return render_group(figure, present=present)
    return render_heatmap(figure, present=present)
