"""The stage view: hover arithmetic written on the server, heatmaps on honest scales, tables."""

import dataclasses

import numpy as np
import pytest

from app.core.i18n import format_rows, use_locale
from app.features.lab.download import stages_csv
from app.features.lab.schemas import AttentionRequest
from app.features.lab.service import compute_attention
from app.features.stages.page import HeadStages, Stage, head_stages, shorts
from app.figures.heatmap import DIVERGING, VIRIDIS, render
from app.settings import Settings
from tests.heatmap_tips import tip_texts

SETTINGS = Settings()


@pytest.fixture(scope="module")
def worked() -> HeadStages:
    return head_stages(compute_attention(AttentionRequest(), SETTINGS).head())


def stage(view: HeadStages, name: str) -> Stage:
    return view.stage(name)


def hover(view: HeadStages, name: str, i: int, j: int) -> str:
    picture = stage(view, name).map
    return tip_texts(render(picture), picture.id)[i][j]


@pytest.mark.parametrize(
    ("name", "i", "j", "text"),
    [
        ("scores", 1, 0, "q_cat · k_The = 0×0.5 + 1×1 = 1.000"),
        ("scaled", 1, 0, "q_cat · k_The = 0×0.5 + 1×1 = 1.000, ÷ √2 = 0.707"),
        ("masked", 1, 0, "cat → The: 0.707 + 0 = 0.707 (visible)"),
        ("masked", 1, 2, "cat → sleeps: 0.707 + (−∞) = −∞ (hidden by the mask)"),
        ("weights", 1, 0, "cat → The: e^0.707 / (e^0.707 + e^0.000) = 0.670"),
        ("weights", 1, 2, "cat → sleeps: hidden key, weight 0"),
        ("weighted", 0, 1, "0.670 × v_The[1] = 0.670 × (−1) = −0.670"),
        ("output", 1, 0, "out_cat[0] = 0.67×1 + 0.33×0.5 + 0×1.5 = 0.835"),
    ],
)
def test_hover_shows_the_cells_arithmetic(
    worked: HeadStages, name: str, i: int, j: int, text: str
) -> None:
    assert hover(worked, name, i, j) == text
    figure = stage(worked, name).map
    assert tip_texts(render(figure), figure.id)[i][j] == text  # what the markup gives


def test_hidden_cells_read_minus_infinity_and_zero_in_the_hidden_look(worked: HeadStages) -> None:
    masked, weights = stage(worked, "masked").map, stage(worked, "weights").map
    assert masked.mask[1, 2]
    assert masked.texts[1][2] == "−∞"
    assert weights.mask[1, 2]
    assert weights.texts[1][2] == "0"
    assert weights.texts[1][:2] == ["0.670", "0.330"]  # the table's numbers, in the cells
    assert tuple(weights.rgb[1, 2]) == (0x8A, 0x8A, 0x8A)  # no scale colour


def test_scales_are_colour_blind_safe_and_signed_ones_centred(worked: HeadStages) -> None:
    weights = stage(worked, "weights").map.scale
    assert (weights.stops, weights.low, weights.high) == (VIRIDIS, 0.0, 1.0)
    for name in ("scores", "scaled", "masked", "weighted", "output"):
        scale = stage(worked, name).map.scale
        assert scale.stops == DIVERGING
        assert scale.low == -scale.high


def test_every_stage_outlines_the_selected_query(worked: HeadStages) -> None:
    for name in ("scores", "scaled", "masked", "weights", "output"):
        assert stage(worked, name).map.selected_row == 1  # "cat"


def test_the_selected_querys_weighted_values_are_seed_000s_column(worked: HeadStages) -> None:
    table = stage(worked, "weighted").table
    assert np.round(table.matrix, 2).tolist() == [[0.67, -0.67], [0.17, 0.33], [0.0, 0.0]]
    assert table.row_labels == ["The", "cat", "sleeps"]
    assert worked.weight_sum == pytest.approx(1.0)


def test_a_result_without_a_breakdown_gets_one(worked: HeadStages) -> None:
    """Other pages (several heads, a real model) pass stage fields without `query`."""
    head = dataclasses.replace(worked.result, query=None)
    view = head_stages(head, query_index=0)
    assert view.query.token == "The"
    assert [round(r.weight, 3) for r in view.query.rows] == [1.0, 0.0, 0.0]


def test_large_sequences_skip_hover_and_full_tables() -> None:
    tokens = [f"t{i}" for i in range(40)]
    view = head_stages(compute_attention(AttentionRequest(tokens=tokens), SETTINGS).head())
    assert stage(view, "scores").map.hover is None
    assert len(stage(view, "weights").table.matrix) == 1  # the selected query's row


def test_markup_in_labels_is_text() -> None:
    result = compute_attention(AttentionRequest(tokens=["<b>x</b>", "&"]), SETTINGS)
    markup = render(stage(head_stages(result.head()), "scores").map)
    assert "<b>x</b>" not in markup
    assert "&lt;b&gt;x&lt;/b&gt;" in markup


@pytest.mark.parametrize(
    ("lang", "value", "text"),
    [
        ("en", 0.5, "0.5"),
        ("en", 1.0, "1"),
        ("en", -0.34, "(−0.34)"),
        ("en", 1000.0, "1,000"),
        ("es", 0.5, "0,5"),
        ("es", 1.0, "1"),
        ("es", -0.34, "(−0,34)"),
    ],
)
def test_short_factors(lang: str, value: float, text: str) -> None:
    with use_locale(lang):
        assert shorts(format_rows([[value]])) == [[text]]


def test_csv_rows_count_every_cell() -> None:
    lines = stages_csv(compute_attention(AttentionRequest(), SETTINGS)).splitlines()
    # x 3×2, three 2×2 projections, q k v 3×2 each, five 3×3 stages, weighted and output 3×2
    assert len(lines) - 1 == 6 + 3 * 4 + 3 * 6 + 5 * 9 + 6 + 6


def test_wide_heads_leave_the_arithmetic_out_of_the_hover_but_keep_the_numbers() -> None:
    """14 tokens of a 32-wide head: 14² · 32 terms would be half a megabyte of hover text."""
    rng = np.random.default_rng(1)
    tokens = [f"t{i}" for i in range(14)]
    req = AttentionRequest(
        tokens=tokens,
        x=rng.standard_normal((14, 32)).round(2).tolist(),
        w_q=rng.standard_normal((32, 32)).round(2).tolist(),
        w_k=rng.standard_normal((32, 32)).round(2).tolist(),
        w_v=rng.standard_normal((32, 32)).round(2).tolist(),
    )
    view = head_stages(compute_attention(req, SETTINGS))
    assert stage(view, "scores").map.hover is None
    assert len(stage(view, "weights").table.matrix) == 14  # the tables stay whole
    narrow = head_stages(compute_attention(AttentionRequest(tokens=tokens), SETTINGS))
    assert stage(narrow, "scores").map.hover is not None


# ---------------------------------------------------------------- the query in a sentence


def summary(locale: str = "en", **request: object) -> str:
    with use_locale(locale):
        result = compute_attention(AttentionRequest.model_validate(request), SETTINGS)
        return head_stages(result.head()).summary


TIE = {"tokens": ["a", "b", "c"], "x": [[1, 0], [1, 0], [0, 1]], "mask": {}, "query": 2}
ALL_HIDDEN = {"mask": {"allowed": [[False] * 3, [True, True, False], [True] * 3]}, "query": 0}
# Every score of "c" below 0: its weights are still never negative, the least negative wins.
NEGATIVE = {
    "tokens": ["a", "b", "c"],
    "x": [[0.5, 0], [2, 0], [1, 0]],
    "w_q": [[1, 0], [0, 1]],
    "w_k": [[-1, 0], [0, -1]],
    "mask": {},
    "query": 2,
}


@pytest.mark.parametrize(
    ("locale", "request_", "sentence"),
    [
        (
            "en",
            {},
            "“cat” sees 2 of its 3 keys; its largest weight, 0.670, goes to “The”; its output "
            "is [0.835, −0.340].",
        ),
        (
            "es",
            {},
            "«cat» ve 2 de sus 3 claves; su mayor peso, 0,670, va a «The»; su salida es "
            "[0,835; −0,340].",
        ),
        ("en", TIE, "its largest weight, 0.373, goes to each of “a” and “b”;"),
        ("es", TIE, "su mayor peso, 0,373, va a cada una de «a» y «b»;"),
        ("en", ALL_HIDDEN, "“The” sees no key, so its weights and its output are all 0"),
        ("es", ALL_HIDDEN, "«The» no ve ninguna clave, así que sus pesos y su salida son todos 0"),
        ("en", NEGATIVE, "“c” sees 3 of its 3 keys; its largest weight, 0.488, goes to “a”;"),
        ("es", NEGATIVE, "«c» ve 3 de sus 3 claves; su mayor peso, 0,488, va a «a»;"),
    ],
)
def test_the_querys_sentence_is_true_of_its_numbers(
    locale: str, request_: dict[str, object], sentence: str
) -> None:
    assert sentence in summary(locale, **request_)


def test_the_sentences_states_are_what_they_claim() -> None:
    """The states above have a tie, a row with no visible key, and only negative scores."""
    tie = compute_attention(AttentionRequest.model_validate(TIE), SETTINGS)
    weights = np.asarray(tie.weights)[2]
    assert weights[0] == weights[1] > weights[2]
    hidden = compute_attention(AttentionRequest.model_validate(ALL_HIDDEN), SETTINGS)
    assert np.asarray(hidden.weights)[0].tolist() == [0.0, 0.0, 0.0]
    assert np.asarray(hidden.output)[0].tolist() == [0.0, 0.0]
    negative = compute_attention(AttentionRequest.model_validate(NEGATIVE), SETTINGS)
    assert np.asarray(negative.scores)[2].tolist() == [-0.5, -2.0, -1.0]
    assert np.asarray(negative.weights)[2].min() >= 0


def test_the_table_says_when_its_printed_parts_do_not_add_up() -> None:
    """Three decimals throughout: the worked example adds up as printed; "a b c" at d = 4 has
    a weight × V column whose printed parts sum to −0.880 under a printed Σ of −0.879."""
    assert not head_stages(compute_attention(AttentionRequest(), SETTINGS).head()).rounded_parts
    request = AttentionRequest(tokens=["a", "b", "c"], d_model=4, d_k=4, d_v=4)
    view = head_stages(compute_attention(request, SETTINGS).head())
    parts = [f"{row.weighted_value[0]:.3f}" for row in view.query.rows]
    assert parts == ["-0.461", "-0.270", "-0.149"]
    assert f"{view.query.output[0]:.3f}" == "-0.879"
    assert view.rounded_parts


@pytest.mark.parametrize(
    ("lang", "labels"),
    [
        ("en", {"scores": "score", "weights": "weight", "weighted": "value", "output": "value"}),
        ("es", {"scores": "puntuación", "weights": "peso", "weighted": "valor", "output": "valor"}),
    ],
)
def test_each_colour_bar_names_what_its_stage_holds(lang: str, labels: dict[str, str]) -> None:
    """weight × V and the output are values, not scores: the walk-through's steps 7 and 8
    once said "score" under them."""
    with use_locale(lang):
        view = head_stages(compute_attention(AttentionRequest(), SETTINGS).head())
        names = {name: stage(view, name).map.scale.label for name in view_names(view)}
    assert names == {**labels, "scaled": labels["scores"], "masked": labels["scores"]}


def view_names(view: HeadStages) -> list[str]:
    return [s.name for s in view.stages]
