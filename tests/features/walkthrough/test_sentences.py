"""The sentences that describe a query's row, on rows made to be awkward: ties (also ties
only as the page prints them), keys all hidden, negative scores, many keys; in English and in
Spanish (tú). A sentence names exactly the keys the numbers as shown single out."""

import numpy as np
import pytest

from app.core.i18n import use_locale
from app.features.stages.results import QueryRow
from app.features.walkthrough import sentences as say


def keys(
    dots: list[float],
    hidden: tuple[int, ...] = (),
    weights: list[float] | None = None,
    tokens: str = "a b c d e f",
) -> list[QueryRow]:
    """A query's row over keys a, b, c…: the scores, the hidden keys, and the weights (by
    default softmax over the visible scores, computed here with numpy)."""
    names = tokens.split()[: len(dots)]
    if weights is None:
        seen = np.array([i not in hidden for i in range(len(dots))])
        e = np.where(seen, np.exp(np.array(dots) - max(dots)), 0.0)
        weights = list(e / e.sum()) if seen.any() else [0.0] * len(dots)
    return [
        QueryRow(
            key_index=i,
            key_token=names[i],
            dot=d,
            scaled=d / np.sqrt(2),
            visible=i not in hidden,
            weight=w,
            weighted_value=np.array([w, -2 * w]),
        )
        for i, (d, w) in enumerate(zip(dots, weights, strict=True))
    ]


WORKED = keys([1.0, 0.0, 1.0], hidden=(2,), tokens="The cat sleeps")


def unmasked_weights(query: str, rows: list[QueryRow]) -> str:
    return say.weights_sentence(query, rows, hold_back=False)


@pytest.mark.parametrize(
    ("sentence", "rows", "english", "spanish"),
    [
        (
            say.scores_sentence,
            WORKED,
            "In the row of “q” the largest score, 1.000, is a tie between “The” and “sleeps”. "
            "The mask will hide “sleeps” from “q”.",
            "En la fila de «q», la puntuación más alta, 1,000, es un empate entre «The» y "
            "«sleeps». La máscara ocultará «sleeps» a «q».",
        ),
        (  # a tie as printed: 1.0004 and 0.9996 both read 1.000
            say.scores_sentence,
            keys([1.0004, 0.9996, 0.2]),
            "the largest score, 1.000, is a tie between “a” and “b”.",
            "la puntuación más alta, 1,000, es un empate entre «a» y «b».",
        ),
        (
            say.scores_sentence,
            keys([0.5, 0.5, 0.5]),
            "In the row of “q” every score is 0.500: no key matches better than another.",
            "En la fila de «q», todas las puntuaciones son 0,500: ninguna clave coincide mejor "
            "que otra.",
        ),
        (
            say.scores_sentence,
            keys([-1.0, -2.0, -0.5]),
            "the largest score, −0.500, is with “c”. Scores below 0, as with “a”, “b” and "
            "“c”, are poor matches, not bans: only the mask hides a key.",
            "la puntuación más alta, −0,500, es con «c». Las puntuaciones por debajo de 0, "
            "como con «a», «b» y «c», son malas coincidencias, no prohibiciones: solo la "
            "máscara oculta una clave.",
        ),
        (
            say.scores_sentence,
            keys([2.0, -0.25, 1.0]),
            "is with “a”. A score below 0, as with “b”, is a poor match, not a ban",
            "es con «a». Una puntuación por debajo de 0, como con «b», es una mala "
            "coincidencia, no una prohibición",
        ),
        (  # a tie of five: three named, the rest counted
            say.scores_sentence,
            keys([3.0, 3.0, 3.0, 3.0, 3.0, 1.0]),
            "is a tie between “a”, “b”, “c” and 2 more.",
            "es un empate entre «a», «b», «c» y 2 más.",
        ),
        (
            say.masked_sentence,
            WORKED,
            "“q” sees 2 of the 3 keys; hidden from it: “sleeps”.",
            "«q» ve 2 de las 3 claves; tiene ocultas: «sleeps».",
        ),
        (
            say.masked_sentence,
            keys([1.0, 2.0, 3.0], hidden=(0, 1, 2)),
            "“q” sees no key: all 3 keys are hidden from it.",
            "«q» no ve ninguna clave: las 3 claves le están ocultas.",
        ),
        (
            say.masked_sentence,
            keys([1.0, -2.0]),
            "“q” sees all 2 keys: nothing is hidden from it.",
            "«q» ve las 2 claves: no tiene nada oculto.",
        ),
        (
            say.masked_sentence,
            keys([1.0]),
            "“q” sees the 1 key: nothing is hidden from it.",
            "«q» ve la única clave (1): no tiene nada oculto.",
        ),
        (
            say.masked_sentence,
            keys([0.0] * 6, hidden=(0, 1, 2, 3, 4)),
            "“q” sees 1 of the 6 keys; hidden from it: “a”, “b”, “c” and 2 more.",
            "«q» ve 1 de las 6 claves; tiene ocultas: «a», «b», «c» y 2 más.",
        ),
        (
            unmasked_weights,
            WORKED,
            "“q” gives its largest weight, 0.731, to “The”.",
            "«q» da su mayor peso, 0,731, a «The».",
        ),
        (
            unmasked_weights,
            keys([1.0, 1.0, 0.0], weights=[0.4, 0.4, 0.2]),
            "“q” gives its largest weight, 0.400, to “a” and “b” alike.",
            "«q» da su mayor peso, 0,400, por igual a «a» y «b».",
        ),
        (
            unmasked_weights,
            keys([-3.0, -3.0, 5.0], hidden=(2,)),
            "“q” gives every key it sees the same weight, 0.500.",
            "«q» da el mismo peso, 0,500, a cada clave que ve.",
        ),
        (
            unmasked_weights,
            keys([1.0, 2.0], hidden=(0, 1)),
            "“q” sees no key at all, so every weight in its row is 0 and its output is a row of "
            "zeros, never NaN.",
            "«q» no ve ninguna clave, así que todos los pesos de su fila son 0 y su salida es "
            "una fila de ceros, nunca NaN.",
        ),
        (
            say.weighted_sentence,
            WORKED,
            "The heaviest key, “The”, passes on 0.731 × its value: [0.731, −1.462]. Hidden keys "
            "pass on nothing.",
            "La clave de más peso, «The», transmite 0,731 × su valor: [0,731; −1,462]. Las "
            "claves ocultas no transmiten nada.",
        ),
        (
            say.weighted_sentence,
            keys([1.0, 1.0, 0.0], weights=[0.4, 0.4, 0.2]),
            "The heaviest keys, “a” and “b”, each pass on 0.400 × their value.",
            "Las claves de más peso, «a» y «b», transmiten cada una 0,400 × su valor.",
        ),
        (
            say.weighted_sentence,
            keys([1.0, 2.0], hidden=(0, 1)),
            "“q” sees no key, so every weighted value is 0.",
            "«q» no ve ninguna clave, así que cada valor ponderado es 0.",
        ),
    ],
)
def test_each_sentence_names_exactly_the_keys_the_numbers_single_out(
    sentence, rows, english, spanish
) -> None:
    """The largest score and weight name every key that has it; the mask names the hidden
    keys; past three keys the rest are counted."""
    assert english in sentence("q", rows)
    with use_locale("es"):
        assert spanish in sentence("q", rows)


def test_held_back_weights_are_not_said() -> None:
    text = say.weights_sentence("q", WORKED, hold_back=True)
    assert text.endswith("Guess before you look.")
    assert "0.731" not in text
    with use_locale("es"):
        assert say.weights_sentence("q", WORKED, hold_back=True).endswith("Adivina antes de mirar.")


def test_a_query_that_sees_nothing_outputs_zeros_in_both_languages() -> None:
    rows = keys([1.0, 2.0], hidden=(0, 1))
    assert "its new vector is [0.000, 0.000]: a row of zeros" in say.output_sentence(
        "q", rows, [0.0, -0.0]
    )
    with use_locale("es"):
        assert "su nuevo vector es [0,000; 0,000]: una fila de ceros" in say.output_sentence(
            "q", rows, [0.0, -0.0]
        )


def test_every_sentence_is_spanish_with_tu() -> None:
    """No English catalogue text and no usted forms in any sentence, on awkward rows."""
    for rows in (WORKED, keys([-1.0, -1.0, 2.0], hidden=(2,)), keys([1.0], hidden=(0,))):
        with use_locale("es"):
            texts = [
                say.scores_sentence("q", rows),
                say.masked_sentence("q", rows),
                say.weights_sentence("q", rows, hold_back=False),
                say.weights_sentence("q", rows, hold_back=True),
                say.weighted_sentence("q", rows),
                say.output_sentence("q", rows, [0.0, 0.0]),
            ]
        for text in texts:
            for english in (" the ", " key", "score", "weight", "hidden", " sees "):
                assert english not in f" {text} ", text
            for usted in ("usted", "Usted", "adivine", "Elija", "Siga", "escriba"):
                assert usted not in text, text
