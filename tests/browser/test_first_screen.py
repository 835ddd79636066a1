"""The first screen shows attention: every page's main picture measured with
getBoundingClientRect at 1280×800 (a laptop), 1280×720 (a projector, presenter mode) and
390×844 (a phone). One page per viewport visits every page; a screenshot of each goes to
artifacts/first-screen-<page>-<viewport>.png (made by the test run, not committed)."""

from collections.abc import Callable
from typing import Any

import pytest
from playwright.sync_api import Page

from tests.browser.conftest import HEADER_CONTROLS, HEADER_MAX_PX, save_screenshot
from tests.browser.figures import cells, heatmaps, wait_for_figure

# Each page and the figure that is its main picture.
MAIN_PICTURE = {
    "/": "fig-weights",
    "/heads": "heads-0",  # the first panel of every head (the chosen one)
    "/cost": "fig-cost-scores",
    "/kernel": "fig-tiled-progress",
    # The grid is a group of panels at their natural size that wraps; its first panel is the
    # chosen head's, outlined, as on /heads.
    "/model": "grid-0-0",
    "/walkthrough": "walk-x",
}
# The page's width and header, as drawn.
PAGE = """() => ({scrollY: scrollY, width: document.documentElement.scrollWidth,
  header: document.querySelector('.site-header').getBoundingClientRect().height})"""


def measure(page: Page, path: str, figure: str) -> dict[str, Any]:
    """The main picture's cells and the first cells on the page (page coordinates)."""
    page.goto(path)
    opened = page.evaluate("scrollY")  # where the page opens, before we bring a chart near
    # A plotly chart is drawn once it comes near the screen (static/js/figures.js): below a
    # phone's fold it waits to be scrolled to, as a reader would; then back to the top.
    chart = page.locator(f"[data-figure='{figure}']")
    if chart.count():
        chart.first.scroll_into_view_if_needed()
    wait_for_figure(page, figure)
    page.evaluate("(y) => scrollTo(0, y)", opened)
    drawn = cells(page)
    main = next(b for b in drawn if b["id"] == figure)
    first = min(drawn, key=lambda b: b["top"])
    return {**page.evaluate(PAGE), "scrollY": opened, "main": main, "first": first}


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
    for path, box, page in visit(open_page, size, query):
        assert box["width"] <= width, f"{path} is {box['width']} px wide"
        assert box["header"] <= HEADER_MAX_PX, path
        assert box["first"]["top"] <= 2 * height, f"{path}: first heatmap at {box['first']}"
        # Issue 28.6: every control of the header inside the screen, none cut off.
        controls = page.evaluate(HEADER_CONTROLS)
        assert len(controls) >= 5, controls  # brand, menu, presenter, embed, languages
        assert [c for c in controls if c["left"] < 0 or c["right"] > width] == [], path


LONG = "the quick brown fox jumps over the lazy dog and then it runs far away into the dark wood"


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
    drawn = {h["id"]: h for h in heatmaps(page)}
    for figure in figures:
        seen = drawn[figure]
        assert seen["rows"] > 0, figure  # token labels on the axes
        assert seen["cols"] > 0, figure
        assert seen["axis_over"] == 0, f"{figure}: an axis title over its labels"
        assert min(seen["numbers"], default=10) >= 10, f"{figure}: {seen}"
