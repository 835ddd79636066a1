"""The stage strip of one head: which figures and tables a page shows, with which labels, and
the arithmetic a reader sees when hovering a cell.

Reads finished results and formats them; the attention itself was computed by a service. Any
page with a result carrying the stage fields of /api/attention (tokens, q, k, v, scores,
scaled, allowed, masked, weights, output, scale_factor) can call `head_stages` and render it
with the macros of templates/stages/_stages.html."""

import math
from collections.abc import Sequence
from functools import cached_property
from typing import Any

import numpy as np

from app.core.i18n import format_numbers, format_rows, gettext
from app.features.stages.results import OneHead, QueryBreakdown, query_breakdown
from app.web.figures import heatmap, labels_cells

# Above these sizes a page stays fast: hover shows the value only, and a heatmap's text
# alternative is the selected query's row (the full matrices are in the CSV download).
HOVER_ARITHMETIC_UP_TO = 32
# … and the arithmetic in the hover text is left out when it would run past this many terms
# (n² dot products of d numbers: a 32-wide trained head would send half a megabyte of text).
HOVER_TERMS_UP_TO = 4096


FULL_TABLES_UP_TO = 32


# Sums longer than this are written with "…" in the hover text.
MAX_TERMS = 8


def short_text(text: str) -> str:
    """A table number (three decimals) as a factor in a hover sum: 0.5, 1, (−0.34): no
    trailing zeros, negatives in parentheses so that "×" and "+" read unambiguously."""
    text = text.rstrip("0").rstrip(".") if "." in text else text
    return f"({text})" if text.startswith("−") else text


def shorts(rows: list[list[str]]) -> list[list[str]]:
    """short_text() of every entry of a formatted matrix, once: a hover sum uses each factor
    in many cells (q_i in a whole row of Q·Kᵀ, v_j in every output row)."""
    return [[short_text(t) for t in row] for row in rows]


class HeadTexts:
    """The numbers of one head as its hover text and its cells write them, each matrix
    formatted once, in one pass, when first asked for (a small head's hover text holds about
    a thousand numbers): texts["scores"] … at three decimals, texts.factors as the factors
    of the hover sums."""

    def __init__(self, result: OneHead) -> None:
        self.result = result
        self._rows: dict[str, list[list[str]]] = {}

    def __getitem__(self, name: str) -> list[list[str]]:
        if name not in self._rows:
            self._rows[name] = format_rows(np.asarray(getattr(self.result, name), dtype=float))
        return self._rows[name]

    @cached_property
    def factors(self) -> dict[str, list[list[str]]]:
        """shorts() of q, k, v and the weights, from their texts (formatted once)."""
        return {name: shorts(self[name]) for name in ("q", "k", "v", "weights")}


def _products(left: Sequence[str], right: Sequence[str]) -> str:
    """ "a×b + c×d + …": the products of a sum, its first MAX_TERMS written out."""
    shown = [f"{a}×{b}" for a, b in zip(left[:MAX_TERMS], right[:MAX_TERMS], strict=True)]
    if len(left) > MAX_TERMS:
        shown.append("…")
    return " + ".join(shown)


def scale_label(result: OneHead) -> str:
    """ "√2" when the scores are divided by √d_k, "1" when scaling is switched off."""
    d_k = result.d_k
    if math.isclose(result.scale_factor, math.sqrt(d_k)) and d_k > 1:
        return f"√{d_k}"
    return "1"


def dot_hover(texts: HeadTexts, tokens: Sequence[str]) -> list[list[str]]:
    """ "q_cat · k_The = 0×0.5 + 1×1 = 1.000" for every query–key pair."""
    q, k, scores = texts.factors["q"], texts.factors["k"], texts["scores"]
    return [
        [
            f"q_{ti} · k_{tj} = {_products(q[i], k[j])} = {scores[i][j]}"
            for j, tj in enumerate(tokens)
        ]
        for i, ti in enumerate(tokens)
    ]


def scaled_hover(texts: HeadTexts, dots: list[list[str]]) -> list[list[str]]:
    """The dot product, then ", ÷ √2 = 0.707"."""
    by = scale_label(texts.result)
    return [
        [f"{text}, ÷ {by} = {scaled}" for text, scaled in zip(row, texts_row, strict=True)]
        for row, texts_row in zip(dots, texts["scaled"], strict=True)
    ]


def masked_hover(texts: HeadTexts, tokens: Sequence[str]) -> list[list[str]]:
    """ "0.707 + 0 = 0.707" where the key is visible, "+ (−∞) = −∞: hidden" where it is not."""
    allowed = np.asarray(texts.result.allowed, dtype=bool).tolist()
    visible, hidden = gettext("visible"), gettext("hidden by the mask")
    return [
        [
            f"{ti} → {tj}: {scaled} + 0 = {scaled} ({visible})"
            if seen
            else f"{ti} → {tj}: {scaled} + (−∞) = −∞ ({hidden})"
            for tj, scaled, seen in zip(tokens, row, sees, strict=True)
        ]
        for ti, row, sees in zip(tokens, texts["scaled"], allowed, strict=True)
    ]


def weight_hover(texts: HeadTexts, tokens: Sequence[str]) -> list[list[str]]:
    """ "e^0.707 / (e^0.707 + e^0.000) = 0.670": softmax over the row's visible keys."""
    allowed = np.asarray(texts.result.allowed, dtype=bool)
    rows = []
    for i, ti in enumerate(tokens):
        visible = np.flatnonzero(allowed[i])
        if visible.size == 0:
            none = gettext("%(query)s sees no key: its weights are all 0") % {"query": ti}
            rows.append([none for _ in tokens])
            continue
        scaled, weights = texts["scaled"][i], texts["weights"][i]
        if visible.size <= 4:
            total = "(" + " + ".join(f"e^{scaled[j]}" for j in visible) + ")"
        else:
            total = gettext("Σ over its %(n)d visible keys") % {"n": visible.size}
        hidden = gettext("hidden key, weight 0")
        rows.append(
            [
                f"{ti} → {tj}: e^{scaled[j]} / {total} = {weights[j]}"
                if allowed[i, j]
                else f"{ti} → {tj}: {hidden}"
                for j, tj in enumerate(tokens)
            ]
        )
    return rows


def weighted_hover(texts: HeadTexts, query: QueryBreakdown) -> list[list[str]]:
    """ "0.670 × v_The[0] = 0.670 × 1 = 0.670" for each key and value dimension."""
    v = texts.factors["v"]
    weights = format_numbers([float(row.weight) for row in query.rows])
    values = format_rows(np.array([row.weighted_value for row in query.rows], dtype=float))
    return [
        [
            f"{weight} × v_{row.key_token}[{d}] = {weight} × {v[row.key_index][d]} = {value}"
            for d, value in enumerate(row_values)
        ]
        for row, weight, row_values in zip(query.rows, weights, values, strict=True)
    ]


def output_hover(texts: HeadTexts, tokens: Sequence[str]) -> list[list[str]]:
    """ "out_cat[0] = 0.670×1 + 0.330×0.5 + 0×1.5 = 0.835": the weighted sum of values."""
    weights = texts.factors["weights"]
    columns = [list(column) for column in zip(*texts.factors["v"], strict=True)]  # v[:, d]
    return [
        [
            f"out_{ti}[{d}] = {_products(weights[i], column)} = {output}"
            for d, (column, output) in enumerate(zip(columns, texts["output"][i], strict=True))
        ]
        for i, ti in enumerate(tokens)
    ]


def _table(matrix: Any, rows: Sequence[str], cols: Sequence[str], caption: str) -> dict[str, Any]:
    return {
        "matrix": matrix,
        "row_labels": list(rows),
        "col_labels": list(cols),
        "caption": caption,
    }


def head_stages(result: OneHead, query_index: int | None = None) -> dict[str, Any]:
    """Everything templates/_stages.html shows for one head: the token table's rows, the
    heatmap strip (each figure with its table as text alternative) and the query breakdown.

    `result` holds the stage fields of /api/attention. The breakdown is `result.query`
    when present, else it is built here for `query_index` (default: the last token)."""
    tokens = list(result.tokens)
    n = len(tokens)
    if result.query is not None and query_index in (None, result.query.index):
        query = result.query
    else:
        query = query_breakdown(tokens, result, n - 1 if query_index is None else query_index)
    i = query.index
    v = np.asarray(result.v, dtype=float)
    dims = [f"d{d}" for d in range(v.shape[1])]
    weighted = query.weighted
    allowed = np.asarray(result.allowed, dtype=bool)
    width = max(np.shape(result.q)[1], v.shape[1])
    hover = n <= HOVER_ARITHMETIC_UP_TO and n * n * width <= HOVER_TERMS_UP_TO
    full = n <= FULL_TABLES_UP_TO
    by = scale_label(result)
    texts = HeadTexts(result)
    dots = dot_hover(texts, tokens) if hover else None

    def labelled(name: str) -> list[list[str]] | None:
        """The matrix's numbers for the cells of its heatmap, when they are printed there."""
        return texts[name] if labels_cells(np.shape(getattr(result, name))) else None

    weighted_title = gettext("weight × V for “%(token)s”") % {"token": query.token}

    def square(name: str, caption: str) -> dict[str, Any]:
        rows = slice(None) if full else slice(i, i + 1)
        matrix = np.asarray(getattr(result, name), dtype=float)[rows]
        if name == "masked":
            matrix = np.where(allowed[rows], matrix, np.nan)
        cells = [[None if x != x else x for x in row] for row in matrix.tolist()]  # NaN: hidden
        return _table(cells, tokens[rows], tokens, caption)

    stages = [
        {
            "name": "scores",
            "title": "Q·Kᵀ",
            "fig": heatmap(
                result.scores,
                tokens,
                tokens,
                "Q·Kᵀ",
                "diverging",
                hover=dots,
                texts=labelled("scores"),
            ),
            "table": square("scores", gettext("Q·Kᵀ: query rows, key columns")),
        },
        {
            "name": "scaled",
            "title": f"÷ {by}",
            "fig": heatmap(
                result.scaled,
                tokens,
                tokens,
                f"÷ {by}",
                "diverging",
                hover=scaled_hover(texts, dots) if dots else None,
                texts=labelled("scaled"),
            ),
            "table": square("scaled", f"Q·Kᵀ ÷ {by}"),
        },
        {
            "name": "masked",
            "title": "+ M",
            "fig": heatmap(
                result.scaled,
                tokens,
                tokens,
                "+ M",
                "diverging",
                hover=masked_hover(texts, tokens) if hover else None,
                hidden=~allowed,
                texts=labelled("scaled"),
            ),
            "table": square("masked", gettext("Q·Kᵀ ÷ √d_k + M (−∞ where hidden)")),
        },
        {
            "name": "weights",
            "title": "softmax",
            "fig": heatmap(
                result.weights,
                tokens,
                tokens,
                gettext("softmax weights"),
                hover=weight_hover(texts, tokens) if hover else None,
                hidden=~allowed,
                hidden_text="0",
                texts=labelled("weights"),
            ),
            "table": square(
                "weights", gettext("Softmax weights: each row sums to 1 (0 if it sees no key)")
            ),
        },
        {
            "name": "weighted",
            "title": weighted_title,
            "fig": heatmap(
                weighted,
                dims,
                tokens,
                weighted_title,
                "diverging",
                x_title=gettext("value dimension"),
                y_title=gettext("key"),
                hover=weighted_hover(texts, query) if hover else None,
                hidden=np.broadcast_to(~allowed[i][:, None], weighted.shape),
                hidden_text="0",
            ),
            "table": _table(
                weighted,
                tokens,
                dims,
                gettext("weight_j × v_j for the query “%(token)s”") % {"token": query.token},
            ),
        },
        {
            "name": "output",
            "title": "weights · V",
            "fig": heatmap(
                result.output,
                dims,
                tokens,
                gettext("output = weights · V"),
                "diverging",
                x_title=gettext("output dimension"),
                hover=output_hover(texts, tokens) if hover else None,
                texts=labelled("output"),
            ),
            "table": _table(
                result.output, tokens, dims, gettext("Output = weights · V, one row per token")
            ),
        },
    ]
    return {
        "tokens": tokens,
        "n": n,
        "result": result,
        "query": query,
        "weight_sum": query.weight_sum,
        "scale_label": by,
        "stages": stages,
        "full_tables": full,
        "cell_text": labels_cells((n, n)),
        "empty_rows": [tokens[r] for r in result.empty_rows],
    }
