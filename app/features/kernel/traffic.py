"""The /kernel page's traffic counter: this run's reads and writes of slow memory against
standard attention, the formulas they follow with the state's numbers put in, and a chart over n.

Every number comes from the service's result or from app/math/flash.py's counts; this module
only writes the formulas out and arranges the figures.
"""

from dataclasses import dataclass
from math import ceil

from app.core.i18n import format_number, gettext
from app.features.kernel.results import LongSequenceRow, TiledResult
from app.figures.charts import Chart, Series, log_log_lines
from app.math import flash as fl


def _n(value: int) -> str:
    return format_number(value)


@dataclass(frozen=True)
class Formula:
    """A count: what it counts, its formula, the formula with this state's numbers, its value."""

    label: str
    formula: str
    numbers: str
    value: str


@dataclass(frozen=True)
class BlockFormulas:
    """B_c = ⌈M / 4d⌉ and B_r = min(B_c, d), with M and d put in."""

    b_c: str
    b_r: str


@dataclass(frozen=True)
class MovedSoFar:
    reads: int
    writes: int


def formulas(n: int, d_k: int, d_v: int, b_r: int, b_c: int) -> list[Formula]:
    """Each count of app/math/flash.py for full attention, symbol by symbol and then with this
    state's n, d_k, d_v and block sizes substituted. Labels are translated; the algebra is not."""
    t_r, t_c = ceil(n / b_r), ceil(n / b_c)
    std = fl.standard_traffic(n, d_k, d_v)
    fa1 = fl.counted_traffic(n, b_r, b_c, d_k, d_v, "fa1")
    fa2 = fl.counted_traffic(n, b_r, b_c, d_k, d_v, "fa2")
    return [
        Formula(
            label=gettext("Standard attention, reads: Q, K, V, then S and P read back"),
            formula="2n·d_k + n·d_v + 2n²",
            numbers=f"2·{n}·{d_k} + {n}·{d_v} + 2·{n}²",
            value=_n(std.reads),
        ),
        Formula(
            label=gettext("Standard attention, writes: S, P and O"),
            formula="2n² + n·d_v",
            numbers=f"2·{n}² + {n}·{d_v}",
            value=_n(std.writes),
        ),
        Formula(
            label=gettext("fa1, reads: K, V once; Q, O, l, m once per column block"),
            formula="n(d_k + d_v) + T_c·n(d_k + d_v + 2)",
            numbers=f"{n}·({d_k} + {d_v}) + {t_c}·{n}·({d_k} + {d_v} + 2)",
            value=_n(fa1.reads),
        ),
        Formula(
            label=gettext("fa1, writes: the setup, then O, l, m once per column block"),
            formula="n(d_v + 2) + T_c·n(d_v + 2)",
            numbers=f"{n}·({d_v} + 2) + {t_c}·{n}·({d_v} + 2)",
            value=_n(fa1.writes),
        ),
        Formula(
            label=gettext("fa2, reads: Q once; K and V once per row block"),
            formula="n·d_k + T_r·n(d_k + d_v)",
            numbers=f"{n}·{d_k} + {t_r}·{n}·({d_k} + {d_v})",
            value=_n(fa2.reads),
        ),
        Formula(
            label=gettext("fa2, writes: O and the log-sum-exp L once"),
            formula="n(d_v + 1)",
            numbers=f"{n}·({d_v} + 1)",
            value=_n(fa2.writes),
        ),
    ]


def block_formulas(sram: int, d: int) -> BlockFormulas:
    b_r, b_c = fl.sram_blocks(sram, d)
    return BlockFormulas(
        b_c=f"B_c = ⌈M / 4d⌉ = ⌈{_n(sram)} / (4·{d})⌉ = {b_c}",
        b_r=f"B_r = min(B_c, d) = min({b_c}, {d}) = {b_r}",
    )


def so_far(result: TiledResult, s: int) -> MovedSoFar:
    """Reads and writes up to and including step s, the setup counted before step 0."""
    steps = result.steps[: s + 1]
    return MovedSoFar(
        reads=sum(step.elements_read for step in steps),
        writes=result.traffic.setup_writes + sum(st.elements_written for st in steps),
    )


def traffic_chart(result: TiledResult) -> Chart:
    """Reads + writes against n on log axes: standard attention grows like n², and so do the
    tiled orders, but with a constant shrunk by about d²/M."""
    curve, spec = result.traffic_curve, result.long_sequence
    series = [
        Series(gettext("standard (S and P through slow memory)"), curve.standard),
        Series(gettext("fa1, full"), curve.fa1),
        Series(gettext("fa2, full"), curve.fa2),
        Series(gettext("fa1, causal (hidden tiles skipped)"), curve.fa1_causal, dash="dash"),
        Series(gettext("fa2, causal (hidden tiles skipped)"), curve.fa2_causal, dash="dash"),
    ]
    title = gettext("Elements moved to and from slow memory, d = %(d)s, M = %(m)s") % {
        "d": spec.head_dim,
        "m": _n(spec.sram_elements),
    }
    return log_log_lines(
        "fig-traffic",
        curve.seq_len,
        series,
        title=title,
        y_title=gettext("elements read + written"),
        x_title="n",
    )


@dataclass(frozen=True, kw_only=True)
class TrafficView:
    """Everything the traffic section shows for the walk-through at step s."""

    so_far: MovedSoFar
    formulas: list[Formula]
    blocks: BlockFormulas | None  # the tile sizes M gave this state, if it did
    chart_blocks: BlockFormulas  # those of the chart's long sequences
    chart: Chart
    rows: list[LongSequenceRow]


def traffic_view(result: TiledResult, s: int) -> TrafficView:
    n, d_k, d_v = len(result.tokens), result.d_k, result.d_v
    spec = result.long_sequence
    from_sram = result.blocks_from_sram and result.sram_elements is not None
    return TrafficView(
        so_far=so_far(result, s),
        formulas=formulas(n, d_k, d_v, result.block_q, result.block_k),
        blocks=block_formulas(result.sram_elements, d_k) if from_sram else None,
        chart_blocks=block_formulas(spec.sram_elements, spec.head_dim),
        chart=traffic_chart(result),
        rows=result.long_sequences,
    )
