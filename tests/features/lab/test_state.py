"""The lab's URL state: parsing table, shape fitting, buttons, and the canonical encoding."""

from urllib.parse import parse_qsl

import numpy as np
import pytest

from app.core.formatting import matrix_text, number_text
from app.features.lab.edits import fit
from app.features.lab.page import lab_page
from app.features.lab.state import LabState, parse_items
from app.features.lab.url import encode
from app.settings import Settings

SETTINGS = Settings()


def parse(query: str) -> LabState:
    parsed = parse_items(parse_qsl(query), SETTINGS.max_tokens)
    assert parsed.problems == []
    return fit(parsed)[0]


@pytest.mark.parametrize(
    ("query", "field", "expected"),
    [
        ("tokens=The+cat+sleeps", "tokens", ["The", "cat", "sleeps"]),
        ("tokens=++a+++b++", "tokens", ["a", "b"]),
        ("tokens=a+b&x=1,0;0,1", "matrices", {"x": [[1, 0], [0, 1]]}),
        ("tokens=a&x=−0.5,2", "matrices", {"x": [[-0.5, 2]]}),
        ("tokens=a+b&d_model=2&x=1&x=0&x=0&x=1", "matrices", {"x": [[1, 0], [0, 1]]}),
        ("d_model=2&d_k=1&w_q=1&w_q=2", "matrices", {"w_q": [[1], [2]]}),
        ("mask=bidirectional", "mask", "bidirectional"),
        ("mask=window&window=3", "window", 3),
        ("pad=2,0", "pad", [0, 2]),
        ("pad=2&pad=1", "pad", [1, 2]),
        ("scale=0", "scale", False),
        ("scale=0&scale=1", "scale", True),  # the form's hidden 0, then the ticked box
        ("query=2", "query", 2),
        ("query=9", "query", 2),  # past the last token: the last token
        ("seed=7", "seed", 7),
        ("mask=custom&allowed=100;010;001", "allowed", np.eye(3, dtype=bool).tolist()),
        ("mask=custom&cell=0.0&cell=2.1", "allowed", [[1, 0, 0], [0, 0, 0], [0, 1, 0]]),
        ("mask=custom", "allowed", np.tril(np.ones((3, 3), dtype=bool)).tolist()),
    ],
)
def test_url_fields_parse(query: str, field: str, expected: object) -> None:
    value = getattr(parse(query), field)
    assert value == expected


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("x=1,abc;0,1;1,1", "x row 1, number 2: “abc” is not a number"),
        ("x=1,nan;0,1;1,1", "“nan” is not a number"),
        ("w_q=1e9,0;0,1", "“1e9” is not a number"),
        ("d_model=9", "d_model is 9; choose a whole number from 1 to 8"),
        ("d_k=two", "d_k: “two” is not a whole number"),
        ("mask=sideways", "mask: “sideways” is not a mask"),
        ("allowed=12;01", "allowed: write the custom pattern as rows of 0 and 1"),
        ("scale=maybe", "scale: “maybe” is neither on (1) nor off (0)"),
        ("tokens=" + "a" * 41, "longer than 40 characters"),
        ("action=explode", "action: “explode” is not a button"),
        ("window=0", "window is 0; choose a whole number from 1"),
    ],
)
def test_bad_fields_are_sentences_naming_the_field(query: str, message: str) -> None:
    problems = parse_items(parse_qsl(query), SETTINGS.max_tokens).problems
    assert len(problems) == 1
    assert message in problems[0]


def test_new_tokens_keep_their_rows_and_get_generated_ones() -> None:
    state = parse("tokens=The+cat+sleeps+now&x=1,0;0,1;1,1")
    assert state.matrices["x"][:3] == [[1, 0], [0, 1], [1, 1]]
    assert len(state.matrices["x"]) == 4


def test_fewer_tokens_drop_rows() -> None:
    assert parse("tokens=The+cat&x=1,0;0,1;1,1").matrices["x"] == [[1, 0], [0, 1]]


WORKED_GRIDS = "x=1,0;0,1;1,1&w_q=1,0.5;0,1&w_k=0.5,1;1,0&w_v=1,-1;0.5,1"


def test_a_wider_d_model_keeps_every_column_and_row_there_is() -> None:
    state = parse("d_model=3&d_k=2&d_v=2&" + WORKED_GRIDS)
    x, w_q = np.array(state.matrices["x"]), np.array(state.matrices["w_q"])
    assert x.shape == (3, 3)
    assert x[:, :2].tolist() == [[1, 0], [0, 1], [1, 1]]
    assert w_q.shape == (3, 2)
    assert w_q[:2].tolist() == [[1, 0.5], [0, 1]]  # the new third row is generated
    assert state.matrices["w_v"][:2] == [[1, -1], [0.5, 1]]


def test_a_wider_d_k_keeps_the_columns_and_a_narrower_one_drops_the_last() -> None:
    wide = parse("d_k=3&" + WORKED_GRIDS)
    assert np.array(wide.matrices["w_q"])[:, :2].tolist() == [[1, 0.5], [0, 1]]
    assert np.shape(wide.matrices["w_k"]) == (2, 3)
    assert wide.matrices["w_v"] == [[1, -1], [0.5, 1]]  # d_v did not change
    narrow = parse("d_k=1&" + WORKED_GRIDS)
    assert narrow.matrices["w_q"] == [[1], [0]]
    assert narrow.matrices["w_k"] == [[0.5], [1]]


def test_changing_x_keeps_the_projections() -> None:
    state = parse("tokens=The+cat+sleeps&" + WORKED_GRIDS.replace("0,1;1,1", "0.5,1;1,1"))
    assert state.matrices["x"][1] == [0.5, 1]
    assert state.matrices["w_q"] == [[1, 0.5], [0, 1]]


def test_the_padding_demo_extends_the_worked_example() -> None:
    """ "The cat sleeps <pad>" with the pad ticked: cat still gives 0.670 / 0.330."""
    query = "tokens=The+cat+sleeps+%3Cpad%3E&pad=3&query=1&d_model=2&d_k=2&d_v=2&" + WORKED_GRIDS
    page = lab_page(parse_qsl(query), SETTINGS)
    assert page.ok
    rows = page.result.query.rows
    assert [round(r.weight, 3) for r in rows] == [0.67, 0.33, 0.0, 0.0]
    assert np.asarray(page.result.x)[:3].tolist() == [[1, 0], [0, 1], [1, 1]]
    assert page.state.pad == [3]


def test_pattern_cells_from_a_form_count_only_for_the_custom_mask() -> None:
    cells = "&".join(f"cell={i}.{j}" for i in range(3) for j in range(i + 1))
    assert parse("mask=bidirectional&" + cells).allowed is None
    assert parse("mask=custom&" + cells).allowed == np.tril(np.ones((3, 3), bool)).tolist()


@pytest.mark.parametrize(
    ("value", "text"), [(1.0, "1"), (0.5, "0.5"), (-0.0, "0"), (-0.34, "-0.34"), (1e-7, "1e-07")]
)
def test_numbers_are_written_exactly_and_short(value: float, text: str) -> None:
    assert number_text(value) == text
    assert float(text) == value


def test_the_worked_example_url_is_short_and_readable() -> None:
    page = lab_page([], SETTINGS)
    assert page.query == "tokens=The+cat+sleeps&d_model=2&d_k=2&d_v=2&mask=causal&query=1"
    assert page.given == set()


@pytest.mark.parametrize(
    "query",
    [
        "",
        "tokens=a+b+c+d&x=1,0;0,1;1,1&mask=window&window=2",
        "tokens=the+cat+saw+the+cat&d_model=3&d_k=2&d_v=4&seed=5&mask=bidirectional&pad=4",
        "w_q=0.1234567,2;3,4&scale=0&query=0",
        "mask=custom&allowed=000;111;101",
        "action=randomize-w_k",
        "action=identity-w_v",
        "action=generate-x",
        "tokens=x+y&d_model=1&action=generate-x",
    ],
)
def test_the_canonical_url_reproduces_the_state_exactly(query: str) -> None:
    first = lab_page(parse_qsl(query), SETTINGS)
    again = lab_page(parse_qsl(first.query), SETTINGS)
    assert again.ok
    assert again.query == first.query  # canonical twice is canonical
    for name in ("x", "w_q", "w_k", "w_v", "weights", "output", "allowed"):
        assert np.array_equal(getattr(again.result, name), getattr(first.result, name)), name
    assert again.result.query.index == first.result.query.index


def test_randomize_draws_the_next_seed_and_keeps_everything_else() -> None:
    before = lab_page([], SETTINGS)
    after = lab_page([("action", "randomize-w_q")], SETTINGS)
    assert after.state.seed == 1
    assert not np.array_equal(after.result.w_q, before.result.w_q)
    for name in ("x", "w_k", "w_v"):
        assert np.array_equal(getattr(after.result, name), getattr(before.result, name))
    assert after.result.query.index == 1


def test_identity_fills_the_projection_with_the_identity() -> None:
    page = lab_page([("d_model", "3"), ("d_k", "2"), ("action", "identity-w_k")], SETTINGS)
    assert page.result.w_k.tolist() == np.eye(3, 2).tolist()


def test_generate_from_the_text_replaces_the_worked_rows() -> None:
    page = lab_page([("action", "generate-x")], SETTINGS)
    assert not np.array_equal(page.result.x, [[1, 0], [0, 1], [1, 1]])
    assert "x=" in page.query


def test_a_state_that_cannot_be_computed_falls_back_and_says_why() -> None:
    page = lab_page(parse_qsl("tokens=a+b&x=1,2;3,4;5,6,7"), SETTINGS)
    assert page.problems
    assert "row 2 has 3 numbers" in page.problems[0]
    assert page.result.tokens == ["a", "b"]
    assert page.notes == ["The numbers below are generated from the text until that is fixed."]


def test_encode_keeps_commas_and_semicolons_readable() -> None:
    assert encode([("x", matrix_text([[1, -0.5], [0, 2]]))]) == "x=1,-0.5;0,2"


def test_the_url_of_an_edited_x_keeps_the_projections_it_was_computed_with() -> None:
    """An x edit on the worked example: the URL must say W_Q, W_K, W_V too, or reading it
    back would generate new ones."""
    query = "tokens=The+cat+sleeps&d_model=2&d_k=2&d_v=2&" + WORKED_GRIDS.replace(
        "0,1;1,1", "0.5,1;1,1"
    )
    page = lab_page(parse_qsl(query), SETTINGS)
    again = lab_page(parse_qsl(page.query), SETTINGS)
    assert "w_q=1,0.5;0,1" in page.query
    for name in ("x", "w_q", "w_k", "w_v", "weights"):
        np.testing.assert_array_equal(getattr(again.result, name), getattr(page.result, name))
