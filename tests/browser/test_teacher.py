"""A teacher in front of a class: typing with the keyboard, key by key, in every live field.

After each key the field still has focus and holds what was typed (no update may take the
caret away or put the server's older copy back); after each edit the numbers on screen are
the API's for the URL in the address bar. Then the colours (read from plotly's own state on
the page), the first screen at 1280×800 and in presenter mode at 1280×720, phones at
390×844, and axe in each mode and language. Screenshots go to artifacts/ (not committed).
"""

import re
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from playwright.sync_api import Page, expect

from app.core.i18n import format_vector
from tests.browser.conftest import HEADER_MAX_PX, axe_violations, save_screenshot
from tests.browser.figures import cells_box, heatmaps

KEY_DELAY_MS = 90  # a quick typist; each key lands while the previous key's update is out
VIEWPORTS = {"desktop": (1280, 800), "projector": (1280, 720), "phone": (390, 844)}


def printed(value: float | None, digits: int = 3) -> str:
    """A number as the pages print it (app.web.templating.fmt): a true minus sign, no −0.000;
    None (the API's −∞: a running maximum over keys all hidden so far) is −∞."""
    if value is None:
        return "−∞"
    text = f"{value:.{digits}f}"
    if text.startswith("-"):
        text = text[1:] if float(text) == 0 else "−" + text[1:]
    return text


def type_like_a_teacher(page: Page, selector: str, text: str, *, replace: bool) -> str:
    """Type `text` into the field key by key; after every key check that focus stayed and
    that the field holds exactly what was typed. Returns the field's final value."""
    field = page.locator(selector)
    field.click()  # scrolls it into view, and finds it again if a swap replaced it meanwhile
    if replace:
        field.press("Control+a")
        expected = ""
    else:
        field.press("End")
        expected = field.input_value()
    number = field.get_attribute("type") == "number"
    for key in text:
        field.press_sequentially(key, delay=0)
        expected += key
        page.wait_for_timeout(KEY_DELAY_MS)
        focused = field.evaluate("el => el === document.activeElement")
        assert focused, f"typing {key!r} in {selector} moved focus to " + page.evaluate(
            "document.activeElement.tagName + '#' + document.activeElement.id"
        )
        if not (number and expected.endswith(".")):  # a number field's value hides "0."
            assert field.input_value() == expected, f"{selector} lost what was typed"
        assert urlsplit(page.url).query.find("present=1") == -1, "a key reached a shortcut"
    return expected


def settled(page: Page, param: str, value: str) -> dict[str, list[str]]:
    """Wait until the address bar carries the edit. static/js/live.js writes the address
    after it swapped that answer in, so the page shows it by then (a load state would not
    wait: the page's networkidle came once, long before the edit)."""
    expect(page).to_have_url(re.compile(rf"[?&]{param}={re.escape(value)}(&|$)"), timeout=10_000)
    return parse_qs(urlsplit(page.url).query, keep_blank_values=True)


def settled_cell(page: Page, param: str, row: int, col: int, value: str) -> None:
    """Wait until the address bar's matrix `param` holds `value` in that cell (rows split at
    ";", numbers at ","; the address bar writes them %3B and %2C). A cell, not the whole
    parameter: the matrix is in the address from the first key on, and an earlier key's
    state (-1.2 on the way to -1.25) must not pass for the last one's."""
    cell = r"(?:(?!%2C|,|%3B|;)[^&])*"  # one number: up to the next "," ";" or "&"
    skip_rows = rf"(?:(?:{cell}(?:%2C|,))*{cell}(?:%3B|;)){{{row}}}"
    skip_cells = rf"(?:{cell}(?:%2C|,)){{{col}}}"
    pattern = rf"[?&]{param}={skip_rows}{skip_cells}{re.escape(value)}(?:%2C|,|%3B|;|&|$)"
    expect(page).to_have_url(re.compile(pattern), timeout=10_000)


def emptied(page: Page, selector: str, param: str) -> None:
    """Empty a field with the keyboard; the page follows with the parameter left out (a
    size not given follows n)."""
    field = page.locator(selector)
    field.click()
    field.press("Control+a")
    field.press("Backspace")
    assert field.evaluate("el => el === document.activeElement"), f"{selector} lost focus"
    expect(page).not_to_have_url(re.compile(rf"[?&]{param}=[^&]"), timeout=10_000)


def column(page: Page, table: str, n: int) -> list[str]:
    return [
        t.strip() for t in page.locator(f"#{table} tbody tr td:nth-child({n})").all_text_contents()
    ]


# ---------------------------------------------------------------- the head lab


def lab_matches_the_api(page: Page) -> None:
    """The page's own JSON for the address bar's state, run through POST /api/attention
    with every input spelled out: the query table shows that answer."""
    state = page.request.get("/lab.json?" + urlsplit(page.url).query).json()
    body = {
        "tokens": state["tokens"],
        "x": state["x"],
        "w_q": state["w_q"],
        "w_k": state["w_k"],
        "w_v": state["w_v"],
        "mask": state["mask"],
        "scale": state["scale_factor"] != 1,
        "positional": state["positional"],
        "query": state["query"]["index"],
    }
    api = page.request.post("/api/attention", data=body).json()
    rows = api["query"]["rows"]
    assert column(page, "query-table", 2) == [printed(r["dot"]) for r in rows]
    assert column(page, "query-table", 3) == [printed(r["scaled"]) for r in rows]
    assert column(page, "query-table", 4) == ["0" if r["visible"] else "−∞" for r in rows]
    assert column(page, "query-table", 5) == [printed(r["weight"]) for r in rows]
    assert sum(r["weight"] for r in rows) == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("start", "selector", "text", "replace", "param"),
    [
        ("/", "#tokens", " dog purrs", False, "tokens"),  # p of "purrs" is a page shortcut
        ("/", "#seed", "42", True, "seed"),
        ("/?mask=window&window=3", "#window", "2", True, "window"),
    ],
)
def test_typing_in_the_lab(
    page: Page, start: str, selector: str, text: str, replace: bool, param: str
) -> None:
    page.goto(start)
    expect(page.locator("#fig-weights svg").first).to_be_visible()
    page.evaluate(MARK_KEPT, KEPT)
    typed = type_like_a_teacher(page, selector, text, replace=replace)
    settled(page, param, typed.replace(" ", "+"))
    lab_matches_the_api(page)
    header_follows_the_state(page, param)
    # a swap changes only what differs: what the edit leaves alone is the same element
    assert page.evaluate(STILL_KEPT, KEPT) == KEPT


# Headings no edit changes, marked with an expando (not an attribute, which a swap would
# remove): an element the swaps replaced does not have it.
KEPT = ["controls-title", "sec-strip", "sec-vectors"]
MARK_KEPT = "ids => ids.forEach(id => { document.getElementById(id).kept = true; })"
STILL_KEPT = "ids => ids.filter(id => document.getElementById(id).kept)"


def header_follows_the_state(page: Page, param: str) -> None:
    """The header follows the state: presenter mode, the languages and the embed code."""
    here = urlsplit(page.url).query
    present = page.locator("[data-present-toggle]").get_attribute("href") or ""
    assert parse_qs(urlsplit(present).query) == {**parse_qs(here), "present": ["1"]}
    spanish = page.locator(".lang-switch a[hreflang='es']").get_attribute("href") or ""
    assert parse_qs(urlsplit(spanish).query)[param] == parse_qs(here)[param]


def test_typing_in_every_matrix_of_the_lab(page: Page) -> None:
    """One cell of x, W_Q, W_K and W_V, one page: each edit changes that cell and no other
    matrix (what the form shows is what was computed), and the numbers are the API's."""
    page.goto("/")
    expect(page.locator("#fig-weights svg").first).to_be_visible()
    for param, row, col, text in (
        ("x", 1, 0, "0.5"),
        ("w_q", 0, 1, "-1.25"),
        ("w_k", 1, 0, "0.75"),
        ("w_v", 1, 1, "-2"),
    ):
        others = {m: page.locator(f"#{m}-0-0").input_value() for m in ("x", "w_q", "w_k", "w_v")}
        typed = type_like_a_teacher(page, f"#{param}-{row}-{col}", text, replace=True)
        settled_cell(page, param, row, col, typed)
        lab_matches_the_api(page)
        kept = {m: page.locator(f"#{m}-0-0").input_value() for m in others}
        assert kept == others, f"editing {param} changed another matrix"
    header_follows_the_state(page, "w_v")


def test_backspace_in_the_window_keeps_the_field(page: Page) -> None:
    page.goto("/?mask=window&window=3")
    field = page.locator("#window")
    field.click()
    field.press("End")
    field.press("Backspace")
    page.wait_for_timeout(400)
    assert page.evaluate("document.activeElement.id") == "window"
    assert field.input_value() == ""
    type_like_a_teacher(page, "#window", "2", replace=False)
    settled(page, "window", "2")
    lab_matches_the_api(page)


# ---------------------------------------------------------------- /heads and /cost


def heads_match_the_api(page: Page) -> None:
    q = {k: v[0] for k, v in parse_qs(urlsplit(page.url).query).items()}
    body: dict[str, Any] = {
        "tokens": q["text"].split(),
        "d_model": int(q["d_model"]),
        "heads": int(q["heads"]),
        "kv_heads": int(q["kv_heads"]),
        "d_head": int(q["d_head"]),
        "mask": {"causal": q["mask"] == "causal"},
        "positional": q["positional"],
        "scale": q["scale"] == "on",
        "seed": int(q["seed"]),
    }
    api = page.request.post("/api/heads", data=body).json()
    shown = page.locator("#output-table tbody tr").evaluate_all(
        "rows => rows.map(r => [...r.querySelectorAll('td')].map(td => td.textContent.trim()))"
    )
    assert shown == [[printed(v) for v in row] for row in api["output"]]


@pytest.mark.parametrize(
    ("selector", "text", "replace"),
    [("#text", " purrs", False), ("#heads", "8", True), ("#d_model", "12", True),
     ("#seed", "7", True), ("#d_head", "3", True)],
)  # fmt: skip
def test_typing_in_heads(page: Page, selector: str, text: str, replace: bool) -> None:
    page.goto("/heads")
    typed = type_like_a_teacher(page, selector, text, replace=replace)
    settled(page, selector[1:], typed.replace(" ", "+"))
    heads_match_the_api(page)
    # The key/value choices come from the server's form, and always divide h.
    h = int(page.locator("#heads").input_value())
    options = [int(o) for o in page.locator("#kv_heads option").all_inner_texts()]
    assert options == [g for g in range(1, h + 1) if h % g == 0]


@pytest.mark.parametrize(
    ("selector", "text"), [("#seq_len", "8192"), ("#batch", "4"), ("#layers", "32"),
                           ("#head_dim", "64")],
)  # fmt: skip
def test_typing_in_cost(page: Page, selector: str, text: str) -> None:
    page.goto("/cost")
    typed = type_like_a_teacher(page, selector, text, replace=True)
    q = {k: v[0] for k, v in settled(page, selector[1:], typed).items()}
    api = page.request.get(
        "/api/cost",
        params={k: q[k] for k in ("seq_len", "heads", "kv_heads", "head_dim", "layers", "batch")},
    ).json()
    expect(page.locator("#row-score-entries td").nth(2)).to_have_text(
        f"{api['score_entries_per_head']:,}"
    )
    expect(page.locator("#row-kv-token td").nth(2)).to_contain_text(
        f"{api['kv_cache_bytes_per_token']:,}"
    )


def test_typing_in_the_other_cost_fields(page: Page) -> None:
    """Every other number of /cost, one page: after each, the page's figures are /api/cost's
    for the whole state in the address bar."""
    page.goto("/cost")
    for selector, text in (
        ("#gpu_memory_gib", "48"),
        ("#weight_bytes", "1"),
        ("#heads", "16"),
        ("#kv_heads", "4"),
        ("#kv_lora_rank", "256"),
        ("#rope_head_dim", "32"),
        ("#window", "1024"),
        ("#window_layers", "1"),  # of the 1 layer
        ("#sinks", "4"),
    ):
        typed = type_like_a_teacher(page, selector, text, replace=True)
        q = {k: v[0] for k, v in settled(page, selector[1:], typed).items() if v[0]}
        response = page.request.get("/api/cost", params={k: q[k] for k in q if k != "preset"})
        assert response.ok, response.text()
        api = response.json()
        expect(page.locator("#row-score-entries td").nth(2)).to_have_text(
            f"{api['score_entries_per_head']:,}"
        )
        expect(page.locator("#row-kv-token td").nth(2)).to_contain_text(
            f"{api['kv_cache_bytes_per_token']:,}"
        )


# ---------------------------------------------------------------- /kernel and the walk-through


def lab_body(page: Page) -> dict[str, Any]:
    """The head of the address bar's state, every input spelled out (from /lab.json)."""
    state = page.request.get("/lab.json?" + urlsplit(page.url).query).json()
    body = {k: state[k] for k in ("tokens", "x", "w_q", "w_k", "w_v", "mask", "positional")}
    return {**body, "scale": state["scale_factor"] != 1}


def kernel_matches_the_api(page: Page) -> dict[str, Any]:
    """The traffic counts, the first tile's running maxima and the prefill's weights on
    screen are the API's for the address bar's state; returns the API's decoding."""
    q = {k: v[0] for k, v in parse_qs(urlsplit(page.url).query).items()}
    body = lab_body(page)
    tiling = {k: int(q[k]) for k in ("block_q", "block_k", "sram_elements") if q.get(k)}
    tiled = page.request.post("/api/kernel/tiled", data={**body, **tiling, "order": q["order"]})
    tiled_json = tiled.json()
    if "sram_elements" in tiling:  # M set the tile sizes: B_c = ⌈M/4d⌉ keys, B_r queries
        blocks = page.locator("#sram-blocks")
        expect(blocks).to_contain_text(f"= {tiled_json['block_k']} · B_r")
        expect(blocks).to_contain_text(re.compile(rf"= {tiled_json['block_q']}$"))
    expect(page.locator("#traffic-tiled-reads")).to_have_text(
        f"{tiled_json['traffic']['tiled']['reads']:,}"
    )
    expect(page.locator("#traffic-tiled-writes")).to_have_text(
        f"{tiled_json['traffic']['tiled']['writes']:,}"
    )
    m_after = 3 if q["order"] == "fa1" else 2  # fa1 adds the tile's own maximum before it
    assert column(page, "tile-rows", m_after + 1) == [
        printed(m) for m in tiled_json["steps"][0]["m"]
    ]
    cache: dict[str, Any] = {"policy": q["cache"]}
    if q["cache"] != "full":
        cache["window"] = int(q["cache_window"])
    if q["cache"] == "sinks":
        cache["sinks"] = int(q["sinks"])
    decode = page.request.post(
        "/api/kernel/decode", data={**body, "prompt": int(q["prompt"]), "cache": cache}
    ).json()
    shown = page.locator("#prefill-weights tbody tr").evaluate_all(
        "rows => rows.map(r => [...r.querySelectorAll('td')].map(td => td.textContent.trim()))"
    )
    assert shown == [[printed(w) for w in row] for row in decode["prefill"]["weights"]]
    return decode


def test_typing_in_the_kernel(page: Page) -> None:
    """Every number field and the text of /kernel, one page: the results follow each edit
    and the field being typed in is never replaced."""
    page.goto("/kernel?mask=window&window=3")
    expect(page.locator("#fig-tiled-progress svg").first).to_be_visible()
    page.click("#tiled-next")  # a step first: an edit of the state starts the steps again
    expect(page.locator("#tiled-status")).to_contain_text("Step 2 of 4")
    for selector, text, replace, param in (
        ("#kernel-form input[name=tokens]", " dog", False, "tokens"),
        ("#kernel-form input[name=window]", "2", True, "window"),  # the mask's window
    ):
        typed = type_like_a_teacher(page, selector, text, replace=replace)
        settled(page, param, typed.replace(" ", "+"))
        kernel_matches_the_api(page)
    # M sets the tile sizes when they are left empty (M and both sizes would be refused).
    for param in ("block_q", "block_k"):
        emptied(page, f"#kernel-form input[name={param}]", param)
    typed = type_like_a_teacher(page, "#sram-elements", "24", replace=True)
    settled(page, "sram_elements", typed)
    kernel_matches_the_api(page)
    emptied(page, "#sram-elements", "sram_elements")
    for selector, text, replace, param in (
        ("#kernel-form input[name=block_q]", "3", True, "block_q"),
        ("#kernel-form input[name=block_k]", "1", True, "block_k"),
        ("#kernel-form input[name=prompt]", "3", True, "prompt"),
    ):
        typed = type_like_a_teacher(page, selector, text, replace=replace)
        settled(page, param, typed.replace(" ", "+"))
        kernel_matches_the_api(page)
    expect(page.locator("#tiled-status")).to_contain_text("Step 1 of")
    page.select_option("#order", "fa1")
    settled(page, "order", "fa1")
    expect(page.locator("#tile-order")).to_have_text("fa1")
    page.select_option("#cache-policy", "sinks")
    settled(page, "cache", "sinks")
    for selector, text, param in (
        ("#cache-window", "3", "cache_window"),
        ("#cache-sinks", "2", "sinks"),
    ):
        typed = type_like_a_teacher(page, selector, text, replace=True)
        settled(page, param, typed)
    decode = kernel_matches_the_api(page)
    page.click("#decode-next")
    expect(page.locator("#decode-output")).to_have_text(
        format_vector(decode["steps"][0]["output"], 3)
    )


def test_the_walk_through_steps_in_place_and_guesses_only_when_asked(page: Page) -> None:
    """Steps swap in where the reader is (no reload, the figure stays on screen); the guess
    is typed key by key and revealed only when it is sent; the toolbar saves SVG."""
    page.goto("/walkthrough?step=masked&predict=1")
    expect(page.locator("#walk-masked svg").first).to_be_visible()
    page.evaluate("window.__samePage = true")
    page.locator("#walk-next").click()
    expect(page).to_have_url(re.compile(r"step=weights"))
    assert page.evaluate("window.__samePage === true"), "the step reloaded the page"
    typed = type_like_a_teacher(page, "#guess", "0.6", replace=True)
    expect(page.locator("#guess-result")).to_have_count(0)  # typing reveals nothing
    page.locator("#guess").press("Enter")
    expect(page).to_have_url(re.compile(r"[?&]guess="))
    q = {k: v[0] for k, v in parse_qs(urlsplit(page.url).query).items()}
    assert q["guess"] == typed
    rows = page.request.post(
        "/api/attention", data={**lab_body(page), "query": int(q.get("query", 1))}
    ).json()["query"]["rows"]
    weight = printed(rows[int(q["key"])]["weight"])
    expect(page.locator("#guess-result")).to_contain_text(f"the weight is {weight}")
    figure = page.locator("#walk-weights")
    expect(figure.locator("svg").first).to_be_visible()
    box = figure.bounding_box()
    assert box is not None
    assert 0 <= box["y"] < 800, "the step's figure is off the screen"
    page.locator("h1").click()  # focus off the fields: ← is the page's key again
    page.keyboard.press("ArrowLeft")
    expect(page).to_have_url(re.compile(r"step=masked"))
    expect(page.locator("#step-title")).to_contain_text("Step 5")
    assert page.evaluate("window.__samePage === true")
    expect(page.locator("#walk-keys td[data-column=masked]").first).to_be_visible()
    with page.expect_download() as download:
        page.locator("#walk-masked [data-hm-download=svg]").click()
    assert download.value.suggested_filename.endswith(".svg")


def test_shortcuts_never_fire_from_a_field(page: Page) -> None:
    page.goto("/")
    type_like_a_teacher(page, "#tokens", " p c", replace=False)
    page.locator("#tokens").press("ArrowLeft")
    assert "present=1" not in page.url
    expect(page.locator("body")).not_to_have_class(re.compile("present"))
    page.locator("h1").click()  # focus off the field: now p is presenter mode
    page.keyboard.press("p")
    page.wait_for_load_state()
    expect(page).to_have_url(re.compile(r"present=1"))
    assert "tokens=The+cat+sleeps+p+c" in page.url  # and it kept the typed state


# ---------------------------------------------------------------- colours, read from the page

VIRIDIS_START = "#440154"
DIVERGING_START = "#67001f"


def check_colour_ranges(page: Page) -> int:
    """Weights on 0–1, signed values symmetric about 0; returns the heatmaps checked."""
    page.wait_for_load_state("networkidle")
    checked = 0
    for drawn in heatmaps(page):
        assert drawn["rows"] > 0, f"{drawn['id']}: a heatmap without token labels"
        assert drawn["cols"] > 0, f"{drawn['id']}: a heatmap without token labels"
        if drawn["first_stop"] is None:  # states, not values: each named by its swatch
            assert drawn["swatches"] >= 2, f"{drawn['id']}: neither a colour bar nor states"
            assert (drawn["low"], drawn["high"]) == (None, None), drawn["id"]
        elif drawn["first_stop"].lower() == VIRIDIS_START:
            assert (drawn["low"], drawn["high"]) == (0, 1), drawn["id"]
        else:
            assert drawn["first_stop"].lower() == DIVERGING_START, drawn["id"]
            assert drawn["low"] == pytest.approx(-drawn["high"]), drawn["id"]
            assert drawn["high"] > 0
        checked += 1
    return checked


@pytest.mark.parametrize(
    "path",
    ["/", "/?tokens=The+cat+sleeps+%3Cpad%3E&pad=3", "/walkthrough?step=weights",
     "/heads?heads=8&kv_heads=2&mask=causal", "/kernel", "/kernel?decode_step=3", "/model",
     "/heads?text=extraordinarily+unbelievable+circumstances+surrounding+international",
     "/?present=1"],
)  # fmt: skip
def test_colour_ranges_on_the_page(page: Page, path: str) -> None:
    page.goto(path)
    expect(page.locator("figure.hm").first).to_be_visible()  # all in the page's markup
    assert check_colour_ranges(page) >= 1
    for drawn in heatmaps(page):
        assert drawn["smallest"] >= 10, f"{path} {drawn['id']}: text under 10 px"
        assert drawn["overlaps"] == 0, f"{path} {drawn['id']}: labels over each other"
        assert drawn["under_title"] == 0, f"{path} {drawn['id']}: the title over labels"


# ---------------------------------------------------------------- the first screen


def test_the_labs_heatmaps_are_on_the_first_screen(page: Page) -> None:
    page.goto("/")
    for figure in ("fig-scores", "fig-scaled", "fig-masked", "fig-weights"):
        box = cells_box(page, figure)
        assert box["y"] + box["height"] <= 800, f"{figure} ends below the fold"
    save_screenshot(page, "teacher-lab-1280x800")


def test_presenter_mode_shows_weights_and_breakdown_without_scrolling(page: Page) -> None:
    page.set_viewport_size({"width": 1280, "height": 720})
    page.goto("/?present=1")
    box = cells_box(page, "fig-weights")
    assert box["y"] + box["height"] <= 720
    table = page.locator("#query-table").bounding_box()
    assert table is not None
    assert table["y"] + table["height"] <= 720
    assert page.evaluate("window.scrollY") == 0
    save_screenshot(page, "teacher-lab-present-1280x720")


# The pages with a main picture are measured on a phone in test_first_screen.py.
@pytest.mark.parametrize("path", ["/lessons", "/docs"])
def test_phones_never_scroll_sideways(open_page: Callable[..., Page], path: str) -> None:
    page = open_page(390, 844)
    page.goto(path)
    page.wait_for_load_state("networkidle")
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390, f"{path} is {width} px wide at 390"
    header = page.locator(".site-header").bounding_box()
    assert header is not None
    assert header["height"] <= HEADER_MAX_PX
    name = path.strip("/").split("?")[0] or "lab"
    save_screenshot(page, f"teacher-{name}-390x844")


# The text and number fields a teacher types into, with their width on screen.
FIELD_WIDTHS = """() => [...document.querySelectorAll('main input:is([type=text], [type=number])')]
  .filter((e) => e.offsetParent).map((e) => [e.id || e.name, e.getBoundingClientRect().width])"""
FIELD_MIN_PX = 64  # a number or a few words stay in view while they are typed


@pytest.mark.parametrize("size", [VIEWPORTS["desktop"], VIEWPORTS["phone"]])
def test_no_field_is_squeezed_by_a_long_spanish_label(
    open_page: Callable[..., Page], size: tuple[int, int]
) -> None:
    page = open_page(*size)
    for path in ("/", "/walkthrough", "/heads", "/cost", "/kernel", "/model"):
        page.goto(path + "?lang=es")
        narrow = [f for f in page.evaluate(FIELD_WIDTHS) if f[1] < FIELD_MIN_PX]
        assert narrow == [], f"{path} in Spanish at {size}: fields too narrow to type in"


# Chart titles (not the heatmaps', which sit above their key axis) that run past their
# figure's edges, where plotly cuts them.
# A chart's title is the page's HTML (the `chart` macro): it must wrap inside its figure and
# the screen, never run past them. A title plotly still draws (.gtitle) must fit its plot,
# unless plotly places it itself (automargin).
CUT_TITLES = """() => [
  ...[...document.querySelectorAll('figure.chart')].flatMap((f) => {
    const box = f.getBoundingClientRect();
    const t = f.querySelector('.chart-title');
    const r = t.getBoundingClientRect();
    const cut = t.scrollWidth > t.clientWidth + 1 || r.left < box.left - 1
      || r.right > box.right + 1 || r.left < -1 || r.right > window.innerWidth + 1;
    return cut ? [f.id] : [];
  }),
  ...[...document.querySelectorAll('.js-plotly-plot')]
    .filter((p) => !(p.layout.title || {}).automargin).flatMap((p) => {
      const box = p.getBoundingClientRect();
      return [...p.querySelectorAll('.gtitle')].map((t) => t.getBoundingClientRect())
        .filter((r) => r.width > 0 && (r.left < box.left - 1 || r.right > box.right + 1))
        .map(() => p.dataset.figure);
    }),
]"""


@pytest.mark.parametrize("size", [VIEWPORTS["desktop"], VIEWPORTS["phone"]])
def test_chart_titles_fit_their_figures_in_spanish(
    open_page: Callable[..., Page], size: tuple[int, int]
) -> None:
    page = open_page(*size)
    for path in ("/heads", "/cost", "/kernel"):
        page.goto(path + "?lang=es")
        expect(page.locator("figure.chart .chart-title").first).to_be_visible()
        figures = page.locator("[data-figure]")
        for i in range(figures.count()):  # each is drawn when it comes near the screen
            figures.nth(i).scroll_into_view_if_needed()
            expect(figures.nth(i).locator(".main-svg").first).to_be_attached()
        assert page.evaluate(CUT_TITLES) == [], f"{path} in Spanish at {size}"


# ---------------------------------------------------------------- axe in every mode and language


# Each mode is an address of its own (the language and presenter switches are links), so one
# page per path goes through them in turn: axe is what costs here, not the page. Spanish
# presenter mode has both switches on at once; the lab in presenter mode is audited at the
# projector's size, in both languages, in test_classroom.py.
AXE_VIEWS = ("", "lang=es&present=1")


@pytest.mark.parametrize("path", ["/", "/cost", "/heads"])
def test_axe_in_each_mode_and_language(page: Page, path: str) -> None:
    found: dict[str, list[str]] = {}
    for view in AXE_VIEWS:
        page.goto(path + ("?" + view if view else ""))
        # /cost's charts wait for plotly.js (4.8 MB, compiled anew after each navigation):
        # longer than the default 5 s on a busy machine
        figure = page.locator("figure.hm, .js-plotly-plot").first
        expect(figure).to_be_visible(timeout=30_000)
        found[view or "default"] = axe_violations(page)
    assert {view: v for view, v in found.items() if v} == {}, "axe found violations"


def test_the_padding_demo_extends_the_worked_example_in_the_browser(page: Page) -> None:
    """Type " <pad>", tick its padding box: cat still gives 0.670 / 0.330 (nothing else moved)."""
    page.goto("/")
    type_like_a_teacher(page, "#tokens", " <pad>", replace=False)
    settled(page, "tokens", "The+cat+sleeps+%3Cpad%3E")
    page.locator("#pad-3").check()
    settled(page, "pad", "3")
    expect(page.locator("#query-table tbody tr td:nth-child(5)")).to_have_text(
        ["0.670", "0.330", "0.000", "0.000"]
    )
    q = parse_qs(urlsplit(page.url).query)
    assert q["w_q"] == ["1,0.5;0,1"]
    assert q["x"][0].startswith("1,0;0,1;1,1;")
    lab_matches_the_api(page)


MODEL_SENTENCE = "the quick brown fox jumps over the lazy dog near the river"


def model_matches_the_api(page: Page) -> None:
    q = {k: v[0] for k, v in parse_qs(urlsplit(page.url).query).items()}
    body = {"text": q["text"], "layer": int(q["layer"]), "head": int(q["head"])}
    if "query" in q:
        body["query"] = int(q["query"])
    api = page.request.post("/api/model", data=body).json()
    expect(page.locator("#head-title")).to_contain_text(f"{q['layer']}")
    weights = [printed(r["weight"]) for r in api["head"]["query"]["rows"]]
    expect(page.locator("#query-table tbody tr td:nth-child(5)")).to_have_text(weights)


def test_the_model_selectors_and_sentence_update_live(page: Page) -> None:
    page.goto("/model?" + "text=" + MODEL_SENTENCE.replace(" ", "+") + "&layer=0&head=0")
    expect(page.locator("#fig-grid .hm-panel").first).to_be_visible(timeout=30_000)
    for name, value in (("layer", "3"), ("head", "7"), ("query", "4")):
        page.select_option(f"#{name}", value)
        settled(page, name, value)
        model_matches_the_api(page)
    typed = type_like_a_teacher(page, "#text", " bank", replace=False)
    settled(page, "text", typed.replace(" ", "+"))
    model_matches_the_api(page)
    # The second sentence: the similarity on screen is the API's for both.
    other = type_like_a_teacher(page, "#compare", "a dog", replace=True)
    settled(page, "compare", other.replace(" ", "+"))
    model_matches_the_api(page)
    api = page.request.post("/api/model", data={"text": typed, "compare_text": other}).json()
    expect(page.locator("#similarity-result")).to_contain_text(printed(api["similarity"], 4))
