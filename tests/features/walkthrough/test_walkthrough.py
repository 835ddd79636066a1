"""The guided walk-through as a reader meets it: one step at a time on any lab state, its
numbers as the tables print them (every Σ row adds up from them), "predict first", the
page pattern's form, fragment and status."""

import re
from html import unescape

import numpy as np
import pytest

from app.features.walkthrough.form import STEP_NAMES

WORKED = {"tokens": "The cat sleeps"}
# States whose rows hold ties, hidden keys, negative scores, or nothing visible at all.
STATES = [
    {},
    {"tokens": "a a b", "mask": "bidirectional", "query": "2"},  # equal tokens: a tie
    {"tokens": "a b c d", "mask": "bidirectional", "pad": "0,1,2,3"},  # sees no key
    {"tokens": "the cat sat on the mat", "mask": "window", "window": "2", "seed": "3"},
    {"x": "1,0;0,1;-1,-1", "w_q": "2,0;0,2", "mask": "bidirectional", "query": "0"},  # < 0
    {"tokens": "one two three four five", "d_k": "1", "scale": "0", "positional": "sinusoidal"},
]


def page(client, status: int = 200, **params) -> str:
    response = client.get("/walkthrough", params=params)
    assert response.status_code == status
    return unescape(response.text)


def sentence(html: str) -> str:
    return re.search(r'id="step-sentence">(.*?)</p>', html, re.S).group(1)


def number(text: str) -> float:
    """A number as the page prints it (English): true minus signs, −∞ for hidden."""
    text = text.strip().replace("−", "-")
    return float("-inf") if text == "-∞" else float(text)


def numbers(text: str) -> list[float]:
    return [number(t) for t in text.strip("[] ").split(",")]


def key_table(html: str) -> dict[str, object]:
    """The query's key table as shown: each column's cells, and the Σ row's."""
    table = re.search(r'<table class="matrix walk-keys".*?</table>', html, re.S).group(0)
    body = re.search(r"<tbody>(.*?)</tbody>", table, re.S).group(1)
    foot = re.search(r"<tfoot>(.*?)</tfoot>", table, re.S)
    cells = re.findall(r'<td data-column="(\w+)">(.*?)</td>', body)
    columns: dict[str, list[str]] = {}
    for name, text in cells:
        columns.setdefault(name, []).append(text)
    total = dict(re.findall(r'<td data-column="(\w+)">(.*?)</td>', foot.group(1))) if foot else {}
    return {"columns": columns, "total": {k: v for k, v in total.items() if v}}


def heatmap_numbers(html: str, figure: str) -> list[str]:
    svg = re.search(rf'<figure class="hm" id="{figure}".*?</figure>', html, re.S).group(0)
    nums = re.search(r'<g class="hm-nums".*?</g>', svg, re.S).group(0)
    return re.findall(r">([^<>]+)</text>", nums)


@pytest.mark.parametrize(
    ("step", "says", "figures"),
    [
        ("x", "Each of the 3 tokens starts as a row of x, d_model = 2 numbers wide", ["walk-x"]),
        ("qkv", "Q and K have d_k = 2 columns, V has d_v = 2", ["walk-q", "walk-k", "walk-v"]),
        (
            "scores",
            "In the row of “cat” the largest score, 1.000, is a tie between “The” and "
            "“sleeps”. The mask will hide “sleeps” from “cat”.",
            ["walk-scores"],
        ),
        ("scaled", "In the row of “cat”, 1.000 with “The” becomes 0.707.", ["walk-scaled"]),
        ("masked", "“cat” sees 2 of the 3 keys; hidden from it: “sleeps”.", ["walk-masked"]),
        ("weights", "“cat” gives its largest weight, 0.670, to “The”.", ["walk-weights"]),
        ("weighted", "passes on 0.670 × its value: [0.670, −0.670]", ["walk-weighted"]),
        ("output", "the new vector of “cat”, [0.835, −0.340]", ["walk-output"]),
    ],
)
def test_each_step_of_the_worked_example_shows_its_numbers(client, step, says, figures) -> None:
    html = page(client, step=step)
    assert says in sentence(html)
    assert re.findall(r'<figure class="hm" id="(walk-[a-z]+)"', html) == figures
    assert f"Step {STEP_NAMES.index(step) + 1} of 8" in html
    assert html.count('aria-current="step"') == 1


@pytest.mark.parametrize(
    ("step", "columns"),
    [
        ("scores", {"k": ["[0.500, 1.000]", "[1.000, 0.000]", "[1.500, 1.000]"],
                    "dot": ["1.000", "0.000", "1.000"]}),
        ("scaled", {"dot": ["1.000", "0.000", "1.000"], "scaled": ["0.707", "0.000", "0.707"]}),
        ("masked", {"mask": ["0", "0", "−∞"], "masked": ["0.707", "0.000", "−∞"]}),
        ("weights", {"masked": ["0.707", "0.000", "−∞"], "weight": ["0.670", "0.330", "0.000"]}),
        ("weighted", {"v": ["[1.000, −1.000]", "[0.500, 1.000]", "[1.500, 0.000]"],
                      "weighted": ["[0.670, −0.670]", "[0.165, 0.330]", "[0.000, 0.000]"]}),
        ("output", {"weight": ["0.670", "0.330", "0.000"],
                    "weighted": ["[0.670, −0.670]", "[0.165, 0.330]", "[0.000, 0.000]"]}),
    ],
)  # fmt: skip
def test_the_key_table_shows_the_worked_example_at_three_decimals(client, step, columns) -> None:
    shown = key_table(page(client, step=step))["columns"]
    for name, cells in columns.items():
        assert shown[name] == cells


@pytest.mark.parametrize("state", STATES, ids=range(len(STATES)))
def test_every_sum_on_every_step_adds_up_from_the_numbers_shown(client, state) -> None:
    """Σ of the rows as printed is the Σ row as printed, or the page says the parts are
    rounded; in the worked example it always adds up."""
    sums = 0
    for step in STEP_NAMES:
        html = page(client, step=step, **state)
        if 'class="matrix walk-keys"' not in html:
            continue
        table = key_table(html)
        for name, total in table["total"].items():
            parts = np.array([numbers(t) for t in table["columns"][name]]).sum(axis=0)
            adds_up = np.allclose(parts, numbers(total), atol=1e-9)
            assert adds_up or 'id="walk-rounded"' in html, (step, name, parts, total)
            assert adds_up or state, f"the worked example's {name} on {step} does not add up"
            sums += 1
    assert sums == 3  # softmax's weights, then the weights and the weighted values at Σ


def test_the_pictures_print_the_tables_numbers(client) -> None:
    """Step 7's heatmap holds the table's weighted values; step 8's the Σ row and the
    sentence's vector: 0.835 everywhere, never 0.83 in one place and 0.835 in another."""
    weighted = page(client, step="weighted")
    cells = [x for t in key_table(weighted)["columns"]["weighted"] for x in numbers(t)]
    assert [number(t) for t in heatmap_numbers(weighted, "walk-weighted")] == cells
    output = page(client, step="output")
    total = key_table(output)["total"]["weighted"]
    assert total == "[0.835, −0.340]"
    assert total in sentence(output)
    row = heatmap_numbers(output, "walk-output")[2:4]  # the query "cat", second row
    assert f"[{', '.join(row)}]" == total


def test_a_sum_of_rounded_parts_is_said(client) -> None:
    html = page(client, step="output", tokens="a b c d e f", seed="1", mask="bidirectional")
    table = key_table(html)
    parts = np.array([numbers(t) for t in table["columns"]["weighted"]]).sum(axis=0)
    assert not np.allclose(parts, numbers(table["total"]["weighted"]), atol=1e-9)
    assert "Each number is rounded to three decimals" in html


def test_previous_and_next_carry_the_state_the_mode_and_the_language(client) -> None:
    html = page(client, step="scaled", predict="1", lang="es", tokens="a b c", mask="bidirectional")
    prev = re.search(r'<a rel="prev" href="([^"]*)"', html).group(1)
    nxt = re.search(r'<a rel="next" href="([^"]*)"', html).group(1)
    for link in (prev, nxt):
        assert "tokens=a+b+c" in link
        assert "mask=bidirectional" in link
        assert "predict=1" in link
        assert "lang=es" in link
    assert "step=scores" in prev
    assert "step=masked" in nxt


@pytest.mark.parametrize(("step", "rel"), [("x", "prev"), ("output", "next")])
def test_the_ends_have_no_link_beyond_them(client, step, rel) -> None:
    assert f'rel="{rel}"' not in page(client, step=step)


def test_the_fragment_is_the_live_part_with_the_state_for_the_address_bar(client) -> None:
    response = client.get(
        "/walkthrough", params={"step": "masked", "predict": "1", "fragment": "1"}
    )
    assert response.status_code == 200
    assert response.text.lstrip().startswith('<div id="walk-live"')
    assert "<html" not in response.text
    state = response.headers["x-page-state"]
    assert state.startswith("tokens=The+cat+sleeps&")
    assert state.endswith("&step=masked&predict=1")
    assert response.headers["x-input-status"] == "200"


@pytest.mark.parametrize(
    ("params", "problem"),
    [
        ({"step": "999"}, "step “999” is not a step of this walk-through; choose one of x, qkv"),
        ({"guess": "1.5"}, "guess is 1.5, but a weight is never below 0 or above 1"),
        ({"guess": "0,7"}, 'guess must be a number such as 0.5, not "0,7"'),
        ({"guess": "²"}, "guess must be a number such as 0.5"),
        ({"key": "one"}, "key must be a whole number such as 2"),
        ({"predict": "maybe"}, "predict must be true or false"),
    ],
)
def test_input_it_cannot_use_is_a_sentence_and_a_422(client, params, problem) -> None:
    html = page(client, 422, **{"step": "weights", "predict": "1", **params})
    messages = re.search(r'id="page-messages".*?</div>', html, re.S).group(0)
    assert problem in messages
    assert "Step " in html  # the page still shows what it can
    fragment = client.get("/walkthrough", params={**params, "fragment": "1"})
    assert (fragment.status_code, fragment.headers["x-input-status"]) == (200, "422")


def test_problems_are_said_in_spanish(client) -> None:
    html = page(client, 422, step="nada", guess="2", lang="es")
    assert "el paso «nada» no es un paso de este recorrido" in html
    assert "guess es 2, pero un peso nunca es menor que 0 ni mayor que 1" in html


def test_predict_first_holds_the_weights_back_until_a_guess(client) -> None:
    html = page(client, step="weights", predict="1")
    assert 'class="guess-form"' in html
    assert "0.670" not in html  # nothing to peek at
    assert "0.330" not in html
    assert 'id="walk-masked"' in html  # the scores to reason from
    assert 'data-column="weight"' not in html
    assert '<option value="0" selected>The</option>' in html
    assert '<option value="2"' not in html  # "sleeps" is hidden from "cat": no guess there


@pytest.mark.parametrize(
    ("guess", "says", "verdict"),
    [
        ("0.67", "You guessed 0.670 for “The”; the weight is 0.670, off by 0.000.", "Spot on."),
        ("0.6", "You guessed 0.600 for “The”; the weight is 0.670, off by 0.070.", "Close."),
        ("0.1", "You guessed 0.100 for “The”; the weight is 0.670, off by 0.570.", "Not quite."),
        ("0.6704", "You guessed 0.670 for “The”; the weight is 0.670, off by 0.000.", "Spot on."),
    ],
)
def test_the_server_checks_a_guess_and_reveals_the_weight(client, guess, says, verdict) -> None:
    html = page(client, step="weights", predict="1", key="0", guess=guess)
    result = re.search(r'id="guess-result"[^>]*>(.*?)</p>', html, re.S).group(1)
    assert says in result
    assert verdict in result
    assert 'id="walk-weights"' in html
    assert key_table(html)["columns"]["weight"] == ["0.670", "0.330", "0.000"]


def test_the_guess_is_part_of_the_state_only_where_it_applies(client) -> None:
    state = client.get(
        "/walkthrough", params={"step": "weights", "predict": "1", "key": "0", "guess": "0.6",
                                "fragment": "1"}
    ).headers["x-page-state"]  # fmt: skip
    assert state.endswith("&step=weights&predict=1&key=0&guess=0.6")
    html = page(client, step="weights", predict="1", key="0", guess="0.6")
    nxt = re.search(r'<a rel="next" href="([^"]*)"', html).group(1)
    assert "guess=" not in nxt
    assert "predict=1" in nxt
    other = client.get("/walkthrough", params={"step": "masked", "guess": "0.6", "fragment": "1"})
    assert "guess" not in other.headers["x-page-state"]


@pytest.mark.parametrize(
    ("key", "note"),
    [
        ("2", "key 2 (“sleeps”) is hidden from “cat”: the guess is for “The”."),
        ("7", "key 7 is not a position of these tokens (0 to 2): the guess is for “The”."),
    ],
)
def test_a_guess_for_a_key_the_query_cannot_see_is_moved_and_said(client, key, note) -> None:
    html = page(client, step="weights", predict="1", key=key, guess="0.3")
    assert note in html
    assert "You guessed 0.300 for “The”; the weight is 0.670" in html


def test_a_query_that_sees_no_key_has_nothing_to_guess(client) -> None:
    html = page(client, step="weights", predict="1", tokens="a b", mask="bidirectional", pad="0,1")
    assert "“b” sees no key at all, so every weight in its row is 0" in sentence(html)
    assert "guess-form" not in html
    assert key_table(html)["total"]["weight"] == "0.000"


def test_any_lab_state_walks_through(client) -> None:
    html = page(client, step="masked", tokens="a b c d", mask="window", window="2")
    assert "“d” sees 2 of the 4 keys; hidden from it: “a” and “b”." in sentence(html)


def test_the_lab_state_problems_are_the_pages(client) -> None:
    html = page(client, 422, step="scores", d_model="99")
    assert 'd_model is "99" but must be at most 8' in html
    assert "Step 3 of 8" in html


def test_spanish_walkthrough(client) -> None:
    html = page(client, step="scores", lang="es")
    assert (
        "En la fila de «cat», la puntuación más alta, 1,000, es un empate entre «The» y "
        "«sleeps». La máscara ocultará «sleeps» a «cat»."
    ) in sentence(html)
    assert key_table(html)["columns"]["dot"] == ["1,000", "0,000", "1,000"]


@pytest.mark.parametrize("step", STEP_NAMES)
def test_the_page_loads_no_plotly(client, step) -> None:
    """Every picture is drawn by the server: no plotly script, and no chart that would make
    static/js/figures.js fetch plotly.js."""
    html = page(client, step=step)
    assert not re.search(r"<script[^>]*plotly", html)
    assert "data-figure=" not in html
