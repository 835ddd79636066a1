"""Figure dicts carry student text so that plotly shows it as typed."""

import numpy as np
import plotly.graph_objects as go
import pytest

from app.web.figures import DIVERGING, HIDDEN_COLOUR, heatmap, plotly_rows, plotly_text
from app.web.multiples import thumbnail


@pytest.mark.parametrize(
    ("typed", "escaped"),
    [
        ("cat", "cat"),
        ("<b>bold</b>", "&lt;b&gt;bold&lt;/b&gt;"),
        ("a&lt;b", "a&amp;lt;b"),
        ('<a href="javascript:alert(1)">x</a>', '&lt;a href="javascript:alert(1)"&gt;x&lt;/a&gt;'),
    ],
)
def test_plotly_text_escapes_plotly_markup(typed: str, escaped: str) -> None:
    assert plotly_text(typed) == escaped


def test_hover_texts_are_escaped_row_by_row_as_one_by_one() -> None:
    rows = [["q_a · k_b = 1", "a → b"], ["q_<b> · k_a = 2", "x & y"], ["AT&T", "c > d"]]
    assert plotly_rows(rows) == [[plotly_text(t) for t in row] for row in rows]
    assert plotly_rows(rows)[1] == ["q_&lt;b&gt; · k_a = 2", "x &amp; y"]


def test_heatmap_labels_and_hover_are_escaped_and_repeats_numbered() -> None:
    fig = heatmap(np.eye(2), ["<i>", "<i>"], ["a", "b"], "t", hover=[["<br>", "x"], ["y", "z"]])
    trace = fig["data"][0]
    assert trace["x"] == ["&lt;i&gt;", "&lt;i&gt; (2)"]
    assert trace["customdata"][0][0] == "&lt;br&gt;"


# ---------------------------------------------------------------- honest colours


def _rgb(colour: str) -> np.ndarray:
    from plotly.colors import hex_to_rgb, unlabel_rgb

    value = hex_to_rgb(colour) if colour.startswith("#") else unlabel_rgb(colour)
    return np.array(value, dtype=float)


def _scale_colours(scale: str | list) -> list[np.ndarray]:
    from plotly.colors import get_colorscale, sample_colorscale

    scale = get_colorscale(scale) if isinstance(scale, str) else scale
    return [_rgb(c) for c in sample_colorscale(scale, list(np.linspace(0, 1, 101)))]


def test_weights_sit_on_a_fixed_zero_to_one_scale_whatever_the_data() -> None:
    """0.848 must not look like 1.0 because the row's largest weight happens to be 0.848."""
    for z in (np.array([[0.14, 0.86], [0.5, 0.5]]), np.array([[1.0]]), np.zeros((2, 2))):
        trace = heatmap(z, ["a", "b"][: z.shape[1]], ["a", "b"][: z.shape[0]], "w")["data"][0]
        assert (trace["colorscale"], trace["zmin"], trace["zmax"]) == ("Viridis", 0.0, 1.0)


def test_signed_values_sit_on_a_range_symmetric_about_zero() -> None:
    z = np.array([[0.2, -1.5], [3.25, 0.0]])
    trace = heatmap(z, ["a", "b"], ["a", "b"], "s", "diverging")["data"][0]
    assert (trace["zmin"], trace["zmax"], trace["zmid"]) == (-3.25, 3.25, 0.0)
    zeros = heatmap(np.zeros((1, 2)), ["a", "b"], ["a"], "s", "diverging")["data"][0]
    assert (zeros["zmin"], zeros["zmax"]) == (-1.0, 1.0)  # a range, not 0 to 0


def test_hidden_cells_have_a_colour_no_value_can_take_named_in_the_legend() -> None:
    z = np.array([[0.5, -np.inf], [0.0, 0.25]])
    for scale, colours in (("sequential", "Viridis"), ("diverging", DIVERGING)):
        fig = heatmap(z, ["a", "b"], ["a", "b"], "t", scale)
        go.Figure(fig)
        main, hidden = fig["data"]
        assert np.isnan(main["z"][0][1])
        assert not np.isnan(main["z"][1][0])
        assert hidden["showlegend"]
        assert hidden["name"] == "hidden (−∞)"
        assert fig["layout"]["showlegend"]
        assert hidden["text"] == [["", "−∞"], ["", ""]]
        assert np.isnan(hidden["z"][0][0])
        assert hidden["z"][0][1] == 1.0
        flat = {c for _, c in hidden["colorscale"]}
        assert flat == {HIDDEN_COLOUR}
        distance = min(np.abs(_rgb(HIDDEN_COLOUR) - c).sum() for c in _scale_colours(colours))
        assert distance > 100, f"{HIDDEN_COLOUR} is too close to a colour of the {scale} scale"


def test_a_figure_without_hidden_cells_has_no_legend_entry() -> None:
    fig = heatmap(np.eye(2), ["a", "b"], ["a", "b"], "t")
    assert len(fig["data"]) == 1
    assert "showlegend" not in fig["layout"]


def test_cell_numbers_keep_a_legible_size_and_axis_titles_keep_clear_of_ticks() -> None:
    fig = heatmap(np.eye(3), ["a", "b", "c"], ["a", "b", "c"], "t")
    assert fig["data"][0]["textfont"]["size"] >= 10
    for axis in ("xaxis", "yaxis"):
        assert fig["layout"][axis]["automargin"] is True
        assert fig["layout"][axis]["title"]["standoff"] > 0


def test_thumbnails_keep_token_labels_on_both_axes() -> None:
    thumb = thumbnail(heatmap(np.eye(2), ["a", "b"], ["a", "b"], ""), "head 0")
    go.Figure(thumb)
    assert thumb["layout"]["xaxis"]["showticklabels"]
    assert thumb["layout"]["yaxis"]["showticklabels"]
    assert thumb["data"][0]["x"] == thumb["data"][0]["y"] == ["a", "b"]


def test_the_diverging_scale_is_white_at_zero_and_saturated_at_both_ends() -> None:
    """Zero must not look grey (grey is hidden): the middle of the scale is near white."""
    middle = _scale_colours(DIVERGING)[50]
    assert middle.min() >= 240
    for end in (_scale_colours(DIVERGING)[0], _scale_colours(DIVERGING)[-1]):
        assert end.max() - end.min() > 60  # a colour, not a grey
