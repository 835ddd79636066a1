"""Line and bar charts (app/figures/charts.py): plotly's own validation of the figures and of their
downloads, the HTML legend that stands for plotly's, and the markup the `chart` macro writes."""

import re

import plotly.graph_objects as go
import pytest
from fastapi.testclient import TestClient
from markupsafe import escape

from app.core.i18n import use_locale
from app.features.cost.page import kv_chart
from app.features.cost.schemas import CostQuery
from app.features.cost.service import compute_cost
from app.figures.charts import (
    DASH_ARRAYS,
    LINE_COLOURS,
    Chart,
    Marker,
    Series,
    bars,
    byte_ticks,
    log_log_lines,
    mean_lines,
    plotly_text,
)


def assert_valid_chart(chart: Chart, traces_per_entry: int = 1) -> None:
    """The figure plotly.js draws, and the one a download draws, pass plotly's own
    validation (an unknown or misspelt property raises); its data block carries both."""
    go.Figure(chart.figure)
    download = chart.download_layout()
    go.Figure({"data": chart.figure["data"], "layout": {**chart.figure["layout"], **download}})
    block = chart.data_block()
    assert block["figure"]["data"] == chart.figure["data"]
    assert block["download"]["file"] == chart.file_name()
    assert not chart.figure["layout"]["showlegend"]  # the page's legend is HTML
    assert len(chart.legend) * traces_per_entry == len(chart.figure["data"])


def example(**changes: object) -> Chart:
    arguments: dict = {
        "chart_id": "fig-example",
        "x": [1, 10, 100],
        "series": [
            Series("n²", [1, 100, 10_000], ["1 B", "100 B", "10 KB"]),
            Series("n", [1, 10, 100], dash="dash"),
            Series("<b>bold</b> & more", [0, 1, 2], dash="dot"),
        ],
        "title": "Growth <i>on</i> log axes",
        "y_title": "bytes",
        "x_title": "n",
        "markers": [Marker("your length", 10, 100, "n = 10: 100 B", "diamond")],
    }
    return log_log_lines(**(arguments | changes))


def test_a_chart_is_valid_plotly_and_its_legend_names_every_line_and_marker() -> None:
    chart = example()
    assert_valid_chart(chart)
    assert [e.name for e in chart.legend] == ["n²", "n", "<b>bold</b> & more", "your length"]
    assert [e.colour for e in chart.legend[:3]] == list(LINE_COLOURS[:3])
    assert [e.dash_array for e in chart.legend[:3]] == [
        DASH_ARRAYS["solid"],
        DASH_ARRAYS["dash"],
        DASH_ARRAYS["dot"],
    ]
    marker = chart.legend[3]
    assert (marker.symbol, marker.text) == ("diamond", "n = 10: 100 B")
    lines = chart.figure["data"]
    assert [t["line"]["dash"] for t in lines[:3]] == ["solid", "dash", "dot"]
    assert lines[3]["marker"]["symbol"] == "diamond"


def test_text_is_shown_as_typed_and_zero_has_no_place_on_a_log_axis() -> None:
    data = example().figure["data"]
    assert data[2]["name"] == "&lt;b&gt;bold&lt;/b&gt; &amp; more"
    assert data[2]["y"] == [None, 1.0, 2.0]
    assert data[0]["customdata"] == ["1 B", "100 B", "10 KB"]
    assert example().download_layout()["title"]["text"] == "Growth &lt;i&gt;on&lt;/i&gt; log axes"


def test_no_axis_can_be_zoomed_by_accident_and_the_page_title_is_not_plotlys() -> None:
    layout = example().figure["layout"]
    assert layout["xaxis"]["fixedrange"]
    assert layout["yaxis"]["fixedrange"]
    assert "title" not in layout  # the page shows it as HTML, where it wraps


def test_a_download_has_its_title_above_wrapped_and_its_legend_below() -> None:
    long = "A title far longer than any chart is wide, " * 4
    download = example(title=long).download_layout()
    assert download["showlegend"]
    assert download["title"]["text"].count("<br>") >= 2
    assert (download["width"], download["height"]) == (1000, 640)
    assert example(title='a/b: "c" <d>').file_name() == "a_b_c_d"


def test_the_marks_of_numbers_follow_the_readers_language() -> None:
    with use_locale("es"):
        assert example().data_block()["figure"]["layout"]["separators"] == ",."
    with use_locale("en"):
        assert example().data_block()["figure"]["layout"]["separators"] == ".,"


def test_byte_ticks_name_each_power_of_1024_between_the_ends() -> None:
    assert byte_ticks(2_000, 3 * 2**30) == {
        "tickvals": [1024.0, 1024.0**2, 1024.0**3, 1024.0**4],
        "ticktext": ["1 KiB", "1 MiB", "1 GiB", "1 TiB"],
    }


def test_an_id_is_a_dom_id() -> None:
    with pytest.raises(ValueError, match="letters, digits"):
        example(chart_id="two words")


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


def test_mean_lines_draw_each_mean_through_its_members_on_linear_axes() -> None:
    members = [[[0.1, 0.3], [0.5, 0.7], [0.2, 0.2]], [[0.0, 1.0], [0.25, 0.75], [1.0, 1.0]]]
    means = [[0.2, 0.6, 0.2], [0.5, 0.5, 1.0]]
    chart = mean_lines(
        "fig-means",
        range(3),
        [Series("[CLS]", means[0]), Series("<punct>", means[1])],
        members,
        title="Mean by layer",
        y_title="mean",
        x_title="layer",
        y_range=(0, 1),
    )
    assert_valid_chart(chart, traces_per_entry=2)
    dots, line, _, escaped = chart.figure["data"]
    assert dots["mode"] == "markers"
    assert line["mode"] == "lines+markers"
    assert dots["x"] == [0, 0, 1, 1, 2, 2]
    assert dots["y"] == [0.1, 0.3, 0.5, 0.7, 0.2, 0.2]
    assert line["x"] == [0, 1, 2]
    assert line["y"] == means[0]
    assert escaped["name"] == "&lt;punct&gt;"
    assert [e.name for e in chart.legend] == ["[CLS]", "<punct>"]  # HTML escapes it itself
    assert dots["marker"]["color"] == line["line"]["color"] == chart.legend[0].colour
    layout = chart.figure["layout"]
    assert (layout["xaxis"]["type"], layout["yaxis"]["type"]) == ("linear", "linear")
    assert layout["yaxis"]["range"] == [0, 1]
    assert layout["xaxis"]["fixedrange"]
    assert layout["yaxis"]["fixedrange"]
    with pytest.raises(ValueError, match="one list of members"):
        mean_lines("f", range(2), [Series("a", [0, 1])], members, title="", y_title="", x_title="")


def test_bars_keep_their_order_escape_labels_and_refuse_repeats() -> None:
    chart = bars(
        "fig-bars",
        ["0: <b>", "1: a&b"],
        [0.25, 0.75],
        name="share",
        title="t",
        y_title="y",
        x_title="x",
    )
    assert_valid_chart(chart)
    (trace,) = chart.figure["data"]
    assert trace["x"] == ["0: &lt;b&gt;", "1: a&amp;b"]
    assert trace["y"] == [0.25, 0.75]
    assert chart.figure["layout"]["xaxis"]["type"] == "category"
    assert chart.legend[0].symbol == "square"
    with pytest.raises(ValueError, match="every label once"):
        bars("f", ["a", "a"], [1, 2], name="n", title="t", y_title="y", x_title="x")


@pytest.mark.parametrize("lang", ["en", "es"])
def test_the_macro_writes_title_legend_and_two_translated_downloads(
    client: TestClient, lang: str
) -> None:
    html = client.get(f"/cost?lang={lang}").text
    figure = html.split('<figure class="chart" id="fig-cost-kv-chart"', 1)[1].split("</figure>")[0]
    title = re.search(r'class="chart-title" id="fig-cost-kv-title">([^<]*)<', figure)[1]
    assert title.startswith("KV cache" if lang == "en" else "Caché KV")
    assert 'data-figure="fig-cost-kv"' in figure
    assert re.search(r'<script type="application/json" id="fig-cost-kv">\{"figure"', figure)
    buttons = re.findall(r'data-chart-download="(\w+)" aria-label="([^"]*)"', figure)
    assert [kind for kind, _ in buttons] == ["svg", "png"]
    download = "Download" if lang == "en" else "Descarga"
    assert all(label.startswith(download) and title in label for _, label in buttons)
    with use_locale(lang):
        legend = kv_chart(compute_cost(CostQuery())).legend
    assert figure.count("<li>") == len(legend) == 5  # MHA, a window, the GPU, 2 markers
    assert all(f"</svg>{escape(entry.name)}" in figure for entry in legend)
    assert "modebar" not in html
    assert 'plotly.min.js"></script>' not in html
