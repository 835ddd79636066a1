"""What a class sees on the projector's first screen (1280×720, presenter mode), and what a
laptop and a phone see of the same: a head of the trained model opened from the grid shows
its sentence, its weights and the query's numbers key by key together; the lab's four stage
heatmaps at n = 16 fit their boxes with no text under 16 px. Screenshots go to
artifacts/presenter-<what>-<viewport>.png (made by the test run, not committed)."""

from collections.abc import Callable
from typing import Any

import pytest
from playwright.sync_api import Page

from tests.browser.conftest import save_screenshot
from tests.browser.figures import heatmaps

# Boxes in the viewport's coordinates, after the page scrolled to the head.
SEEN = """() => {
  const box = (sel) => { const e = document.querySelector(sel);
    if (!e) return null; const b = e.getBoundingClientRect();
    return {top: b.top, bottom: b.bottom, left: b.left, right: b.right}; };
  const weights = [...document.querySelectorAll('#query-table tbody tr')]
    .map((tr) => [tr.querySelector('th').textContent.trim(),
                  parseFloat(tr.querySelectorAll('td')[3].textContent.replace(',', '.'))]);
  const plot = document.querySelector('#fig-weights .hm-plot');
  return {title: box('#head-title'), sentence: box('#head-summary'),
          cells: box('#fig-weights :is(.hm-cells, .hm-image)'),
          weight_column: box('#query-table thead th:nth-child(5)'),
          weight_sum: box('#query-table tfoot td:nth-of-type(2)'),
          summary: document.querySelector('#head-summary').textContent,
          weights, inner_scroll: plot.scrollWidth - plot.clientWidth,
          page_width: document.documentElement.scrollWidth};
}"""


def inside(box: dict[str, float], width: int, height: int) -> bool:
    """Within the viewport, to a pixel (a box is laid out in fractions of one)."""
    across = box["left"] >= -1 and box["right"] <= width + 1
    return across and box["top"] >= -1 and box["bottom"] <= height + 1


def open_head(page: Page, path: str, head: int) -> dict[str, Any]:
    """Opens `path`, then a head of layer 0 by a click on its map in the grid, as a teacher
    would; what the screen shows once the page has brought that head into view."""
    page.goto(path)
    page.locator("#fig-grid .hm-panel .hm-plot").nth(head).click()
    page.locator("#head-title", has_text=f" {head},").wait_for()
    assert f"head={head}" in page.url
    return page.evaluate(SEEN)


@pytest.mark.parametrize(
    ("size", "query"),
    [
        ((1280, 720), "?present=1"),
        ((1280, 720), "?present=1&lang=es"),
        ((1280, 800), ""),
        ((390, 844), "?lang=es"),
    ],
)
def test_a_head_of_the_model_opens_on_its_sentence_weights_and_numbers(
    open_page: Callable[..., Page], size: tuple[int, int], query: str
) -> None:
    width, height = size
    page = open_page(width, height)
    seen = open_head(page, "/model" + query, 2)
    name = f"presenter-model-head-{width}x{height}{'-present' if 'present' in query else ''}"
    save_screenshot(page, name + ("-es" if "lang=es" in query else ""))
    assert seen["page_width"] <= width, seen
    assert seen["inner_scroll"] <= 1, "the weights scroll inside their box"
    # The sentence names the key the table gives the largest weight (its numbers as shown).
    top_key = max(seen["weights"], key=lambda kw: kw[1])[0]
    assert f"{top_key}" in seen["summary"], (seen["summary"], seen["weights"])
    assert inside(seen["title"], width, height), seen["title"]
    assert inside(seen["cells"], width, height), f"the weights: {seen['cells']}"
    if "present" in query:
        # One screen: the sentence, the weights, and the table's weight column to its Σ.
        assert inside(seen["sentence"], width, height), seen["sentence"]
        assert inside(seen["weight_column"], width, height), seen["weight_column"]
        assert inside(seen["weight_sum"], width, height), seen["weight_sum"]
        smallest = next(h["smallest"] for h in heatmaps(page) if h["id"] == "fig-weights")
        assert smallest >= 16, f"text of {smallest} px on the weights"
    else:
        # A laptop or a phone: the sentence and the table follow within one more screen.
        assert seen["sentence"]["bottom"] <= 2 * height, seen["sentence"]
        assert seen["weight_sum"]["top"] <= 3 * height, seen["weight_sum"]


SIXTEEN = (
    "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
    "sixteen"
)
STAGES = ("fig-scores", "fig-scaled", "fig-masked", "fig-weights")
BOXES = """(ids) => ids.map((id) => { const f = document.getElementById(id);
  const plot = f.querySelector('.hm-plot'), b = f.getBoundingClientRect();
  const cells = f.querySelector(':is(.hm-cells, .hm-image)').getBoundingClientRect();
  return {id, scroll: plot.scrollWidth - plot.clientWidth, right: b.right,
          cells_bottom: cells.bottom}; })"""


@pytest.mark.parametrize("lang", ["en", "es"])
def test_the_labs_four_stages_fit_a_projector_at_16_tokens_and_3(
    open_page: Callable[..., Page], lang: str
) -> None:
    page = open_page(1280, 720)
    for tokens, numbers in ((SIXTEEN, False), ("The cat sleeps", True)):
        page.goto(f"/?present=1&lang={lang}&tokens={tokens.replace(' ', '+')}")
        n = len(tokens.split())
        save_screenshot(page, f"presenter-lab-{n}-tokens-1280x720-{lang}")
        for box in page.evaluate(BOXES, list(STAGES)):
            assert box["scroll"] <= 1, f"{box['id']} scrolls {box['scroll']} px in its box"
            assert box["right"] <= 1280, box
            assert box["cells_bottom"] <= 720, box
        drawn = {h["id"]: h for h in heatmaps(page) if h["id"] in STAGES}
        for figure, seen in drawn.items():
            assert seen["smallest"] >= 16, f"{n} tokens, {figure}: {seen['smallest']} px"
            assert seen["rows"] >= 2, (figure, seen)
            assert seen["overlaps"] == 0, (figure, seen)
            # the worked example keeps a number in every cell; 16 tokens have no room for them
            assert len(seen["numbers"]) == (n * n if numbers else 0), (figure, seen["numbers"])
