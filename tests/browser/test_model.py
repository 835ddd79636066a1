"""The trained model's page in a real browser: a sentence, the grid, one head's stages."""

from playwright.sync_api import Page, expect

from app.web.templating import fmt
from tests.browser.conftest import axe_violations, save_screenshot

SENTENCE = "Attention lets each word look at every other word."
DRAWN = 30_000  # ms: plotly draws 10 heatmaps on this page, slowly on a busy machine


def test_a_click_in_the_grid_opens_that_heads_stages(page: Page) -> None:
    page.goto("/model")
    page.fill("#text", SENTENCE)
    page.click("button[type=submit]")
    pieces = page.locator("#pieces li")
    expect(pieces.first).to_have_text("[CLS]")
    expect(pieces.last).to_have_text("[SEP]")
    grid = page.locator('[data-figure="fig-grid"]')
    expect(grid.locator(".hm image")).to_be_visible(timeout=DRAWN)

    # The grid is 6 × 12 blocks of n × n cells, one blank cell between blocks: click the
    # middle of layer 2, head 5.
    n = pieces.count()
    block = n + 1
    plot_area = grid.locator("rect.nsewdrag")
    box = plot_area.bounding_box()
    assert box is not None
    x = (5 * block + n / 2) / (12 * block - 1)
    y = (2 * block + n / 2) / (6 * block - 1)
    plot_area.click(position={"x": x * box["width"], "y": y * box["height"]})
    page.wait_for_url("**/model?*layer=2*head=5*")
    expect(page.locator("#head-title")).to_have_text("Layer 2, head 5, stage by stage")
    expect(page.locator('[data-figure="fig-weights"] .main-svg').first).to_be_visible(timeout=DRAWN)

    api = page.request.post("/api/model", data={"text": SENTENCE, "layer": 2, "head": 5})
    head = api.json()["head"]
    weights_table = page.locator("#fig-weights-table tbody tr")
    expect(weights_table).to_have_count(len(api.json()["tokens"]))
    cells = weights_table.nth(3).locator("td")
    expect(cells).to_have_text([fmt(w) for w in head["weights"][3]])
    q_cells = page.locator("#proj-q-table tbody tr").nth(1).locator("td")
    expect(q_cells).to_have_count(32)
    expect(q_cells).to_have_text([fmt(v) for v in head["q"][1]])
    expect(page.locator("#query-table tbody tr").first.locator("td").nth(3)).to_have_text(
        fmt(head["query"]["rows"][0]["weight"])
    )
    save_screenshot(page, "model")
    assert axe_violations(page) == []


def test_hiding_special_tokens_keeps_the_url(page: Page) -> None:
    page.goto("/model?text=Hello+there&layer=5&head=11")
    page.check("input[name=hide_special]")
    page.click("button[type=submit]")
    page.wait_for_url("**hide_special=on*")
    expect(page.locator("#fig-weights-table thead th")).to_have_text(["row", "hello", "there"])
    expect(page.locator("#pieces li")).to_have_text(["[CLS]", "hello", "there", "[SEP]"])
