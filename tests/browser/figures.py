"""What a browser test reads off a figure on screen: its cells' box, its labels and their
sizes, its colour bar. Server-drawn heatmaps (app/figures/heatmap: `figure.hm` with an SVG)
and the plotly charts that remain (`[data-figure]`) alike, from their public markup."""

from typing import Any

from playwright.sync_api import Page

# The cells of every figure as drawn: a server heatmap's cells (or its PNG), plotly's plot area.
CELLS = """() => {
  const boxes = [];
  for (const f of document.querySelectorAll('figure.hm')) {
    const cells = f.querySelector('.hm-cells, .hm-image');
    if (cells) boxes.push({id: f.id, box: cells.getBoundingClientRect()});
  }
  for (const f of document.querySelectorAll('[data-figure]')) {
    const area = f.querySelector('rect.nsewdrag');
    if (area) boxes.push({id: f.dataset.figure, box: area.getBoundingClientRect()});
  }
  return boxes.filter((b) => b.box.height > 0).map((b) => ({id: b.id,
    top: b.box.top + scrollY, bottom: b.box.bottom + scrollY, left: b.box.left,
    right: b.box.right, height: b.box.height, width: b.box.width}));
}"""


def cells(page: Page) -> list[dict[str, Any]]:
    return page.evaluate(CELLS)


def wait_for_figure(page: Page, figure: str, timeout: float = 30_000) -> None:
    """Until the figure's cells are on the page: a server heatmap is there with the page; a
    plotly chart once plotly.js has drawn it."""
    page.locator(
        f"figure.hm#{figure} :is(.hm-cells, .hm-image), [data-figure='{figure}'] rect.nsewdrag"
    ).first.wait_for(timeout=timeout)


def cells_box(page: Page, figure: str) -> dict[str, float]:
    wait_for_figure(page, figure)
    box = next(b for b in cells(page) if b["id"] == figure)
    return {"x": box["left"], "y": box["top"] - page.evaluate("scrollY"), **box}


# Per server heatmap: its token labels, the smallest text on it as rendered (font size times
# the picture's scale), labels over each other on one axis, the title over labels, axis titles
# over labels, and its colour bar (first stop, the tick labels at both ends; a panel's is its
# group's) or, for states, its legend's swatches.
HEATMAPS = """() => [...document.querySelectorAll('figure.hm')].map((f) => {
  const svg = f.querySelector('svg');
  const scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
  const shown = (sel) => [...f.querySelectorAll(sel)]
    .filter((e) => e.getBoundingClientRect().width > 0);
  // to 0.01 px: a box's width is laid out in 1/64 px, so a 145.3 px picture measures 145.297
  const size = (e) => Math.round(parseFloat(getComputedStyle(e).fontSize) * scale * 100) / 100;
  const rows = shown('.hm-rows text'), cols = shown('.hm-cols text');
  const over = (a, b, px = 1) => a.left + px < b.right && b.left + px < a.right
    && a.top + px < b.bottom && b.top + px < a.bottom;
  const boxes = (list) => list.map((e) => e.getBoundingClientRect());
  const overlaps = [boxes(rows), boxes(cols)].reduce((n, axis) => n + axis.slice(1)
    .filter((b, i) => over(b, axis[i])).length, 0);
  const title = f.querySelector('.hm-heading');
  const labels = boxes([...rows, ...cols]);
  const under_title = title
    ? labels.filter((b) => over(title.getBoundingClientRect(), b, 4)).length : 0;
  const axis_over = boxes(shown('.hm-axes text'))
    .filter((a) => labels.some((b) => over(a, b))).length;
  // a panel of small multiples has no legend of its own: its group's colour bar is its
  const legend = f.classList.contains('hm-panel') ? f.closest('.hm-group') : f;
  const ticks = [...legend.querySelectorAll('.hm-legend-parts text[text-anchor=middle]')]
    .map((e) => e.textContent.replace('−', '-'));
  const stop = legend.querySelector('linearGradient stop');
  return {id: f.id, rows: rows.length, cols: cols.length, overlaps, under_title, axis_over,
          smallest: Math.min(...shown('text').map(size)),
          numbers: shown('.hm-nums text').map(size),
          first_stop: stop ? stop.getAttribute('stop-color') : null,
          swatches: f.querySelectorAll('.hm-swatch').length,
          low: ticks.length ? parseFloat(ticks[0]) : null,
          high: ticks.length ? parseFloat(ticks[ticks.length - 1]) : null};
})"""


def heatmaps(page: Page) -> list[dict[str, Any]]:
    return page.evaluate(HEATMAPS)
