"""Real-browser fixtures: Debian's chromium via Playwright, on `live_server` (tests/conftest.py).

Every page a test opens is watched: a request to any host but 127.0.0.1 is blocked and
recorded, and console errors are collected; both fail the test at teardown.
"""

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, Playwright, sync_playwright

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

pytestmark = pytest.mark.browser


@pytest.fixture(scope="session")
def playwright_instance() -> Iterator[Playwright]:
    with sync_playwright() as p:
        yield p


@pytest.fixture(scope="session")
def browser(playwright_instance: Playwright) -> Iterator[Browser]:
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: `make test` installs Debian's chromium")
    browser = playwright_instance.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
    yield browser
    browser.close()


@dataclass
class PageWatch:
    """What a page did that a test should fail on."""

    foreign_requests: list[str] = field(default_factory=list)
    console_errors: list[str] = field(default_factory=list)


@pytest.fixture
def watch() -> PageWatch:
    return PageWatch()


def open_page(
    browser: Browser, live_server: str, watch: PageWatch, bypass_csp: bool
) -> Iterator[Page]:
    context = browser.new_context(
        viewport={"width": 1280, "height": 800}, base_url=live_server, bypass_csp=bypass_csp
    )

    def guard(route, request) -> None:  # type: ignore[no-untyped-def]
        if request.url.startswith(("http://127.0.0.1:", "data:", "blob:")):
            route.continue_()
        else:
            watch.foreign_requests.append(request.url)
            route.abort()

    context.route("**/*", guard)
    page = context.new_page()
    page.on("console", lambda m: watch.console_errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: watch.console_errors.append(str(e)))
    yield page
    context.close()
    assert watch.foreign_requests == [], "the page asked another host"
    assert watch.console_errors == [], "the page logged errors"


@pytest.fixture
def page(browser: Browser, live_server: str, watch: PageWatch) -> Iterator[Page]:
    """A page for behaviour tests. The Content-Security-Policy is bypassed here because
    Playwright's own `wait_for_function` evaluates its predicate with eval, which the policy
    forbids; `strict_page` (tests/browser/test_security.py) keeps it enforced."""
    yield from open_page(browser, live_server, watch, bypass_csp=True)


@pytest.fixture
def strict_page(browser: Browser, live_server: str, watch: PageWatch) -> Iterator[Page]:
    """A page with the Content-Security-Policy enforced, as in a student's browser."""
    yield from open_page(browser, live_server, watch, bypass_csp=False)


def axe_violations(page: Page) -> list[str]:
    """axe-core (bundled by axe-playwright-python, offline) on the page as it is now."""
    from axe_playwright_python.sync_playwright import Axe

    results = Axe().run(page)
    return [f"{v['id']}: {v['help']}" for v in results.response["violations"]]


def save_screenshot(page: Page, name: str) -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=False)
    return path
