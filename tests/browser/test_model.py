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


# ---------------------------------------------------------------- reading the heads

CAT = "The cat sat on the mat because it was tired"


def type_sentence(page: Page, selector: str, text: str) -> None:
    """Clear a field and type into it key by key, as a person does."""
    field = page.locator(selector)
    field.fill("")
    field.press_sequentially(text, delay=5)


def test_role_badges_and_the_filter(page: Page) -> None:
    page.goto("/model")
    type_sentence(page, "#text", CAT)
    page.locator("#text").press("Enter")
    page.wait_for_url("**/model?*text=The+cat*")
    previous = page.locator('#role-summary li[data-role="previous"]')
    expect(previous).to_contain_text("1 head: layer 0 head 2")
    expect(page.locator('#role-table td[data-head="0.2"] .badge')).to_have_text(
        ["previous token 1.00"]
    )
    # the badges are written on the grid too, once plotly has drawn it
    grid = page.locator('[data-figure="fig-grid"]')
    expect(grid.locator(".annotation-text", has_text="prev")).to_have_count(1, timeout=DRAWN)

    page.select_option("#role", "next")  # runs the form at once
    page.wait_for_url("**role=next*")
    shown = page.locator("#role-table td.role-card:not(.filtered-out)")
    expect(shown).to_have_count(1)
    expect(shown.locator("a")).to_have_text("1.8")
    expect(shown.locator(".badge")).to_contain_text(["next token"])
    assert axe_violations(page) == []


def test_the_line_view_by_keyboard_and_pointer(page: Page) -> None:
    page.goto(f"/model?text={CAT.replace(' ', '+')}&layer=0&head=2")
    svg = page.locator("#lineview")
    queries = svg.locator(".lv-q")
    expect(queries).to_have_count(12)
    # Tab from the heads-drawn button reaches the first query, as a keyboard user does
    page.locator("#lines + button").focus()
    page.keyboard.press("Tab")
    expect(queries.first).to_be_focused()
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")  # query 2: "cat"
    expect(queries.nth(2)).to_be_focused()
    expect(svg).to_have_class("lineview lv-isolating")
    kept = svg.locator(".lv-line.lv-on")
    expect(kept).to_have_count(svg.locator('.lv-line[data-q="2"]').count())
    expect(kept.first).to_be_visible()
    expect(svg.locator('.lv-line[data-q="3"]').first).to_be_hidden()
    expect(page.locator("#lineview-status")).to_have_text(
        "query 2: cat — cat → the: 1.00 (layer 0 head 2)"
    )
    page.keyboard.press("ArrowRight")  # across to key 2
    expect(svg.locator(".lv-k").nth(2)).to_be_focused()
    expect(kept).to_have_count(svg.locator('.lv-line[data-k="2"]').count())
    page.keyboard.press("Escape")
    expect(svg).to_have_class("lineview")
    svg.locator(".lv-k").nth(5).hover()  # the pointer isolates too
    expect(kept).to_have_count(svg.locator('.lv-line[data-k="5"]').count())
    page.select_option("#lines", "layer")
    page.wait_for_url("**lines=layer*")
    expect(page.locator(".head-legend li")).to_have_count(12)
    save_screenshot(page, "model-lines")


def test_switching_heads_off(page: Page) -> None:
    page.goto(f"/model?text={CAT.replace(' ', '+')}")
    page.check("#off-0-2")
    page.check("#off-3-5")
    page.click("#run-ablation")
    page.wait_for_url("**off=0.2*off=3.5*")
    api = page.request.post("/api/model", data={"text": CAT, "ablate": [[0, 2], [3, 5]]})
    cosine = api.json()["unablated_cosine"]
    expect(page.locator("#ablation-result")).to_contain_text(
        f"With 2 heads switched off, the sentence embedding's cosine to the embedding with "
        f"every head on is {fmt(cosine, 4)}."
    )
    expect(page.locator('#role-table td[data-head="0.2"] .badge-off')).to_have_text("off")
    expect(page.locator("#off-0-2")).to_be_checked()
    page.click("#all-on")
    page.wait_for_url(lambda url: "off=" not in url)
    expect(page.locator("#ablation-result")).to_have_count(0)


def test_two_sentences_and_the_heads_their_similarity_needs(page: Page) -> None:
    page.goto("/model")
    type_sentence(page, "#text", "The weather is lovely today.")
    type_sentence(page, "#compare", "It's so sunny outside!")
    page.locator("#compare").press("Enter")
    page.wait_for_url("**compare=It*")
    expect(page.locator("#similarity-result")).to_contain_text("similarity 0.6660")
    api = page.request.post(
        "/api/model",
        data={"text": "The weather is lovely today.", "compare_text": "It's so sunny outside!",
              "rank_heads": True},
    )  # fmt: skip
    first = api.json()["ranking"][0]
    rows = page.locator("#ranking-table tbody tr")
    expect(rows).to_have_count(10)
    expect(rows.first.locator("th")).to_have_text(f"layer {first['layer']} head {first['head']}")
    expect(rows.first.locator("td").nth(1)).to_have_text(fmt(first["similarity"], 4))
    assert axe_violations(page) == []


def test_256_word_pieces_stay_readable(page: Page) -> None:
    text = " ".join(["a"] * 100 + ["b"] * 100 + ["c"] * 54)  # 254 + [CLS], [SEP]
    page.goto("/model")
    page.fill("#text", text)
    page.click("button[type=submit]")
    expect(page.locator("#pieces li")).to_have_count(256, timeout=DRAWN)
    expect(page.locator(".window-nav")).to_contain_text("Pieces 0 to 39 of 256 are drawn.")
    grid = page.locator('[data-figure="fig-grid"]')
    grid.scroll_into_view_if_needed()
    expect(grid.locator(".hm image")).to_be_visible(timeout=DRAWN)
    page.click("#lines-later")
    page.wait_for_url("**start=40*")  # and for the page's scripts (the load event)
    expect(page.locator(".window-nav")).to_contain_text("Pieces 40 to 79 of 256 are drawn.")
    expect(page.locator("#lineview .lv-q")).to_have_count(40)
    page.locator("#lineview .lv-q").first.focus()
    page.keyboard.press("End")
    expect(page.locator("#lineview .lv-q").last).to_be_focused()
    expect(page.locator("#lineview-status")).to_contain_text("query 79: a")
