"""/heads in a real browser: numbers equal the API's, live controls, URL state, √d_k, axe."""

import re

from playwright.sync_api import Browser, Page, expect

from app.math.scaling import saturation
from tests.browser.conftest import axe_violations, save_screenshot


def cells(page: Page, table: str) -> list[list[str]]:
    return page.locator(f"#{table} tbody tr").evaluate_all(
        "rows => rows.map(r => [...r.querySelectorAll('td')].map(td => td.textContent.trim()))"
    )


def printed(values: list[list[float]], digits: int = 3) -> list[list[str]]:
    def one(v: float) -> str:
        text = f"{v:.{digits}f}"
        return text[1:] if float(text) == 0 and text.startswith("-") else text.replace("-", "−")

    return [[one(v) for v in row] for row in values]


def updated(page: Page, action) -> None:  # type: ignore[no-untyped-def]
    """Run an action that changes the form and wait for the server's re-rendering."""
    with page.expect_response(re.compile(r"/heads\?")):
        action()
    page.wait_for_selector("#heads-results .plot .main-svg", state="attached")


def test_heads_page_shows_the_api_numbers_and_is_accessible(page: Page) -> None:
    """One axe audit covers every part of the page: groups, stages, W_O, shuffle, √d_k."""
    page.goto("/heads?text=the+cat+sat+on+the+mat&heads=4&kv_heads=2&d_head=2&positional=rope")
    expect(page.locator(".kv-group")).to_have_count(2)
    expect(page.locator(".thumb")).to_have_count(4)
    body = page.request.post(
        "/api/heads",
        data={
            "tokens": ["the", "cat", "sat", "on", "the", "mat"], "d_model": 8, "heads": 4,
            "kv_heads": 2, "d_head": 2, "mask": {}, "positional": "rope",
        },
    ).json()  # fmt: skip
    assert cells(page, "output-table") == printed(body["output"])
    assert cells(page, "head-weights-table") == printed(body["heads"][0]["weights"])
    expect(page.locator("#kv-this")).to_have_text(str(body["kv_cache_bytes_per_token"]["this"]))
    expect(page.locator("#kv-mha")).to_have_text(
        str(body["kv_cache_bytes_per_token"]["multi_head"])
    )
    expect(page.locator("[data-figure='fig-heads'] .main-svg").first).to_be_visible()
    expect(page.locator(".plot.js-plotly-plot[data-figure='fig-heads']")).to_have_count(1)
    save_screenshot(page, "heads")
    assert axe_violations(page) == []


def test_positional_control_shows_the_shuffle_demo_change(page: Page) -> None:
    page.goto("/heads?mask=bidirectional&positional=none")
    verdict = page.locator("#equivariance-verdict")
    expect(verdict).to_have_attribute("data-equivariant", "yes")
    expect(page.locator("#repeats")).to_contain_text("identical output rows")
    assert cells(page, "shuffle-output") == cells(page, "shuffle-expected")

    updated(page, lambda: page.select_option("#positional", "rope"))
    expect(verdict).to_have_attribute("data-equivariant", "no")
    assert cells(page, "shuffle-output") != cells(page, "shuffle-expected")
    assert "positional=rope" in page.url

    updated(page, lambda: page.select_option("#positional", "none"))
    updated(page, lambda: page.select_option("#mask", "causal"))
    expect(verdict).to_have_attribute("data-equivariant", "no")
    expect(verdict).to_contain_text("the mask depends on position")


def test_state_survives_in_the_url(page: Page) -> None:
    page.goto("/heads?heads=8")
    updated(page, lambda: page.click("button[value='mqa']"))
    expect(page.locator("#kv_heads")).to_have_value("1")
    updated(page, lambda: page.select_option("#positional", "sinusoidal"))
    updated(page, lambda: page.click("a[data-head='6']"))
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
    assert cells(fresh, "output-table") == output


def test_sqrt_dk_panel_plots_the_measurements(page: Page) -> None:
    page.goto("/heads?seed=5")
    panel = page.locator("#why-sqrt-dk")
    expect(panel.locator(".plot.js-plotly-plot")).to_have_count(4)
    curves = saturation(seed=5)
    rows = cells(page, "scaling-table")
    assert len(rows) == 9
    for i, row in enumerate(rows):
        raw, scaled = curves["raw_score_std"][i], curves["scaled_score_std"][i]
        assert row[0] == f"{raw:.2f} / {scaled:.2f}"
        assert row[1].startswith(f"{curves['raw_max_weight'][i]:.3f}")


def test_without_javascript_the_heads_form_submits(browser: Browser, live_server: str) -> None:
    context = browser.new_context(java_script_enabled=False, base_url=live_server)
    page = context.new_page()
    page.goto("/heads?heads=8&kv_heads=8")
    page.get_by_role("button", name="Grouped-query").click()  # a preset is a submit button
    page.wait_for_load_state()
    expect(page.locator("#kv_heads")).to_have_value("2")
    expect(page.locator(".kv-group")).to_have_count(2)
    page.select_option("#positional", "sinusoidal")
    page.get_by_role("button", name="Update").click()
    page.wait_for_load_state()
    assert "positional=sinusoidal" in page.url
    expect(page.locator("#equivariance-verdict")).to_have_attribute("data-equivariant", "no")
    expect(page.locator("#scaling-table tbody tr")).to_have_count(9)  # tables stand in for plots
    context.close()
