"""/kernel in a real browser: stepping both loop orders and the cache policies, typed key by key."""

from playwright.sync_api import Page, expect

from app.web.templating import fmt
from tests.browser.conftest import axe_violations
from tests.browser.test_kernel import api, cells

TOKENS = "we tile the scores here"
STATE = {"tokens": TOKENS.split(), "mask": {"causal": True}}
START = "/kernel?tokens=we+tile+the+scores+here&mask=causal"  # the state the API gets too


def fill_by_keys(page: Page, selector: str, text: str) -> None:
    field = page.locator(selector)
    field.fill("")
    field.press_sequentially(text, delay=20)


def test_stepping_fa1_shows_what_each_step_reads_and_writes(page: Page) -> None:
    page.goto(START)
    page.select_option("#order", "fa1")
    fill_by_keys(page, "#kernel-form input[name=block_q]", "2")
    fill_by_keys(page, "#kernel-form input[name=block_k]", "3")
    page.locator("form.kernel-form button[type=submit]").click()
    expect(page.locator("#tile-order")).to_have_text("fa1")
    tiled = api(page, "kernel/tiled", {**STATE, "order": "fa1", "block_q": 2, "block_k": 3})
    for index, step in enumerate(tiled["steps"]):
        expect(page.locator("#tiled-status")).to_contain_text(f"Step {index + 1} of 6")
        moved = page.locator("#tile-moved")
        for t in step["reads"] + step["writes"]:
            expect(moved).to_contain_text(f"{t['name']}{t['rows'][0]}–{t['rows'][1] - 1}")
        if not step["skipped"]:
            assert cells(page, "#tile-rows", 1) == [fmt(m) for m in step["m_tile"]]  # m̃
            assert cells(page, "#tile-rows", 2) == [fmt(m) for m in step["m"]]
        if index < len(tiled["steps"]) - 1:
            page.click("#tiled-next")
    expect(page.locator("#traffic-tiled-reads")).to_have_text(
        f"{tiled['traffic']['tiled']['reads']:,}"
    )
    assert axe_violations(page) == []


def test_fa2_ends_each_row_block_with_one_rescale_and_the_log_sum_exp(page: Page) -> None:
    page.goto("/kernel?tokens=we+tile+the+scores+here&mask=causal&block_q=2&block_k=3")
    tiled = api(page, "kernel/tiled", {**STATE, "block_q": 2, "block_k": 3})
    page.click("#tiled-next")  # step 2: the last key block of rows 0–1
    step = tiled["steps"][1]
    assert step["final_rescale"]
    expect(page.locator("#tile-rows thead")).to_contain_text("L = m + log l")
    assert cells(page, "#tile-rows", 8) == [fmt(x) for x in step["logsumexp_rows"]]
    expect(page.locator("#tile-moved")).to_contain_text("L0–1")


def test_a_sink_plus_window_cache_keeps_the_first_token(page: Page) -> None:
    page.goto(START)
    fill_by_keys(page, "#kernel-form input[name=prompt]", "2")
    page.select_option("#cache-policy", "sinks")
    fill_by_keys(page, "#cache-window", "2")
    fill_by_keys(page, "#cache-sinks", "1")
    page.locator("form.kernel-form button[type=submit]").click()
    expect(page.locator("#cache-policy-line")).to_contain_text("sinks + window")
    cache = {"policy": "sinks", "window": 2, "sinks": 1}
    decode = api(page, "kernel/decode", {**STATE, "prompt": 2, "cache": cache})
    page.click("#decode-last")
    last = decode["steps"][-1]
    assert last["cached_tokens"] == ["we", "scores", "here"]
    expect(page.locator("#cache-held")).to_contain_text("we (0), scores (3), here (4)")
    expect(page.locator("#decode-difference")).to_have_text(f"{last['max_abs_difference']:.1e}")
    assert cells(page, "#decode-row", 3) == [fmt(w) for w in last["weights"]]
    page.click("#decode-prev")
    expect(page.locator("#cache-evicted")).to_contain_text("tile (1)")
    assert axe_violations(page) == []


def test_a_window_policy_without_sinks_drops_the_start(page: Page) -> None:
    page.goto(
        "/kernel?tokens=we+tile+the+scores+here&mask=causal&prompt=2&cache=window&cache_window=2"
    )
    page.click("#decode-last")
    expect(page.locator("#cache-held")).to_contain_text("scores (3), here (4)")
    expect(page.locator("#cache-held")).not_to_contain_text("we (0)")
