"""The stage strip of one head: which heatmaps and tables a page shows, with which labels,
and the arithmetic a reader sees when hovering or focusing a cell.

Reads finished results and formats them; the attention itself was computed by a service. Any
page with a result carrying the stage fields of /api/attention (tokens, q, k, v, scores,
scaled, allowed, masked, weights, output, scale_factor) can call `head_stages` and render it
with the macros of templates/stages/_stages.html."""

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from app.core.i18n import format_numbers, format_rows, format_vector, gettext, ngettext
from app.features.stages.results import OneHead, QueryBreakdown, query_breakdown
from app.figures.heatmap import Heatmap, Tips, signed_scale, weights_scale

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
    """A table number (three decimals) as a factor in a hover sum: 0.5, 1, (−0.34), and 0,5
    in Spanish: no trailing zeros, negatives in parentheses so that "×" and "+" read
    unambiguously."""
    mark = text[-4:-3]  # three decimals: the decimal mark, "." or the reader's ","
    if mark in (".", ","):
        text = text.rstrip("0").rstrip(mark)
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


def _products(count: int, row_from: int = 1, col_from: int = 1) -> str:
    """The template of a sum of `count` products, "{r1}×{c1} + {r2}×{c2} + …": each row
    operand times its column's, from `row_from` and `col_from`, the first MAX_TERMS written
    out."""
    shown = [f"{{r{row_from + m}}}×{{c{col_from + m}}}" for m in range(min(count, MAX_TERMS))]
    if count > MAX_TERMS:
        shown.append("…")
    return " + ".join(shown)


def scale_label(result: OneHead) -> str:
    """ "√2" when the scores are divided by √d_k, "1" when scaling is switched off."""
    d_k = result.d_k
    if math.isclose(result.scale_factor, math.sqrt(d_k)) and d_k > 1:
        return f"√{d_k}"
    return "1"


def _dot(texts: HeadTexts, value: str) -> Tips:
    """ "q_cat · k_The = 0×0.5 + 1×1 = {value}": q_i and k_j once per row and column."""
    width = len(texts.factors["q"][0]) if texts.factors["q"] else 0
    return Tips(
        (f"q_{{r}} · k_{{c}} = {_products(width)} = {value}",),
        rows=texts.factors["q"],
        cols=texts.factors["k"],
    )


def dot_hover(texts: HeadTexts) -> Tips:
    """ "q_cat · k_The = 0×0.5 + 1×1 = 1.000" for every query–key pair."""
    return _dot(texts, "{v}")


def scaled_hover(texts: HeadTexts) -> Tips:
    """The dot product, then ", ÷ √2 = 0.707"."""
    dots = _dot(texts, "{x0}")
    by = scale_label(texts.result)
    return Tips(
        (f"{dots.templates[0]}, ÷ {by} = {{v}}",),
        rows=dots.rows,
        cols=dots.cols,
        cells=(texts["scores"],),
    )


def masked_hover(texts: HeadTexts) -> Tips:
    """ "0.707 + 0 = 0.707" where the key is visible, "+ (−∞) = −∞: hidden" where it is not."""
    visible, hidden = gettext("visible"), gettext("hidden by the mask")
    return Tips(
        (
            f"{{r}} → {{c}}: {{v}} + 0 = {{v}} ({visible})",
            f"{{r}} → {{c}}: {{x0}} + (−∞) = −∞ ({hidden})",
        ),
        cells=(texts["scaled"],),
    )


def weight_hover(texts: HeadTexts, tokens: Sequence[str]) -> Tips:
    """ "e^0.707 / (e^0.707 + e^0.000) = 0.670": softmax over the row's visible keys (the
    row's denominator written once per row)."""
    allowed = np.asarray(texts.result.allowed, dtype=bool)
    totals = []
    for i, ti in enumerate(tokens):
        visible = np.flatnonzero(allowed[i])
        scaled = texts["scaled"][i]
        if visible.size == 0:
            totals.append(gettext("%(query)s sees no key: its weights are all 0") % {"query": ti})
        elif visible.size <= 4:
            totals.append("(" + " + ".join(f"e^{scaled[j]}" for j in visible) + ")")
        else:
            totals.append(gettext("Σ over its %(n)d visible keys") % {"n": visible.size})
    kinds = np.where(allowed, 0, 1)
    kinds[~allowed.any(axis=1)] = 2  # a row that sees no key says so in every cell
    return Tips(
        (
            "{r} → {c}: e^{x0} / {r1} = {v}",
            "{r} → {c}: " + gettext("hidden key, weight 0"),
            "{r1}",
        ),
        rows=[[total] for total in totals],
        cells=(texts["scaled"],),
        kinds=kinds,
    )


def weighted_hover(texts: HeadTexts, query: QueryBreakdown) -> Tips:
    """ "0.670 × v_The[0] = 0.670 × 1 = 0.670" for each key and value dimension."""
    v = texts.factors["v"]
    weights = format_numbers([float(row.weight) for row in query.rows])
    values = format_rows(np.array([row.weighted_value for row in query.rows], dtype=float))
    return Tips(
        ("{r1} × v_{r}[{c1}] = {r1} × {x0} = {x1}",),
        rows=[[weight] for weight in weights],
        cols=[[str(d)] for d in range(len(values[0]) if values else 0)],
        cells=([v[row.key_index] for row in query.rows], values),
    )


def output_hover(texts: HeadTexts) -> Tips:
    """ "out_cat[0] = 0.670×1 + 0.330×0.5 + 0×1.5 = 0.835": the weighted sum of values (each
    query's weights once per row, each value column once per column)."""
    weights = texts.factors["weights"]
    columns = [[str(d), *column] for d, column in enumerate(zip(*texts.factors["v"], strict=True))]
    return Tips(
        (f"out_{{r}}[{{c1}}] = {_products(len(weights), 1, 2)} = {{v}}",),
        rows=weights,
        cols=columns,
    )


@dataclass(frozen=True)
class Table:
    """A matrix as a table: the text alternative of its heatmap, and numbers to copy."""

    matrix: Any  # rows of numbers (None where hidden, printed −∞)
    row_labels: list[str]
    col_labels: list[str]
    caption: str


@dataclass(frozen=True)
class Stage:
    """One stage of the strip: its heatmap and, below it, its numbers as a table."""

    name: str
    title: str
    map: Heatmap
    table: Table


@dataclass(frozen=True)
class HeadStages:
    """Everything templates/stages/_stages.html shows for one head: the token table's rows,
    the strip of stages and the selected query key by key."""

    result: OneHead
    tokens: list[str]
    query: QueryBreakdown
    scale_label: str  # "√2", or "1" without scaling
    stages: list[Stage]
    full_tables: bool  # every row in the tables (else the selected query's row)
    empty_rows: list[str]  # tokens whose query sees no key

    @property
    def n(self) -> int:
        return len(self.tokens)

    @property
    def weight_sum(self) -> float:
        return self.query.weight_sum

    @property
    def rounded_parts(self) -> bool:
        """Whether the key-by-key table's numbers, as printed, fail to add up to its Σ row as
        printed (weights, and each weight × V column): the table then says they are rounded."""
        return not (
            adds_up([row.weight for row in self.query.rows], self.weight_sum)
            and all(
                adds_up(list(column), total)
                for column, total in zip(
                    zip(*(row.weighted_value for row in self.query.rows), strict=True),
                    self.query.output,
                    strict=True,
                )
            )
        )

    @property
    def summary(self) -> str:
        """The selected query in a sentence, from its numbers: which keys it sees, where its
        largest weight goes (ties named), and its output."""
        return query_summary(self.query)

    @property
    def weights_summary(self) -> str:
        """The same sentence without the output (a trained head's is 32 numbers long)."""
        return query_summary(self.query, output=False)

    def stage(self, name: str) -> Stage:
        return next(stage for stage in self.stages if stage.name == name)


TABLE_DIGITS = 3  # the key-by-key table's decimals, its Σ row's too


def printed(value: float) -> float:
    """A number as the table prints it."""
    return float(f"{value:.{TABLE_DIGITS}f}")


def adds_up(parts: Sequence[float], total: float) -> bool:
    """Whether the printed parts sum to the printed total."""
    return printed(sum(printed(p) for p in parts)) == printed(total)


def quoted(tokens: Sequence[str]) -> str:
    """ "“The”", "“The” and “sleeps”", "“a”, “b” and “c”" (in the reader's quotes)."""
    names = [gettext("“%(token)s”") % {"token": t} for t in tokens]
    if len(names) == 1:
        return names[0]
    return gettext("%(first)s and %(last)s") % {"first": ", ".join(names[:-1]), "last": names[-1]}


def query_summary(query: QueryBreakdown, output: bool = True) -> str:
    """ "“cat” sees 2 of its 3 keys; its largest weight, 0.670, goes to “The”; its output is
    [0.835, −0.340]." (the output left out when `output` is False) — or, for a query that
    sees no key, that its weights and output are 0."""
    rows = query.rows
    visible = [row for row in rows if row.visible]
    if not visible:
        return gettext(
            "“%(query)s” sees no key, so its weights and its output are all 0 (softmax has "
            "nothing to share out)."
        ) % {"query": query.token}
    top = max(row.weight for row in visible)
    heaviest = [row.key_token for row in visible if np.isclose(row.weight, top, rtol=0, atol=1e-12)]
    sees = ngettext(
        "“%(query)s” sees %(visible)s of its %(n)s key",
        "“%(query)s” sees %(visible)s of its %(n)s keys",
        len(rows),
    ) % {"query": query.token, "visible": len(visible), "n": len(rows)}
    goes = ngettext(
        "its largest weight, %(weight)s, goes to %(keys)s",
        "its largest weight, %(weight)s, goes to each of %(keys)s",
        len(heaviest),
    ) % {"weight": format_numbers([top], TABLE_DIGITS)[0], "keys": quoted(heaviest)}
    if not output:
        return f"{sees}; {goes}."
    said = gettext("its output is %(output)s") % {
        "output": format_vector(query.output, TABLE_DIGITS)
    }
    return f"{sees}; {goes}; {said}."


def matrix_map(
    figure_id: str,
    matrix: Any,
    rows: Sequence[str],
    cols: Sequence[str],
    title: str,
    col_title: str,
    row_title: str | None = None,
) -> Heatmap:
    """A plain matrix (Q, K, V, a projection, the concatenation) on a scale symmetric
    about 0: one row per token, one column per dimension."""
    return Heatmap(
        id=figure_id,
        title=title,
        values=matrix,
        row_labels=list(rows),
        col_labels=list(cols),
        scale=signed_scale(matrix, label=gettext("value")),
        row_title=gettext("token") if row_title is None else row_title,
        col_title=col_title,
    )


def head_stages(
    result: OneHead,
    query_index: int | None = None,
    prefix: str = "fig",
    room: float | None = None,
) -> HeadStages:
    """The strip of one head, each stage a heatmap (ids `{prefix}-{stage}`) with its table.

    `result` holds the stage fields of /api/attention. The breakdown is `result.query`
    when present, else it is built here for `query_index` (default: the last token).
    `room`: the px across each n × n stage has in presenter mode (Heatmap.room)."""
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
    rows = slice(None) if full else slice(i, i + 1)

    def square(name: str, caption: str) -> Table:
        matrix = np.asarray(getattr(result, name), dtype=float)[rows]
        if name == "masked":
            matrix = np.where(allowed[rows], matrix, np.nan)
        cells = [[None if x != x else x for x in row] for row in matrix.tolist()]  # NaN: hidden
        return Table(cells, tokens[rows], tokens, caption)

    def stage(name: str, title: str, map_title: str, caption: str, **heatmap: Any) -> Stage:
        values = getattr(result, "scaled" if name == "masked" else name)
        scale = weights_scale() if name == "weights" else signed_scale(values)
        picture = Heatmap(
            id=f"{prefix}-{name}",
            title=map_title,
            values=values,
            row_labels=tokens,
            col_labels=tokens,
            scale=scale,
            cell_texts=texts["scaled" if name == "masked" else name],
            selected_row=i,
            room=room,
            **heatmap,
        )
        return Stage(name, title, picture, square(name, caption))

    weighted_title = gettext("weight × V for “%(token)s”") % {"token": query.token}
    stages = [
        stage(
            "scores",
            "Q·Kᵀ",
            "Q·Kᵀ",
            gettext("Q·Kᵀ: query rows, key columns"),
            hover=dot_hover(texts) if hover else None,
        ),
        stage(
            "scaled",
            f"÷ {by}",
            f"÷ {by}",
            f"Q·Kᵀ ÷ {by}",
            hover=scaled_hover(texts) if hover else None,
        ),
        stage(
            "masked",
            "+ M",
            "+ M",
            gettext("Q·Kᵀ ÷ √d_k + M (−∞ where hidden)"),
            hover=masked_hover(texts) if hover else None,
            hidden=~allowed,
        ),
        stage(
            "weights",
            "softmax",
            gettext("softmax weights"),
            gettext("Softmax weights: each row sums to 1 (0 if it sees no key)"),
            hover=weight_hover(texts, tokens) if hover else None,
            hidden=~allowed,
            hidden_text="0",
        ),
        Stage(
            "weighted",
            weighted_title,
            Heatmap(
                id=f"{prefix}-weighted",
                title=weighted_title,
                values=weighted,
                row_labels=tokens,
                col_labels=dims,
                scale=signed_scale(weighted, label=gettext("value")),
                row_title=gettext("key"),
                col_title=gettext("value dimension"),
                hover=weighted_hover(texts, query) if hover else None,
                hidden=np.broadcast_to(~allowed[i][:, None], weighted.shape),
                hidden_text="0",
            ),
            Table(
                weighted.tolist(),
                tokens,
                dims,
                gettext("weight_j × v_j for the query “%(token)s”") % {"token": query.token},
            ),
        ),
        Stage(
            "output",
            "weights · V",
            Heatmap(
                id=f"{prefix}-output",
                title=gettext("output = weights · V"),
                values=result.output,
                row_labels=tokens,
                col_labels=dims,
                scale=signed_scale(result.output, label=gettext("value")),
                row_title=gettext("query"),
                col_title=gettext("output dimension"),
                hover=output_hover(texts) if hover else None,
                cell_texts=texts["output"],
                selected_row=i,
            ),
            Table(
                np.asarray(result.output).tolist(),
                tokens,
                dims,
                gettext("Output = weights · V, one row per token"),
            ),
        ),
    ]
    return HeadStages(
        result=result,
        tokens=tokens,
        query=query,
        scale_label=by,
        stages=stages,
        full_tables=full,
        empty_rows=[tokens[r] for r in result.empty_rows],
    )
