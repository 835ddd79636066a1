"""The server's heatmaps in a real browser: hover and keyboard read-outs, the downloads, phone
and presenter sizes, and the figure without JavaScript.

No feature page draws with app/figures/heatmap yet, so the page here is made of the module's own
markup, served at the live server's origin (a route of this test's page, not of the app) with
the app's stylesheets, script (by their plain names, which the server also answers) and
Content-Security-Policy.
"""

import re
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

import pytest
from PIL import Image
from playwright.sync_api import Browser, Page, Route, expect

from app.core.i18n import use_locale
from app.features.stages.page import HeadTexts, dot_hover
from app.features.stages.results import OneHead, StageFields
from app.figures.heatmap import Heatmap, HeatmapGroup, Tips, render, svg_document
from app.web.security import content_security_policy
from app.web.static import PREFIX
from tests.browser.conftest import axe_violations
from tests.heatmap_tips import tip_texts
from tests.web.test_heatmap import SVG, TOKENS, heads, square, weights_map, worked_stages

PATH = "/heatmap-test"


def dots() -> Tips:
    """The hover arithmetic of the worked example's Q·Kᵀ, as the stage strip writes it."""
    stages = worked_stages()
    result = OneHead(
        **StageFields.values_of(stages), tokens=TOKENS, x=stages.q, d_k=2, scale_factor=1.0
    )
    return dot_hover(HeadTexts(result))


def scores_map(selected_row: int = 1) -> Heatmap:
    stages = worked_stages()
    return square(3, id="fig-scores", title="Q·Kᵀ", values=stages.scores, row_labels=TOKENS,
                  col_labels=TOKENS, hover=dots(), selected_row=selected_row)  # fmt: skip


def figures() -> list[Heatmap | HeatmapGroup]:
    return [scores_map(), weights_map(), square(12, id="fig-twelve"), heads(4, 5), square(70)]


def page_html(*, present: bool = False) -> str:
    body = "".join(render(figure, present=present) for figure in figures())
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        "<title>heatmaps</title>"
        f'<link rel="stylesheet" href="{PREFIX}app.css">'
        f'<link rel="stylesheet" href="{PREFIX}heatmap.css"></head>'
        f'<body class="{"present" if present else ""}"><main id="main"><h1>Heatmaps</h1>'
        f'<div class="strip">{body}</div></main>'
        f'<script src="{PREFIX}js/heatmap.js" defer></script></body></html>'
    )


def serve(html: str) -> Callable[[Route], None]:
    headers = {"content-security-policy": content_security_policy("'self'")}
    return lambda route: route.fulfill(body=html, content_type="text/html", headers=headers)


@pytest.fixture
def heatmap_page(open_page: Callable[..., Page], live_server: str) -> Callable[..., Page]:
    def open_at(width: int = 1280, height: int = 800, lang: str = "en", present: bool = False):
        page = open_page(width, height)
        with use_locale(lang):
            html = page_html(present=present)
        page.route(live_server + PATH, serve(html))
        page.goto(PATH)
        return page

    return open_at


def test_tab_reaches_the_figure_and_arrow_keys_read_its_cells(heatmap_page) -> None:
    page = heatmap_page()
    tip = page.locator("#fig-scores .hm-tip")
    expect(tip).to_be_hidden()
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.closest('figure').id") == "fig-scores"
    sentences = tip_texts(render(scores_map()), "fig-scores")
    expect(tip).to_have_text(sentences[1][0])  # the selected query first: "q_cat · k_The = …"
    assert sentences[1][0] == "q_cat · k_The = 0×0.5 + 1×1 = 1.000"
    steps = [
        ("ArrowRight", (1, 1)), ("ArrowDown", (2, 1)), ("End", (2, 2)), ("ArrowRight", (2, 2)),
        ("Home", (2, 0)), ("ArrowUp", (1, 0)), ("ArrowUp", (0, 0)), ("ArrowUp", (0, 0)),
    ]  # fmt: skip
    cursor = page.locator("#fig-scores .hm-cursor")
    for key, (i, j) in steps:
        page.keyboard.press(key)
        expect(tip).to_have_text(sentences[i][j])
        cell = page.locator("#fig-scores .hm-cells > rect").nth(3 * i + j)
        x, y = cell.get_attribute("x"), cell.get_attribute("y")
        assert cursor.get_attribute("transform") == f"translate({x} {y})"
    assert page.evaluate("window.scrollY") == 0  # the arrows moved the cursor, not the page
    expect(page.locator("#fig-scores .hm-mark")).to_have_count(1)  # the query stays outlined
    page.keyboard.press("Tab")  # on to the figure's download buttons
    expect(page.locator("#fig-scores [data-hm-download=svg]")).to_be_focused()
    expect(tip).to_be_hidden()
    assert cursor.get_attribute("visibility") == "hidden"


def test_hover_reads_a_cell_and_still_works_after_a_live_swap(heatmap_page) -> None:
    page = heatmap_page()
    sentences = tip_texts(render(scores_map()), "fig-scores")
    assert sentences[0][1] == "q_The · k_cat = 1×1 + 0.5×0 = 1.000"  # filled in by the script
    tip = page.locator("#fig-scores .hm-tip")
    top_cell = page.locator("#fig-scores .hm-cells > rect").nth(1)
    top_cell.hover()
    expect(tip).to_have_text(sentences[0][1])
    cell = top_cell.bounding_box()
    assert tip.bounding_box()["y"] >= cell["y"] + cell["height"]  # below a cell of the top half
    bottom_cell = page.locator("#fig-scores .hm-cells > rect").nth(8)
    bottom_cell.hover()
    expect(tip).to_have_text(sentences[2][2])
    box = tip.bounding_box()
    assert box["y"] + box["height"] <= bottom_cell.bounding_box()["y"]  # above one lower down
    page.mouse.move(1, 1)
    expect(tip).to_be_hidden()
    # A live update swaps the figure for the server's new markup: nothing to set up again.
    swapped = str(render(scores_map(selected_row=2)))
    page.evaluate("html => { document.getElementById('fig-scores').outerHTML = html; }", swapped)
    page.locator("#fig-scores .hm-cells > rect").nth(4).hover()
    expect(page.locator("#fig-scores .hm-tip")).to_have_text(sentences[1][1])
    page.locator("#fig-scores svg").focus()  # the keyboard goes on from the pointer's cell
    expect(page.locator("#fig-scores .hm-tip")).to_have_text(sentences[1][1])
    page.keyboard.press("ArrowDown")
    expect(page.locator("#fig-scores .hm-tip")).to_have_text(sentences[2][1])
    assert axe_violations(page) == []


def test_downloads_are_the_standalone_svg_and_a_png_named_after_the_title(heatmap_page) -> None:
    page = heatmap_page()
    figure = weights_map()
    with page.expect_download() as svg_download:
        page.click("#fig-weights [data-hm-download=svg]")
    assert svg_download.value.suggested_filename == "softmax_weights.svg"
    saved = ET.fromstring(Path(svg_download.value.path()).read_text())
    expected = ET.fromstring(svg_document(figure))
    assert saved.tag == f"{SVG}svg"
    for name in ("viewBox", "width", "height", "font-family", "color"):
        assert saved.get(name) == expected.get(name)
    assert [(e.tag, e.get("fill"), e.text) for e in saved.iter() if e.get("class") != "hm-cursor"] \
        == [(e.tag, e.get("fill"), e.text) for e in expected.iter()]  # fmt: skip

    with page.expect_download() as png_download:
        page.click("#fig-weights [data-hm-download=png]")
    assert png_download.value.suggested_filename == "softmax_weights.png"
    image = Image.open(png_download.value.path()).convert("RGB")
    left, top, width, height = map(float, expected.get("viewBox").split())
    assert image.size == (round(width * 2), round(height * 2))
    colours = figure.rgb
    # the cells are unit squares in a group scaled to the cell size: (j, i) → its pixels
    grid = next(g for g in saved.iter(f"{SVG}g") if g.find(f"{SVG}g[@class='hm-cells']"))
    at_x, at_y, size = map(float, re.findall(r"[\d.]+", grid.get("transform")))
    for k, rect in enumerate(grid.find(f"{SVG}g[@class='hm-cells']")):
        x = (at_x + float(rect.get("x")) * size + 4 - left) * 2  # in the cell, clear of its number
        y = (at_y + float(rect.get("y")) * size + 4 - top) * 2
        pixel = image.getpixel((round(x), round(y)))
        assert max(abs(a - b) for a, b in zip(pixel, colours[k // 3, k % 3], strict=True)) <= 2

    with page.expect_download() as group_download:
        page.click("#heads [data-hm-download=svg]")
    group = ET.fromstring(Path(group_download.value.path()).read_text())
    assert group_download.value.suggested_filename == "every_head.svg"
    assert len([s for s in group if s.tag == f"{SVG}svg"]) == 5  # four panels and the legend
    assert group.get("viewBox") == ET.fromstring(svg_document(heads(4, 5))).get("viewBox")


# Every text a figure draws (not those of its parts set to display: none) and its size on
# screen: its font-size in the SVG's units times the SVG's scale.
RENDERED_TEXT = """
figure => Array.from(figure.querySelectorAll('svg text'))
  .filter(t => t.getClientRects().length > 0)
  .map(t => {
    const svg = t.ownerSVGElement;
    const scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
    const size = t.closest('[font-size]').getAttribute('font-size');
    return { text: t.textContent, px: parseFloat(size) * scale,
      number: t.closest('.hm-nums') !== null };
  })
"""


def test_a_phone_never_shows_cell_numbers_below_10_px(heatmap_page) -> None:
    page = heatmap_page(390, 844)
    seen = {
        figure: page.locator(f"#{figure}").evaluate(RENDERED_TEXT)
        for figure in ("fig-scores", "fig-weights", "fig-twelve")
    }
    numbers = {figure: [t for t in texts if t["number"]] for figure, texts in seen.items()}
    assert len(numbers["fig-weights"]) == len(numbers["fig-scores"]) == 9  # 3 × 3 fits a phone
    assert numbers["fig-twelve"] == []  # 12 × 12 would draw them at 7 px: left to hover
    assert min(t["px"] for texts in numbers.values() for t in texts) >= 10
    assert page.evaluate("document.documentElement.scrollWidth") <= 390


def test_presenter_mode_draws_no_figure_text_below_16_px(heatmap_page) -> None:
    page = heatmap_page(1280, 720, lang="es", present=True)
    for figure in ("fig-scores", "fig-weights", "fig-twelve", "heads", "s70"):
        texts = page.locator(f"#{figure}").evaluate(RENDERED_TEXT)
        assert texts, figure
        assert min(t["px"] for t in texts) >= 16 - 0.01, figure  # 0.01: layout rounding
        html = page.locator(f"#{figure} :is(figcaption, button)").evaluate_all(
            "els => els.map(e => parseFloat(getComputedStyle(e).fontSize))"
        )
        assert min(html) >= 16, figure
    numbers = page.locator("#fig-weights .hm-nums text").all_text_contents()
    assert numbers[3] == "0,670"  # Spanish decimal commas in presenter mode too


def test_without_javascript_every_heatmap_and_legend_is_there(browser: Browser, live_server):
    context = browser.new_context(java_script_enabled=False, base_url=live_server)
    try:
        page = context.new_page()
        page.route(live_server + PATH, serve(page_html()))
        page.goto(PATH)
        for figure in ("fig-scores", "fig-weights", "fig-twelve", "s70"):
            expect(page.locator(f"#{figure} .hm-svg")).to_be_visible()
            expect(page.locator(f"#{figure} .hm-bar")).to_be_visible()
            expect(page.locator(f"#{figure} .hm-tools")).to_be_hidden()  # they need the script
        expect(page.locator("#fig-weights .hm-nums text").nth(3)).to_have_text("0.670")
        expect(page.locator("#s70 .hm-image")).to_be_visible()
        expect(page.locator("#heads .hm-panel")).to_have_count(4)
        expect(page.locator("#heads .hm-legend-svg")).to_be_visible()
    finally:
        context.close()


@pytest.mark.parametrize(
    ("lang", "weight", "masked", "output"),
    [
        (
            "en",
            "cat → The: e^0.707 / (e^0.707 + e^0.000) = 0.670",
            "cat → sleeps: 0.707 + (−∞) = −∞ (hidden by the mask)",
            "out_cat[0] = 0.67×1 + 0.33×0.5 + 0×1.5 = 0.835",
        ),
        (
            "es",
            "cat → The: e^0,707 / (e^0,707 + e^0,000) = 0,670",
            "cat → sleeps: 0,707 + (−∞) = −∞ (oculta por la máscara)",
            "out_cat[0] = 0,67×1 + 0,33×0,5 + 0×1,5 = 0,835",
        ),
    ],
)
def test_the_labs_hover_reads_the_worked_examples_arithmetic(
    page: Page, lang: str, weight: str, masked: str, output: str
) -> None:
    """The lab on "The cat sleeps": the script fills each cell's sentence from the figure's
    templates and operands, in the page's language, on hover and on keyboard focus."""
    page.goto(f"/?lang={lang}")
    for figure, (i, j), expected in (
        ("fig-weights", (1, 0), weight),
        ("fig-masked", (1, 2), masked),
        ("fig-output", (1, 0), output),
    ):
        cols = page.locator(f"#{figure} .hm-cols text").count()
        cell = page.locator(f"#{figure} .hm-cells > rect").nth(i * cols + j)
        cell.scroll_into_view_if_needed()
        cell.hover()
        expect(page.locator(f"#{figure} .hm-tip")).to_have_text(expected)
    page.locator("#fig-weights svg").focus()  # the keyboard starts on the selected query
    page.keyboard.press("Home")
    expect(page.locator("#fig-weights .hm-tip")).to_have_text(weight)
