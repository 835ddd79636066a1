"""The head lab page through the HTTP stack: what a person reads, and what a bad URL gives."""

import csv
import io
import re
from urllib.parse import parse_qsl

import pytest
from fastapi.testclient import TestClient

from app.features.lab.page import PRESETS, lab_page
from app.settings import Settings


def text_of(html: str) -> str:
    """The page's visible text, roughly: tags dropped, whitespace collapsed."""
    html = re.sub(r"<script.*?</script>", " ", html, flags=re.S)
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def section(html: str, element_id: str) -> str:
    start = html.index(f'id="{element_id}"')
    return html[start : start + 6000]


def test_the_worked_example_reads_as_seed_000(client: TestClient) -> None:
    response = client.get("/")
    assert response.status_code == 200
    breakdown = text_of(section(response.text, "query-table"))
    for row in (
        "The 1.000 0.707 0 0.670 [0.67, −0.67]",
        "cat 0.000 0.000 0 0.330 [0.17, 0.33]",
        "sleeps 1.000 0.707 −∞ 0.000 [0.00, 0.00]",  # the scaled score, then the mask
        "Σ 1.000 [0.83, −0.34]",
    ):
        assert row in breakdown
    tokens = text_of(section(response.text, "token-table"))
    assert "cat [0.00, 1.00] [0.00, 1.00] [1.00, 0.00] [0.50, 1.00]" in tokens
    assert "Attention(Q, K, V) = softmax(QKᵀ / √d k + M) · V" in text_of(response.text)


@pytest.mark.parametrize(
    "phrase",
    [
        "The query Q is what this token is looking for",
        "Keys decide how much, values decide what",
        "so the scores are divided by √d_k",
        "A decoder hides later tokens",
        "padding is hidden everywhere",
        "a sliding window only keeps nearby keys",
        "weights that are positive and sum to 1",
        "its value contributes nothing",
        "not a probability for the next token",
        "A large weight is not an explanation",
        "one head computes 9 scores (n²), 18 bytes at 2 bytes each",
        "The same head at 4,096 tokens computes 16,777,216 scores: 32 MiB",
    ],
)
def test_the_page_teaches_beside_the_stages(client: TestClient, phrase: str) -> None:
    assert phrase in text_of(client.get("/").text)


def test_tokens_are_buttons_of_the_form_that_pick_the_query(client: TestClient) -> None:
    html = section(client.get("/").text, "sec-query")
    assert (
        '<button type="submit" form="lab-form" name="query" value="1" class="token-pick" '
        'data-query="1" aria-pressed="true">cat</button>'
    ) in html


def test_the_cost_panel_links_to_the_calculator(client: TestClient) -> None:
    assert 'href="/cost"' in section(client.get("/").text, "sec-cost")


def test_every_control_has_a_label(client: TestClient) -> None:
    html = client.get("/").text
    for control in re.findall(r"<(?:input|select)\b[^>]*>", html):
        if 'type="hidden"' in control:
            continue
        control_id = re.search(r'id="([^"]+)"', control)
        labelled = "aria-label=" in control or (
            control_id and f'for="{control_id.group(1)}"' in html
        )
        assert labelled, control


@pytest.mark.parametrize(("label", "href", "hint"), PRESETS)
def test_every_preset_renders_without_problems(
    client: TestClient, label: str, href: str, hint: str
) -> None:
    response = client.get(href)
    assert response.status_code == 200, label
    assert 'class="error-box"' not in response.text
    assert f'href="{href.replace("&", "&amp;")}"' in response.text


def test_the_long_preset_has_32_tokens_and_no_printed_cells(
    client: TestClient, settings: Settings
) -> None:
    href = {label: url for label, url, _ in PRESETS}["Longer sentence (n = 32)"]
    page = lab_page(parse_qsl(href.split("?", 1)[1]), settings)
    assert len(page.result.tokens) == 32
    assert '"texttemplate"' not in client.get(href).text


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("x=1,abc;0,1;1,1", "x row 1, number 2: “abc” is not a number"),
        ("tokens=a+b&x=1,2;3,4;5,6,7", "row 2 has 3 numbers"),
        ("d_model=0", "d_model is 0; choose a whole number from 1 to 8"),
        ("mask=diagonal", "mask: “diagonal” is not a mask"),
        ("tokens=" + "+".join(["w"] * 300), "there are 300 tokens; this server takes 256"),
        ("query=-1", "query is -1"),
        ("seed=-3", "seed is -3"),
        ("window=x&mask=window", "window: “x” is not a whole number"),
    ],
)
def test_bad_url_input_shows_a_friendly_message_next_to_the_controls(
    client: TestClient, query: str, message: str
) -> None:
    response = client.get("/?" + query)
    assert response.status_code == 422
    messages = section(response.text, "lab-messages")
    assert message in text_of(messages)
    assert 'id="lab-editor"' in response.text  # the controls are still there
    assert 'id="lab-results"' in response.text


def test_markup_in_the_tokens_is_text(client: TestClient) -> None:
    response = client.get("/", params={"tokens": "<img src=x onerror=alert(1)> <b>hi</b>"})
    assert response.status_code == 200
    assert "<img" not in response.text
    assert "<b>hi" not in response.text
    assert "&lt;img" in response.text
    assert "\\u0026lt;img" in response.text  # figure JSON: an entity plotly shows as text


def test_a_query_with_no_visible_key_is_explained(client: TestClient) -> None:
    response = client.get("/?mask=custom&allowed=000;111;111&query=0")
    assert response.status_code == 200
    note = text_of(section(response.text, "empty-rows"))
    assert "Queries that see no key at all: The" in note
    assert "weights of 0 and an output of 0" in note
    assert "NaN" not in response.text


def test_a_button_redirects_to_the_state_it_made(client: TestClient) -> None:
    response = client.get("/?action=identity-w_q", follow_redirects=False)
    assert response.status_code == 303
    assert response.headers["location"] == (
        "/?tokens=The+cat+sleeps&d_model=2&d_k=2&d_v=2&w_q=1,0;0,1&mask=causal&query=1"
    )


def test_the_fragment_is_the_results_with_their_url(client: TestClient) -> None:
    response = client.get("/?mask=bidirectional&fragment=all")
    assert response.status_code == 200
    assert "<html" not in response.text
    assert 'data-query="tokens=The+cat+sleeps&amp;d_model=2&amp;d_k=2&amp;d_v=2' in response.text
    assert 'id="lab-editor"' in response.text


def test_a_value_edit_fragment_leaves_the_controls_out(client: TestClient) -> None:
    response = client.get("/?fragment=results")
    assert 'id="lab-editor"' not in response.text
    assert 'id="lab-results"' in response.text


def test_bad_input_in_a_fragment_carries_the_message(client: TestClient) -> None:
    response = client.get("/?x=1,,2&fragment=all")
    assert response.status_code == 200
    assert 'data-problems="1"' in response.text
    assert "is not a number" in response.text


def test_the_json_download_is_the_api_result(client: TestClient, settings: Settings) -> None:
    query = "tokens=a+b+c&d_model=3&d_k=2&d_v=2&mask=window&window=2&pad=0&scale=0&query=2"
    state = lab_page(parse_qsl(query), settings)
    download = client.get("/lab.json?" + query)
    assert download.status_code == 200
    api = client.post("/api/attention", json=state.state.to_request().model_dump(exclude_none=True))
    assert download.json() == api.json()


def test_the_csv_download_has_every_stage(client: TestClient) -> None:
    response = client.get("/lab.csv")
    assert response.headers["content-type"].startswith("text/csv")
    lines = response.text.splitlines()
    assert lines[0] == "stage,row,row_label,column,column_label,value"
    stages = {line.split(",")[0] for line in lines[1:]}
    assert stages == {
        "x", "w_q", "w_k", "w_v", "q", "k", "v", "scores", "scaled", "allowed",
        "masked", "weights", "weighted_values_query_1", "output",
    }  # fmt: skip
    assert "masked,1,cat,2,sleeps,-inf" in lines
    assert "allowed,1,cat,2,sleeps,0" in lines
    assert any(line.startswith("weights,1,cat,0,The,0.66") for line in lines)


def test_downloads_with_bad_input_say_why(client: TestClient) -> None:
    response = client.get("/lab.csv?d_k=99")
    assert response.status_code == 422
    assert "d_k is 99" in response.json()["detail"][0]["msg"]


def test_static_files_are_cached_for_good_and_pages_are_compressed(client: TestClient) -> None:
    stylesheet = re.search(r'href="(/static/app\.[0-9a-f]{12}\.css)"', client.get("/").text)
    assert stylesheet is not None
    css = client.get(stylesheet.group(1), headers={"accept-encoding": "br"})
    assert "immutable" in css.headers["cache-control"]
    assert css.headers["content-encoding"] == "br"  # compressed once, when it was built
    page = client.get("/", headers={"accept-encoding": "gzip"})
    assert page.headers["content-encoding"] == "gzip"


def test_a_long_sequence_stays_light(client: TestClient) -> None:
    response = client.get("/", params={"tokens": " ".join(f"t{i}" for i in range(128))})
    assert response.status_code == 200
    assert len(response.content) < 1_500_000
    assert "customdata" not in response.text  # no hover arithmetic at n = 128


def test_csv_labels_that_a_spreadsheet_would_run_as_formulas_are_neutralised(
    client: TestClient,
) -> None:
    tokens = ["=HYPERLINK(1)", "+1", "-2", "@SUM(A1)", "cat"]
    response = client.get("/lab.csv", params={"tokens": " ".join(tokens), "d_model": "2"})
    rows = list(csv.reader(io.StringIO(response.text)))[1:]
    labels = {row[2] for row in rows if row[0] == "q"}
    assert labels == {"'=HYPERLINK(1)", "'+1", "'-2", "'@SUM(A1)", "cat"}
    assert not any(cell.startswith(("=", "+", "@")) for row in rows for cell in row[2::2])
    negatives = [row[5] for row in rows if row[5].startswith("-") and row[5] != "-inf"]
    assert negatives  # numbers stay numbers
    assert all(float(v) < 0 for v in negatives)


def test_csv_labels_with_commas_and_quotes_read_back_as_they_were(client: TestClient) -> None:
    tokens = ['say,"hi"', "a,b", '"', "cat"]
    response = client.get("/lab.csv", params={"tokens": " ".join(tokens), "d_model": "2"})
    rows = list(csv.reader(io.StringIO(response.text)))
    assert all(len(row) == 6 for row in rows)  # quoted where needed: no field split apart
    assert [row[2] for row in rows if row[0] == "q" and row[3] == "0"] == tokens
    assert {row[4] for row in rows if row[0] == "scores"} == set(tokens)
