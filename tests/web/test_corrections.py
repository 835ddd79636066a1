"""Every correction is said: a page that cannot use an input names the field and what it did
instead, in the reader's language. What only follows the tokens (a pad past the end) is a note
(200); what the address asks for and cannot be (an empty text, a query past the last token) is
a problem: 422 for the page, 200 with X-Input-Status 422 for its fragment."""

from html import unescape

import pytest
from fastapi.testclient import TestClient


@pytest.mark.parametrize(
    ("path", "sentence"),
    [
        ("/?pad=9", "pad 9 is past the last token (2): left out"),
        ("/?pad=7,9", "pad 7, 9 are past the last token (2): left out"),
        ("/?lesson=nope", "lesson “nope” is not one of the lessons: showing the page without one."),
    ],
)
def test_a_corrected_input_is_said(client: TestClient, path: str, sentence: str) -> None:
    response = client.get(path)
    assert response.status_code == 200
    assert sentence in unescape(response.text)


EMPTY_TEXT = "tokens: the text is empty, so the worked example's “The cat sleeps” is shown"
QUERY_PAST = "query 99 is past the last token (2): showing 2"


@pytest.mark.parametrize(
    ("path", "sentence"),
    [
        ("/?tokens=", EMPTY_TEXT),
        ("/?query=99", QUERY_PAST),
        ("/kernel?tokens=", EMPTY_TEXT),
        ("/kernel?query=99", QUERY_PAST),
        ("/walkthrough?query=99", QUERY_PAST),
        ("/walkthrough?tokens=+", EMPTY_TEXT),
    ],
)
def test_an_input_that_cannot_be_is_a_problem(client: TestClient, path: str, sentence: str) -> None:
    page = client.get(path)
    assert page.status_code == 422
    box = unescape(page.text).split('class="error-box" role="alert"', 1)[1].split("</div>", 1)[0]
    assert sentence in box
    assert "The cat sleeps" in unescape(page.text)  # and the page still shows what it can
    fragment = client.get(path + "&fragment=1")
    assert (fragment.status_code, fragment.headers["x-input-status"]) == (200, "422")
    assert sentence in unescape(fragment.text)


def test_problems_and_corrections_are_said_in_spanish_too(client: TestClient) -> None:
    page = client.get("/?query=99&pad=9&lang=es")
    assert page.status_code == 422
    text = unescape(page.text)
    assert "query 99 está después del último token (2): se muestra 2" in text
    assert "pad 9 está después del último token (2): se omite" in text
    empty = unescape(client.get("/kernel?tokens=&lang=es").text)
    assert "tokens: el texto está vacío" in empty


def test_an_input_that_needs_no_correction_says_nothing(client: TestClient) -> None:
    text = unescape(client.get("/?query=2&pad=2").text)
    assert "past the last token" not in text
    assert "is not one of the lessons" not in unescape(client.get("/?lesson=padding").text)


@pytest.mark.parametrize("query", ["heads=0", "heads=17", "d_head=0", "text="])
def test_heads_answers_bad_input_with_422_and_a_sentence(client: TestClient, query: str) -> None:
    response = client.get("/heads?" + query)
    assert response.status_code == 422
    assert 'class="error-box" role="alert"' in response.text
    fragment = client.get("/heads?fragment=1&" + query)
    assert (fragment.status_code, fragment.headers["x-input-status"]) == (200, "422")


def test_heads_answers_good_input_with_200(client: TestClient) -> None:
    assert client.get("/heads?heads=8&kv_heads=2").status_code == 200
