"""The first screen shows attention: every page's main picture measured with
getBoundingClientRect at 1280×800 (a laptop), 1280×720 (a projector, presenter mode) and
390×844 (a phone). One page per viewport visits every page; a screenshot of each goes to
artifacts/first-screen-<page>-<viewport>.png (made by the test run, not committed)."""

from collections.abc import Callable
from typing import Any

import pytest
from playwright.sync_api import Page

from tests.browser.conftest import HEADER_MAX_PX, save_screenshot

# Each page and the figure that is its main picture.
MAIN_PICTURE = {
    "/": "fig-weights",
    "/heads": "fig-heads",
    "/cost": "fig-cost-scores",
    "/kernel": "fig-tiled-progress",
    "/model": "fig-grid",
    "/walkthrough": "walk-x",
}
# The cells of a figure (plotly's drag layer) and the page's width and header, as drawn.
MEASURE = """(figure) => {
  const cells = (root) => [...root.querySelectorAll('rect.nsewdrag')]
    .map((r) => r.getBoundingClientRect()).filter((r) => r.height > 0);
  const main = cells(document.querySelector(`[data-figure='${figure}']`))[0];
  const first = cells(document).sort((a, b) => a.top - b.top)[0];
  const box = (r) => r && {top: r.top + scrollY, bottom: r.bottom + scrollY};
  return {main: box(main), first: box(first), scrollY: scrollY,
          width: document.documentElement.scrollWidth,
          header: document.querySelector('.site-header').getBoundingClientRect().height};
}"""


def measure(page: Page, path: str, figure: str) -> dict[str, Any]:
    page.goto(path)
    page.locator(f"[data-figure='{figure}'] rect.nsewdrag").first.wait_for(timeout=30_000)
    return page.evaluate(MEASURE, figure)


def visit(open_page: Callable[..., Page], size: tuple[int, int], query: str = ""):
    """Every page in turn in one page at this viewport (the shared context's watch fails the
    test on a console error or a request to another host): its path, measures and page."""
    page = open_page(*size)
    for path, figure in MAIN_PICTURE.items():
        box = measure(page, path + query, figure)
        name = path.strip("/") or "lab"
        save_screenshot(
            page, f"first-screen-{name}-{size[0]}x{size[1]}{'-present' if query else ''}"
        )
        yield path, box, page


def test_a_laptop_shows_each_main_picture_without_scrolling(
    open_page: Callable[..., Page],
) -> None:
    for path, box, _ in visit(open_page, (1280, 800)):
        assert box["scrollY"] == 0
        assert box["width"] <= 1280, path
        # The whole first block of cells is on the first screen, below the header.
        assert box["header"] <= box["main"]["top"], path
        assert box["main"]["bottom"] <= 800, f"{path}: its picture ends at {box['main']}"


def test_a_projector_in_presenter_mode_shows_the_weights_and_the_breakdown(
    open_page: Callable[..., Page],
) -> None:
    seen = set()
    for path, box, page in visit(open_page, (1280, 720), "?present=1"):
        assert box["width"] <= 1280, path
        assert box["main"]["top"] < 720, f"{path}: its picture starts below the fold"
        if path == "/":
            assert box["main"]["bottom"] <= 720
            table = page.locator("#query-table").bounding_box()
            assert table is not None
            assert table["y"] + table["height"] <= 720, "the breakdown ends below the fold"
        seen.add(path)
    assert seen == set(MAIN_PICTURE)


# Presenter mode too (a projector link opened on a phone), in Spanish, its longest labels.
@pytest.mark.parametrize("query", ["", "?present=1&lang=es"])
@pytest.mark.parametrize("size", [(390, 844)])
def test_a_phone_never_scrolls_sideways_and_reaches_a_heatmap_within_two_screens(
    open_page: Callable[..., Page], size: tuple[int, int], query: str
) -> None:
    width, height = size
    for path, box, _ in visit(open_page, size, query):
        assert box["width"] <= width, f"{path} is {box['width']} px wide"
        assert box["header"] <= HEADER_MAX_PX, path
        assert box["first"]["top"] <= 2 * height, f"{path}: first heatmap at {box['first']}"


LONG = "the quick brown fox jumps over the lazy dog and then it runs far away into the dark wood"
# Per figure: axis titles that cross a tick label, and the smallest number written in a cell.
LEGIBILITY = """(figure) => {
  const f = document.querySelector(`[data-figure='${figure}']`);
  const rects = (sel) => [...f.querySelectorAll(sel)].map((e) => e.getBoundingClientRect())
    .filter((r) => r.width > 0);
  const cross = (a, b) =>
    a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
  const ticks = rects('.xtick text, .ytick text');
  const crossings = rects('.xtitle, .ytitle').filter((t) => ticks.some((k) => cross(t, k))).length;
  const sizes = [...f.querySelectorAll('text.textpoint, .textpoint text')]
    .map((e) => parseFloat(getComputedStyle(e).fontSize));
  return {ticks: ticks.length, crossings, smallest: sizes.length ? Math.min(...sizes) : null};
}"""


@pytest.mark.parametrize(
    ("path", "figures"),
    [
        ("/model?text=" + LONG.replace(" ", "+"), ["fig-scores", "fig-scaled", "fig-weights"]),
        ("/?tokens=" + "+".join(LONG.split()[:12]), ["fig-scores", "fig-weights"]),
    ],
)
def test_axis_titles_clear_the_tick_labels_and_cell_numbers_stay_legible(
    open_page: Callable[..., Page], path: str, figures: list[str]
) -> None:
    page = open_page()
    page.goto(path)
    for figure in figures:
        plot = page.locator(f"[data-figure='{figure}']")
        plot.scroll_into_view_if_needed()
        plot.locator("rect.nsewdrag").first.wait_for(timeout=30_000)
        seen = page.evaluate(LEGIBILITY, figure)
        assert seen["ticks"] > 0, figure  # token labels on the axes
        assert seen["crossings"] == 0, f"{figure}: an axis title over its tick labels"
        assert seen["smallest"] is None or seen["smallest"] >= 10, f"{figure}: {seen}"
