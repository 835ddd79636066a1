"""The head lab in a real browser."""

from playwright.sync_api import Page, expect

from tests.browser.conftest import axe_violations, save_screenshot


def test_worked_example_shows_weights_and_output(page: Page) -> None:
    page.goto("/")
    table = page.locator("#query-table")
    for weight in ("0.670", "0.330", "0.000"):
        expect(table).to_contain_text(weight)
    expect(page.locator("#query-output")).to_have_text("[0.83, −0.34]")
    expect(page.locator(".plot .main-svg").first).to_be_visible()
    save_screenshot(page, "lab")
    assert axe_violations(page) == []
