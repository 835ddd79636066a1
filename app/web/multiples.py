"""A plotly heatmap made small for side-by-side comparison (a thumbnail). The grids of
heads are server-drawn HeatmapGroups now (app/figures/heatmap)."""

from typing import Any

TICK_FONT_PX = 10  # token labels of small multiples: no smaller (figures.js thins them instead)


def thumbnail(fig: dict[str, Any], title: str) -> dict[str, Any]:
    """A heatmap made small for side-by-side comparison: short title, small token labels on
    both axes, no colour bar or cell labels (its group shares one colour bar, the full-size
    figure and its table carry the numbers)."""
    trace = {k: v for k, v in fig["data"][0].items() if k not in ("text", "texttemplate")}
    trace["showscale"] = False
    small = {"title": {"text": ""}, "showticklabels": True, "tickfont": {"size": TICK_FONT_PX}}
    layout = {
        **fig["layout"],
        "title": {"text": title, "font": {"size": 13}},
        "xaxis": {**fig["layout"]["xaxis"], **small},
        "yaxis": {**fig["layout"]["yaxis"], **small},
        "margin": {"l": 8, "r": 8, "t": 30, "b": 8},
        "height": 190,
        "showlegend": False,
    }
    hidden = [{k: v for k, v in t.items() if k not in ("text", "texttemplate")}
              for t in fig["data"][1:]]  # fmt: skip
    return {"data": [trace, *hidden], "layout": layout}
