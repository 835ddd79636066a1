"""The lab's state (app/features/lab/form.py): the query string read field by field (strict
numbers, a sentence per problem, in the reader's language), the parts fitted after an edit,
the buttons, the canonical URL and its round trip, and the state computed once."""

import numpy as np
import pytest
from starlette.datastructures import QueryParams

from app.core.formatting import matrix_text, number_text
from app.core.i18n import use_locale
from app.features.lab import service
from app.features.lab.form import LabForm
from app.features.lab.page import LabHead, lab_head, lab_page, shuffle_page
from app.settings import Settings
from app.web.pages import Problem, state_query

SETTINGS = Settings()
WORKED_GRIDS = "x=1,0;0,1;1,1&w_q=1,0.5;0,1&w_k=0.5,1;1,0&w_v=1,-1;0.5,1"


def read(query: str) -> tuple[LabForm, list[Problem], list[str]]:
    return LabForm.read(QueryParams(query))


def fitted(query: str) -> LabForm:
    form, problems, _ = read(query)
    assert problems == []
    return form.fitted()[0]


def head(query: str) -> LabHead:
    return lab_head(*read(query), SETTINGS)


def used(state: LabHead, name: str) -> list[list[float]]:
    return np.asarray(getattr(state.result, name)).tolist()


@pytest.mark.parametrize(
    ("query", "field", "expected"),
    [
        ("tokens=The+cat+sleeps", "tokens", "The cat sleeps"),
        ("tokens=++a+++b++", "tokens", "a b"),
        ("tokens=a+b&x=1,0;0,1", "x", [[1, 0], [0, 1]]),
        ("tokens=a&x=−0.5,2", "x", [[-0.5, 2]]),
        ("tokens=a+b&d_model=2&x=1&x=0&x=0&x=1", "x", [[1, 0], [0, 1]]),  # a form's cells
        ("d_model=2&d_k=1&w_q=1&w_q=2", "w_q", [[1], [2]]),
        ("mask=bidirectional", "mask", "bidirectional"),
        ("mask=window&window=3", "window", 3),
        ("pad=2,0", "pad", [0, 2]),
        ("pad=2&pad=1", "pad", [1, 2]),
        ("scale=0", "scale", False),
        ("scale=0&scale=1", "scale", True),  # the form's hidden 0, then the ticked box
        ("query=2", "query", 2),
        ("query=9", "query", 2),  # past the last token: the last token
        ("seed=7", "seed", 7),
        ("seed=", "seed", 0),  # a field left empty is a field not given
        ("mask=custom&allowed=100;010;001", "allowed", np.eye(3, dtype=bool).tolist()),
        ("mask=custom&cell=0.0&cell=2.1", "allowed", [[1, 0, 0], [0, 0, 0], [0, 1, 0]]),
        ("mask=custom", "allowed", np.tril(np.ones((3, 3), dtype=bool)).tolist()),
        ("mask=causal&allowed=100;010;001", "allowed", None),  # only a custom mask has one
        ("", "query", 1),  # the worked example's query is "cat"
        ("tokens=a+b+c+d", "query", 3),  # else the last token
    ],
)
def test_url_fields_read_and_fit(query: str, field: str, expected: object) -> None:
    assert getattr(fitted(query), field) == expected


@pytest.mark.parametrize(
    ("query", "field", "message"),
    [
        ("x=1,abc;0,1;1,1", "x", "x row 1, number 2: “abc” is not a number"),
        ("x=1,nan;0,1;1,1", "x", "“nan” is not a number"),
        ("x=1,inf;0,1;1,1", "x", "“inf” is not a number"),
        ("x=1,²;0,1;1,1", "x", "“²” is not a number"),  # a digit, but not an ASCII one
        ("x=1,١;0,1;1,1", "x", "“١” is not a number"),
        ("x=1,1" + "0" * 5000 + ";0,1;1,1", "x", "is not a number from −1,000,000"),
        ("w_q=1e9,0;0,1", "w_q", "w_q row 1, number 1: “1e9” is not a number from −1,000,000"),
        ("tokens=a+b&x=1,2;3,4;5,6,7", "x", "x row 3 has 3 numbers but row 1 has 2"),
        ("d_model=2&x=1&x=zwei", "x", "x cell 2: “zwei” is not a number"),
        ("d_model=9", "d_model", "d_model is"),
        ("d_model=9", "d_model", "must be at most 8"),
        ("d_k=two", "d_k", "d_k must be a whole number"),
        ("seed=-3", "seed", "must be at least 0"),
        ("seed=٣", "seed", "seed must be a whole number"),
        ("query=-1", "query", "must be at least 0"),
        ("mask=sideways", "mask", "mask: “sideways” is not a mask; choose one of causal"),
        ("positional=foo", "positional", "positional: “foo” is not one of none, sinusoidal"),
        ("allowed=12;01", "allowed", "allowed: write the custom pattern as rows of 0 and 1"),
        ("pad=x", "pad", "pad: “x” is not a position"),
        ("cell=0-1", "cell", "cell: “0-1” is not a pair of positions"),
        ("scale=maybe", "scale", "scale must be true or false"),
        ("tokens=" + "a" * 41, "tokens", "longer than 40 characters"),
        ("action=explode", "action", "action: “explode” is not a button of this page"),
        ("window=0", "window", "must be at least 1"),
    ],
)
def test_bad_fields_are_sentences_naming_the_field(query: str, field: str, message: str) -> None:
    form, problems, _ = read(query)
    assert [p.field for p in problems] == [field]
    assert message in problems[0].message
    assert getattr(form, field) == LabForm.model_fields[field].get_default(
        call_default_factory=True
    )  # the field keeps its default; the rest of the state is used


@pytest.mark.parametrize(
    ("query", "spanish"),
    [
        ("x=1,abc;0,1;1,1", "x fila 1, número 2: «abc» no es un número"),
        ("mask=sideways", "mask: «sideways» no es una máscara"),
        ("positional=foo", "positional: «foo» no es ninguna de none, sinusoidal, rope"),
        ("d_k=two", "d_k debe ser un número entero"),
    ],
)
def test_problems_are_said_in_the_readers_language(query: str, spanish: str) -> None:
    with use_locale("es"):
        _, problems, _ = read(query)
    assert spanish in problems[0].message


def test_new_tokens_keep_their_rows_and_get_generated_ones() -> None:
    state = head("tokens=The+cat+sleeps+now&x=1,0;0,1;1,1")
    assert used(state, "x")[:3] == [[1, 0], [0, 1], [1, 1]]
    assert len(used(state, "x")) == 4


def test_fewer_tokens_drop_rows() -> None:
    assert used(head("tokens=The+cat&x=1,0;0,1;1,1"), "x") == [[1, 0], [0, 1]]


def test_a_wider_d_model_keeps_every_column_and_row_there_is() -> None:
    state = head("d_model=3&d_k=2&d_v=2&" + WORKED_GRIDS)
    x, w_q = np.array(used(state, "x")), np.array(used(state, "w_q"))
    assert x.shape == (3, 3)
    assert x[:, :2].tolist() == [[1, 0], [0, 1], [1, 1]]
    assert w_q.shape == (3, 2)
    assert w_q[:2].tolist() == [[1, 0.5], [0, 1]]  # the new third row is generated
    assert used(state, "w_v")[:2] == [[1, -1], [0.5, 1]]


def test_a_wider_d_k_keeps_the_columns_and_a_narrower_one_drops_the_last() -> None:
    wide = head("d_k=3&" + WORKED_GRIDS)
    assert np.array(used(wide, "w_q"))[:, :2].tolist() == [[1, 0.5], [0, 1]]
    assert np.shape(used(wide, "w_k")) == (2, 3)
    assert used(wide, "w_v") == [[1, -1], [0.5, 1]]  # d_v did not change
    narrow = head("d_k=1&" + WORKED_GRIDS)
    assert used(narrow, "w_q") == [[1], [0]]
    assert used(narrow, "w_k") == [[0.5], [1]]


def test_changing_x_keeps_the_projections() -> None:
    state = head("tokens=The+cat+sleeps&" + WORKED_GRIDS.replace("0,1;1,1", "0.5,1;1,1"))
    assert used(state, "x")[1] == [0.5, 1]
    assert used(state, "w_q") == [[1, 0.5], [0, 1]]


def test_cells_that_do_not_fill_whole_rows_are_generated_again_and_said() -> None:
    form, problems, _ = read("d_model=2&x=1&x=0&x=0")
    fitted_form, _, fit_problems, notes = form.fitted()
    assert problems == fit_problems == []
    assert notes == ["x did not fill whole rows, so it was generated again"]
    assert fitted_form.x == []


def test_the_padding_demo_extends_the_worked_example() -> None:
    """ "The cat sleeps <pad>" with the pad ticked: cat still gives 0.670 / 0.330."""
    query = "tokens=The+cat+sleeps+%3Cpad%3E&pad=3&query=1&d_model=2&d_k=2&d_v=2&" + WORKED_GRIDS
    state = head(query)
    assert state.problems == []
    assert [round(r.weight, 3) for r in state.result.query.rows] == [0.67, 0.33, 0.0, 0.0]
    assert used(state, "x")[:3] == [[1, 0], [0, 1], [1, 1]]
    assert state.form.pad == [3]


def test_pads_past_the_last_token_are_left_out_and_said() -> None:
    form, _, _ = read("pad=1,7,9")
    fitted_form, _, problems, notes = form.fitted()
    assert (fitted_form.pad, problems) == ([1], [])
    assert notes == ["pad 7, 9 are past the last token (2): left out"]


def test_an_empty_text_is_a_problem_and_shows_the_worked_example() -> None:
    form, _, _ = read("tokens=+")
    fitted_form, _, problems, notes = form.fitted()
    assert (fitted_form.tokens, notes) == ("The cat sleeps", [])
    said = "tokens: the text is empty, so the worked example's “The cat sleeps” is shown"
    assert problems == [Problem("tokens", said)]


def test_a_query_past_the_last_token_is_a_problem_and_shows_the_last() -> None:
    form, _, _ = read("query=99")
    fitted_form, _, problems, _ = form.fitted()
    assert fitted_form.query == 2
    assert problems == [Problem("query", "query 99 is past the last token (2): showing 2")]


@pytest.mark.parametrize(
    ("value", "text"), [(1.0, "1"), (0.5, "0.5"), (-0.0, "0"), (-0.34, "-0.34"), (1e-7, "1e-07")]
)
def test_numbers_are_written_exactly_and_short(value: float, text: str) -> None:
    assert number_text(value) == text
    assert float(text) == value


def test_the_worked_example_url_is_short_and_readable() -> None:
    state = head("")
    assert state_query(state.state) == (
        "tokens=The+cat+sleeps&d_model=2&d_k=2&d_v=2&mask=causal&query=1"
    )
    assert all(getattr(state.form, name) == [] for name in ("x", "w_q", "w_k", "w_v"))


@pytest.mark.parametrize(
    "query",
    [
        "",
        "tokens=a+b+c+d&x=1,0;0,1;1,1&mask=window&window=2",
        "tokens=the+cat+saw+the+cat&d_model=3&d_k=2&d_v=4&seed=5&mask=bidirectional&pad=4",
        "w_q=0.1234567,2;3,4&scale=0&query=0",
        "mask=custom&allowed=000;111;101",
        "positional=sinusoidal&tokens=a+b+c+d&d_k=2",
        "action=randomize-w_k",
        "action=identity-w_v",
        "action=generate-x",
        "tokens=x+y&d_model=1&action=generate-x",
        "tokens=The+cat+sleeps&d_model=2&d_k=2&d_v=2&" + WORKED_GRIDS,  # all written: none kept
    ],
)
def test_the_canonical_url_reads_back_as_the_same_state(query: str) -> None:
    first = head(query)
    again = head(state_query(first.state))
    assert again.problems == []
    assert again.state == first.state  # canonical twice is canonical
    for name in ("x", "w_q", "w_k", "w_v", "weights", "output", "allowed"):
        assert np.array_equal(getattr(again.result, name), getattr(first.result, name)), name
    assert again.result.query.index == first.result.query.index


def test_the_url_of_an_edited_x_keeps_the_projections_it_was_computed_with() -> None:
    """An x edit on the worked example: the URL must say W_Q, W_K, W_V too, or reading it
    back would generate new ones."""
    state = head("d_model=2&d_k=2&d_v=2&" + WORKED_GRIDS.replace("0,1;1,1", "0.5,1;1,1"))
    query = state_query(state.state)
    assert "w_q=1,0.5;0,1" in query
    again = head(query)
    for name in ("x", "w_q", "w_k", "w_v", "weights"):
        np.testing.assert_array_equal(getattr(again.result, name), getattr(state.result, name))


def test_randomize_draws_the_next_seed_and_keeps_everything_else() -> None:
    before = head("")
    after = head("action=randomize-w_q")
    assert after.form.seed == 1
    assert not np.array_equal(after.result.w_q, before.result.w_q)
    for name in ("x", "w_k", "w_v"):
        assert np.array_equal(getattr(after.result, name), getattr(before.result, name))
    assert after.result.query.index == 1
    assert after.before == before.state  # one step of undo: the state it changed


def test_identity_fills_the_projection_with_the_identity() -> None:
    state = head("d_model=3&d_k=2&action=identity-w_k")
    assert state.result.w_k.tolist() == np.eye(3, 2).tolist()
    assert ("w_k", matrix_text(np.eye(3, 2))) in state.state
    assert all(name != "action" for name, _ in state.state)


def test_generate_from_the_text_replaces_the_worked_rows() -> None:
    state = head("action=generate-x")
    assert not np.array_equal(state.result.x, [[1, 0], [0, 1], [1, 1]])
    assert any(name == "x" for name, _ in state.state)
    assert state.result.query.index == 1  # the query it had, not the new default


def test_a_state_the_server_cannot_compute_keeps_the_rest_and_says_why() -> None:
    state = head("positional=rope&d_k=3&mask=bidirectional")
    assert [p.field for p in state.problems] == ["positional"]
    assert "odd" in state.problems[0].message
    assert state.form.positional == "none"
    assert state.form.mask == "bidirectional"  # the rest of the state is kept
    assert state.result.d_k == 3


def test_more_tokens_than_the_server_takes_show_the_worked_example_text() -> None:
    state = lab_head(*read("tokens=" + "+".join(["w"] * 300)), SETTINGS)
    assert [p.field for p in state.problems] == ["tokens"]
    assert "256" in state.problems[0].message
    assert state.result.tokens == ["The", "cat", "sleeps"]


@pytest.fixture
def resolved(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, ...]]:
    """The token lists of every head computed, in order."""
    calls: list[tuple[str, ...]] = []
    real = service.one_head

    def counting(inputs, allowed):  # type: ignore[no-untyped-def]
        calls.append(tuple(inputs.tokens))
        return real(inputs, allowed)

    monkeypatch.setattr(service, "one_head", counting)
    return calls


@pytest.mark.parametrize(
    "query",
    [
        "",
        "tokens=a+b+c&" + "x=1,0;0,1;1,1&w_q=1,2;3,4&w_k=1,0;0,1&w_v=2,0;0,2",
        "action=randomize-w_v",
    ],
)
def test_a_page_computes_its_head_once(resolved: list[tuple[str, ...]], query: str) -> None:
    """The lab's page computes the state's head once; the shuffle demo, asked for on a page
    of its own, computes it once more on its tokens in another order."""
    page = lab_page(*read(query), SETTINGS)
    tokens = tuple(page.view.result.tokens)
    assert resolved == [tokens]
    resolved.clear()
    shuffled = shuffle_page(*read(query), SETTINGS)
    assert tuple(shuffled.view.result.tokens) == tokens
    assert len(resolved) == 2
    assert resolved[0] == tokens
    assert sorted(resolved[1]) == sorted(tokens)


@pytest.mark.parametrize(
    "query",
    [
        "",
        "tokens=a+b+c&d_model=3&mask=window&window=2&pad=1&positional=rope&d_k=2&seed=4",
        "tokens=The+cat+sleeps&" + WORKED_GRIDS + "&mask=custom&allowed=100;110;011&scale=0",
        "action=randomize-w_q",
        "tokens=a+b&x=1,2,3;4,5,6&positional=sinusoidal&query=0",
    ],
)
def test_the_fitted_inputs_are_what_the_api_resolves_for_the_same_state(query: str) -> None:
    """The lab resolves its inputs once, as it fits its state; the API, given the state's
    request, fills in the same numbers and computes the same head."""
    fitted = read(query)[0].fitted()
    lab = service.compute_head(service.checked(fitted.inputs, SETTINGS), SETTINGS)
    api = service.compute_attention(fitted.form.request(), SETTINGS)
    for name in ("x", "w_q", "w_k", "w_v", "weights", "output"):
        assert np.array_equal(getattr(lab, name), getattr(api, name)), name
    assert (lab.tokens, lab.query.index, lab.mask) == (api.tokens, api.query.index, api.mask)
