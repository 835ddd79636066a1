"""The guided walk-through: one step at a time on any lab state, and "predict first"."""

import re

import pytest

from app.features.walkthrough.page import STEP_NAMES, Guess, split_items


def page(client, **params) -> str:
    response = client.get("/walkthrough", params=params)
    assert response.status_code == 200
    return response.text


def sentence(html: str) -> str:
    return re.search(r'id="step-sentence">(.*?)</p>', html, re.S).group(1)


@pytest.mark.parametrize(
    ("step", "says", "figures"),
    [
        ("x", "Each of the 3 tokens starts as a row of x, d_model = 2 numbers wide", ["walk-x"]),
        ("qkv", "Q and K have d_k = 2 columns, V has d_v = 2", ["walk-q", "walk-k", "walk-v"]),
        ("scores", "the largest score, 1.000, is with “The”", ["walk-scores"]),
        ("scaled", "Every score is divided by √2", ["walk-scaled"]),
        ("masked", "“cat” sees 2 of the 3 keys", ["walk-masked"]),
        ("weights", "gives its largest weight, 0.670, to “The”", ["walk-weights"]),
        ("weighted", "multiplied by the weight “cat” gives to key j", ["walk-weighted"]),
        ("output", "the new vector of “cat”, [0.83, −0.34]", ["walk-output"]),
    ],
)
def test_each_step_of_the_worked_example_shows_its_numbers(client, step, says, figures) -> None:
    html = page(client, step=step)
    assert says in sentence(html)
    assert re.findall(r'<figure class="hm" id="(walk-[a-z]+)"', html) == figures
    assert 'aria-current="step">' in html
    number = STEP_NAMES.index(step) + 1
    assert f"Step {number} of 8" in html


def test_the_sum_step_ends_with_the_query_table(client) -> None:
    html = page(client, step="output")
    assert 'id="walk-query-output">[0.835, −0.340]' in html


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


def test_an_unknown_step_starts_at_the_beginning(client) -> None:
    assert "Step 1 of 8" in page(client, step="nonsense")


def test_predict_first_holds_the_weights_back_until_a_guess(client) -> None:
    html = page(client, step="weights", predict="1")
    assert 'class="guess-form"' in html
    assert "0.670" not in html  # nothing to peek at
    assert "0.330" not in html
    assert 'id="walk-masked"' in html  # the scores to reason from
    assert '<option value="0" selected>The</option>' in html
    assert '<option value="2"' not in html  # "sleeps" is hidden from "cat": no guess there


@pytest.mark.parametrize(
    ("guess", "verdict"),
    [("0.67", "Spot on."), ("0.55", "Close."), ("0.1", "Not quite."), ("0,7", "Spot on.")],
)
def test_the_server_checks_a_guess_and_reveals_the_weight(client, guess, verdict) -> None:
    html = page(client, step="weights", predict="1", key="0", guess=guess)
    result = re.search(r'id="guess-result"[^>]*>(.*?)</p>', html, re.S).group(1)
    assert "the weight is 0.670" in result
    assert verdict in result
    assert 'id="walk-weights"' in html


@pytest.mark.parametrize("guess", ["abc", "1.5", "-0.1", "nan"])
def test_an_unusable_guess_asks_again(client, guess) -> None:
    html = page(client, step="weights", predict="1", guess=guess)
    assert 'class="guess-form"' in html
    assert "guess-result" not in html


def test_a_guess_for_a_hidden_key_falls_back_to_a_visible_one(client) -> None:
    html = page(client, step="weights", predict="1", key="2", guess="0.3")
    assert "for “The”; the weight is 0.670" in html


def test_any_lab_state_walks_through(client) -> None:
    html = page(client, step="masked", tokens="a b c d", mask="window", window="2")
    assert "“d” sees 2 of the 4 keys" in sentence(html)
    assert "Hidden from it: a, b." in html


def test_a_query_that_sees_nothing_is_explained(client) -> None:
    html = page(client, step="weights", tokens="a b", mask="bidirectional", pad="0,1")
    assert "sees no key at all" in sentence(html)


def test_spanish_walkthrough(client) -> None:
    html = page(client, step="masked", lang="es")
    assert "«cat» ve 2 de las 3 claves" in sentence(html)


def test_guess_measures_its_distance() -> None:
    guess = Guess(key=0, value=0.6, weight=0.67)
    assert guess.made
    assert guess.off_by == pytest.approx(0.07)
    assert not Guess(key=0, value=None, weight=0.5).made


def test_split_items_separates_the_walkthrough_from_the_lab() -> None:
    lab, own = split_items([("tokens", "a b"), ("step", "x"), ("guess", "1"), ("step", "qkv")])
    assert lab == [("tokens", "a b")]
    assert own == {"step": "qkv", "guess": "1"}
