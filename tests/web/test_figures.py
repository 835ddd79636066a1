"""Figure dicts carry student text so that plotly shows it as typed."""

import numpy as np
import pytest

from app.web.figures import heatmap, plotly_text


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


def test_heatmap_labels_and_hover_are_escaped_and_repeats_numbered() -> None:
    fig = heatmap(np.eye(2), ["<i>", "<i>"], ["a", "b"], "t", hover=[["<br>", "x"], ["y", "z"]])
    trace = fig["data"][0]
    assert trace["x"] == ["&lt;i&gt;", "&lt;i&gt; (2)"]
    assert trace["customdata"][0][0] == "&lt;br&gt;"
