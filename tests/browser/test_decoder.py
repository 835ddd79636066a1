"""/decoder in a real browser: a prompt typed key by key, generation, a cache policy and a
head opened in one visit, each checked against the API for the address bar's state; the
presenter's first screen at 1280×720; a phone in Spanish without sideways scroll."""

import re
from collections.abc import Callable
from urllib.parse import parse_qs, urlsplit

from playwright.sync_api import Page, expect

from tests.browser.conftest import save_screenshot
from tests.browser.test_lab import edit


def state(page: Page) -> dict[str, str]:
    return {k: v[-1] for k, v in parse_qs(urlsplit(page.url).query).items()}


def bars(page: Page, list_id: str = "next-bars") -> list[tuple[str, str]]:
    pieces = page.locator(f"#{list_id} .piece").all_text_contents()
    return list(zip(pieces, page.locator(f"#{list_id} .p").all_text_contents(), strict=True))


def api(page: Page, **body: object) -> dict:
    response = page.request.post("/api/decoder", data=body)
    assert response.ok, response.text()
    return response.json()


def shown(token: str) -> str:
    return token.replace(" ", "␣")


def test_type_generate_switch_the_policy_and_open_a_head(page: Page) -> None:
    page.goto("/decoder?text=The")
    field = page.locator("#text")
    field.click()
    field.press("End")
    typed = "The"
    for key in " capital of Spain is":  # key by key: focus and value survive every swap
        field.press_sequentially(key, delay=0)
        typed += key
        assert field.evaluate("el => el === document.activeElement")
        assert field.input_value() == typed
    edit(page, lambda: field.press("Enter"))  # Enter applies at once, and nothing else
    assert field.input_value() == "The capital of Spain is"
    expect(page).to_have_url(re.compile(r"text=The\+capital\+of\+Spain\+is"))
    answer = api(page, text=typed, top=10)
    assert bars(page)[0] == (shown(answer["next"][0]["token"]), f"{answer['next'][0]['p']:.3f}")
    assert "Madrid" in bars(page)[0][0]
    assert page.locator("#steps").count() == 0  # the Enter pressed no button

    edit(page, lambda: page.locator("#generate-button").click())
    expect(page.locator("#steps > li")).to_have_count(8)
    assert state(page)["generate"] == "8"
    generated = api(page, text=typed, generate=8)
    expect(page.locator("#generated-text")).to_have_text(generated["text"])

    edit(page, lambda: page.locator("#policy").select_option("sinks"))
    assert (state(page)["policy"], state(page)["window"], state(page)["sinks"]) == (
        "sinks",
        "16",
        "4",
    )
    expect(page.locator("#cache-agree")).to_contain_text("The three agree")
    rows = page.locator("#steps summary").all_text_contents()
    assert all("read" in r for r in rows)

    expect(page.locator("#head-hint")).to_be_visible()  # no head open until one is chosen
    assert page.locator("#layer-heads").count() == 0
    cell = page.locator('#head-grid button[value="17.4"]')
    edit(page, lambda: cell.click())
    assert (state(page)["layer"], state(page)["head"]) == ("17", "4")
    expect(page.locator("#head-heading")).to_have_text("Layer 17, head 4, every stage")
    expect(page.locator("#head-shares")).to_contain_text("shared with query heads 3, 5")
    expect(page.locator("#head-weights svg")).to_be_visible()
    expect(page.locator("#layer-heads")).to_be_visible()
    save_screenshot(page, "decoder-1280x800")


def test_presenter_and_phone(open_page: Callable[..., Page]) -> None:
    """The presenter's first screen holds the prompt, the bars and the key numbers; a phone
    in Spanish shows the same without scrolling sideways, in presenter mode too."""
    page = open_page(1280, 720)
    page.goto("/decoder?present=1")
    for part in ("#next .prompt-echo", "#next-bars", "#key-numbers"):
        box = page.locator(part).bounding_box()
        assert box is not None
        assert box["y"] + box["height"] <= 720, f"{part} is below the first screen"
    assert page.evaluate("window.scrollY") == 0
    save_screenshot(page, "decoder-present-1280x720")

    phone = open_page(390, 844)
    phone.goto("/decoder?lang=es&go=generate")
    expect(phone.locator("#next-heading")).to_have_text("Lo que el modelo espera a continuación")
    expect(phone.locator("#steps > li")).to_have_count(8)
    width = phone.evaluate("document.documentElement.scrollWidth")
    assert width <= 390, f"/decoder is {width} px wide at 390"
    assert re.search(r"\d,\d{3}", bars(phone)[0][1])  # Spanish decimals
    save_screenshot(phone, "decoder-390x844-es")
    phone.goto("/decoder?lang=es&present=1")  # the presenter's layout, stacked on a phone
    expect(phone.locator("#next-bars .piece").first).to_be_visible()
    width = phone.evaluate("document.documentElement.scrollWidth")
    assert width <= 390, f"/decoder?present=1 is {width} px wide at 390"
