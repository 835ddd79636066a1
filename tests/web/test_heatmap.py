"""The heatmaps drawn by the server, read back from their markup and pixels: every cell's colour
is its scale's colour for its value, hidden cells look like no value, labels are as typed."""

import base64
import io
import re
import xml.etree.ElementTree as ET
from itertools import pairwise

import numpy as np
import pytest
from markupsafe import Markup
from PIL import Image
from plotly.colors import get_colorscale, hex_to_rgb, sample_colorscale, unlabel_rgb

from app.core.i18n import gettext, use_locale
from app.core.rules import WORKED_TOKENS, WORKED_W_K, WORKED_W_Q, WORKED_W_V, WORKED_X
from app.figures.heatmap import (
    DIVERGING,
    HIDDEN_COLOUR,
    Heatmap,
    HeatmapGroup,
    PanelSection,
    Tips,
    categorical_scale,
    png_bytes,
    render,
    sequential_scale,
    signed_scale,
    svg_document,
    weights_scale,
)
from app.figures.heatmap.layout import TYPES, layout, legend_layout, text_width, thinned
from app.figures.heatmap.scale import nice_limit, text_colours
from app.figures.heatmap.svg import section_cells
from app.math.attention import attend, causal_mask
from app.web.classroom import presenting
from app.web.templating import environment
from tests.heatmap_tips import tip_texts

SVG = "{http://www.w3.org/2000/svg}"
TOKENS = list(WORKED_TOKENS)


def worked_stages():
    x = WORKED_X
    return attend(x @ WORKED_W_Q, x @ WORKED_W_K, x @ WORKED_W_V, causal_mask(3))


def weights_map(**changes) -> Heatmap:
    stages = worked_stages()
    fields = {
        "id": "fig-weights",
        "title": "softmax weights",
        "values": stages.weights,
        "row_labels": TOKENS,
        "col_labels": TOKENS,
        "scale": weights_scale(),
        "hidden": ~stages.allowed,
        "hidden_text": "0",
        "selected_row": 1,
    }
    return Heatmap(**{**fields, **changes})


def square(n: int, seed: int = 0, **changes) -> Heatmap:
    z = np.random.default_rng(seed).normal(size=(n, n))
    tokens = [f"t{i}" for i in range(n)]
    fields = {"id": f"s{n}", "title": f"n = {n}", "values": z, "row_labels": tokens}
    fields |= {"col_labels": tokens, "scale": signed_scale(z)}
    return Heatmap(**{**fields, **changes})


def svg_of(markup: str) -> ET.Element:
    """The page's <svg> of a rendered figure, as XML (the SVG part is well-formed)."""
    found = re.search(r'<svg class="hm-svg".*?</svg>', str(markup), re.S)
    assert found, "no SVG in the figure"
    return ET.fromstring(found.group(0).replace("<svg ", f'<svg xmlns="{SVG[1:-1]}" ', 1))


def cells(svg: ET.Element) -> list[ET.Element]:
    group = next(g for g in svg.iter(f"{SVG}g") if g.get("class") == "hm-cells")
    return list(group)


def texts(svg: ET.Element, cls: str) -> list[str]:
    group = next(g for g in svg.iter(f"{SVG}g") if g.get("class") == cls)
    return [t.text or "" for t in group]


def rgb(colour: str) -> tuple[int, ...]:
    return tuple(hex_to_rgb(colour) if colour.startswith("#") else unlabel_rgb(colour))


# ---------------------------------------------------------------- the scales


@pytest.mark.parametrize(("kind", "reference"), [("weights", "Viridis"), ("signed", "diverging")])
def test_scale_colours_agree_with_plotly_sampling_its_colour_scale(kind, reference) -> None:
    """An independent reference: plotly's own interpolation of the same colour scale."""
    scale = weights_scale() if kind == "weights" else signed_scale(np.array([-1.0, 1.0]))
    stops = get_colorscale("Viridis") if reference == "Viridis" else [
        [k / (len(DIVERGING) - 1), c] for k, c in enumerate(DIVERGING)
    ]  # fmt: skip
    t = np.linspace(0, 1, 201)
    expected = np.array([rgb(c) for c in sample_colorscale(stops, t.tolist())])
    got = scale.rgb(scale.low + t * (scale.high - scale.low)).astype(float)
    assert np.abs(got - expected).max() <= 1.0


def test_weights_sit_on_a_fixed_zero_to_one_scale_whatever_the_data() -> None:
    """0.5 is the same colour in a row whose largest weight is 0.5 and in one reaching 1."""
    half = weights_scale().colour(0.5)
    for values in ([[0.5, 0.5], [0.25, 0.75]], [[1.0, 0.0], [0.5, 0.5]]):
        figure = Heatmap(
            id="w", title="w", values=values, row_labels=["a", "b"], col_labels=["a", "b"],
            scale=weights_scale(),
        )  # fmt: skip
        fills = [rect.get("fill") for rect in cells(svg_of(render(figure)))]
        assert fills[2] == half if values[1][0] == 0.5 else fills[0] == half
    assert (weights_scale().low, weights_scale().high) == (0.0, 1.0)
    assert weights_scale().colour(0) == "#440154"
    assert weights_scale().colour(1) == "#fde725"


def test_signed_scale_is_symmetric_about_zero_with_white_in_the_middle() -> None:
    scale = signed_scale(np.array([[0.3, -2.1], [1.0, -np.inf]]))
    assert (scale.low, scale.high) == (-2.5, 2.5)  # the largest |finite value|, made nice
    assert scale.colour(0.0) == "#f7f7f7"
    assert scale.colour(-2.5) == "#67001f"
    assert scale.colour(2.5) == "#053061"
    assert scale.ticks() == [-2.5, -1.25, 0.0, 1.25, 2.5]


def test_a_group_scale_reaches_the_largest_value_of_every_panel() -> None:
    scale = signed_scale(np.array([0.5, -0.2]), np.array([[3.2]]))
    assert (scale.low, scale.high) == (-5.0, 5.0)


@pytest.mark.parametrize(
    ("reach", "limit"),
    [(0.707, 1.0), (1.0, 1.0), (1.3, 2.0), (2.121, 2.5), (3.0, 5.0), (12.0, 20.0),
     (0.03, 0.05), (0.0, 1.0), (float("inf"), 1.0)],
)  # fmt: skip
def test_nice_limit_is_the_next_1_2_2_5_5_step(reach: float, limit: float) -> None:
    assert nice_limit(reach) == pytest.approx(limit)


def test_a_sequential_scale_spans_its_stated_range() -> None:
    scale = sequential_scale(0.0, 2.0, "entropy")
    assert scale.colour(1.0) == weights_scale().colour(0.5)
    with pytest.raises(ValueError, match="low < high"):
        sequential_scale(1.0, 1.0, "entropy")


def test_the_hidden_grey_is_far_from_every_colour_a_value_can_take() -> None:
    grey = np.array(rgb(HIDDEN_COLOUR), dtype=float)
    for scale in (weights_scale(), signed_scale(np.array([1.0]))):
        every = scale.rgb(np.linspace(scale.low, scale.high, 1001)).astype(float)
        assert np.linalg.norm(every - grey, axis=1).min() > 60


def test_numbers_are_black_or_white_whichever_reads_better_on_the_fill() -> None:
    fills = np.array([[253, 231, 37], [68, 1, 84], [138, 138, 138], [247, 247, 247]])
    assert text_colours(fills).tolist() == [False, True, False, False]


# ---------------------------------------------------------------- cells against values


def test_every_cell_is_filled_with_its_scale_colour_or_the_hidden_grey() -> None:
    stages = worked_stages()
    figure = Heatmap(
        id="masked", title="+ M", values=stages.masked, row_labels=TOKENS,
        col_labels=TOKENS, scale=signed_scale(stages.masked),
    )  # fmt: skip
    svg = svg_of(render(figure))
    fills = [rect.get("fill") for rect in cells(svg)]
    for k, value in enumerate(stages.masked.ravel()):
        assert fills[k] == (figure.scale.colour(value) if np.isfinite(value) else HIDDEN_COLOUR)
    # the worked example: scaled scores 0.707 … 2.121 on a scale reaching 2.5
    assert fills[4] == figure.scale.colour(0.0)  # cat → cat: 0 × 0.5 + 1 × 0 = 0
    assert texts(svg, "hm-nums") == [
        "0.707", "−∞", "−∞", "0.707", "0.000", "−∞", "1.414", "0.707", "2.121",
    ]  # fmt: skip


def test_hidden_weights_read_their_own_hidden_text_and_are_named_in_the_legend() -> None:
    markup = str(render(weights_map()))
    svg = svg_of(markup)
    numbers = texts(svg, "hm-nums")
    assert numbers[:6] == ["1.000", "0", "0", "0.670", "0.330", "0"]  # "cat": 0.670, 0.330, 0
    assert "0" not in numbers[6:]  # "sleeps" sees every key
    hidden = [r for r in cells(svg) if r.get("class") == "hm-hid"]
    assert [r.get("fill") for r in hidden] == [HIDDEN_COLOUR] * 3
    legend = "".join(t.text or "" for t in svg.iter(f"{SVG}text"))
    assert "hidden (0)" in legend
    assert "Grey cells: hidden (0)." in markup


def test_states_take_their_own_flat_colour_and_are_named_in_the_legend() -> None:
    states = [("#ececf1", "not computed yet"), ("#0072b2", "computed"), ("#e69f00", "held now")]
    scale = categorical_scale(states, "score")
    values = np.array([[0, 1, 2], [2, 2, 1], [1, 0, 0]])
    hidden = np.array([[False, False, False], [False, False, False], [True, False, False]])
    figure = Heatmap(
        id="tiles", title="progress", values=values, row_labels=TOKENS, col_labels=TOKENS,
        scale=scale, hidden=hidden, hidden_text="hidden", cell_texts=[[""] * 3] * 3,
    )  # fmt: skip
    markup = str(render(figure))
    svg = svg_of(markup)
    fills = [rect.get("fill") for rect in cells(svg)]
    expected = [states[v][0] for v in values.ravel()]
    expected[6] = HIDDEN_COLOUR
    assert fills == expected  # never a blend between two states
    swatches = [r.get("fill") for r in svg.iter(f"{SVG}rect") if r.get("class") == "hm-swatch"]
    assert swatches == [colour for colour, _ in states] + [HIDDEN_COLOUR]
    legend = " ".join(t.text or "" for t in svg.iter(f"{SVG}tspan"))
    assert all(name in legend for _, name in states)
    assert "linearGradient" not in markup  # no colour bar for states
    assert "colour: score (not computed yet; computed; held now)." in markup
    with pytest.raises(ValueError, match="two states"):
        categorical_scale(states[:1], "score")


def test_a_figure_without_hidden_cells_says_nothing_of_them() -> None:
    markup = str(render(square(4)))
    assert "hidden (" not in markup
    assert 'class="hm-hid"' not in markup


def test_hover_texts_are_the_views_sentences_or_query_key_value() -> None:
    hover = [[f"q{i} · k{j} = …" for j in range(3)] for i in range(3)]
    with_hover = tip_texts(render(weights_map(hover=hover)), "fig-weights")
    assert with_hover[0][:2] == ["q0 · k0 = …", "q0 · k1 = …"]
    plain = tip_texts(render(weights_map()), "fig-weights")
    assert plain[1][0] == "cat → The: 0.670"
    assert plain[1][2] == "cat → sleeps: 0"  # hidden: its hidden text


def test_hover_templates_carry_each_operand_once() -> None:
    """A template filled per cell from its row's, column's and cell's operands, and the
    hidden cells' own template: the markup holds each number once, not a sentence a cell."""
    tips = Tips(
        ("{r} · {c}: {r1}×{c1} = {v} ({x0})", "{r} · {c} hidden"),
        rows=[["a0"], ["a1"], ["a2"]],
        cols=[["b0"], ["b1"], ["b2"]],
        cells=([[f"x{i}{j}" for j in range(3)] for i in range(3)],),
    )
    markup = str(render(weights_map(hover=tips)))
    texts = tip_texts(markup, "fig-weights")
    assert texts == [
        ["The · The: a0×b0 = 1.000 (x00)", "The · cat hidden", "The · sleeps hidden"],
        ["cat · The: a1×b0 = 0.670 (x10)", "cat · cat: a1×b1 = 0.330 (x11)", "cat · sleeps hidden"],
        [
            "sleeps · The: a2×b0 = 0.284 (x20)",
            "sleeps · cat: a2×b1 = 0.140 (x21)",
            "sleeps · sleeps: a2×b2 = 0.576 (x22)",
        ],
    ]
    assert markup.count("a1") == 1


def test_token_labels_and_texts_are_escaped() -> None:
    tokens = ["<b>", "&amp;", '"x"']
    figure = weights_map(row_labels=tokens, col_labels=tokens, title="<i>title</i>")
    markup = str(render(figure))
    assert "<b>" not in markup
    assert "<i>" not in markup
    svg = svg_of(markup)
    assert texts(svg, "hm-rows") == tokens  # read back as typed
    assert tip_texts(markup, "fig-weights")[0][1] == "<b> → &amp;: 0"
    ET.fromstring(svg_document(figure))  # still well-formed


@pytest.mark.parametrize(
    ("count", "step", "keep", "shown"),
    [
        (5, 1, None, [0, 1, 2, 3, 4]),
        (10, 3, None, [0, 3, 6, 9]),
        (10, 3, 4, [0, 4, 9]),  # 3 and 6 are nearer the selected 4 than a step
        (10, 3, 6, [0, 3, 6, 9]),
    ],
)
def test_every_kth_label_and_the_selected_one(count, step, keep, shown) -> None:
    assert thinned(count, step, keep) == shown


def test_labels_thin_out_where_cells_are_smaller_than_text() -> None:
    figure = square(40, selected_row=21)
    lay = layout(figure, TYPES[(False, False)])
    step = int(np.ceil(12 * 1.2 / lay.cell))
    assert step > 1
    svg = svg_of(render(figure))
    shown = texts(svg, "hm-rows")
    assert shown == [f"t{i}" for i in thinned(40, step, 21)]
    assert "t21" in shown
    assert len(texts(svg, "hm-cols")) == len(range(0, 40, step))
    small = svg_of(render(square(6)))
    assert texts(small, "hm-rows") == [f"t{i}" for i in range(6)]


def test_the_selected_query_is_outlined_and_its_label_bold() -> None:
    svg = svg_of(render(weights_map()))
    mark = next(r for r in svg.iter(f"{SVG}rect") if r.get("class") == "hm-mark")
    assert mark.get("y") == cells(svg)[3].get("y")  # row 1, "cat"
    bold = [t.text for t in svg.iter(f"{SVG}text") if t.get("font-weight") == "bold"]
    assert "cat" in bold


# ---------------------------------------------------------------- SVG or PNG


@pytest.mark.parametrize(("n", "png"), [(3, False), (32, False), (63, False), (64, True)])
def test_svg_cells_up_to_63_a_side_then_a_png(n: int, png: bool) -> None:
    markup = str(render(square(n)))
    assert ('class="hm-image"' in markup) is png
    assert markup.count('<rect x="') + markup.count('<rect class="hm-hid"') == (0 if png else n * n)


@pytest.mark.parametrize(("n", "numbers"), [(3, True), (12, True), (16, False), (17, False)])
def test_numbers_in_cells_only_while_they_fit(n: int, numbers: bool) -> None:
    """Signed scores at three decimals fit as numbers up to 12 a side (16 for weights)."""
    assert ('class="hm-nums"' in str(render(square(n)))) is numbers


def test_numbers_are_hidden_where_the_picture_shrinks_below_10_px_text() -> None:
    figure = square(8)
    lay = layout(figure, TYPES[(False, False)])
    rule = re.search(r"@container \(max-width: ([\d.]+)px\)", str(render(figure)))
    assert rule is not None
    # at that width of its frame the SVG is drawn at width / lay.width of its size
    assert float(rule.group(1)) / lay.width * lay.type.number == pytest.approx(10, abs=0.01)


def test_the_png_holds_every_cells_colour_one_pixel_each() -> None:
    figure = square(70, hidden=~causal_mask(70))
    image = Image.open(io.BytesIO(png_bytes(figure))).convert("RGB")
    assert image.size == (70, 70)
    pixels = np.asarray(image)
    for i, j in [(0, 0), (5, 3), (69, 69), (2, 40)]:
        expected = HIDDEN_COLOUR if j > i else figure.scale.colour(figure.matrix[i, j])
        assert tuple(pixels[i, j]) == rgb(expected)
    uri = re.search(r'href="data:image/png;base64,([^"]+)"', str(render(figure)))
    assert uri is not None
    shown = Image.open(io.BytesIO(base64.b64decode(uri.group(1))))
    assert np.array_equal(np.asarray(shown), pixels)


def test_png_cells_can_be_scaled_up() -> None:
    image = Image.open(io.BytesIO(png_bytes(square(3), pixels_per_cell=4)))
    assert image.size == (12, 12)


# ---------------------------------------------------------------- languages and modes


def test_spanish_pages_get_decimal_commas_and_spanish_words() -> None:
    with use_locale("es"):
        markup = str(render(weights_map()))
    svg = svg_of(markup)
    assert texts(svg, "hm-nums")[3] == "0,670"
    assert tip_texts(markup, "fig-weights")[1][0] == "cat → The: 0,670"
    legend = [t.text for t in svg.iter(f"{SVG}text")]
    assert {"0", "0,25", "0,5", "0,75", "1"} <= set(legend)
    for english in ("hidden (", "Heatmap of", "Download", "Point at"):
        assert english not in markup


def test_presenter_mode_draws_no_text_below_16_px_and_never_shrinks_it() -> None:
    for figure in (weights_map(), square(30)):
        markup = str(render(figure, present=True))
        sizes = [float(s) for s in re.findall(r'font-size="([\d.]+)"', markup)]
        assert min(sizes) >= 16
        svg = svg_of(markup)
        width = float(svg.get("width"))
        assert svg.get("style") == f"min-width: {width:g}px"
        assert "@container" not in markup


def test_the_template_global_draws_in_the_requests_presenter_mode() -> None:
    template = environment.from_string("{{ heatmap(figure) }}")
    for present in (False, True):
        token = presenting.set(present)
        try:
            html = template.render(figure=weights_map())
        finally:
            presenting.reset(token)
        assert html == render(weights_map(), present=present)


# ---------------------------------------------------------------- downloads


def test_the_standalone_svg_shows_title_picture_and_legend_on_its_own() -> None:
    figure = weights_map()
    page = svg_of(render(figure))
    doc = ET.fromstring(svg_document(figure))
    assert doc.tag == f"{SVG}svg"
    assert doc.get("viewBox") == page.get("data-box") == doc.get("data-box")
    _, y, width, height = map(float, doc.get("viewBox").split())
    assert (doc.get("width"), doc.get("height")) == (f"{width:g}", f"{height:g}")
    assert y < 0  # the title sits above the page's view
    assert "Segoe UI" in doc.get("font-family")
    assert doc.get("color") == "#1d1d1f"
    heading = next(t for t in doc.iter(f"{SVG}text") if t.get("class") == "hm-heading")
    assert heading.text == "softmax weights"
    assert [r.get("fill") for r in cells(doc)] == [r.get("fill") for r in cells(page)]
    assert any(g.get("class") == "hm-legend" for g in doc.iter(f"{SVG}g"))


def test_download_file_names_come_from_the_title() -> None:
    markup = str(render(weights_map(title='Q·Kᵀ ÷ √2: "scaled"')))
    assert 'data-file="Q·Kᵀ_÷_√2_scaled"' in markup


# ---------------------------------------------------------------- small multiples


def heads(count: int, n: int, **changes) -> HeatmapGroup:
    rng = np.random.default_rng(1)
    tokens = [f"w{i}" for i in range(n)]
    panels = [
        Heatmap(
            id=f"head-{h}",
            title=f"head {h}",
            values=rng.dirichlet(np.ones(n), size=n),
            row_labels=tokens,
            col_labels=tokens,
            scale=weights_scale(),
            hidden=~causal_mask(n),
        )
        for h in range(count)
    ]
    return HeatmapGroup(id="heads", title="every head", panels=panels, **changes)


def test_a_group_shares_one_colour_bar() -> None:
    markup = str(render(heads(8, 6, selected=2)))
    assert markup.count("<linearGradient") == 1
    assert markup.count('class="hm-legend-svg"') == 1
    assert markup.count('<figure class="hm hm-panel') == 8
    assert markup.count(">hidden (−∞)</text>") == 1
    assert 'class="hm hm-panel hm-chosen-panel" id="head-2"' in markup
    assert "--hm-columns: 4" in markup


def test_a_group_of_many_panels_is_drawn_as_pngs() -> None:
    markup = str(render(heads(72, 8, columns=12)))
    assert markup.count('class="hm-image"') == 72
    assert 'class="hm-cells"' not in markup


def test_a_groups_panels_must_share_their_scale() -> None:
    group = heads(2, 3)
    other = Heatmap(
        id="x", title="x", values=np.eye(3), row_labels=["a"] * 3, col_labels=["a"] * 3,
        scale=signed_scale(np.eye(3)),
    )  # fmt: skip
    with pytest.raises(ValueError, match="share one scale"):
        HeatmapGroup(id="g", title="g", panels=[*group.panels, other])


def test_the_standalone_group_places_every_panel_and_the_legend() -> None:
    group = heads(5, 4, columns=2)
    doc = ET.fromstring(svg_document(group))
    nested = [s for s in doc if s.tag == f"{SVG}svg"]
    assert len(nested) == 6  # five panels, then the legend
    places = [(float(s.get("x")), float(s.get("y"))) for s in nested]
    assert len({x for x, _ in places[:5]}) == 2  # two columns
    assert places[-1][1] > max(y for _, y in places[:5])  # the legend below them all
    width, height = map(float, doc.get("viewBox").split()[2:])
    for s in nested:
        assert float(s.get("x")) + float(s.get("width")) <= width + 0.01
        assert float(s.get("y")) + float(s.get("height")) <= height + 0.01


@pytest.mark.parametrize(
    ("sizes", "columns", "cells", "starts"),
    [
        ([5], 2, [(0, 0), (0, 1), (1, 0), (1, 1), (2, 0)], [0]),  # no sections: rows filled
        ([1, 1, 1, 1, 1], 4, [(0, 0), (0, 1), (0, 2), (0, 3), (1, 0)], [0, 0, 0, 0, 1]),
        ([2, 2], 4, [(0, 0), (0, 1), (0, 2), (0, 3)], [0, 0]),  # two sections share a row
        ([2, 2, 2], 3, [(0, 0), (0, 1), (1, 0), (1, 1), (2, 0), (2, 1)], [0, 1, 2]),
        ([1, 5, 1], 2, [(0, 0), (1, 0), (1, 1), (2, 0), (2, 1), (3, 0), (4, 0)], [0, 1, 4]),
    ],
)
def test_sections_start_where_their_panels_fit(sizes, columns, cells, starts) -> None:
    assert section_cells(sizes, columns) == (cells, starts)


def test_a_group_in_sections_titles_each_run_of_panels() -> None:
    group = heads(
        6, 4, columns=2, selected=3, sections=[PanelSection("KV 0", 2), PanelSection("KV 1 <b>", 4)]
    )
    markup = str(render(group))
    sections = re.findall(r'<div class="hm-section" role="group" aria-labelledby="([^"]+)">'
                          r'<p class="hm-section-title" id="([^"]+)">([^<]*)</p>(.*?)</div></div>',
                          markup)  # fmt: skip
    assert [(a == b, title) for a, b, title, _ in sections] == [
        (True, "KV 0"),
        (True, "KV 1 &lt;b&gt;"),
    ]
    assert [re.findall(r'id="(head-\d)"', body) for *_, body in sections] == [
        ["head-0", "head-1"],
        ["head-2", "head-3", "head-4", "head-5"],
    ]
    assert markup.count("<linearGradient") == 1  # still one colour bar for all
    # The download: each section's title above its first panel, every panel inside the frame.
    doc = ET.fromstring(svg_document(group))
    titles = [t for t in doc if t.tag == f"{SVG}text"][1:]
    assert [t.text for t in titles] == ["KV 0", "KV 1 <b>"]
    nested = [s for s in doc if s.tag == f"{SVG}svg"][:6]
    places = [(float(s.get("x")), float(s.get("y"))) for s in nested]
    assert places[2][1] > places[0][1]  # the second section starts a new row
    for title, first in zip(titles, (places[0], places[2]), strict=True):
        assert float(title.get("x")) == first[0]
        assert float(title.get("y")) < first[1]


def test_sections_must_cover_every_panel() -> None:
    with pytest.raises(ValueError, match="sections of"):
        heads(4, 3, sections=[PanelSection("a", 2), PanelSection("b", 1)])


# ---------------------------------------------------------------- mistakes of a view


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"row_labels": ["a", "b"]}, "row and 3 column labels"),
        ({"hidden": np.zeros((2, 2), bool)}, "hidden is not 3 × 3"),
        ({"selected_row": 3}, "no row 3"),
        ({"id": "1 bad"}, "letters, digits"),
        ({"hover": [["x"] * 3] * 2}, "hover is not 3 × 3"),
    ],
)
def test_a_view_that_mixes_up_shapes_is_told_at_once(changes, message) -> None:
    with pytest.raises(ValueError, match=message):
        weights_map(**changes)


def test_render_returns_markup_for_templates() -> None:
    assert isinstance(render(weights_map()), Markup)


@pytest.mark.parametrize("lang", ["en", "es"])
@pytest.mark.parametrize("types", list(TYPES))
@pytest.mark.parametrize("limit", [0.5, 1.0, 2.5, 25.0, 2.5e-3])
@pytest.mark.parametrize("room", [60.0, 170.0, 240.0, 600.0])
def test_colour_bar_ticks_keep_a_characters_gap_and_fit_their_figure(
    lang: str, types: tuple[bool, bool], limit: float, room: float
) -> None:
    """Neighbouring ticks never nearly touch (walk-through step 7 read "−1 −0.5 0" as one),
    and the legend keeps to its figure's width where the narrowest plan can (the lab's
    presenter cut the right end of ÷ √2 and + M's bars)."""
    type_ = TYPES[types]
    with use_locale(lang):
        scale = signed_scale(np.array([limit, -limit]), label=gettext("value"))
        plan = legend_layout(type_, scale, "hidden (−∞)", room)
        texts = scale.tick_texts()[:: plan.tick_step]
    step = plan.bar_width / (len(texts) - 1)
    for a, b in pairwise(texts):
        gap = step - (text_width(a, type_.tick) + text_width(b, type_.tick)) / 2
        assert gap >= text_width("0", type_.tick), (texts, gap)
    narrowest = legend_layout(type_, scale, "hidden (−∞)", 0.0)
    if narrowest.width <= room:
        assert plan.width <= room, (plan, room)
    assert plan.bar_x >= text_width(texts[0], type_.tick) / 2  # the first tick starts inside
