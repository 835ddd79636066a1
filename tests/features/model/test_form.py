"""The /model page's form: its state from the query string, one strict rule for numbers, and
every problem a sentence in the reader's language."""

import pytest
from starlette.datastructures import QueryParams

from app.core.i18n import use_locale
from app.features.model.form import DEFAULT_TEXT, ModelForm

DEFAULT_STATE = [("text", DEFAULT_TEXT), ("layer", 0), ("head", 0)]


def test_the_defaults_are_the_worked_sentence_and_layer_0_head_0() -> None:
    form, problems, notes = ModelForm.read(QueryParams(""))
    assert (problems, notes) == ([], [])
    assert form.state() == DEFAULT_STATE
    assert form.request().model_dump(exclude_defaults=True) == {
        "text": DEFAULT_TEXT,
        "layer": 0,
        "head": 0,
    }


# Unicode digits, superscripts, exponents, signs, spaces inside and huge numbers: each is a
# problem of its own field (the field keeps its default), never a 500 and never a guess.
STRICT = [
    ("off=%C2%B2.0", "off", "“².0” is not a head: the address writes a head as its layer"),
    ("lines=%C2%B2.0", "lines", "“².0” is not a head"),
    ("off=%D9%A3.1", "off", "“٣.1” is not a head"),
    ("off=1.2.3", "off", "“1.2.3” is not a head"),
    ("lines=6.0", "lines", "6.0 is not a head of the model, which has layers 0 to 5 and heads"),
    ("off=0.12", "off", "0.12 is not a head of the model"),
    ("layer=%C2%B2", "layer", 'layer must be a whole number such as 2, not "²"'),
    ("layer=%C2%B2.0", "layer", 'layer must be a whole number such as 2, not "².0"'),
    ("head=%D9%A3", "head", 'head must be a whole number such as 2, not "٣"'),
    ("query=1e3", "query", 'query must be a whole number such as 2, not "1e3"'),
    ("start=" + "9" * 5000, "start", "start must be a whole number such as 2, not"),
    ("layer=9", "layer", "layer is 9 but must be at most 5"),
    ("head=-1", "head", "head is -1 but must be at least 0"),
    ("role=subject", "role", "role “subject” is not one of previous, next, self, cls, sep, broad"),
    ("hide_special=maybe", "hide_special", "hide_special must be true or false"),
    ("compare=%20%20", "compare", "compare has no words, only spaces; type a second sentence"),
]


@pytest.mark.parametrize(("query", "field", "says"), STRICT)
def test_numbers_and_heads_follow_one_strict_rule(query: str, field: str, says: str) -> None:
    form, problems, _ = ModelForm.read(QueryParams(query))
    assert [p.field for p in problems] == [field]
    assert says in problems[0].message
    assert form.state() == DEFAULT_STATE  # the field kept its default


@pytest.mark.parametrize(
    ("query", "says"),
    [
        (
            "off=%C2%B2.0",
            "«².0» no es una cabeza: la dirección escribe una cabeza como su capa y su cabeza",
        ),
        ("layer=%C2%B2", "layer debe ser un número entero"),
        ("lines=6.0", "6.0 no es una cabeza del modelo"),
        ("role=subject", "role «subject» no es ninguno de"),
        ("compare=%20%20", "compare no tiene palabras, solo espacios"),
    ],
)
def test_the_problems_are_said_in_spanish(query: str, says: str) -> None:
    with use_locale("es"):
        _, problems, _ = ModelForm.read(QueryParams(query))
    assert says in problems[0].message


def test_too_many_line_heads_is_a_sentence() -> None:
    query = "&".join(f"lines=1.{h}" for h in range(12)) + "&lines=2.0"
    _, problems, _ = ModelForm.read(QueryParams(query))
    assert [p.message for p in problems] == [
        "lines: 13 heads are ticked for the line view, which draws at most 12 at once (a "
        "colour each); untick some"
    ]


def test_a_long_sentence_is_cut_and_said() -> None:
    form, problems, notes = ModelForm.read(QueryParams({"text": "a" * 1200}))
    assert problems == []
    assert len(form.text) == 1000
    assert notes == [
        "text: longer than 1,000 characters; this page uses and carries the first 1,000."
    ]


def test_the_state_carries_only_what_applies_each_head_once_in_order() -> None:
    query = (
        "text=hi&layer=2&head=3&query=1&hide_special=on&off=3.5&off=0.2&off=3.5&compare="
        "&role=broad&lines=4.7&lines=0.2&start=0&open=1.1"
    )
    form, problems, _ = ModelForm.read(QueryParams(query))
    assert problems == []
    assert form.state() == [
        ("text", "hi"),
        ("layer", 2),
        ("head", 3),
        ("query", 1),
        ("hide_special", "on"),
        ("off", "0.2"),
        ("off", "3.5"),
        ("role", "broad"),
        ("lines", "0.2"),
        ("lines", "4.7"),
    ]  # fmt: skip  (an empty second sentence, start 0 and the one-off button are left out)
    opened = form.opened()
    assert (opened.layer, opened.head, opened.open) == (1, 1, None)
    assert ("open", "1.1") not in opened.state()
    assert form.request().compare_text is None
    assert form.request().ablate == [[0, 2], [3, 5]]


@pytest.mark.parametrize(
    ("query", "drawn"),
    [("lines=layer&layer=2&head=3", [(2, h) for h in range(12)]), ("lines=head&layer=4", [(4, 0)])],
)
def test_line_view_links_saved_before_sets_of_heads_still_draw_the_same(
    query: str, drawn: list[tuple[int, int]]
) -> None:
    """lines=layer (every head of the chosen layer) and lines=head (the chosen head alone)."""
    form, problems, _ = ModelForm.read(QueryParams(query))
    assert problems == []
    assert form.line_heads == drawn
