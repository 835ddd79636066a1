"""The /decoder page's two pictures, laid out by the server as finished numbers for the
template: next-token probabilities as bars (plain HTML: nothing to load, so the bars are on
screen as soon as the fragment is) and per-token surprisal as lines (one SVG)."""

from collections.abc import Sequence
from dataclasses import dataclass

from app.core.i18n import format_number
from app.figures.charts import LINE_COLOURS


def shown_piece(piece: str) -> str:
    """A token as a label: its leading space as "␣", a line break as "↵", a tab as "⇥"."""
    return piece.replace(" ", "␣").replace("\n", "↵").replace("\t", "⇥") or "∅"


@dataclass(frozen=True)
class Bar:
    """One candidate: its piece, its probability (the bar's length, out of 1), and with
    heads switched off the probability it had with every head on."""

    token: str
    p: float
    text: str  # p as the page writes it
    percent: float  # the bar's length: p × 100 % of the track
    before: float | None = None  # with heads off: p with every head on
    before_percent: float | None = None


def bars(
    candidates: Sequence[tuple[str, float]], before: Sequence[float] | None = None
) -> list[Bar]:
    return [
        Bar(
            token=shown_piece(token),
            p=p,
            text=format_number(p, 3),
            percent=round(100 * p, 2),
            before=None if before is None else before[i],
            before_percent=None if before is None else round(100 * before[i], 2),
        )
        for i, (token, p) in enumerate(candidates)
    ]


@dataclass(frozen=True)
class Line:
    name: str
    colour: str
    points: str  # SVG polyline points "x,y x,y …"
    mean: float  # the mean of its values (nats)


@dataclass(frozen=True)
class Tick:
    at: float  # pixel position along its axis
    text: str


@dataclass(frozen=True)
class LineChart:
    """Lines over positions 1 … n − 1, in a width × height box with margins for the axes."""

    width: int
    height: int
    left: int
    top: int
    right: int  # x of the plot's right edge
    bottom: int  # y of the plot's bottom edge
    lines: list[Line]
    x_ticks: list[Tick]
    y_ticks: list[Tick]
    marker: Tick | None  # a position marked with a dashed line (where the window starts to slide)


def line_chart(
    series: Sequence[tuple[str, Sequence[float]]],
    marker: tuple[int, str] | None = None,
    size: tuple[int, int] = (720, 260),
) -> LineChart:
    """Series of equal length over positions 1, 2, …; the y axis from 0 to a round top."""
    width, height = size
    left, top, right, bottom = 44, 12, width - 12, height - 30
    n = max(len(values) for _, values in series)
    top_value = max(max(values) for _, values in series)
    step = 2 if top_value <= 12 else 5
    y_max = step * (int(top_value // step) + 1)

    def x(position: float) -> float:
        return left + (right - left) * (position - 1) / max(1, n - 1)

    def y(value: float) -> float:
        return bottom - (bottom - top) * value / y_max

    lines = [
        Line(
            name,
            LINE_COLOURS[i % len(LINE_COLOURS)],
            " ".join(f"{x(j + 1):.1f},{y(v):.1f}" for j, v in enumerate(values)),
            sum(values) / len(values),
        )
        for i, (name, values) in enumerate(series)
    ]
    x_step = 10 if n <= 80 else 20 if n <= 160 else 50
    x_ticks = [Tick(x(p), str(p)) for p in [1, *range(x_step, n + 1, x_step)]]
    y_ticks = [Tick(y(v), format_number(v)) for v in range(0, y_max + 1, step)]
    mark = None if marker is None or marker[0] > n else Tick(x(marker[0]), marker[1])
    return LineChart(width, height, left, top, right, bottom, lines, x_ticks, y_ticks, mark)
