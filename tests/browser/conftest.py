"""Real-browser fixtures: Debian's chromium via Playwright, on `live_server` (tests/conftest.py).

Every page a test opens is watched: a request to any host but 127.0.0.1 is blocked and
recorded, and console errors are collected; both fail the test at teardown.
"""

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from playwright.sync_api import (
    Browser,
    BrowserContext,
    Page,
    Playwright,
    Request,
    expect,
    sync_playwright,
)

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
    # Every page of the app in one renderer process, as it stays alive between tests (see
    # `site_keeper`): a new process per page compiled plotly.js anew for each test.
    "--process-per-site",
    # Nothing but the app: any other host fails to resolve, offline as in a classroom.
    "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
]
ALLOWED_URLS = ("http://127.0.0.1:", "data:", "blob:")
DESKTOP = {"width": 1280, "height": 800}
HEADER_MAX_PX = 120  # the most of a phone's screen the site header may take
# Every control of the header, and where it is: its left and right edges on screen.
HEADER_CONTROLS = """() => [...document.querySelectorAll(
  '.site-header :is(a, button, summary)')].filter((e) => e.getClientRects().length)
  .map((e) => { const b = e.getBoundingClientRect();
    return {text: e.textContent.trim(), left: b.left, right: b.right}; })"""

HERE = Path(__file__).parent
# How long `expect` waits for a locator before it fails the test (actions and navigations
# wait up to Playwright's 30 s already). A wait ends as soon as the page shows what it waits
# for, so this costs nothing when tests pass; expect's own 5 s failed them on a loaded 2-core
# machine (plotly.js compiled for a worker's first chart).
WAIT_MS = 20_000
expect.set_options(timeout=WAIT_MS)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test in this folder is a browser test: `pytest -m "not browser"` skips them all."""
    for item in items:
        if item.path.is_relative_to(HERE):
            item.add_marker(pytest.mark.browser)


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


@pytest.fixture(scope="session")
def shared_context(browser: Browser, live_server: str) -> Iterator[BrowserContext]:
    """One browser context for the whole session, as one student's browser is.

    Its HTTP and code caches keep plotly.js (4.8 MB) compiled from one test to the next: a
    context per test parsed it again for every page, which was most of the suite's time. No
    page keeps cookies or storage (the app sets none), so tests still start from nothing.
    """
    context = browser.new_context(viewport=DESKTOP, base_url=live_server)
    yield context
    context.close()


@pytest.fixture(scope="session")
def site_keeper(shared_context: BrowserContext) -> Page:
    """A page of the app (/healthz, no script) open all session, so the site's renderer
    process (`--process-per-site`) and the scripts compiled in it outlive each test's pages:
    a new page then costs less than half the CPU it takes in a process of its own."""
    keeper = shared_context.new_page()
    keeper.goto("/healthz")
    return keeper


@pytest.fixture
def open_page(
    shared_context: BrowserContext, site_keeper: Page, watch: PageWatch
) -> Iterator[Callable[..., Page]]:
    """Opens pages at a viewport in the shared context; every page of the context is watched.

    Another host cannot even be resolved (`--host-resolver-rules`), and each request to one is
    recorded: a route handler would do the same but switches the context's cache off.
    """

    def on_request(request: Request) -> None:
        if not request.url.startswith(ALLOWED_URLS):
            watch.foreign_requests.append(request.url)

    def on_page(page: Page) -> None:
        page.on(
            "console", lambda m: watch.console_errors.append(m.text) if m.type == "error" else None
        )
        page.on("pageerror", lambda e: watch.console_errors.append(str(e)))

    shared_context.on("request", on_request)
    shared_context.on("page", on_page)

    def open_at(width: int = DESKTOP["width"], height: int = DESKTOP["height"]) -> Page:
        page = shared_context.new_page()
        page.set_viewport_size({"width": width, "height": height})
        return page

    yield open_at
    for page in shared_context.pages:
        if page is not site_keeper:
            page.close()
    shared_context.remove_listener("request", on_request)
    shared_context.remove_listener("page", on_page)
    assert watch.foreign_requests == [], "the page asked another host"
    assert watch.console_errors == [], "the page logged errors"


@pytest.fixture
def page(open_page: Callable[..., Page]) -> Page:
    """A page with the app's real Content-Security-Policy enforced, as in a student's browser.

    So tests wait with locators, `wait_for_selector` or `expect_response`, never
    `page.wait_for_function`: Playwright evaluates its predicate with eval, which the policy
    refuses.
    """
    return open_page()


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
