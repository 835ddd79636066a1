"""Classroom mode in a real browser: presenter mode on a 1280×720 projector, the walk-through
and its keys, lesson links, the embed view inside an iframe, and the Spanish pages."""

import re

import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import (
    HEADER_CONTROLS,
    HEADER_MAX_PX,
    axe_violations,
    save_screenshot,
)
from tests.browser.figures import cells_box, heatmaps

PROJECTOR = {"width": 1280, "height": 720}


def press(page: Page, key: str) -> None:
    """A key that follows a link: pressed once this page's scripts listen, and waited for
    until the next page has loaded its own."""
    page.wait_for_load_state()
    with page.expect_navigation():
        page.keyboard.press(key)


def pixels(page: Page, selector: str, prop: str) -> float:
    value = page.eval_on_selector(selector, f"el => getComputedStyle(el)['{prop}']")
    return float(value.removesuffix("px"))


@pytest.mark.parametrize(
    ("name", "path"),
    [("lab", "/"), ("walkthrough", "/walkthrough?step=weights")],
)
def test_presenter_mode_on_a_projector(page: Page, name: str, path: str) -> None:
    page.set_viewport_size(PROJECTOR)
    page.goto(path + ("&" if "?" in path else "?") + "present=1")
    expect(page.locator("body")).to_have_class(re.compile(r"\bpresent\b"))
    assert pixels(page, "body", "fontSize") >= 24  # 150 % type
    assert page.eval_on_selector("body", "el => getComputedStyle(el).backgroundColor") == (
        "rgb(0, 0, 0)"
    )
    if name == "lab":
        # The lab shows every stage and the query's row on one screen (issue 28.2), four
        # heatmaps across: thick cells and type of 16 px or more, readable from the back.
        expect(page.locator("#fig-weights svg")).to_be_visible()
        for figure in ("fig-scores", "fig-scaled", "fig-masked", "fig-weights"):
            box = cells_box(page, figure)
            assert box["height"] / 3 >= 56, f"{figure}: thin cells"  # three tokens
            assert box["y"] + box["height"] <= PROJECTOR["height"], f"{figure} below the fold"
        row = page.locator("#query-table tbody tr").nth(1)  # "cat", the selected query
        assert row.bounding_box()["y"] + row.bounding_box()["height"] <= PROJECTOR["height"]
        assert all(drawn["smallest"] >= 15.99 for drawn in heatmaps(page)), "text under 16 px"
    else:
        plot = page.locator("figure.hm svg").first
        expect(plot).to_be_visible()
        assert plot.bounding_box()["height"] >= 440  # thick cells, readable from the back
    save_screenshot(page, f"presenter-{name}-1280x720")
    assert axe_violations(page) == []


def focused(page: Page) -> str:
    """What has the keyboard focus: its id, or its data-* marker, or its tag."""
    return page.evaluate(
        "() => { const e = document.activeElement; return e.id || "
        "Object.keys(e.dataset).join(' ') || e.tagName; }"
    )


def test_keys_toggle_presenter_mode_and_controls_and_list_themselves(page: Page) -> None:
    page.set_viewport_size(PROJECTOR)
    page.goto("/lessons")
    press(page, "p")
    expect(page).to_have_url(re.compile(r"present=1"))
    expect(page.locator("body")).to_have_class("present")
    page.goto("/?present=1")
    toggle = page.locator("[data-controls-toggle]")
    expect(toggle).to_have_text("Show controls")  # what a press will do
    controls = page.locator("main form:not([data-keep])").first
    tucked = controls.bounding_box()["height"]
    page.locator("h1").click()  # focus away from any form
    page.keyboard.press("c")
    expect(page.locator("body")).to_have_class(re.compile(r"controls-open"))
    expect(toggle).to_have_text("Hide controls")
    expect(toggle).to_have_attribute("aria-expanded", "true")
    assert controls.bounding_box()["height"] > tucked
    # In a field the keys are letters: nothing opens, nothing toggles.
    field = page.locator("#tokens")
    field.click()
    field.press("End")
    with page.expect_response(lambda r: "fragment" in r.url or "tokens=" in r.url):
        field.press_sequentially(" ?cp")
    expect(field).to_have_value("The cat sleeps ?cp")
    expect(page.locator("#shortcuts")).to_be_hidden()
    expect(page.locator("body")).to_have_class(re.compile(r"present.*controls-open"))
    # "?" from the page: the list of keys, c among them; Escape gives the focus back.
    page.locator("[data-help-open]").focus()
    page.keyboard.press("?")
    help_box = page.locator("#shortcuts")
    expect(help_box).to_be_visible()
    expect(help_box).to_contain_text("Show or hide the editing controls")
    expect(help_box).to_contain_text("Leave presenter mode")
    assert page.evaluate("document.activeElement.closest('#shortcuts') !== null")
    page.keyboard.press("p")  # the page behind the list takes no keys
    save_screenshot(page, "shortcuts-1280x720")
    page.keyboard.press("Escape")
    expect(help_box).to_be_hidden()
    expect(page).to_have_url(re.compile(r"present=1"))
    assert focused(page) == "helpOpen"
    # The visible button opens it too; its Close button closes it, focus back on the button.
    page.locator("[data-help-open]").click()
    expect(help_box).to_be_visible()
    help_box.get_by_role("button", name="Close").click()
    expect(help_box).to_be_hidden()
    assert focused(page) == "helpOpen"
    page.locator("h1").click()
    page.keyboard.press("c")
    expect(toggle).to_have_text("Show controls")
    press(page, "p")
    expect(page).not_to_have_url(re.compile(r"present="))


@pytest.mark.parametrize(("lang", "other"), [("en", "Español"), ("es", "English")])
def test_a_phone_header_keeps_the_language_switch_in_view(page: Page, lang, other) -> None:
    page.set_viewport_size({"width": 390, "height": 844})
    for query in (f"?lang={lang}", f"?lang={lang}&present=1"):  # the longest labels
        page.goto("/lessons" + query)
        switch = page.locator(".lang-switch a", has_text=other)
        expect(switch).to_be_visible()
        box = switch.bounding_box()
        assert box["x"] >= 0
        assert box["x"] + box["width"] <= 390, f"{query}: the switch ends at {box}"
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        assert page.locator(".site-header").bounding_box()["height"] <= HEADER_MAX_PX
        save_screenshot(page, f"header-390x844-{lang}{'-present' if 'present' in query else ''}")
    switch.click()
    expect(page.locator("html")).to_have_attribute("lang", "es" if lang == "en" else "en")


def test_a_phones_header_holds_every_control_inside_the_screen(page: Page) -> None:
    """Issue 28.6: at 390 px nothing in the header is cut off or scrolls sideways (it cut
    "English" to "Engli" and "Modo presentación"); the pages wait in a menu. Each language
    and mode on two of the four pages with the most in their header; test_first_screen.py
    checks the header of every page with a main picture, in English and in Spanish presenter
    mode, on the same phone."""
    page.set_viewport_size({"width": 390, "height": 844})
    visits = [
        ("/model", "es", ""), ("/model", "en", "&present=1"),
        ("/decoder", "es", ""), ("/decoder", "en", "&present=1"),
    ]  # fmt: skip
    for path, lang, mode in visits:
        page.goto(f"{path}?lang={lang}{mode}")
        controls = page.evaluate(HEADER_CONTROLS)
        assert len(controls) >= 5, controls  # brand, menu, presenter, embed, languages
        outside = [c for c in controls if c["left"] < 0 or c["right"] > 390]
        assert outside == [], f"{path}?lang={lang}{mode}: {outside}"
        assert page.locator(".site-header").bounding_box()["height"] <= HEADER_MAX_PX
    # The menu opens on a tap, its pages wrapped within the screen, and leads to them.
    menu = page.locator(".pages-menu > summary")
    menu.click()
    pages = page.locator(".pages-menu a")
    expect(pages.first).to_be_visible()
    controls = page.evaluate(HEADER_CONTROLS)
    assert len(controls) >= 5 + 8
    assert [c for c in controls if c["left"] < 0 or c["right"] > 390] == []
    save_screenshot(page, "header-390x844-menu-open")
    page.locator(".pages-menu a", has_text="Inside the kernel").click()
    expect(page).to_have_url(re.compile(r"/kernel\?"))


def test_walkthrough_arrow_keys_and_predict_first(page: Page) -> None:
    page.goto("/walkthrough?predict=1")
    heading = page.locator("#step-title")
    expect(heading).to_contain_text("Step 1 of 8")
    for number in range(2, 7):
        press(page, "ArrowRight")
        expect(heading).to_contain_text(f"Step {number} of 8")
    expect(page).to_have_url(re.compile(r"step=weights"))
    expect(page.locator(".guess-form")).to_be_visible()
    expect(page.locator("#walk-weights")).to_have_count(0)  # held back
    page.fill("#guess", "0.6")
    page.click(".guess-form button[type=submit]")
    expect(page.locator("#guess-result")).to_contain_text("the weight is 0.670")
    expect(page.locator("#guess-result")).to_contain_text("Close.")
    expect(page.locator("#walk-weights svg").first).to_be_visible()
    page.locator("h1").click()  # keys act when no field has the focus
    press(page, "ArrowLeft")
    expect(heading).to_contain_text("Step 5 of 8")
    expect(page).to_have_url(re.compile(r"predict=1"))
    for _ in range(3):
        press(page, "ArrowRight")
    expect(heading).to_contain_text("Step 8 of 8")
    expect(page.locator("#walk-keys tfoot td[data-column=weighted]")).to_have_text(
        "[0.835, −0.340]"
    )


def test_builtin_lesson_link_restores_its_state(page: Page) -> None:
    page.goto("/lessons?present=1")
    page.locator("#lesson-sliding-window h2 a").click()
    expect(page.locator(".lesson-banner")).to_contain_text("A sliding window")
    expect(page.locator("#mask-window")).to_be_checked()
    expect(page.locator("#window")).to_have_value("3")
    expect(page.locator("body")).to_have_class("present")  # the view came along
    page.locator("#walk-link").click()  # the same head, step by step
    expect(page.locator("#step-title")).to_contain_text("Step 1 of 8")
    expect(page).to_have_url(re.compile(r"window=3.*present=1"))
    page.go_back()
    page.locator(".lesson-banner a", has_text="Close the lesson").click()
    expect(page.locator(".lesson-banner")).to_have_count(0)
    expect(page.locator("#window")).to_have_value("3")


def test_a_lesson_link_keeps_live_edits(page: Page) -> None:
    page.goto("/?present=1")
    # Presenter mode tucks the controls away; the teacher opens them (the side panel).
    page.locator("[data-controls-toggle]").click()
    expect(page.locator("body")).to_have_class(re.compile(r"controls-open"))
    field = page.locator("#tokens")
    field.click()
    field.press("ControlOrMeta+a")
    field.press_sequentially("a b c d")
    expect(page).to_have_url(re.compile(r"tokens=a\+b\+c\+d.*present=1"))  # live update
    page.locator(".lesson-maker summary").click()
    page.fill("#lesson-title", "Four tokens")
    page.click(".lesson-maker button[type=submit]")
    expect(page.locator(".lesson-banner")).to_contain_text("Four tokens")
    expect(page.locator("#tokens")).to_have_value("a b c d")
    expect(page).to_have_url(re.compile(r"present=1"))


def test_teacher_makes_a_lesson_link_that_restores_the_view(page: Page) -> None:
    page.goto("/walkthrough?step=masked&lang=es")
    page.locator(".lesson-maker summary").click()
    page.fill("#lesson-title", "Who sees whom")
    page.fill("#lesson-text", "Count the grey cells in each row.")
    page.click(".lesson-maker button[type=submit]")
    expect(page.locator(".lesson-banner")).to_contain_text("Who sees whom")
    link = page.locator(".lesson-share input").input_value()
    page.goto("/")  # somewhere else, then the link a student gets
    page.goto(link)
    expect(page.locator(".lesson-banner")).to_contain_text("Count the grey cells in each row.")
    expect(page.locator("#step-title")).to_contain_text("Paso 5 de 8")  # state and language


def test_embed_view_inside_an_iframe(page: Page) -> None:
    page.goto("/embed?src=/walkthrough?step=scores")
    code = page.locator("#embed-code").input_value()
    assert '<iframe src="http://127.0.0.1:' in code
    assert "step=scores&amp;embed=1" in code
    frame = page.frame_locator("iframe.embed-preview")
    expect(frame.locator("#step-title")).to_contain_text("Step 3 of 8")
    expect(frame.locator(".site-header")).to_have_count(0)
    expect(frame.locator(".site-footer")).to_have_count(0)
    expect(frame.locator("body")).to_have_class("embed")
    expect(frame.locator("#walk-scores svg").first).to_be_visible()
    save_screenshot(page, "embed-preview")


def test_spanish_page_and_the_language_switch(page: Page) -> None:
    page.set_extra_http_headers({"Accept-Language": "es-ES,es;q=0.9"})
    page.goto("/walkthrough?step=weights")
    expect(page.locator("html")).to_have_attribute("lang", "es")
    expect(page.locator("#step-title")).to_contain_text("Paso 6 de 8")
    expect(page.locator(".site-header")).to_contain_text("Modo presentación")
    assert axe_violations(page) == []
    page.locator(".lang-switch a", has_text="English").click()
    expect(page.locator("html")).to_have_attribute("lang", "en")
    expect(page.locator("#step-title")).to_contain_text("Step 6 of 8")
    press(page, "ArrowRight")  # the chosen language is kept from page to page
    expect(page.locator("#step-title")).to_contain_text("Step 7 of 8")


def test_spanish_in_presenter_mode_is_axe_clean(page: Page) -> None:
    page.set_viewport_size(PROJECTOR)
    page.goto("/?lang=es&present=1&lesson=worked-example")
    expect(page.locator("h1")).to_contain_text("Una cabeza de atención")
    save_screenshot(page, "presenter-lab-es-1280x720")
    assert axe_violations(page) == []
