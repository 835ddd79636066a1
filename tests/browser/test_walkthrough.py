"""The walk-through on a 1280×720 projector in presenter mode, as a teacher gives it: one page,
stepped through with the arrow keys, "predict first" on. On every step the heading, the
sentence, the picture and the key table (with its weight column where the step has one), and
on the weights step the class's guess with its feedback, are inside the screen together."""

import re
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from playwright.sync_api import Page, expect

from tests.browser.conftest import save_screenshot
from tests.browser.figures import heatmaps
from tests.browser.test_lab import edit

PROJECTOR = {"width": 1280, "height": 720}
SMALLEST_PX = 16  # text on a picture, read from the back of the room
STEPS = ("x", "qkv", "scores", "scaled", "masked", "weights", "weighted", "output")

# Every element matched, with its box on screen: the ones not wholly inside the viewport.
OUTSIDE = """(selectors) => selectors.flatMap((sel) => [...document.querySelectorAll(sel)]
  .map((e) => ({sel, text: (e.textContent || '').trim().slice(0, 40),
                box: e.getBoundingClientRect()}))
  .filter(({box}) => box.width > 0 && (box.top < 0 || box.left < 0
    || box.bottom > innerHeight || box.right > innerWidth))
  .map(({sel, text, box}) => `${sel} "${text}" at ${Math.round(box.left)},${Math.round(box.top)}`
    + `–${Math.round(box.right)},${Math.round(box.bottom)}`))"""
ON_EVERY_STEP = ["#step-title", "#step-sentence", ".walk-picture figure.hm"]
TABLE = ["#walk-keys th", "#walk-keys td", "#walk-keys caption"]


def state(url: str) -> dict[str, str]:
    return dict(parse_qsl(urlsplit(url).query, keep_blank_values=True))


def type_a_guess(page: Page, text: str) -> None:
    """Key by key; after each key the field has the focus and holds what was typed, and
    nothing else moved: the address bar and the page stay as they were (no reveal)."""
    field = page.locator("#guess")
    field.click()
    address = page.url
    for typed in (text[: i + 1] for i in range(len(text))):
        field.press_sequentially(typed[-1], delay=0)
        assert field.evaluate("el => el === document.activeElement"), "typing moved the focus"
        if not typed.endswith("."):  # a number field's value hides a trailing "."
            assert field.input_value() == typed
        assert page.url == address
        expect(page.locator("#guess-result")).to_have_count(0)


def on_screen(page: Page, *selectors: str) -> None:
    for selector in selectors:
        expect(page.locator(selector).first).to_be_visible()
    outside: list[Any] = page.evaluate(OUTSIDE, list(selectors))
    assert outside == [], f"{state(page.url)['step']}: off the 1280×720 screen: {outside}"
    assert page.evaluate("document.documentElement.scrollWidth") <= PROJECTOR["width"]
    for drawn in heatmaps(page):
        assert drawn["smallest"] >= SMALLEST_PX - 0.01, (
            f"{drawn['id']}: text of {drawn['smallest']} px"
        )


def test_every_step_fits_a_projector_with_its_words_picture_and_weights(page: Page) -> None:
    page.set_viewport_size(PROJECTOR)
    page.goto("/walkthrough?step=x&present=1&predict=1")
    expect(page.locator("body")).to_have_class(re.compile(r"\bpresent\b"))
    heading = page.locator("#step-title")
    for number, step in enumerate(STEPS, start=1):
        expect(heading).to_contain_text(f"Step {number} of 8")
        expect(page).to_have_url(re.compile(rf"[?&]step={step}(&|$)"))
        table = TABLE if step not in ("x", "qkv") else []
        if step == "weights":
            # The weights are held back: the scores to reason from, and the guess form.
            expect(page.locator("#walk-keys [data-column=weight]")).to_have_count(0)
            on_screen(page, *ON_EVERY_STEP, *table, "#guess-form")
            save_screenshot(page, "presenter-walkthrough-weights-guess")
            before = state(page.url)
            type_a_guess(page, "0.6")
            page.locator("#guess").press("Enter")
            expect(page.locator("#guess-result")).to_contain_text(
                "You guessed 0.600 for “The”; the weight is 0.670, off by 0.070. Close."
            )
            # Enter sent the guess and changed nothing else: same state, same step.
            assert state(page.url) == {**before, "key": "0", "guess": "0.6"}
            on_screen(page, *ON_EVERY_STEP, *table, "#guess-result")
        else:
            on_screen(page, *ON_EVERY_STEP, *table)
        if step in ("weights", "weighted", "output"):
            expect(page.locator("#walk-keys tbody td[data-column=weight]")).to_have_count(3)
        save_screenshot(page, f"presenter-walkthrough-{number}-{step}")
        if step != STEPS[-1]:
            page.locator("#step-title").click()  # no field has the focus: → is the page's
            page.keyboard.press("ArrowRight")
    expect(page.locator("#walk-keys tfoot td[data-column=weighted]")).to_have_text(
        "[0.835, −0.340]"
    )
    expect(page.locator("#step-sentence")).to_contain_text("[0.835, −0.340]")
    # Enter on the "predict first" box applies the form as it is: nothing changes. Space
    # switches the mode, and only the mode.
    before = state(page.url)
    predict = page.locator("#walk-options input[name=predict]")
    predict.focus()
    edit(page, lambda: predict.press("Enter"))
    assert state(page.url) == before
    expect(heading).to_contain_text("Step 8 of 8")
    edit(page, lambda: predict.press("Space"))
    assert state(page.url) == {k: v for k, v in before.items() if k != "predict"}
    expect(heading).to_contain_text("Step 8 of 8")
