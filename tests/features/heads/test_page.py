"""The pages as a person reads them: the numbers in the HTML are the API's numbers."""

import re
from html import unescape
from urllib.parse import parse_qsl, urlsplit

import numpy as np
import pytest
from fastapi.testclient import TestClient

from app.figures.heatmap import HIDDEN_COLOUR, weights_scale
from tests.heatmap_tips import tip_texts


def table_numbers(html: str, table_id: str) -> list[list[float]]:
    body = html.split(f'id="{table_id}"', 1)[1].split("</table>", 1)[0].split("<tbody>", 1)[1]
    rows = re.findall(r"<tr>(.*?)</tr>", body, re.S)
    return [
        [float(v.replace("−", "-")) for v in re.findall(r"<td[^>]*>([^<]*)</td>", row)]
        for row in rows
    ]


def test_heads_page_shows_the_api_output(client: TestClient) -> None:
    html = client.get("/heads?text=one+two+one&heads=4&kv_heads=1&positional=rope&mask=causal").text
    body = client.post(
        "/api/heads",
        json={
            "tokens": ["one", "two", "one"], "d_model": 8, "heads": 4, "kv_heads": 1, "d_head": 4,
            "mask": {"causal": True}, "positional": "rope",
        },
    ).json()  # fmt: skip
    np.testing.assert_allclose(table_numbers(html, "output-table"), body["output"], atol=5e-4)
    np.testing.assert_allclose(
        table_numbers(html, "head-weights-table"), body["heads"][0]["weights"], atol=5e-4
    )
    assert re.search(r'id="kv-this">(\d+)<', html)[1] == str(
        body["kv_cache_bytes_per_token"]["this"]
    )
    assert re.search(r'id="kv-mha">(\d+)<', html)[1] == "64"
    assert "4× less" in html


def panels(html: str) -> dict[str, str]:
    """Each panel of the figure of every head, by id: its markup."""
    group = html.split('id="fig-heads"', 1)[1].split('class="hm-legend-svg"', 1)[0]
    return dict(re.findall(r'<figure class="hm hm-panel[^"]*" id="([^"]+)">(.*?)</figure>', group))


def test_every_heads_panel_draws_the_apis_weights(client: TestClient) -> None:
    html = client.get("/heads?text=a+b+a+c&heads=4&kv_heads=2&mask=causal").text
    body = client.post(
        "/api/heads",
        json={"tokens": ["a", "b", "a", "c"], "d_model": 8, "heads": 4, "kv_heads": 2,
              "d_head": 4, "mask": {"causal": True}},
    ).json()  # fmt: skip
    shown = panels(html)
    assert list(shown) == ["heads-0", "heads-1", "heads-2", "heads-3"]
    scale = weights_scale()
    for i, (panel, markup) in enumerate(shown.items()):
        tips = [text.rsplit(": ", 1)[1] for row in tip_texts(html, panel) for text in row]
        drawn = re.search(r'<g class="hm-cells"[^>]*>(.*?)</g>', markup).group(1)
        fills = re.findall(r'<rect[^>]* fill="(#[0-9a-f]{6})"', drawn)
        weights = np.array(body["heads"][i]["weights"])
        allowed = np.array(body["heads"][i]["allowed"])
        np.testing.assert_allclose(np.array(tips, dtype=float).reshape(4, 4), weights, atol=5e-4)
        expected = [scale.colour(w) if seen else HIDDEN_COLOUR
                    for w, seen in zip(weights.ravel(), allowed.ravel(), strict=True)]  # fmt: skip
        assert fills == expected
    # A section per key/value head, in head order.
    assert re.findall(r'class="hm-section-title"[^>]*>([^<]*)<', html) == [
        "Key/value head 0",
        "Key/value head 1",
    ]


def test_heads_page_chooses_a_head_from_the_url(client: TestClient) -> None:
    html = client.get("/heads?heads=4&kv_heads=2&head=3&lang=es").text
    assert "Cabeza 3, todas las etapas (usa la cabeza de clave/valor 1)" in html
    shown = panels(html)
    # The chosen head is outlined, and only it.
    assert [i for i, m in shown.items() if 'class="hm-chosen"' in m] == ["heads-3"]
    assert '<figure class="hm hm-panel hm-chosen-panel" id="heads-3">' in html
    # Every panel's title links to the state with that head chosen, in the reader's view.
    for i, markup in enumerate(shown.values()):
        href, title = re.search(
            r'<figcaption class="hm-title"[^>]*><a href="([^"]+)">([^<]+)<', markup
        ).groups()
        state = dict(parse_qsl(urlsplit(unescape(href)).query))
        assert (title, state["head"], state["heads"], state["kv_heads"]) == (
            f"cabeza {i}",
            str(i),
            "4",
            "2",
        )
        assert state["lang"] == "es"


@pytest.mark.parametrize("query", ["", "present=1", "lang=es&present=1"])
def test_sections_are_numbered_in_reading_order_in_every_mode(
    client: TestClient, query: str
) -> None:
    """1 to 5 down the page, "Why divide by √d_k?" before the API snippet; the chosen head's
    weights beside every head (presenter mode) and the shared shuffle demo are unnumbered."""
    html = client.get(f"/heads?{query}").text
    # the page's own sections, not the shortcuts' help around them
    results = html.split('id="heads-results"', 1)[1].split('<details class="request"', 1)[0]
    headings = re.findall(r'<h2 id="([^"]+)">(?:(\d+)\. )?', results)
    numbered = [(h, int(n)) for h, n in headings if n]
    assert numbered == [
        ("all-heads", 1),
        ("selected-head", 2),
        ("concat-heading", 3),
        ("kv-cache-heading", 4),
        ("why-sqrt-dk-heading", 5),
    ]
    assert {h for h, n in headings if not n} <= {"chosen-weights-heading", "position-heading"}
    assert html.index('id="why-sqrt-dk"') < html.index('id="request-json"')


def test_a_state_that_cannot_be_computed_numbers_no_section(client: TestClient) -> None:
    html = client.get("/heads?heads=3&kv_heads=2&d_head=999").text
    assert 'id="all-heads"' not in html
    assert '<h2 id="why-sqrt-dk-heading">Why divide by √d_k?</h2>' in html


def test_the_formula_speaks_the_readers_language(client: TestClient) -> None:
    html = client.get("/heads?lang=es").text
    formula = html.split('id="heads-formula"', 1)[1].split("</p>", 1)[0]
    assert "salida = [cabeza<sub>0</sub>" in formula
    assert "output" not in formula.split(">", 1)[1]


def test_presenter_mode_puts_the_chosen_heads_weights_beside_every_head(
    client: TestClient,
) -> None:
    html = client.get("/heads?present=1").text
    overview = html.split('class="heads-overview beside"', 1)[1].split('id="chosen-head"', 1)[0]
    assert 'id="fig-heads"' in overview
    assert 'id="head-weights"' in overview
    assert html.count('id="head-weights"') == 1  # the strip below shows the other stages
    assert 'id="head-weights"' not in client.get("/heads").text.split('id="chosen-head"', 1)[0]


def test_without_javascript_enter_applies_the_fields_not_a_preset(client: TestClient) -> None:
    """A form's default button is its first submit button: the hidden Update, not a preset."""
    form = client.get("/heads").text.split('id="heads-form"', 1)[1].split("</form>", 1)[0]
    first = re.search(r"<button[^>]*>", form).group(0)
    assert 'type="submit"' in first
    assert "name=" not in first
    assert "hidden" in first


@pytest.mark.parametrize("path", ["/heads?", "/shuffle?tokens=the+cat+saw+the+cat&d_k=2&"])
def test_pages_say_whether_shuffling_changes_anything(client: TestClient, path: str) -> None:
    plain = client.get(f"{path}positional=none&mask=bidirectional").text
    assert 'data-equivariant="yes"' in plain
    assert "identical output rows" in plain
    rope = client.get(f"{path}positional=rope&mask=bidirectional").text
    if path.startswith("/heads"):  # the lab's demo (/shuffle) has no controls of its own
        assert '<option value="rope" selected>' in rope
    assert 'data-equivariant="no"' in rope
    assert "with rope position information" in rope


def test_heads_fragment_is_the_live_part_with_its_state(client: TestClient) -> None:
    response = client.get("/heads?heads=2&kv_heads=3&fragment=1")
    assert "<html" not in response.text
    assert 'id="heads-form"' in response.text
    assert 'id="why-sqrt-dk"' in response.text
    assert "showing g = 2" in response.text
    state = dict(parse_qsl(response.headers["x-page-state"]))
    assert (state["heads"], state["kv_heads"], state["head"]) == ("2", "2", "0")
    assert not {"fragment", "preset"} & state.keys()


def test_a_bad_heads_state_is_a_422_page_and_a_200_fragment(client: TestClient) -> None:
    page = client.get("/heads?heads=%C2%B2")
    assert page.status_code == 422
    assert "heads must be a whole number" in page.text
    fragment = client.get("/heads?heads=%C2%B2&fragment=1")
    assert (fragment.status_code, fragment.headers["x-input-status"]) == (200, "422")


def test_heads_page_is_in_the_navigation(client: TestClient) -> None:
    html = client.get("/").text
    assert 'href="/heads"' in html
