"""The /kernel page in a real browser: stepping shows the API's numbers."""

from typing import Any
from urllib.parse import parse_qsl, urlsplit

from playwright.sync_api import Browser, Page, expect

from app.core.i18n import format_vector as fmt_vector
from app.web.templating import fmt
from tests.browser.conftest import axe_violations, save_screenshot


def api(page: Page, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
    response = page.request.post(f"/api/{path}", data=body or {})
    assert response.ok
    return response.json()


def where(url: str) -> dict[str, str]:
    """The steps a URL names (the rest of it is the lab state)."""
    params = dict(parse_qsl(urlsplit(url).query))
    return {k: v for k, v in params.items() if k in ("step", "decode_step")}


def cells(page: Page, selector: str, column: int) -> list[str]:
    """The text of one data column (0 = first td) of a table, row by row."""
    rows = page.locator(f"{selector} tbody tr")
    return rows.evaluate_all(f"rows => rows.map(r => r.querySelectorAll('td')[{column}].innerText)")


def test_stepping_shows_the_api_numbers_of_each_step(page: Page) -> None:
    tiled = api(page, "kernel/tiled")
    page.goto("/kernel")
    expect(page.locator("#tiled-status")).to_contain_text("Step 1 of 4")
    for index in (1, 2, 3):
        page.click("#tiled-next")
        expect(page.locator("#tiled-status")).to_contain_text(f"Step {index + 1} of 4")
        assert where(page.url) == {"step": str(index), "decode_step": "0"}
        step = tiled["steps"][index]
        assert cells(page, "#tile-rows", 1) == [fmt(m) for m in step["m"]]
        assert cells(page, "#tile-rows", 2)[0].startswith(fmt(step["rescale"][0]))
        assert cells(page, "#tile-rows", 4) == [fmt(x) for x in step["l"]]
        expect(page.locator("#alive-now")).to_have_text(str(step["score_entries"]))
    expect(page.locator("#tile-rows")).to_contain_text("m grew")  # sleeps meets itself: 2.121

    decode = api(page, "kernel/decode")
    page.click("#decode-next")
    expect(page.locator("#decode-status")).to_contain_text("token 1 “cat”")
    cat = decode["steps"][0]
    expect(page.locator("#decode-output")).to_have_text(fmt_vector(cat["output"], 3))
    expect(page.locator("#decode-full")).to_have_text(fmt_vector(cat["full_output"], 3))
    assert cells(page, "#decode-row", 3) == [fmt(w) for w in cat["weights"]]
    assert page.locator("#k-cache tbody tr").count() == 2
    assert where(page.url) == {"step": "3", "decode_step": "1"}  # the tiled step is kept


def test_final_output_matches_the_lab(page: Page) -> None:
    state = {"tokens": ["we", "tile", "the", "scores", "here"], "mask": {"causal": True}}
    lab = api(page, "attention", state)
    page.goto("/kernel?tokens=we+tile+the+scores+here&block_q=2&block_k=3")
    page.click("#tiled-last")
    expect(page.locator("#tiled-verdict")).to_be_visible()
    expected = [fmt_vector(row, 3) for row in lab["output"]]
    assert cells(page, "#tiled-output", 0) == expected
    assert cells(page, "#tiled-output", 1) == expected
    page.click("#decode-last")
    expect(page.locator("#decode-output")).to_have_text(expected[-1])
    save_screenshot(page, "kernel")


def test_the_url_restores_both_steps_and_back_goes_back(page: Page) -> None:
    page.goto("/kernel?step=2&decode_step=2")
    expect(page.locator("#tiled-status")).to_contain_text("Step 3 of 4")
    expect(page.locator("#decode-status")).to_contain_text("token 2 “sleeps”")
    page.click("#tiled-next")
    expect(page.locator("#tiled-status")).to_contain_text("Step 4 of 4")
    assert where(page.url) == {"step": "3", "decode_step": "2"}
    fresh = page.context.new_page()
    fresh.goto(page.url)
    expect(fresh.locator("#tiled-status")).to_contain_text("Step 4 of 4")
    expect(fresh.locator("#decode-status")).to_contain_text("Step 3 of 3")
    fresh.close()
    page.go_back()
    expect(page.locator("#tiled-status")).to_contain_text("Step 3 of 4")


def test_arrow_keys_step_the_walk_through_in_use(page: Page) -> None:
    page.goto("/kernel")
    page.keyboard.press("ArrowRight")
    expect(page.locator("#tiled-status")).to_contain_text("Step 2 of 4")
    page.keyboard.press("ArrowRight")
    expect(page.locator("#tiled-status")).to_contain_text("Step 3 of 4")
    page.keyboard.press("ArrowLeft")
    expect(page.locator("#tiled-status")).to_contain_text("Step 2 of 4")
    page.focus("#decode-next")
    page.keyboard.press("ArrowRight")
    expect(page.locator("#decode-status")).to_contain_text("Step 2 of 3")
    expect(page.locator("#tiled-status")).to_contain_text("Step 2 of 4")
    page.focus("input[name=tokens]")  # typing in the form never steps
    page.keyboard.press("ArrowLeft")
    expect(page.locator("#decode-status")).to_contain_text("Step 2 of 3")


def test_play_steps_to_the_end_and_stops(page: Page) -> None:
    page.goto("/kernel")
    play = page.locator("[data-play=decode]")
    play.click()
    expect(play).to_have_attribute("aria-pressed", "true")
    expect(page.locator("#decode-status")).to_contain_text("Step 3 of 3", timeout=8000)
    expect(play).to_have_attribute("aria-pressed", "false", timeout=4000)
    expect(play).to_have_text("Play")


def test_axe_is_clean_on_a_padded_step(page: Page) -> None:
    page.goto("/kernel?tokens=a+b+c+d+e&pad=0&step=1&decode_step=2")
    expect(page.locator("figure.hm svg").first).to_be_visible()  # drawn by the server
    assert page.evaluate("typeof window.Plotly") == "undefined"  # no chart near the screen yet
    chart = page.locator("figure.chart").first
    chart.scroll_into_view_if_needed()
    # plotly.js (4.8 MB) is fetched and parsed now: slow on a loaded machine
    expect(chart.locator(".plot .main-svg").first).to_be_visible(timeout=20_000)
    expect(page.locator(".modebar")).to_have_count(0)  # no toolbar: only the two downloads
    expect(chart.locator("[data-chart-download]")).to_have_count(2)
    assert axe_violations(page) == []


def test_step_links_work_without_javascript(browser: Browser, live_server: str) -> None:
    context = browser.new_context(base_url=live_server, java_script_enabled=False)
    page = context.new_page()
    page.goto("/kernel")
    expect(page.locator("[data-play=tiled]")).to_be_hidden()
    page.click("#tiled-next")
    expect(page.locator("#tiled-status")).to_contain_text("Step 2 of 4")
    expect(page.locator("#tile-rows")).to_be_visible()
    context.close()
