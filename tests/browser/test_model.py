"""The trained model's page in a real browser: a sentence, the grid, one head's stages. Every
picture is drawn by the server and arrives with the page (app/figures/heatmap)."""

import re

from playwright.sync_api import Page, expect

from app.web.templating import fmt
from tests.browser.conftest import axe_violations, save_screenshot

SENTENCE = "Attention lets each word look at every other word."
RUN = 30_000  # ms: the model runs on a busy machine (a 256-piece sentence takes seconds)


def test_a_click_in_the_grid_opens_that_heads_stages(page: Page) -> None:
    page.goto("/model")
    field = page.locator("#text")
    field.fill("")
    field.press_sequentially(SENTENCE, delay=5)
    field.press("Enter")  # applies the sentence, nothing else
    page.wait_for_url("**/model?text=Attention*")
    expect(field).to_be_focused()
    expect(field).to_have_value(SENTENCE)
    pieces = page.locator("#pieces li")
    expect(pieces.first).to_have_text("[CLS]")
    expect(pieces.last).to_have_text("[SEP]")
    # The grid: one panel per head, each titled with its name and linked to its head.
    panels = page.locator("#fig-grid .hm-panel")
    expect(panels).to_have_count(72)
    expect(page.locator("#grid-2-5-title")).to_contain_text("layer 2 · head 5")

    page.locator("#grid-2-5 .hm-plot").click()  # anywhere on the panel, not only its title
    page.wait_for_url("**/model?*layer=2&head=5*")
    expect(page.locator("#head-title")).to_have_text("Layer 2 · head 5, stage by stage")
    expect(page.locator("#head-title")).to_be_in_viewport()
    expect(page.locator("#grid-2-5")).to_have_class(re.compile(r"\bhm-chosen-panel\b"))
    origin = page.evaluate("window.location.origin")  # the server gave a path, the page its address
    expect(page.locator("pre code")).to_contain_text(f"curl -s -X POST {origin}/api/model -H")
    expect(page.locator("figure.hm#fig-weights .hm-cells")).to_be_visible()

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
    page.check("input[name=hide_special]")  # a box applies at once
    page.wait_for_url("**hide_special=on*")
    expect(page.locator("#fig-weights-table thead th")).to_have_text(["row", "hello", "there"])
    expect(page.locator("#pieces li")).to_have_text(["[CLS]", "hello", "there", "[SEP]"])
    # The two charts, drawn by plotly.js once near the screen, after the swap: a line per
    # measure (legend in HTML, no plotly toolbar) and a bar per piece of the share table.
    layers = page.locator("#fig-by-layer-chart")
    layers.scroll_into_view_if_needed()
    expect(layers.locator(".main-svg").first).to_be_visible(timeout=RUN)
    expect(layers.locator(".chart-legend li")).to_have_text(["[CLS]", "[SEP]", "punctuation"])
    expect(layers.locator(".scatterlayer .trace")).to_have_count(6)  # dots and means, 3 each
    shares = page.locator("#fig-share-chart")
    shares.scroll_into_view_if_needed()
    expect(shares.locator(".main-svg").first).to_be_visible(timeout=RUN)
    expect(shares.locator(".bars .point")).to_have_count(
        page.locator("#share-table tbody tr").count()
    )
    expect(page.locator(".modebar")).to_have_count(0)


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
    expect(previous).to_contain_text("1 head: layer 0 · head 2")
    expect(page.locator('#role-table td[data-head="0.2"] .badge')).to_have_text(
        ["previous token 1.00"]
    )
    # the labels are in the grid's panel titles too
    expect(page.locator("#grid-0-2-title")).to_have_text("layer 0 · head 2 · previous token")

    page.select_option("#role", "next")  # a choice applies at once
    page.wait_for_url("**role=next*")
    shown = page.locator("#role-table td.role-card:not(.filtered-out)")
    expect(shown).to_have_count(1)
    expect(shown.locator("button")).to_have_text("layer 1 · head 8")
    expect(shown.locator(".badge")).to_contain_text(["next token"])
    expect(page.locator("#fig-grid .hm-panel")).to_have_count(1)  # the grid keeps it alone
    expect(page.locator("#grid-1-8-title")).to_contain_text("next token")
    assert axe_violations(page) == []


def test_the_line_view_by_keyboard_and_pointer(page: Page) -> None:
    page.goto(f"/model?text={CAT.replace(' ', '+')}&layer=0&head=2")
    svg = page.locator("#lineview")
    queries = svg.locator(".lv-q")
    expect(queries).to_have_count(12)
    # Tab from the heads-drawn button reaches the first query, as a keyboard user does
    page.locator("#draw-lines").focus()
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
        "query 2: cat — cat → the: 1.00 (layer 0 · head 2)"
    )
    page.keyboard.press("ArrowRight")  # across to key 2
    expect(svg.locator(".lv-k").nth(2)).to_be_focused()
    expect(kept).to_have_count(svg.locator('.lv-line[data-k="2"]').count())
    page.keyboard.press("Escape")
    expect(svg).to_have_class("lineview")
    svg.locator(".lv-k").nth(5).hover()  # the pointer isolates too
    expect(kept).to_have_count(svg.locator('.lv-line[data-k="5"]').count())

    # Any set of heads: tick two (the keyboard's Space, then the pointer); the page redraws
    page.locator("#lines-0-2").focus()
    page.keyboard.press("Space")  # a box applies at once
    page.wait_for_url("**lines=0.2*")
    page.check("#lines-4-7")
    page.wait_for_url("**lines=0.2&lines=4.7*")
    legend = page.locator(".head-legend li")
    expect(legend).to_have_text(["layer 0 · head 2", "layer 4 · head 7"])
    colours = {line.get_attribute("stroke") for line in svg.locator(".lv-line").all()}
    assert len(colours) == 2
    expect(page.locator("#lineview-table thead th")).to_have_count(3)
    # the redrawn view isolates at once: query 2's lines in both heads, in both colours
    queries.nth(2).hover()
    expect(kept).to_have_count(svg.locator('.lv-line[data-q="2"]').count())
    assert {line.get_attribute("stroke") for line in kept.all()} == colours
    save_screenshot(page, "model-lines")


def test_switching_heads_off(page: Page) -> None:
    page.goto(f"/model?text={CAT.replace(' ', '+')}")
    page.check("#off-0-2")  # a box applies at once
    page.wait_for_url("**off=0.2*")
    page.check("#off-3-5")
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
    assert first["change"] == min(r["change"] for r in api.json()["ranking"])  # largest drop
    rows = page.locator("#ranking-table tbody tr")
    expect(rows).to_have_count(10)
    expect(rows.first.locator("th")).to_have_text(f"layer {first['layer']} · head {first['head']}")
    expect(rows.first.locator("td").nth(1)).to_have_text(fmt(first["similarity"], 4))
    expect(page.locator("#ranking-summary")).not_to_be_empty()
    assert axe_violations(page) == []


def test_256_word_pieces_stay_readable(page: Page) -> None:
    text = " ".join(["a"] * 100 + ["b"] * 100 + ["c"] * 54)  # 254 + [CLS], [SEP]
    page.goto("/model")
    page.fill("#text", text)
    page.locator("#text").press("Enter")
    expect(page.locator("#pieces li")).to_have_count(256, timeout=RUN)
    expect(page.locator(".window-nav")).to_contain_text("Pieces 0 to 39 of 256 are drawn.")
    # each panel pools 256 pieces into blocks: a picture (PNG), its blocks labelled
    grid = page.locator("#fig-grid")
    expect(grid.locator(".hm-panel")).to_have_count(72)
    expect(grid.locator("#grid-0-0 .hm-image")).to_be_attached()
    expect(grid.locator("#grid-0-0 .hm-rows text").first).to_have_text(re.compile(r"^0–\d+$"))
    page.click("#lines-later")
    page.wait_for_url("**start=40*")
    expect(page.locator(".window-nav")).to_contain_text("Pieces 40 to 79 of 256 are drawn.")
    expect(page.locator("#lineview .lv-q")).to_have_count(40)
    page.locator("#lineview .lv-q").first.focus()
    page.keyboard.press("End")
    expect(page.locator("#lineview .lv-q").last).to_be_focused()
    expect(page.locator("#lineview-status")).to_contain_text("query 79: a")
