"""/cost keeps saying which preset its numbers started from while only the workload changes,
lets it go once a field the preset filled changes, and warns past the model's own context."""

import re
from html import unescape

import pytest
from fastapi.testclient import TestClient

from app.features.cost.presets import PRESETS_BY_ID


def selected_preset(html: str) -> str:
    select = re.search(r'<select name="preset" id="preset">(.*?)</select>', html, re.S)
    assert select is not None
    chosen = re.findall(r'<option value="([^"]*)"[^>]*selected', select.group(1))
    return chosen[0] if chosen else ""  # none chosen: the "(choose a model)" line shows


def cost_form(html: str) -> str:
    form = re.search(r'<form[^>]*id="cost-form".*?</form>', html, re.S)
    assert form is not None
    return form.group(0)


@pytest.mark.parametrize(
    "query",
    [
        {"preset": "llama-2-7b", "seq_len": "131072"},
        {"preset": "llama-2-7b", "seq_len": "131072", "batch": "2", "heads": "32"},
    ],
)
def test_a_workload_edit_keeps_the_preset_and_warns_past_its_context(
    client: TestClient, query: dict[str, str]
) -> None:
    html = unescape(client.get("/cost", params=query).text)
    assert selected_preset(html) == "llama-2-7b"
    assert '<input type="hidden" name="preset" value="llama-2-7b">' in cost_form(html)
    assert 'id="preset-note"><strong>Llama-2-7B</strong>' in html
    context = PRESETS_BY_ID["llama-2-7b"].max_context
    assert context == 4096
    assert "seq_len is 131,072 but Llama-2-7B was built for at most 4,096 tokens" in html


def test_changing_a_preset_field_lets_the_preset_go(client: TestClient) -> None:
    html = unescape(client.get("/cost", params={"preset": "llama-2-7b", "heads": "16"}).text)
    assert selected_preset(html) == ""
    assert 'name="preset"' not in cost_form(html)
    assert 'id="preset-note"' not in html
    form = cost_form(html)  # the preset's other numbers stay in the form, as they were
    assert 'id="heads" name="heads" min="1" value="16"' in form
    assert 'id="layers" name="layers" min="1" value="32"' in form
    assert 'id="head_dim" name="head_dim" min="1" value="128"' in form


def test_within_its_context_there_is_no_warning(client: TestClient) -> None:
    html = client.get("/cost", params={"preset": "llama-2-7b", "seq_len": "4096"}).text
    assert selected_preset(html) == "llama-2-7b"
    assert "was built for at most" not in html


def test_the_spanish_warning_groups_its_numbers(client: TestClient) -> None:
    query = {"preset": "llama-2-7b", "seq_len": "131072", "lang": "es"}
    html = unescape(client.get("/cost", params=query).text)
    assert "seq_len es 131.072 pero Llama-2-7B se construyó para 4.096 tokens como mucho" in html
