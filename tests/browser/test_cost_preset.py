"""/cost in the browser: a live edit of the workload keeps the chosen model and brings its
context-length warning; a live edit of a field the model filled lets the model go."""

import re

from playwright.sync_api import Page, expect


def test_the_preset_stays_through_workload_edits_and_goes_with_a_model_edit(page: Page) -> None:
    page.goto("/cost?preset=llama-2-7b")
    expect(page.locator("#preset-note")).to_contain_text("Llama-2-7B")
    page.fill("#seq_len", "131072")
    expect(page).to_have_url(
        re.compile(r"preset=llama-2-7b.*seq_len=131072|seq_len=131072.*preset=llama-2-7b")
    )
    expect(page.locator("#cost-warnings")).to_contain_text(
        "seq_len is 131,072 but Llama-2-7B was built for at most 4,096 tokens"
    )
    expect(page.locator("#preset")).to_have_value("llama-2-7b")
    page.fill("#layers", "16")
    expect(page).to_have_url(re.compile(r"layers=16"))
    expect(page.locator("#preset-note")).to_have_count(0)
    expect(page.locator("#preset")).to_have_value("")
    expect(page.locator("#heads")).to_have_value("32")  # the model's other numbers stay
    expect(page.locator("#cost-results")).not_to_contain_text("was built for at most")
