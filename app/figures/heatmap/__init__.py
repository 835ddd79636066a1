"""Every heatmap of the app, drawn on the server: SVG where the cells carry their numbers or
are at least a few pixels wide, a PNG of the cells (one pixel each, shown pixelated) where
they are smaller than text (64 × 64 cells or more, or a large group of panels). Labels, the
legend and the selected query's outline are SVG either way.

A view builds a `Heatmap` (or a `HeatmapGroup`) from its typed result; the template places it
with `{{ heatmap(view.weights_map) }}` (a global of app/web/templating.py that passes the
page's presenter mode), or Python calls `render(figure, present=...)`. static/heatmap.css
styles it (themes, presenter mode, narrow screens) and static/js/heatmap.js adds the hover
and keyboard read-out and the SVG and PNG downloads; without the script the figure and its
legend are all there.

One stage of a head, the softmax weights (a StageFields result `r`, its tokens `tokens`,
the selected query `i`, its hover arithmetic from app/features/stages/page.py):

    weights = Heatmap(
        id="fig-weights",
        title=gettext("softmax weights"),
        values=r.weights,
        row_labels=tokens,
        col_labels=tokens,
        scale=weights_scale(),  # viridis on a fixed 0–1
        hidden=~r.allowed,  # drawn grey, reading "0" in the cells
        hidden_text="0",
        hover=weight_hover(texts, tokens),  # Tips: one template, numbers once per row
        selected_row=i,
    )

A cell's hover text is written once per figure (`Tips`): a template such as
"q_{r} · k_{c} = {r1}×{c1} + {r2}×{c2} = {v}" and its operands per row (q_i), per column
(k_j) or per cell; static/js/heatmap.js fills it for the cell pointed at or focused. Without
`hover` a cell says "query → key: value".

The masked scores need no `hidden`: their −∞ entries are hidden cells, and they do not
stretch the scale: `Heatmap(..., values=r.masked, scale=signed_scale(r.masked))`.

A group of heads (/heads: h weight matrices, one colour bar, the chosen head outlined):

    HeatmapGroup(
        id="fig-heads",
        title=gettext("Attention weights of every head"),
        panels=[
            Heatmap(id=f"head-{h}", title=f"head {h}", values=w, row_labels=tokens,
                    col_labels=tokens, scale=weights_scale(), hidden=~allowed)
            for h, w in enumerate(result.weights)
        ],
        columns=4,
        selected=chosen_head,
    )

A grid as PNG (/model: 6 layers × 12 heads at a long input) is the same group with 72 panels,
titled "L3 H7" and the like, `columns=12`: past 64 × 64 cells in all, or where a panel's cells
would be under 6 px, every panel is drawn as a PNG. For signed values shared by a group, build
the scale once from all of them: `signed_scale(*matrices)`.

States rather than values (the tiled kernel's progress: 0 not computed, 1 computed, 2 held
now) take a categorical scale, one flat colour per state, named in the legend instead of a
colour bar: `categorical_scale([("#ececf1", gettext("not computed yet")), …], gettext("score"))`.

`svg_document(figure)` is the SVG a download gives; `png_bytes(heatmap)` the cells as PNG.
"""

from app.figures.heatmap.model import Heatmap, HeatmapGroup, PanelSection, Tips
from app.figures.heatmap.raster import png_bytes
from app.figures.heatmap.scale import (
    DIVERGING,
    HIDDEN_COLOUR,
    HIDDEN_LEGEND,
    VIRIDIS,
    Scale,
    categorical_scale,
    sequential_scale,
    signed_scale,
    weights_scale,
)
from app.figures.heatmap.svg import render, svg_document

__all__ = [
    "DIVERGING",
    "HIDDEN_COLOUR",
    "HIDDEN_LEGEND",
    "VIRIDIS",
    "Heatmap",
    "HeatmapGroup",
    "PanelSection",
    "Scale",
    "Tips",
    "categorical_scale",
    "png_bytes",
    "render",
    "sequential_scale",
    "signed_scale",
    "svg_document",
    "weights_scale",
]
