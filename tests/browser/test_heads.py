"""/heads in a real browser: every head drawn by the server with the API's weights, a head
opened by a click, Enter or a link, typing key by key, the √d_k panel, phones, presenter mode,
Spanish and axe."""

import re
from collections.abc import Callable
from itertools import pairwise
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pytest
from playwright.sync_api import Browser, Page, expect

from app.features.heads.form import HeadsForm
from app.figures.heatmap import HIDDEN_COLOUR, weights_scale
from app.math.scaling import saturation
from app.web.classroom import url
from tests.browser.conftest import axe_violations, save_screenshot
from tests.browser.figures import heatmaps
from tests.browser.test_lab import edit
from tests.browser.test_teacher import heads_match_the_api, settled, type_like_a_teacher

GQA = "/heads?heads=8&kv_heads=2&mask=causal"  # the grouped-query link of the lessons

# Every panel of the figure of every head: its id, title (and the head its link opens), its
# cells' colours and hover texts (each cell's template filled from the panel's tip data, as
# static/js/heatmap.js fills it), whether it is outlined, and its title's box on screen.
PANELS = """() => {
const tipTexts = (data) => data.v.map((v, k) => {
  const i = Math.floor(k / data.c.length), j = k % data.c.length;
  return data.t[data.k ? +data.k[k] : 0].replace(/\\{(v|[rc]\\d*|x\\d+)\\}/g, (_, name) =>
    name === 'v' ? v : name[0] === 'r' ? data.r[i][+name.slice(1)]
      : name[0] === 'c' ? data.c[j][+name.slice(1)] : data.x[+name.slice(1)][k]);
});
return [...document.querySelectorAll('#fig-heads .hm-panel')].map((p) => {
  const link = p.querySelector('.hm-title a');
  const box = p.querySelector('.hm-title').getBoundingClientRect();
  return {id: p.id, title: link.textContent,
          head: new URL(link.href).searchParams.get('head'),
          section: p.closest('.hm-section').querySelector('.hm-section-title').textContent,
          fills: [...p.querySelectorAll('.hm-cells rect')].map((r) => r.getAttribute('fill')),
          tips: tipTexts(JSON.parse(p.querySelector('script.hm-data').textContent)),
          outlined: Boolean(p.querySelector('.hm-chosen')),
          left: Math.round(p.getBoundingClientRect().left),
          title_box: {left: box.left, right: box.right, top: box.top, bottom: box.bottom}};
});
}"""


# The sections' headings in the order of the document: id, text and where each is on the
# page (the chosen head's weights, beside every head in presenter mode, are part of the first).
SECTIONS = """() => [...document.querySelectorAll('#heads-results section > h2')]
  .filter((h) => h.id !== 'chosen-weights-heading')
  .map((h) => ({id: h.id, text: h.textContent, top: h.getBoundingClientRect().top + scrollY}))"""


def numbered_in_reading_order(page: Page) -> None:
    """Sections 1 to 5 run down the page in order (the shared shuffle demo, unnumbered, last)."""
    sections = page.evaluate(SECTIONS)
    assert [s["text"].split(". ", 1)[0] for s in sections[:5]] == ["1", "2", "3", "4", "5"]
    assert sections[4]["id"] == "why-sqrt-dk-heading"
    assert [s["id"] for s in sections[5:]] == ["position-heading"]
    tops = [s["top"] for s in sections]
    assert all(a < b for a, b in pairwise(tops)), sections


def cells(page: Page, table: str) -> list[list[str]]:
    return page.locator(f"#{table} tbody tr").evaluate_all(
        "rows => rows.map(r => [...r.querySelectorAll('td')].map(td => td.textContent.trim()))"
    )


def printed(values: list[list[float]], digits: int = 3, point: str = ".") -> list[list[str]]:
    """Numbers as the pages print them; `point` is "," in Spanish."""

    def one(v: float) -> str:
        text = f"{v:.{digits}f}".replace(".", point)
        return (
            text[1:] if text.startswith("-") and not text.strip("-0.,") else text.replace("-", "−")
        )

    return [[one(v) for v in row] for row in values]


def state(page: Page) -> dict[str, str]:
    return dict(parse_qsl(urlsplit(page.url).query))


def full_state(page: Page) -> dict[str, str]:
    """The state in the address bar, with the form's defaults where it says none."""
    return {k: str(v) for k, v in HeadsForm().state()} | state(page)


def api_for(page: Page) -> dict[str, Any]:
    """/api/heads for the state in the address bar."""
    q = full_state(page)
    body = {
        "tokens": q["text"].split(), "d_model": int(q["d_model"]), "heads": int(q["heads"]),
        "kv_heads": int(q["kv_heads"]), "d_head": int(q["d_head"]), "seed": int(q["seed"]),
        "mask": {"causal": q["mask"] == "causal"}, "positional": q["positional"],
        "scale": q["scale"] == "on",
    }  # fmt: skip
    return page.request.post("/api/heads", data=body).json()


def every_head_is_the_apis(page: Page) -> list[dict[str, Any]]:
    """Each panel's cells are its head's weights (colour and hover text), its section is
    its key/value head, the chosen head alone is outlined; returns the panels."""
    api = api_for(page)
    panels = page.evaluate(PANELS)
    scale = weights_scale()
    chosen = int(full_state(page)["head"])
    assert [p["id"] for p in panels] == [f"heads-{i}" for i in range(len(api["heads"]))]
    for i, (panel, head) in enumerate(zip(panels, api["heads"], strict=True)):
        weights = [w for row in head["weights"] for w in row]
        seen = [a for row in head["allowed"] for a in row]
        assert panel["fills"] == [
            scale.colour(w) if a else HIDDEN_COLOUR for w, a in zip(weights, seen, strict=True)
        ], panel["id"]
        shown = [t.rsplit(": ", 1)[1] for t in panel["tips"]]
        point = "," if state(page).get("lang") == "es" else "."
        numbers = [p for row in printed(head["weights"], point=point) for p in row]
        expected = [n if a else "0" for n, a in zip(numbers, seen, strict=True)]  # hidden: 0
        assert shown == expected, panel["id"]
        assert panel["head"] == str(i)
        assert panel["section"].endswith(str(head["kv_head"]))
        assert panel["outlined"] is (i == chosen)
    return panels


def test_heads_page_shows_the_api_numbers_and_is_accessible(page: Page) -> None:
    """One axe audit covers every part of the page: groups, stages, W_O, shuffle, √d_k."""
    page.goto("/heads?text=the+cat+sat+on+the+mat&heads=4&kv_heads=2&d_head=2&positional=rope")
    expect(page.locator("#fig-heads .hm-section")).to_have_count(2)
    expect(page.locator("#fig-heads .hm-panel")).to_have_count(4)
    every_head_is_the_apis(page)
    body = api_for(page)
    assert cells(page, "output-table") == printed(body["output"])
    assert cells(page, "head-weights-table") == printed(body["heads"][0]["weights"])
    assert cells(page, "heads-3-table") == printed(body["heads"][3]["weights"])
    expect(page.locator("#kv-this")).to_have_text(str(body["kv_cache_bytes_per_token"]["this"]))
    expect(page.locator("#kv-mha")).to_have_text(
        str(body["kv_cache_bytes_per_token"]["multi_head"])
    )
    # Every heatmap of the page is the server's: no plotly heatmap is left.
    expect(page.locator("#fig-concat .hm-cells, #fig-w-o .hm-cells")).to_have_count(2)
    expect(page.locator(".js-plotly-plot .heatmaplayer")).to_have_count(0)
    save_screenshot(page, "heads")
    assert axe_violations(page) == []


def test_a_head_opens_by_a_click_by_enter_and_by_its_link(page: Page) -> None:
    page.goto(GQA)
    # A click on a head's picture.
    edit(page, lambda: page.locator("#heads-5 .hm-cells rect").nth(7).click())
    assert state(page)["head"] == "5"
    expect(page.locator("#selected-head")).to_contain_text("Head 5")
    # The chosen head's own cells only read out (a click there changes nothing).
    page.locator("#heads-5 .hm-cells rect").nth(7).click()
    expect(page.locator("#heads-5 .hm-tip")).to_contain_text("→")
    assert state(page)["head"] == "5"
    # Enter on a focused panel (Tab reaches it; its arrows move between cells).
    page.locator("#heads-2 .hm-svg").focus()
    page.keyboard.press("ArrowRight")
    edit(page, lambda: page.keyboard.press("Enter"))
    assert state(page)["head"] == "2"
    # Its title is a link.
    edit(page, lambda: page.locator("#heads-6 .hm-title a").click())
    assert state(page)["head"] == "6"
    panels = every_head_is_the_apis(page)
    assert [p["outlined"] for p in panels] == [i == 6 for i in range(8)]
    expect(page.locator("#selected-head")).to_contain_text("Head 6")
    expect(page.locator("#chosen-sentence")).to_have_text(
        "Head 6 shares key/value head 1 with heads 4, 5 and 7: the same keys and values, its "
        "own queries, so its own weights."
    )
    assert cells(page, "head-weights-table") == printed(api_for(page)["heads"][6]["weights"])


@pytest.mark.parametrize(
    ("selector", "text", "replace"),
    [("#text", " purrs", False), ("#d_model", "12", True), ("#seed", "7", True),
     ("#d_head", "2", True), ("#heads", "4", True)],
)  # fmt: skip
def test_typing_then_enter_changes_the_edited_value_only(
    page: Page, selector: str, text: str, replace: bool
) -> None:
    """Key by key, then Enter: the field keeps focus and what was typed, and the state
    changes in that field only (a preset would change g; the chosen head stays)."""
    start = HeadsForm(heads=8, kv_heads=4, head=3)  # any preset would change g
    page.goto(url("/heads", start.state()))
    before = {k: str(v) for k, v in start.state()}
    typed = type_like_a_teacher(page, selector, text, replace=replace)
    settled(page, selector[1:], typed.replace(" ", "+"))
    edit(page, lambda: page.locator(selector).press("Enter"))
    assert page.locator(selector).evaluate("el => el === document.activeElement")
    assert page.locator(selector).input_value() == typed
    after = state(page)
    assert {k: v for k, v in after.items() if after[k] != before.get(k)} == {selector[1:]: typed}
    heads_match_the_api(page)
    every_head_is_the_apis(page)


def test_positional_control_shows_the_shuffle_demo_change(page: Page) -> None:
    page.goto("/heads?mask=bidirectional&positional=none")
    verdict = page.locator("#equivariance-verdict")
    expect(verdict).to_have_attribute("data-equivariant", "yes")
    expect(page.locator("#repeats")).to_contain_text("identical output rows")
    assert cells(page, "shuffle-output") == cells(page, "shuffle-expected")

    edit(page, lambda: page.select_option("#positional", "rope"))
    expect(verdict).to_have_attribute("data-equivariant", "no")
    assert cells(page, "shuffle-output") != cells(page, "shuffle-expected")
    assert "positional=rope" in page.url

    edit(page, lambda: page.select_option("#positional", "none"))
    edit(page, lambda: page.select_option("#mask", "causal"))
    expect(verdict).to_have_attribute("data-equivariant", "no")
    expect(verdict).to_contain_text("the mask depends on position")


def test_state_survives_in_the_url(page: Page) -> None:
    page.goto("/heads?heads=8")
    edit(page, lambda: page.click("button[value='mqa']"))
    expect(page.locator("#kv_heads")).to_have_value("1")
    edit(page, lambda: page.select_option("#positional", "sinusoidal"))
    edit(page, lambda: page.locator("#heads-6 .hm-title a").click())
    expect(page.locator("#selected-head")).to_contain_text("Head 6")
    output = cells(page, "output-table")
    url = page.url
    assert all(part in url for part in ("heads=8", "kv_heads=1", "positional=sinusoidal", "head=6"))

    fresh = page.context.new_page()
    fresh.goto(url)
    expect(fresh.locator("#heads")).to_have_value("8")
    expect(fresh.locator("#kv_heads")).to_have_value("1")
    expect(fresh.locator("#positional")).to_have_value("sinusoidal")
    expect(fresh.locator("#selected-head")).to_contain_text("Head 6")
    expect(fresh.locator("#fig-heads .hm-section")).to_have_count(1)  # one key/value head
    assert cells(fresh, "output-table") == output


def test_sqrt_dk_panel_plots_the_measurements_before_the_api_snippet(page: Page) -> None:
    page.goto("/heads?seed=5")
    panel = page.locator("#why-sqrt-dk")
    panel.scroll_into_view_if_needed()
    expect(panel.locator(".plot.js-plotly-plot")).to_have_count(4)
    curves = saturation(seed=5)
    rows = cells(page, "scaling-table")
    assert len(rows) == 9
    for i, row in enumerate(rows):
        raw, scaled = curves["raw_score_std"][i], curves["scaled_score_std"][i]
        assert row[0] == f"{raw:.2f} / {scaled:.2f}"
        assert row[1].startswith(f"{curves['raw_max_weight'][i]:.3f}")
    assert panel.bounding_box()["y"] < page.locator("details.request").bounding_box()["y"]
    numbered_in_reading_order(page)


def test_a_phone_shows_every_head_legibly_and_never_scrolls_sideways(
    open_page: Callable[..., Page],
) -> None:
    page = open_page(390, 844)
    for view in ("", "&lang=es"):
        page.goto(GQA + view)
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        panels = every_head_is_the_apis(page)
        # Fewer columns (two a row in each section), titles clear of each other.
        assert len({p["left"] for p in panels}) == 2
        boxes = [p["title_box"] for p in panels]
        for i, a in enumerate(boxes):
            for b in boxes[i + 1 :]:
                apart = a["right"] <= b["left"] or b["right"] <= a["left"]
                assert apart or a["bottom"] <= b["top"] or b["bottom"] <= a["top"], (a, b)
        drawn = {h["id"]: h for h in heatmaps(page)}
        for i in range(8):
            panel = drawn[f"heads-{i}"]
            assert (panel["rows"], panel["cols"]) == (6, 6), "every token labelled"
            assert panel["overlaps"] == 0
            assert panel["smallest"] >= 10, panel
        for figure in ("fig-concat", "fig-w-o", "fig-output"):  # they scroll in their box
            assert drawn[figure]["smallest"] >= 10, drawn[figure]
            assert drawn[figure]["overlaps"] == 0, figure
        page.locator("#fig-heads").scroll_into_view_if_needed()
        save_screenshot(page, f"heads-gqa-390x844{'-es' if view else ''}")


def test_presenter_mode_shows_every_head_and_the_chosen_weights_with_their_words(
    open_page: Callable[..., Page],
) -> None:
    page = open_page(1280, 720)
    page.goto("/heads?present=1")
    on_screen = [
        "#groups-sentence", "#chosen-sentence", "#fig-heads .hm-legend-svg",
        "#chosen-weights-heading", "#head-weights .hm-cells", "#head-weights .hm-legend",
        *(f"#heads-{i} :is(.hm-title, .hm-svg)" for i in range(4)),
    ]  # fmt: skip
    for selector in on_screen:
        box = page.locator(selector).last.bounding_box()
        assert box is not None, selector
        assert box["y"] >= 0, selector
        assert box["y"] + box["height"] <= 720, f"{selector} ends below the projector's screen"
    every_head_is_the_apis(page)
    for drawn in heatmaps(page):  # every figure, on the first screen and below it
        assert drawn["smallest"] >= 16, f"{drawn['id']}: text under 16 px"
        assert drawn["overlaps"] == 0, drawn["id"]
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280
    expect(page.locator("#heads-form")).to_be_hidden()
    numbered_in_reading_order(page)  # the same numbers as in normal mode
    save_screenshot(page, "heads-present-1280x720")
    # The controls open beside the pictures, never in front of them.
    page.keyboard.press("c")
    form = page.locator("#heads-form")
    expect(form).to_be_visible()
    panel, pictures = form.bounding_box(), page.locator("#heads-results").bounding_box()
    assert panel["x"] + panel["width"] <= pictures["x"]
    expect(page.locator("#head-weights .hm-cells")).to_be_in_viewport()
    edit(page, lambda: page.select_option("#kv_heads", "1"))
    expect(page.locator("#fig-heads .hm-section")).to_have_count(1)
    save_screenshot(page, "heads-present-controls-1280x720")


def test_spanish_heads_page(open_page: Callable[..., Page]) -> None:
    page = open_page(1280, 720)
    page.goto(GQA + "&lang=es&present=1&head=1")
    expect(page.locator("#heads-formula")).to_contain_text("salida = [cabeza0 | … | cabezah−1]")
    expect(page.locator("#heads-1 .hm-title")).to_have_text("cabeza 1")
    expect(page.locator("#fig-heads .hm-section-title").first).to_have_text(
        "Cabeza de clave/valor 0"
    )
    expect(page.locator("#chosen-sentence")).to_contain_text("con las cabezas 0, 2 y 3")
    expect(page.locator("#kv-ratio")).to_contain_text("4 veces menos")
    save_screenshot(page, "heads-gqa-present-es-1280x720")


def test_without_javascript_the_heads_form_submits(browser: Browser, live_server: str) -> None:
    context = browser.new_context(java_script_enabled=False, base_url=live_server)
    page = context.new_page()
    page.goto("/heads?heads=8&kv_heads=8")
    page.get_by_role("button", name="Grouped-query").click()  # a preset is a submit button
    page.wait_for_load_state()
    expect(page.locator("#kv_heads")).to_have_value("2")
    expect(page.locator("#fig-heads .hm-section")).to_have_count(2)
    page.select_option("#positional", "sinusoidal")
    page.get_by_role("button", name="Update").click()
    page.wait_for_load_state()
    assert "positional=sinusoidal" in page.url
    expect(page.locator("#equivariance-verdict")).to_have_attribute("data-equivariant", "no")
    expect(page.locator("#scaling-table tbody tr")).to_have_count(9)  # tables stand in for plots
    # Enter in a field submits the fields (the hidden first button), never a preset.
    page.locator("#seed").fill("9")
    page.locator("#seed").press("Enter")
    expect(page).to_have_url(re.compile(r"[?&]seed=9(&|$)"))
    assert (state(page)["kv_heads"], "preset" in state(page)) == ("2", False)
    # A head's title is a plain link to its state.
    page.locator("#heads-3 .hm-title a").click()
    expect(page).to_have_url(re.compile(r"[?&]head=3(&|$)"))
    expect(page.locator("#heads-3.hm-chosen-panel .hm-chosen")).to_have_count(1)
    expect(page.locator("#selected-head")).to_contain_text("Head 3")
    context.close()
