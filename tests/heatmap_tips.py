"""The hover texts a server heatmap's markup gives, filled in the way static/js/heatmap.js
fills them: from the figure's tip data (templates and operands written once), not from the
view's Python objects."""

import json
import re

FIGURE = re.compile(r'<figure class="hm[ "][^>]*id="([^"]+)"')
DATA = re.compile(r'<script type="application/json" class="hm-data">(.*?)</script>', re.S)
PLACE = re.compile(r"\{(v|[rc]\d*|x\d+)\}")


def tip_data(markup: str) -> dict[str, dict]:
    """Each SVG heatmap's tip data in the markup, by the id of the figure it closes."""
    markup = str(markup)
    return {
        FIGURE.findall(markup, 0, m.start())[-1]: json.loads(m.group(1))
        for m in DATA.finditer(markup)
    }


def tip_texts(markup: str, figure: str) -> list[list[str]]:
    """Every cell's hover text (rows × cols) of the figure with that id."""
    data = tip_data(markup)[figure]
    cols = len(data["c"])

    def fill(i: int, j: int) -> str:
        k = i * cols + j
        template = data["t"][int(data["k"][k]) if "k" in data else 0]

        def part(m: re.Match[str]) -> str:
            name = m.group(1)
            if name == "v":
                return data["v"][k]
            at = int(name[1:] or 0)
            if name[0] == "r":
                return data["r"][i][at]
            if name[0] == "c":
                return data["c"][j][at]
            return data["x"][at][k]

        return PLACE.sub(part, template)

    return [[fill(i, j) for j in range(cols)] for i in range(len(data["r"]))]
