"""The head lab in a real browser: live edits, the URL as the state, safety, accessibility."""

import re
from collections.abc import Callable, Iterator

import pytest
from playwright.sync_api import Browser, Page, expect

from app.core.rules import WORKED_EXAMPLE_REQUEST
from tests.browser.conftest import save_screenshot


def edit(page: Page, action: Callable[[], None]) -> None:
    """Do something in the form, then wait until the server's new results are swapped in
    (static/js/live.js sends "live:updated" after each swap)."""
    page.evaluate(  # `void`: evaluate would otherwise wait for the promise it returns
        "void (window.swapped = new Promise(done => "
        "document.addEventListener('live:updated', done, {once: true})))"
    )
    action()
    page.evaluate("window.swapped.then(() => true)")


def weights_shown(page: Page) -> list[str]:
    return page.locator("#query-table tbody tr td:nth-child(5)").all_text_contents()


@pytest.fixture
def dialogs(page: Page) -> Iterator[list[str]]:
    seen: list[str] = []
    page.on("dialog", lambda d: (seen.append(d.message), d.dismiss()))
    yield seen
    assert seen == [], "a dialog opened: page content ran as script"


def hover_cell(page: Page, figure: str, row: int, column: int) -> str:
    """Point at one cell of a server-drawn heatmap and read the sentence the page shows."""
    cell = page.locator(f"#{figure} .hm-cells rect").nth(row * len(cols(page, figure)) + column)
    cell.scroll_into_view_if_needed()
    cell.hover()
    tip = page.locator(f"#{figure} .hm-tip")
    expect(tip).not_to_be_empty()
    return tip.text_content() or ""


def cols(page: Page, figure: str) -> list[str]:
    return page.locator(f"#{figure} .hm-cols text").all_text_contents()


def test_worked_example_shows_weights_and_output(page: Page) -> None:
    page.goto("/")
    assert weights_shown(page) == ["0.670", "0.330", "0.000"]
    expect(page.locator("#query-table-output")).to_have_text("[0.835, −0.340]")
    expect(page.locator("#fig-weights svg").first).to_be_visible()
    save_screenshot(page, "lab")
    # axe audits this page in every mode and language in test_teacher.py
    assert hover_cell(page, "fig-scaled", 1, 0) == (
        "q_cat · k_The = 0×0.5 + 1×1 = 1.000, ÷ √2 = 0.707"
    )


def test_editing_w_q_shows_the_servers_new_weights(page: Page) -> None:
    page.goto("/")
    edit(page, lambda: page.locator("#w_q-0-0").fill("2"))
    api = page.request.post(
        "/api/attention", data={**WORKED_EXAMPLE_REQUEST, "w_q": [[2, 0.5], [0, 1]]}
    ).json()
    expected = [f"{row['weight']:.3f}" for row in api["query"]["rows"]]
    assert weights_shown(page) == expected
    assert "w_q=2,0.5;0,1" in page.url
    assert "x=" not in page.url  # the worked rows are the default for these tokens


def test_bidirectional_lets_cat_see_sleeps(page: Page) -> None:
    page.goto("/")
    sleeps = page.locator("#query-table tbody tr").nth(2)
    expect(sleeps.locator("td").nth(2)).to_have_text("−∞")  # the mask column
    expect(sleeps.locator("td").nth(3)).to_have_class("hidden-cell")
    edit(page, lambda: page.get_by_label("Bidirectional (an encoder)").check())
    assert "mask=bidirectional" in page.url
    expect(sleeps.locator("td").nth(2)).to_have_text("0")
    expect(sleeps.locator("td").nth(3)).not_to_have_class("hidden-cell")
    assert float(sleeps.locator("td").nth(3).text_content() or "0") > 0.3


def test_the_copied_url_restores_the_state_in_a_fresh_page(page: Page) -> None:
    page.goto("/")
    edit(page, lambda: page.locator("#w_q-1-1").fill("-1.5"))
    edit(page, lambda: page.get_by_label("Sliding window").check())
    edit(page, lambda: page.locator("#window").fill("1"))
    edit(page, lambda: page.locator(".chips button", has_text="sleeps").click())
    edit(page, lambda: page.get_by_label("Divide the scores by √d_k").uncheck())
    shown = weights_shown(page)
    output = page.locator("#query-table-output").text_content()
    fresh = page.context.new_page()  # watched like every page of the context
    fresh.goto(page.url)
    expect(fresh.locator("#w_q-1-1")).to_have_value("-1.5")
    expect(fresh.get_by_label("Sliding window")).to_be_checked()
    expect(fresh.locator("#window")).to_have_value("1")
    expect(fresh.get_by_label("Divide the scores by √d_k")).not_to_be_checked()
    expect(fresh.locator("#query")).to_have_value("2")
    assert weights_shown(fresh) == shown == ["0.000", "0.000", "1.000"]
    expect(fresh.locator("#query-table-output")).to_have_text(output)


def test_markup_in_the_text_is_shown_as_text(page: Page, dialogs: list[str]) -> None:
    page.goto("/")
    hostile = "<img src=x onerror=alert(1)>"
    edit(page, lambda: page.locator("#tokens").fill(hostile))
    expect(page.locator("#token-table tbody th").first).to_have_text("<img")
    expect(page.locator("#token-table tbody th").nth(2)).to_have_text("onerror=alert(1)>")
    assert page.locator("#lab-results img").count() == 0
    page.goto(page.url)  # the same state, rendered whole by the server
    expect(page.locator("#tokens")).to_have_value(hostile)
    # No image anywhere, so no handler of one can fire later (`dialogs` checks none did).
    assert page.locator("main img").count() == 0


def test_a_button_and_a_bad_cell_update_without_a_reload(page: Page) -> None:
    page.goto("/")
    page.evaluate("window.notReloaded = true")
    edit(page, lambda: page.get_by_role("button", name="Identity").first.click())
    expect(page.locator("#w_q-0-1")).to_have_value("0")
    assert "w_q=1,0;0,1" in page.url
    # One step of undo: a link back to the worked example, as it was before the button.
    undo = page.locator("#undo-link").get_attribute("href") or ""
    assert undo.startswith("/?tokens=The+cat+sleeps"), undo
    assert "w_q=" not in undo
    assert "action" not in page.url
    url = page.url
    page.locator("#x-0-0").fill("abc")
    expect(page.locator("#page-messages")).to_contain_text("“abc” is not a number")
    expect(page.locator("#lab-results")).to_have_class("lab-results stale")
    assert page.url == url  # the address keeps the last state that worked
    edit(page, lambda: page.locator("#x-0-0").fill("1"))
    expect(page.locator("#page-messages")).to_have_text("")
    assert page.evaluate("window.notReloaded") is True


def test_without_javascript_the_form_submits(browser: Browser, live_server: str) -> None:
    context = browser.new_context(java_script_enabled=False, base_url=live_server)
    page = context.new_page()
    page.goto("/")
    assert weights_shown(page) == ["0.670", "0.330", "0.000"]
    page.locator("#w_q-0-0").fill("2")
    page.get_by_label("Bidirectional (an encoder)").check()
    page.get_by_role("button", name="Update").click()
    page.wait_for_load_state()
    assert "mask=bidirectional" in page.url
    expect(page.locator("#w_q-0-0")).to_have_value("2")
    assert weights_shown(page)[2] != "0.000"
    page.get_by_role("button", name="Identity").first.click()  # the page of the state it made
    page.wait_for_load_state()
    expect(page.locator("#w_q-0-1")).to_have_value("0")
    assert "w_q=1,0;0,1" in (page.locator("#state-link").get_attribute("href") or "")
    assert "mask=bidirectional" in (page.locator("#undo-link").get_attribute("href") or "")
    page.locator(".chips button", has_text="The").click()  # a token picks the query
    page.wait_for_load_state()
    expect(page.locator("#query")).to_have_value("0")
    expect(page.locator("#w_q-0-1")).to_have_value("0")  # the rest of the state stays
    context.close()


def test_clicking_a_pattern_cell_makes_a_custom_mask(page: Page) -> None:
    page.goto("/")
    edit(page, lambda: page.get_by_label("The sees The").uncheck())
    expect(page.get_by_label("Custom pattern")).to_be_checked()
    assert "mask=custom&allowed=000;110;111" in page.url
    expect(page.locator("#empty-rows")).to_contain_text("Queries that see no key at all: The")


# Each server heatmap's box and its legend's, and the smallest text in the open controls.
LEGENDS_AND_CONTROLS = """() => ({
  legends: [...document.querySelectorAll('figure.hm')].map((f) => {
    const box = f.getBoundingClientRect();
    const legend = f.querySelector('.hm-legend-parts').getBoundingClientRect();
    return {id: f.id, left: box.left, right: box.right, legendLeft: legend.left,
      legendRight: legend.right};
  }),
  small: [...document.querySelectorAll('#lab-form *')]
    .filter((e) => e.getClientRects().length && [...e.childNodes].some((n) => n.nodeType === 3
      && n.textContent.trim()) || e.matches('#lab-form :is(input, select, button)'))
    .filter((e) => e.getClientRects().length)
    .map((e) => [e.tagName, e.textContent.trim().slice(0, 20) || e.value,
      parseFloat(getComputedStyle(e).fontSize)])
    .filter((t) => t[2] < 16),
})"""


def test_presenter_legends_fit_their_figures_and_controls_keep_16_px(page: Page) -> None:
    """The Spanish presenter at 1280×720 cut the right end of ÷ √2's and + M's colour bars;
    its open controls panel wrote the grid's numbers at 14.3 px (issue 28.7: none under 16)."""
    page.set_viewport_size({"width": 1280, "height": 720})
    page.goto("/?present=1&lang=es")
    page.locator("figure.hm#fig-masked").wait_for()
    measured = page.evaluate(LEGENDS_AND_CONTROLS)
    assert len(measured["legends"]) >= 6
    for f in measured["legends"]:
        assert f["left"] - 0.5 <= f["legendLeft"], f
        assert f["legendRight"] <= f["right"] + 0.5, f
    save_screenshot(page, "lab-present-1280x720-es")
    page.locator("h1").click()
    page.keyboard.press("c")
    expect(page.locator("body")).to_have_class(re.compile(r"controls-open"))
    expect(page.locator("#lab-form input.cell").first).to_be_visible()
    assert page.evaluate(LEGENDS_AND_CONTROLS)["small"] == []
    save_screenshot(page, "lab-present-controls-1280x720-es")
