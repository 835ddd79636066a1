"""The head lab page through the HTTP stack: what a person reads, and what a bad URL gives."""

import csv
import io
import re
from html import unescape

import pytest
from fastapi.testclient import TestClient
from starlette.datastructures import QueryParams

from app.features.lab.form import LabForm
from app.features.lab.page import PRESETS, lab_head, shuffle_page
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
    for row in (  # three decimals, so that the parts add up to Σ as printed
        "The 1.000 0.707 0 0.670 [0.670, −0.670]",
        "cat 0.000 0.000 0 0.330 [0.165, 0.330]",
        "sleeps 1.000 0.707 −∞ 0.000 [0.000, 0.000]",  # the scaled score, then the mask
        "Σ 1.000 [0.835, −0.340]",
    ):
        assert row in breakdown
    assert 'id="query-table-rounded"' not in response.text  # nothing to excuse
    assert (
        "“cat” sees 2 of its 3 keys; its largest weight, 0.670, goes to “The”; its output is "
        "[0.835, −0.340]."
    ) in text_of(section(response.text, "query-summary"))
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
        "weights that are never negative and sum to 1",
        "every visible key gets a positive weight, and a hidden key gets exactly 0",
        "its value contributes nothing",
        "not a probability for the next token",
        "A large weight is not an explanation",
        "one head computes 9 scores (n²), 18 bytes at 2 bytes each",
        "The same head at 4,096 tokens computes 16,777,216 scores: 32 MiB",
    ],
)
def test_the_page_teaches_beside_the_stages(client: TestClient, phrase: str) -> None:
    assert phrase in text_of(client.get("/").text)


def test_the_table_says_its_parts_are_rounded_where_they_do_not_add_up(
    client: TestClient,
) -> None:
    html = client.get("/?tokens=a+b+c&d_model=4&d_k=4&d_v=4").text
    assert "Each number above is rounded to three decimals" in text_of(
        section(html, "query-table-rounded")
    )


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
    head = lab_head(*LabForm.read(QueryParams(href.split("?", 1)[1])), settings)
    assert len(head.result.tokens) == 32
    assert 'class="hm-nums"' not in section(client.get(href).text, "fig-weights")


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("x=1,abc;0,1;1,1", "x row 1, number 2: “abc” is not a number"),
        ("tokens=a+b&x=1,2;3,4;5,6,7", "x row 3 has 3 numbers but row 1 has 2"),
        ("d_model=0", "must be at least 1"),
        ("mask=diagonal", "mask: “diagonal” is not a mask"),
        (
            "tokens=" + "+".join(["w"] * 300),
            "tokens has 300 labels but this server allows at most 256",
        ),
        ("query=-1", "must be at least 0"),
        ("seed=-3", "must be at least 0"),
        ("window=x&mask=window", "window must be a whole number"),
        ("positional=rope&d_k=3", "d_k is 3 (odd)"),
    ],
)
def test_bad_url_input_shows_a_friendly_message_above_the_results(
    client: TestClient, query: str, message: str
) -> None:
    response = client.get("/?" + query)
    assert response.status_code == 422
    messages = section(response.text, "page-messages")
    assert message in text_of(messages)
    assert 'id="lab-editor"' in response.text  # the controls are still there
    assert 'id="lab-results"' in response.text


@pytest.mark.parametrize(
    ("query", "spanish"),
    [
        ("positional=foo", "positional: «foo» no es ninguna de none, sinusoidal, rope"),
        ("mask=custom&allowed=12", "allowed: escribe el patrón personalizado como filas de 0 y 1"),
        ("tokens=a+b&x=1,2;3", "x fila 2 tiene 1 número pero la fila 1 tiene 2"),
        ("tokens=a+b&x=1,2;3,4,5", "x fila 2 tiene 3 números pero la fila 1 tiene 2"),
        ("positional=rope&d_k=3", "pero d_k vale 3 (impar); elige un d_k par"),
    ],
)
def test_a_spanish_page_says_what_to_fix_in_spanish(
    client: TestClient, query: str, spanish: str
) -> None:
    response = client.get(f"/?lang=es&{query}")
    assert response.status_code == 422
    assert spanish in text_of(section(response.text, "page-messages"))


def test_markup_in_the_tokens_is_text(client: TestClient) -> None:
    response = client.get("/", params={"tokens": "<img src=x onerror=alert(1)> <b>hi</b>"})
    assert response.status_code == 200
    assert "<img" not in response.text
    assert "<b>hi" not in response.text
    assert "&lt;img" in response.text


def test_a_query_with_no_visible_key_is_explained(client: TestClient) -> None:
    response = client.get("/?mask=custom&allowed=000;111;111&query=0")
    assert response.status_code == 200
    note = text_of(section(response.text, "empty-rows"))
    assert "Queries that see no key at all: The" in note
    assert "weights of 0 and an output of 0" in note
    assert "NaN" not in response.text


def test_a_button_shows_the_state_it_made_and_offers_one_step_back(client: TestClient) -> None:
    response = client.get("/?action=identity-w_q")
    assert response.status_code == 200
    made = "tokens=The+cat+sleeps&amp;d_model=2&amp;d_k=2&amp;d_v=2&amp;w_q=1,0;0,1&amp;mask=causal"
    assert f'id="state-link" href="/?{made}&amp;query=1"' in response.text
    assert "action=identity" not in response.text.split('"lab-form"', 1)[1]  # never a state
    undo = section(response.text, "undo")
    assert (
        'href="/?tokens=The+cat+sleeps&amp;d_model=2&amp;d_k=2&amp;d_v=2&amp;mask=causal'
        '&amp;query=1"'
    ) in undo
    assert 'id="undo"' not in client.get("/?w_q=1,0;0,1").text  # only after a button


def test_the_first_button_of_the_form_is_update(client: TestClient) -> None:
    """Enter in a field without JavaScript presses the form's first button: never Generate."""
    form = section(client.get("/").text, "lab-form")
    buttons = re.findall(r"<button\b[^>]*>([^<]*)</button>", form)
    assert buttons[0].strip() == "Update"
    assert "Generate from the text" in buttons


def test_the_fragment_is_the_live_part_with_its_state(client: TestClient) -> None:
    response = client.get("/?mask=bidirectional&fragment=1")
    assert response.status_code == 200
    assert "<html" not in response.text
    assert response.headers["x-page-state"] == (
        "tokens=The+cat+sleeps&d_model=2&d_k=2&d_v=2&mask=bidirectional&query=1"
    )
    for part in ("page-messages", "lab-editor", "lab-results"):
        assert f'id="{part}"' in response.text


def test_bad_input_in_a_fragment_carries_the_message(client: TestClient) -> None:
    response = client.get("/?x=1,,2&fragment=1")
    assert response.status_code == 200
    assert response.headers["x-input-status"] == "422"
    assert 'data-problems="1"' in response.text
    assert "is not a number" in response.text


def test_the_sections_are_numbered_in_reading_order(client: TestClient) -> None:
    for view in ("", "&present=1"):
        html = client.get("/?tokens=a+b+c" + view).text
        numbers = re.findall(r'<h2 id="sec-[a-z]+">(\d+)\. ', html)
        assert numbers == ["1", "2", "3"]


def test_the_lab_loads_no_plotly(client: TestClient) -> None:
    """No plotly script, and no chart that would make static/js/figures.js fetch it."""
    html = client.get("/").text
    assert not re.search(r"<script[^>]*plotly", html)
    assert "data-figure=" not in html


def test_the_json_download_is_the_api_result(client: TestClient, settings: Settings) -> None:
    query = "tokens=a+b+c&d_model=3&d_k=2&d_v=2&mask=window&window=2&pad=0&scale=0&query=2"
    head = lab_head(*LabForm.read(QueryParams(query)), settings)
    download = client.get("/lab.json?" + query)
    assert download.status_code == 200
    api = client.post("/api/attention", json=head.form.request().model_dump(exclude_none=True))
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
    assert response.json()["detail"][0]["loc"] == ["query", "d_k"]
    assert "must be at most 8" in response.json()["detail"][0]["msg"]


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
    assert "hm-image" in section(response.text, "fig-weights")  # cells as a PNG at n = 128


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


@pytest.mark.parametrize(
    ("positional", "equivariant"), [("none", True), ("sinusoidal", False), ("rope", False)]
)
def test_the_lab_shows_whether_shuffling_changes_the_output(
    settings: Settings, positional: str, equivariant: bool
) -> None:
    query = QueryParams(
        {"tokens": "the cat saw the cat", "mask": "bidirectional", "positional": positional}
    )
    page = shuffle_page(*LabForm.read(query), settings)
    view = page.view
    assert page.problems == []
    assert view.result.positional == positional
    assert view.demo.equivariant is equivariant
    assert [r["token"] for r in view.demo.repeats] == ["the", "cat"]
    assert all((r["gap"] < 1e-12) is equivariant for r in view.demo.repeats)
    assert (("positional", positional) in page.state) is (positional != "none")


def test_the_lab_links_its_shuffle_demo_and_the_demo_links_back(client: TestClient) -> None:
    """The lab computes one head; its shuffle demo is asked for by a link carrying the state,
    and the demo's page links back to the same state."""
    state = "tokens=the+cat+saw+the+cat&mask=bidirectional&positional=rope"
    lab = client.get("/?" + state)
    assert "data-equivariant" not in lab.text
    href = re.search(r'id="shuffle-link" href="([^"]+)"', lab.text).group(1)
    canonical = re.search(r'id="state-link" href="/\?([^"]+)"', lab.text).group(1)
    assert unescape(href) == "/shuffle?" + unescape(canonical)
    demo = client.get(unescape(href))
    assert demo.status_code == 200
    assert 'data-equivariant="no"' in demo.text
    back = re.search(r'id="back-to-lab" href="([^"]+)"', demo.text).group(1)
    assert unescape(back) == "/?" + unescape(canonical)
