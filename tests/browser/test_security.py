"""The Content-Security-Policy and hostile input, in a real browser, on every page.

Every page is found from the app (tests/routes.py), so a page added later is covered too. A
CSP violation is both recorded here (securitypolicyviolation events) and a console error,
which the `page` fixture fails on in every browser test.
"""

from urllib.parse import quote

import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import PageWatch
from tests.routes import PAGE_STATE

WATCH = """
window.__csp = [];
window.__dialogs = 0;
document.addEventListener("securitypolicyviolation", (e) => {
  window.__csp.push(e.violatedDirective + " " + (e.blockedURI || "inline"));
});
"""
# No spaces: the lab splits its token text at spaces. Each would run or add an element if
# it reached the page as markup instead of text.
TOKEN_PAYLOADS = [
    "<img/src=x/id=xss1/onerror=alert(1)>",
    "<script>alert(2)</script>",
    "<b/id=xss3>bold</b>",
    '"><svg/id=xss4/onload=alert(4)>',
]
# The pages' own inline scripts are all JSON data blocks (the CSP runs no other).
INJECTED = (
    "#xss1, #xss3, #xss4, img[src='x'], svg[onload], b#xss3,"
    " script:not([src]):not([type='application/json'])"
)
# What a page draws after its load event from a request of its own: Swagger UI's operations.
LATE = {"/docs": "#swagger-ui .opblock"}
URL_PAYLOAD = "\"'><img src=x id=xss1 onerror=alert(1)><script>alert(2)</script>"


def watched(page: Page) -> list[str]:
    dialogs: list[str] = []
    page.add_init_script(WATCH)
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    return dialogs


def assert_nothing_ran(page: Page, dialogs: list[str]) -> None:
    """No payload became an element (so no handler of one can fire later), none ran (a
    dialog), the CSP refused nothing. The page has loaded: an injected image's error and an
    injected svg's load would have fired before its load event."""
    assert dialogs == []
    assert page.locator(INJECTED).count() == 0
    assert page.evaluate("window.__csp") == []


@pytest.mark.parametrize("path", sorted(PAGE_STATE))
def test_every_page_works_under_the_csp_without_a_violation(page: Page, path: str) -> None:
    page.add_init_script(WATCH)
    response = page.goto(path)  # after the load event: every script of the page has run
    assert response is not None
    csp = response.headers["content-security-policy"]
    assert "script-src 'self';" in csp
    if page.locator("script[src*='figures']").count():  # a whole page, not a fragment
        # Plotly drew every figure without eval: each is drawn when it comes near the screen
        # (static/js/figures.js), so each is scrolled to first.
        figures = page.locator("[data-figure]")
        for i in range(figures.count()):
            figures.nth(i).scroll_into_view_if_needed()
            expect(figures.nth(i).locator(".main-svg").first).to_be_attached()
    if path in LATE:
        expect(page.locator(LATE[path]).first).to_be_visible()
    assert page.evaluate("window.__csp") == []


def test_the_csp_is_enforced_an_injected_inline_script_does_not_run(
    page: Page, watch: PageWatch
) -> None:
    page.add_init_script(WATCH)
    page.goto("/healthz")
    page.evaluate(
        """() => {
          const s = document.createElement("script");
          s.textContent = "window.__ran = true";
          document.documentElement.append(s);
        }"""
    )
    assert page.evaluate("window.__ran") is None
    assert page.evaluate("window.__csp") == ["script-src-elem inline"]
    watch.console_errors.clear()  # the refusal is logged, as it should be


@pytest.mark.parametrize("path", sorted(PAGE_STATE))
def test_a_payload_in_every_url_parameter_stays_text(
    page: Page, watch: PageWatch, path: str
) -> None:
    dialogs = watched(page)
    query = "&".join(f"{name}={quote(URL_PAYLOAD)}" for name in PAGE_STATE[path])
    response = page.goto(f"{path}?{query}")
    assert response is not None
    assert response.status < 500
    assert_nothing_ran(page, dialogs)
    # A page that reports bad input answers 4xx, which the browser logs: that's not an error.
    watch.console_errors[:] = [e for e in watch.console_errors if "status of 4" not in e]


def test_payloads_typed_as_tokens_show_as_text_in_tables_and_heatmaps(page: Page) -> None:
    dialogs = watched(page)
    page.goto("/")
    page.fill("#tokens", " ".join(TOKEN_PAYLOADS))
    table = page.locator("#token-table")
    for token in TOKEN_PAYLOADS:
        expect(table).to_contain_text(token)
    ticks = page.locator("#fig-scores .hm-cols text")
    expect(ticks.first).to_be_visible()
    labels = ticks.all_text_contents()
    for token in TOKEN_PAYLOADS:  # a long label is cut with "…"; the rest is in the table
        assert any(token.startswith(label.removesuffix("…")) for label in labels), labels
    assert_nothing_ran(page, dialogs)


def test_payloads_through_the_api_come_back_as_json_text(page: Page) -> None:
    dialogs = watched(page)
    page.goto("/healthz")
    tokens = page.evaluate(
        """async (tokens) => {
          const r = await fetch("/api/attention", {
            method: "POST", headers: {"content-type": "application/json"},
            body: JSON.stringify({tokens}),
          });
          return (await r.json()).tokens;
        }""",
        TOKEN_PAYLOADS,
    )
    assert tokens == TOKEN_PAYLOADS
    assert_nothing_ran(page, dialogs)
