"""/docs in a real browser: Swagger UI from this server, the worked example as the request."""

from playwright.sync_api import Page, expect

from tests.browser.conftest import save_screenshot


def test_docs_show_the_worked_example_without_another_host(page: Page) -> None:
    page.goto("/docs")
    expect(page.locator(".lede")).to_contain_text("same numbers back as JSON")  # our words
    operation = page.locator("#operations-api-attention_api_attention_post")
    # Swagger UI draws the operations only once its 1.4 MB bundle has run and the app's
    # 100 KB OpenAPI document (built on its first request) has loaded: on a busy machine, 5 s
    # is not always enough.
    expect(operation).to_be_visible(timeout=30_000)
    expect(page.locator(".swagger-ui .information-container")).to_be_hidden()  # its English
    operation.locator(".opblock-summary").click()
    example = operation.locator(".body-param__example, .highlight-code").first
    expect(example).to_contain_text('"sleeps"')
    expect(example).to_contain_text('"causal": true')
    save_screenshot(page, "docs")
    operation.get_by_role("button", name="Try it out").click()
    operation.get_by_role("button", name="Execute").click()
    answer = operation.locator(".live-responses-table .response-col_description pre").first
    expect(answer).to_contain_text('"empty_rows"')
    expect(answer).to_contain_text("0.6697615493266569")  # the weight of "The" for "cat"
    # The `page` fixture fails the test if anything came from another host or logged an error.
