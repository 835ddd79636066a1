"""The cost calculator in a real browser."""

from playwright.sync_api import Page, expect

from tests.browser.conftest import axe_violations, save_screenshot


def test_page_opens_on_the_seed_table_and_follows_the_length(page: Page) -> None:
    page.goto("/cost")
    table = page.locator("#scaling-table")
    for text in (
        "4,096 tokens",
        "16,777,216",
        "32 MiB",
        "8,192 tokens",
        "67,108,864",
        "128 MiB",
        "16,384 tokens",
        "268,435,456",
        "512 MiB",
    ):
        expect(table).to_contain_text(text)
    for fig in ("fig-cost-scores", "fig-cost-kv"):
        expect(page.locator(f'[data-figure="{fig}"] .main-svg').first).to_be_visible()
    save_screenshot(page, "cost")
    # axe audits this page in every mode and language in test_teacher.py

    page.fill("#seq_len", "1024")
    expect(page.locator("#scaling-table")).to_contain_text("1,048,576")  # 1,024²
    expect(page.locator("#scaling-table")).to_contain_text("2 MiB")
    expect(page.locator("#row-score-entries")).to_contain_text("1,024²")
    expect(page).to_have_url(
        "/cost?seq_len=1024&batch=1&dtype=fp16&gpu_memory_gib=24&layers=1"
        "&heads=1&kv_heads=1&head_dim=128"
    )


def test_preset_fills_the_inputs(page: Page) -> None:
    page.goto("/cost")
    page.select_option("#preset", "llama-3-8b")
    expect(page.locator("#kv_heads")).to_have_value("8")
    expect(page.locator("#row-kv-token")).to_contain_text("131,072")
    expect(page.locator("#preset-note")).to_contain_text("Meta-Llama-3-8B")
    expect(page.locator(".plot .main-svg").first).to_be_visible()
    assert axe_violations(page) == []


def test_measure_button_swaps_in_the_timings(page: Page) -> None:
    page.goto("/cost")
    page.click("#measure-link")
    expect(page.locator("#measure-table")).to_be_visible(timeout=30_000)
    expect(page.locator("#measure-table tbody tr")).to_have_count(5)
    expect(page.locator('[data-figure="fig-measure"] .main-svg').first).to_be_visible()
    assert axe_violations(page) == []


def test_latent_attention_a_quantized_cache_and_the_weights(page: Page) -> None:
    page.goto("/cost?preset=deepseek-v2")
    expect(page.locator("#row-kv-token")).to_contain_text("60 × (512 + 64)")
    expect(page.locator("#row-kv-token")).to_contain_text("69,120")
    page.select_option("#kv_dtype", "q8_0")
    expect(page.locator("#row-kv-token")).to_contain_text("34/32")
    expect(page.locator("#row-kv-token")).to_contain_text("36,720")  # 1,080 blocks × 34
    page.locator("#weight_bytes").press_sequentially("30000000000", delay=20)
    expect(page.locator("#verdict-fit")).to_contain_text("do not fit")
    expect(page.locator("#verdict-max-len")).to_contain_text("none fits")
    assert axe_violations(page) == []
