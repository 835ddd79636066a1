"""The pages as a person reads them: the numbers in the HTML are the API's numbers."""

import re
from urllib.parse import parse_qsl

import numpy as np
import pytest
from fastapi.testclient import TestClient


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


def test_heads_page_chooses_a_head_from_the_url(client: TestClient) -> None:
    html = client.get("/heads?heads=4&kv_heads=2&head=3").text
    assert "Head 3, every stage (it uses key/value head 1)" in html
    assert 'href="/heads?' in html
    assert 'aria-current="true">Open head 3' in html


@pytest.mark.parametrize("path", ["/heads?", "/?tokens=the+cat+saw+the+cat&d_k=2&"])
def test_pages_say_whether_shuffling_changes_anything(client: TestClient, path: str) -> None:
    plain = client.get(f"{path}positional=none&mask=bidirectional").text
    assert 'data-equivariant="yes"' in plain
    assert "identical output rows" in plain
    rope = client.get(f"{path}positional=rope&mask=bidirectional").text
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
