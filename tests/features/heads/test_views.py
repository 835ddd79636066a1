"""The heads page and the lab's position demo, as views compute them for a URL."""

from typing import Any
from urllib.parse import parse_qsl, urlsplit

import numpy as np
import pytest
from starlette.datastructures import QueryParams

from app.core.i18n import use_locale
from app.core.rules import grouped_query_kv_heads
from app.features.heads.form import HeadsForm
from app.features.heads.page import HeadsView, heads_page, scaling_figures, scaling_view
from app.features.lab.schemas import AttentionRequest
from app.features.lab.service import compute_attention
from app.features.stages.schemas import MaskSpec
from app.features.stages.service import position_demo
from app.math.scaling import saturation
from app.settings import Settings
from app.web.pages import Page
from tests.web.test_charts import assert_valid_chart


def page(**params: Any) -> Page:
    return heads_page(
        *HeadsForm.read(QueryParams({k: str(v) for k, v in params.items()})), Settings()
    )


def view(**params: Any) -> HeadsView:
    return page(**params).view


def shown_form(**params: Any) -> HeadsForm:
    return HeadsForm.read(QueryParams({k: str(v) for k, v in params.items()}))[0].snapped()[0]


@pytest.mark.parametrize(
    ("heads", "expected"), [(1, None), (2, None), (4, 2), (8, 2), (9, 3), (7, None)]
)
def test_gqa_preset_uses_the_fewest_groups_above_one(heads: int, expected: int | None) -> None:
    assert grouped_query_kv_heads(heads) == expected


@pytest.mark.parametrize(
    ("heads", "kv_heads", "preset", "expected", "noted"),
    [
        (8, 2, "mha", 8, False),
        (8, 8, "gqa", 2, False),
        (8, 2, "mqa", 1, False),
        (6, 4, None, 3, True),  # 4 does not divide 6: the nearest divisor below
        (4, 9, None, 4, True),
        (4, 2, None, 2, False),
    ],
)
def test_presets_and_divisors(
    heads: int, kv_heads: int, preset: str | None, expected: int, noted: bool
) -> None:
    form, note = HeadsForm(heads=heads, kv_heads=kv_heads, preset=preset).snapped()
    assert form.kv_heads == expected
    assert heads % form.kv_heads == 0
    assert (note is not None) is noted
    assert "preset" not in dict(form.state())


def test_heads_are_grouped_by_the_kv_head_they_share() -> None:
    shown = view(heads=8, kv_heads=2, head=5).shown
    assert [s.kv_head for s in shown.result.heads] == [0, 0, 0, 0, 1, 1, 1, 1]
    group = shown.heads_group()
    # One panel per head in head order, a titled section per key/value head, one 0–1 scale.
    assert [p.id for p in group.panels] == [f"heads-{i}" for i in range(8)]
    assert [(s.title, s.size) for s in group.sections] == [
        ("Key/value head 0", 4),
        ("Key/value head 1", 4),
    ]
    assert (group.scale.low, group.scale.high) == (0.0, 1.0)
    assert (group.selected, group.columns) == (5, 4)
    for i, panel in enumerate(group.panels):
        np.testing.assert_array_equal(panel.matrix, shown.result.heads[i].weights)
        assert panel.title == f"head {i}"
        assert dict(parse_qsl(urlsplit(panel.href).query))["head"] == str(i)
    # The links keep the whole state, and `link` adds what the template's classroom keeps.
    assert dict(parse_qsl(urlsplit(group.panels[2].href).query)) == {
        **{k: str(v) for k, v in shown_form(heads=8, kv_heads=2, head=5).state()},
        "head": "2",
    }
    kept = shown.heads_group(lambda href: href + "&lang=es")
    assert all(p.href.endswith("&lang=es") for p in kept.panels)


@pytest.mark.parametrize(
    ("heads", "kv_heads", "sections", "columns"),
    [(8, 8, [1] * 8, 1), (8, 1, [8], 4), (6, 3, [2, 2, 2], 2), (1, 1, [1], 1)],
)
def test_multi_head_and_multi_query_have_a_section_per_key_value_head(
    heads: int, kv_heads: int, sections: list[int], columns: int
) -> None:
    group = view(heads=heads, kv_heads=kv_heads).shown.heads_group()
    assert [s.size for s in group.sections] == sections
    assert group.columns == columns


@pytest.mark.parametrize(
    ("params", "groups", "chosen", "cache"),
    [
        (
            {"heads": 8, "kv_heads": 2, "head": 1},
            "h = 8 query heads share g = 2 key/value heads, 4 query heads each: heads in one "
            "group compare their own queries with the same keys and mix the same values.",
            "Head 1 shares key/value head 0 with heads 0, 2 and 3: the same keys and values, "
            "its own queries, so its own weights.",
            "This configuration caches 4× less than multi-head attention: 32 bytes per token "
            "instead of 128.",
        ),
        (
            {"heads": 2, "kv_heads": 1, "head": 1},
            "h = 2 query heads share g = 1 key/value head: all 2 compare their own queries "
            "with the same keys and mix the same values.",
            "Head 1 shares key/value head 0 with head 0: the same keys and values, its own "
            "queries, so its own weights.",
            "This configuration caches 2× less than multi-head attention: 16 bytes per token "
            "instead of 32.",
        ),
        (
            {"heads": 4, "kv_heads": 4, "head": 3},
            "h = 4 query heads with as many key/value heads: multi-head attention, each head "
            "compares its own queries with its own keys.",
            "Head 3 has key/value head 3 to itself: no other query head reads its keys and values.",
            "With g = h every query head caches keys and values of its own: this is "
            "multi-head attention, the largest cache of the three.",
        ),
    ],
)
def test_sentences_come_from_the_numbers(
    params: dict[str, int], groups: str, chosen: str, cache: str
) -> None:
    shown = view(**params).shown
    assert shown.groups_sentence() == groups
    assert shown.chosen_sentence() == chosen
    assert shown.cache_sentence() == cache


def test_the_sentences_in_spanish() -> None:
    with use_locale("es"):
        shown = view(heads=8, kv_heads=2, head=1).shown
        assert shown.chosen_sentence().startswith("La cabeza 1 comparte")
        assert "0, 2 y 3" in shown.chosen_sentence()
        assert "4 veces menos" in shown.cache_sentence()


def test_the_matrices_are_the_apis_on_scales_symmetric_about_zero() -> None:
    shown = view(heads=4, kv_heads=2, d_head=2).shown
    result = shown.result
    assert shown.concat_columns == ["h0·0", "h0·1", "h1·0", "h1·1", "h2·0", "h2·1", "h3·0", "h3·1"]
    for figure, values in (
        (shown.concat_map, result.concat),
        (shown.w_o_map, result.w_o),
        (shown.output_map, result.output),
    ):
        np.testing.assert_array_equal(figure.matrix, values)
        assert figure.scale.low == -figure.scale.high
    assert list(shown.w_o_map.row_labels) == shown.concat_columns
    assert [stage.map.id for stage in shown.stages.stages] == [
        f"head-{name}" for name in ("scores", "scaled", "masked", "weights", "weighted", "output")
    ]


def test_without_position_shuffling_only_reorders_the_output_rows() -> None:
    shown = view(text="the cat sat on the mat", mask="bidirectional", positional="none").shown
    demo, result = shown.demo, shown.result
    assert demo.equivariant
    assert demo.gap < 1e-9
    assert sorted(demo.order) == list(range(6)) != demo.order
    # the shuffled output row of each token is that token's old row
    for j, p in enumerate(demo.order):
        np.testing.assert_allclose(demo.output[j], result.output[p], atol=1e-9)
    (the,) = demo.repeats
    assert (the["token"], the["positions"], the["gap"]) == ("the", [0, 4], 0.0)


@pytest.mark.parametrize(
    ("positional", "mask"),
    [("sinusoidal", "bidirectional"), ("rope", "bidirectional"), ("none", "causal")],
)
def test_position_information_breaks_the_symmetry(positional: str, mask: str) -> None:
    demo = view(text="the cat sat on the mat", mask=mask, positional=positional).shown.demo
    assert not demo.equivariant
    assert demo.gap > 1e-3
    assert demo.repeats[0]["gap"] > 1e-3  # the two "the" now differ
    assert demo.position_in_mask is (mask == "causal")


@pytest.mark.parametrize(
    ("positional", "equivariant"), [("none", True), ("sinusoidal", False), ("rope", False)]
)
def test_shuffle_demo_for_one_head_as_the_lab_computes_it(
    positional: str, equivariant: bool
) -> None:
    req = AttentionRequest(
        tokens=["a", "b", "a", "c"],
        mask=MaskSpec(padding=[False, False, False, True]),
        positional=positional,
    )
    result = compute_attention(req, Settings())
    demo = position_demo(req, result, compute_attention, Settings())
    assert demo.equivariant is equivariant
    assert (demo.repeats[0]["gap"] < 1e-12) is equivariant


def test_page_problems_become_messages_not_errors() -> None:
    def messages(**params: Any) -> list[str]:
        return [problem.message for problem in page(**params).problems]

    assert messages(d_head=3, positional="rope") == [
        "positional is rope, which rotates q and k in pairs of numbers, but d_head is 3 (odd); "
        "choose an even d_head or another positional kind"
    ]
    assert messages(heads="many")[0].startswith("heads must be a whole number")
    assert messages(heads="²")[0].startswith("heads must be a whole number")
    assert messages(text="   ")[0].startswith("text is empty")
    assert messages(text=" ".join(["w"] * 33))[0].startswith("text has 33 tokens")


def test_scaling_figures_are_valid_plotly() -> None:
    figures = scaling_figures(saturation(seed=0))
    assert set(figures) == {"score_std", "max_weight", "entropy_bits", "gradient"}
    for shown in figures.values():
        assert_valid_chart(shown)
        assert [t["name"] for t in shown.figure["data"]] == ["÷ √d_k", "raw Q·K"]


@pytest.mark.parametrize("seed", [0, 5, 1999])
def test_the_scaling_sentences_read_this_seeds_numbers(seed: int) -> None:
    scaling = scaling_view(seed)
    curves = saturation(seed % 1000)
    assert scaling.seed == seed % 1000
    assert scaling.uniform_bits == "6"  # log₂ 64 keys
    assert scaling.typical_size().endswith("about 1.4 for d_k = 2, about 22.6 for d_k = 512")
    raw, scaled = curves["raw_gradient"], curves["scaled_gradient"]
    peak = int(np.argmax(raw))
    sentence = scaling.gradient_sentence()
    assert f"largest at d_k = {curves['d_k'][peak]} ({raw[peak]:.3f})" in sentence
    assert f"falls to {raw[-1]:.3f} at d_k = 512" in sentence
    assert f"between {min(scaled):.3f} and {max(scaled):.3f}" in sentence
