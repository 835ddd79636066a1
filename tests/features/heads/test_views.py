"""The heads page and the lab's position demo, as views compute them for a URL."""

from typing import Any

import numpy as np
import plotly.graph_objects as go
import pytest
from fastapi.testclient import TestClient
from starlette.datastructures import QueryParams

from app.core.rules import grouped_query_kv_heads
from app.features.heads.form import HeadsForm
from app.features.heads.page import HeadsView, heads_page, scaling_figures
from app.features.lab.page import LabPage, lab_page
from app.features.lab.schemas import AttentionRequest
from app.features.lab.service import compute_attention
from app.features.stages.schemas import MaskSpec
from app.features.stages.service import position_demo
from app.math.scaling import saturation
from app.settings import Settings
from app.web.pages import Page
from tests.web.test_charts import assert_valid_chart
from tests.web.test_figures import panel


def page(**params: Any) -> Page:
    return heads_page(
        *HeadsForm.read(QueryParams({k: str(v) for k, v in params.items()})), Settings()
    )


def view(**params: Any) -> HeadsView:
    return page(**params).view


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
    context = view(heads=8, kv_heads=2)
    assert context.groups == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert [s.kv_head for s in context.result.heads] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert "head=5" in context.head_link(5)
    # Every head in one figure: a row of 4 panels per key/value head, one colour axis on 0–1.
    fig = context.figures["heads"]
    assert fig["data"][0]["meta"]["panels"] == [[0, 1, 2, 3], [4, 5, 6, 7]]  # row 2: KV 1
    assert [a["text"] for a in fig["layout"]["annotations"]][4] == "head 4 · KV 1"
    assert (fig["layout"]["coloraxis"]["cmin"], fig["layout"]["coloraxis"]["cmax"]) == (0.0, 1.0)
    n = len(context.result.tokens)
    for i in range(8):
        weights = context.result.heads[i].weights
        np.testing.assert_allclose(panel(fig, i, n), np.round(weights, 3))


def test_every_figure_of_the_page_is_valid_plotly() -> None:
    figures = view(positional="rope").figures
    go.Figure(figures["heads"])
    for name in ("concat", "w_o", "output"):
        go.Figure(figures[name].fig)
    assert [stage.map.id for stage in figures["view"].stages] == [
        f"head-{name}" for name in ("scores", "scaled", "masked", "weights", "weighted", "output")
    ]


def test_without_position_shuffling_only_reorders_the_output_rows() -> None:
    context = view(text="the cat sat on the mat", mask="bidirectional", positional="none")
    demo, result = context.demo, context.result
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
    demo = view(text="the cat sat on the mat", mask=mask, positional=positional).demo
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


# ---------------------------------------------------------------- position on the head lab


def lab(**params: str) -> LabPage:
    return lab_page(list(params.items()), Settings())


@pytest.mark.parametrize(
    ("positional", "equivariant"), [("none", True), ("sinusoidal", False), ("rope", False)]
)
def test_the_lab_shows_whether_shuffling_changes_the_output(
    positional: str, equivariant: bool
) -> None:
    page = lab(tokens="the cat saw the cat", mask="bidirectional", positional=positional)
    assert page.ok
    assert page.result.positional == positional
    assert page.demo is not None
    assert page.demo.equivariant is equivariant
    assert [r["token"] for r in page.demo.repeats] == ["the", "cat"]
    assert all((r["gap"] < 1e-12) is equivariant for r in page.demo.repeats)
    assert (("positional", positional) in page.params) is (positional != "none")


def test_the_lab_explains_bad_positional_settings(client: TestClient) -> None:
    assert lab(positional="learned").problems == [
        "positional: “learned” is not one of none, sinusoidal, rope"
    ]
    response = client.get("/?tokens=a+b&d_k=3&positional=rope")
    assert response.status_code == 422
    assert "d_k is 3 (odd)" in response.text


def test_scaling_figures_are_valid_plotly() -> None:
    figures = scaling_figures(saturation(seed=0))
    assert set(figures) == {"score_std", "max_weight", "entropy_bits", "gradient"}
    for shown in figures.values():
        assert_valid_chart(shown)
        assert [t["name"] for t in shown.figure["data"]] == ["÷ √d_k", "raw Q·K"]
