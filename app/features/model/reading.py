"""The /model page's reading of a result: the grid of every head, role badges and their
summary, the per-layer chart of where attention goes, rollout, the line view's geometry, and
the ranking of the heads a similarity needs.

Everything here formats what the service computed; no attention arithmetic is done twice.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from app.core.i18n import N_, format_number, format_numbers, gettext
from app.features.model.service import ModelResult
from app.figures.charts import Chart, Series, bars, mean_lines
from app.figures.heatmap import Heatmap, HeatmapGroup, weights_scale
from app.math.roles import LABELS, POSITION_THRESHOLD, SPECIAL_THRESHOLD, broad_threshold
from app.math.similarity import HeadEffect

ROLE_NAMES = {  # API label → what the page calls it
    "previous": N_("previous token"),
    "next": N_("next token"),
    "self": N_("itself"),
    "cls": N_("[CLS]"),
    "sep": N_("[SEP]"),
    "broad": N_("broad"),
}
HEAD_COLOURS = (
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf",
    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#393b79", "#637939",
)  # fmt: skip
LINE_WINDOW = 40  # word pieces per column of the line view
LINE_MIN_WEIGHT = 0.02  # lighter lines are not drawn (they would be invisible anyway)
GRID_CELLS = 32  # a head's panel in the grid has at most this many rows and columns
GRID_PANEL_SIZE = 0.6  # of a small multiple's usual size: 72 panels, several to a row
# Our line between a head that matters to a similarity and one that does not (Clark et al.
# give none): a change under it is called small.
MATTERS = 0.02

Link = Callable[[int, int], str]  # (layer, head) → the address of the page with that head


def head_name(layer: int, head: int) -> str:
    """ "layer 3 · head 5": never "3.5", which reads as a decimal."""
    return gettext("layer %(layer)s · head %(head)s") % {"layer": layer, "head": head}


# ---------------------------------------------------------------- the grid of every head


def pooled(weights: np.ndarray, tokens: Sequence[str]) -> tuple[np.ndarray, list[str]]:
    """Each head's n × n weights averaged over blocks of neighbouring pieces, so that a
    panel has at most GRID_CELLS rows and columns; the blocks' labels (positions "3–9")."""
    n = len(tokens)
    if n <= GRID_CELLS:
        return weights, list(tokens)
    bins = np.array_split(np.arange(n), GRID_CELLS)
    rows = np.stack([weights[..., b, :].mean(axis=-2) for b in bins], axis=-2)
    cells = np.stack([rows[..., b].mean(axis=-1) for b in bins], axis=-1)
    return cells, [f"{b[0]}–{b[-1]}" for b in bins]


def panel_title(result: ModelResult, layer: int, head: int) -> str:
    """The head's name, its role labels, and "off" when it is switched off."""
    parts = [head_name(layer, head)]
    labels = result.roles[layer][head]["labels"]
    if labels:
        parts.append(", ".join(gettext(ROLE_NAMES[label]) for label in labels))
    if (layer, head) in result.ablate:
        parts.append(gettext("off"))
    return " · ".join(parts)


def grid_group(
    result: ModelResult, keep: list[int], role: str, link: Link
) -> tuple[HeatmapGroup | None, bool]:
    """Every head's weights at the shown positions as one group of panels on the 0–1 scale
    (pooled over neighbouring pieces for long inputs), each titled with its head and labels
    and linked to it; with a role filter, only the heads with that label (None: no head
    has it). Also whether the panels are pooled."""
    assert result.weights is not None
    tokens = [result.tokens[i] for i in keep]
    weights = result.weights[:, :, keep][:, :, :, keep]  # (layers, heads, m, m)
    cells, labels = pooled(weights, tokens)
    scale = weights_scale()
    heads = [
        (layer, head)
        for layer, row in enumerate(result.roles)
        for head, means in enumerate(row)
        if not role or role in means["labels"]
    ]
    if not heads:
        return None, False
    chosen = (result.head.layer, result.head.head) if result.head else None
    panels = [
        Heatmap(
            id=f"grid-{layer}-{head}",
            title=panel_title(result, layer, head),
            values=cells[layer, head],
            row_labels=labels,
            col_labels=labels,
            scale=scale,
            href=link(layer, head),
        )
        for layer, head in heads
    ]
    group = HeatmapGroup(
        id="fig-grid",
        title=gettext("Softmax weights of all %(heads)s heads in each of the %(layers)s layers")
        % {"heads": result.model.heads, "layers": result.model.layers},
        panels=panels,
        columns=result.model.heads,
        selected=heads.index(chosen) if chosen in heads else None,
        panel_size=GRID_PANEL_SIZE,
    )
    return group, len(tokens) > GRID_CELLS


@dataclass(frozen=True)
class StrongestKey:
    """The key a head looks at most, its weight averaged over the queries shown."""

    token: str
    weight: float


def strongest_keys(weights: np.ndarray, tokens: Sequence[str]) -> list[list[StrongestKey]]:
    """For each layer and head: the key that gets the most weight, averaged over the
    queries. A text version of the grid."""
    mean = weights.mean(axis=2)  # (layers, heads, n): each key's average weight
    best = mean.argmax(axis=-1)  # (layers, heads)
    return [
        [StrongestKey(tokens[j], float(row[h, j])) for h, j in enumerate(bests)]
        for row, bests in zip(mean, best, strict=True)
    ]


# ---------------------------------------------------------------- roles


@dataclass(frozen=True)
class RoleBadge:
    label: str  # the API's label
    name: str  # as the page calls it
    value: float  # the mean that decided it (the entropy for "broad")


@dataclass(frozen=True)
class RoleCard:
    """One head in the table of labels."""

    layer: int
    head: int
    name: str
    badges: list[RoleBadge]
    ablated: bool
    shown: bool  # not hidden by the role filter

    @property
    def key(self) -> str:
        return f"{self.layer}.{self.head}"

    @property
    def labels(self) -> str:
        return " ".join(b.label for b in self.badges)


def role_cards(result: ModelResult, role: str) -> list[list[RoleCard]]:
    """layers × heads: each head's badges (the label and the number that decided it)."""
    return [
        [
            RoleCard(
                layer=layer,
                head=head,
                name=head_name(layer, head),
                badges=[
                    RoleBadge(
                        label,
                        gettext(ROLE_NAMES[label]),
                        means["entropy"] if label == "broad" else means[label],  # type: ignore[literal-required]
                    )
                    for label in means["labels"]
                ],
                ablated=(layer, head) in result.ablate,
                shown=not role or role in means["labels"],
            )
            for head, means in enumerate(row)
        ]
        for layer, row in enumerate(result.roles)
    ]


@dataclass(frozen=True)
class RoleSummary:
    """One role: the rule that gives it, and the heads that carry it on this sentence."""

    label: str
    name: str
    rule: str
    count: int
    heads: str


def role_rules(n: int) -> dict[str, str]:
    """The rule behind each label, with our thresholds, in the reader's numbers."""
    position = {"t": format_number(POSITION_THRESHOLD)}
    special = {"t": format_number(SPECIAL_THRESHOLD)}
    return {
        "previous": gettext("mean weight on the piece before > %(t)s") % position,
        "next": gettext("mean weight on the piece after > %(t)s") % position,
        "self": gettext("mean weight on itself > %(t)s") % position,
        "cls": gettext("mean weight on [CLS] > %(t)s") % special,
        "sep": gettext("mean weight on [SEP] > %(t)s") % special,
        "broad": gettext("mean entropy ≥ 0.8 · ln %(n)s = %(v)s nats")
        % {"n": n, "v": format_number(broad_threshold(n), 2)},
    }


def role_summary(result: ModelResult) -> list[RoleSummary]:
    """For each role: the heads that carry it, named, and the rule that gave the label."""
    rules = role_rules(len(result.tokens))
    summary = []
    for label in LABELS:
        heads = [
            (layer, head)
            for layer, row in enumerate(result.roles)
            for head, means in enumerate(row)
            if label in means["labels"]
        ]
        summary.append(
            RoleSummary(
                label=label,
                name=gettext(ROLE_NAMES[label]),
                rule=rules[label],
                count=len(heads),
                heads=", ".join(head_name(*h) for h in heads),
            )
        )
    return summary


def thresholds_sentence() -> str:
    """Which thresholds turn Clark et al.'s measures into labels: ours, said as ours."""
    return gettext(
        "The thresholds that turn these measures into labels are ours, not Clark and "
        "colleagues': a head is labelled by the piece before, the piece after or itself when "
        "its mean weight there is over %(position)s, by [CLS] or [SEP] when over %(special)s, "
        "and broad when its rows are spread out: a mean entropy of at least 0.8 · ln n, where "
        "ln n is the entropy of perfectly even attention over the n pieces."
    ) % {
        "position": format_number(POSITION_THRESHOLD),
        "special": format_number(SPECIAL_THRESHOLD),
    }


# ---------------------------------------------------------------- where attention goes


def layer_chart(result: ModelResult) -> Chart:
    """Mean attention to [CLS], [SEP] and punctuation by layer (Clark et al., Figure 2):
    a line through each layer's mean over heads, and a dot per head."""
    to = result.attention_to
    heads = [np.asarray(v) for v in (to.cls, to.sep, to.punctuation)]  # (layers, heads) each
    names = ("[CLS]", "[SEP]", gettext("punctuation"))
    return mean_lines(
        "fig-by-layer",
        range(result.model.layers),
        [Series(name, h.mean(axis=1)) for name, h in zip(names, heads, strict=True)],
        [h.tolist() for h in heads],
        title=gettext("Mean attention to [CLS], [SEP] and punctuation in each layer"),
        y_title=gettext("mean attention"),
        x_title=gettext("layer"),
        y_range=(0, 1),
    )


@dataclass(frozen=True)
class LayerMeans:
    layer: int
    cls: float
    sep: float
    punctuation: float


def layer_table(result: ModelResult) -> list[LayerMeans]:
    to = result.attention_to
    return [
        LayerMeans(
            layer,
            float(np.mean(to.cls[layer])),
            float(np.mean(to.sep[layer])),
            float(np.mean(to.punctuation[layer])),
        )
        for layer in range(result.model.layers)
    ]


@dataclass(frozen=True)
class Share:
    index: int
    token: str
    share: float


@dataclass(frozen=True)
class Rollout:
    """Rollout after the last layer, as a heatmap, and each input piece's share in the
    embedding (a bar chart and a table, largest first)."""

    map: Heatmap
    share_chart: Chart
    shares: list[Share]


def rollout_view(result: ModelResult) -> Rollout:
    tokens = result.tokens
    share = np.asarray(result.input_share)
    order = np.argsort(-share, kind="stable")
    return Rollout(
        map=Heatmap(
            id="fig-rollout",
            title=gettext("Rollout after the last layer"),
            values=result.rollout,
            row_labels=tokens,
            col_labels=tokens,
            scale=weights_scale(gettext("share")),
            row_title=gettext("piece at the top"),
            col_title=gettext("input piece"),
        ),
        share_chart=bars(
            "fig-share",
            [f"{i}: {t}" for i, t in enumerate(tokens)],  # numbered: a token can repeat
            share,
            name=gettext("share"),
            title=gettext("Each input piece's estimated share in the sentence embedding"),
            y_title=gettext("share"),
            x_title=gettext("input piece"),
        ),
        shares=[Share(int(i), tokens[i], float(share[i])) for i in order],
    )


# ---------------------------------------------------------------- the line view


@dataclass(frozen=True)
class Line:
    q: int
    k: int
    y1: float
    y2: float
    w: float
    width: float
    opacity: float
    colour: str
    label: str  # "cat → the: 1.00 (layer 0 · head 2)"


@dataclass(frozen=True)
class DrawnHead:
    key: str  # "0.2", as the address and the tick boxes write it
    name: str
    colour: str


@dataclass(frozen=True)
class LineToken:
    index: int
    token: str
    y: float


@dataclass(frozen=True)
class LineCell:
    token: str
    weight: float


@dataclass(frozen=True)
class LineRow:
    index: int
    token: str
    cells: list[LineCell]  # each drawn head's strongest key for this query


@dataclass(frozen=True)
class LineView:
    """The line view's SVG geometry, its table and its window over a long text."""

    start: int
    end: int
    n: int
    window: int
    tokens: list[LineToken]
    lines: list[Line]
    heads: list[DrawnHead]
    height: float
    width: float
    left: float
    right: float
    table: list[LineRow]
    earlier: int | None  # the start of the previous window, if there is one
    later: int | None

    @property
    def colours(self) -> dict[str, str]:
        return {h.key: h.colour for h in self.heads}


def line_view(result: ModelResult, heads: Sequence[tuple[int, int]], start: int) -> LineView:
    """The pieces start … start + LINE_WINDOW − 1 in two columns, a line per query, key and
    head (at most MAX_LINE_HEADS, a colour each) whose width and opacity follow the weight."""
    assert result.weights is not None
    n = len(result.tokens)
    start = max(0, min(start, max(0, n - LINE_WINDOW)))
    window = list(range(start, min(n, start + LINE_WINDOW)))
    row_h, top, left, right, width = 22, 30, 150, 410, 560
    y = {i: top + row_h * k for k, i in enumerate(window)}
    lines = []
    label = gettext("%(q)s → %(k)s: %(w)s (%(head)s)")
    for colour_index, (layer, head) in enumerate(heads):
        w = result.weights[layer, head][np.ix_(window, window)].tolist()
        drawn = [
            (i, j, weight)
            for i, row in zip(window, w, strict=True)
            for j, weight in zip(window, row, strict=True)
            if weight >= LINE_MIN_WEIGHT
        ]
        colour, name = HEAD_COLOURS[colour_index], head_name(layer, head)
        texts = format_numbers([weight for _, _, weight in drawn], 2)
        lines.extend(
            Line(
                q=i,
                k=j,
                y1=y[i],
                y2=y[j],
                w=weight,
                width=round(0.5 + 5 * weight, 2),
                opacity=round(min(1.0, 0.15 + 0.85 * weight), 3),
                colour=colour,
                label=label
                % {"q": result.tokens[i], "k": result.tokens[j], "w": text, "head": name},
            )
            for (i, j, weight), text in zip(drawn, texts, strict=True)
        )
    table = []
    for i in window:
        cells = []
        for layer, head in heads:
            row = result.weights[layer, head, i, window]
            best = int(np.argmax(row))
            cells.append(LineCell(result.tokens[window[best]], float(row[best])))
        table.append(LineRow(i, result.tokens[i], cells))
    return LineView(
        start=start,
        end=window[-1],
        n=n,
        window=LINE_WINDOW,
        tokens=[LineToken(i, result.tokens[i], y[i]) for i in window],
        lines=lines,
        heads=[
            DrawnHead(f"{layer}.{head}", head_name(layer, head), HEAD_COLOURS[c])
            for c, (layer, head) in enumerate(heads)
        ],
        height=top + row_h * len(window) + 10,
        width=width,
        left=left,
        right=right,
        table=table,
        earlier=max(0, start - LINE_WINDOW) if start > 0 else None,
        later=start + LINE_WINDOW if start + LINE_WINDOW < n else None,
    )


# ---------------------------------------------------------------- the heads a similarity needs


@dataclass(frozen=True)
class RankedHead:
    rank: int
    layer: int
    head: int
    name: str
    similarity: float  # with this head switched off
    change: float  # that − the similarity with every head on


@dataclass(frozen=True)
class Ranking:
    """The 72 heads, the largest drop in similarity first, and what they say in a sentence."""

    top: list[RankedHead]
    rest: list[RankedHead]
    summary: str


def ranking_summary(effects: Sequence[HeadEffect], similarity: float) -> str:
    """What the ranking says, from its numbers: which head's absence lowers the similarity
    most and by how much, which raises it most, or that no head matters much (every change
    under MATTERS)."""
    drop, rise = effects[0], effects[-1]
    line = format_number(MATTERS)

    def said(effect: HeadEffect) -> dict[str, str]:
        return {
            "head": head_name(effect.layer, effect.head),
            "size": format_number(abs(effect.change), 4),
            "change": format_number(effect.change, 4, signed=True),
            "before": format_number(similarity, 4),
            "after": format_number(effect.similarity, 4),
            "line": line,
        }

    largest = max((drop, rise), key=lambda e: abs(e.change))
    if abs(largest.change) < MATTERS:
        return gettext(
            "No single head matters much to this similarity: switching any one off changes "
            "it by less than %(line)s. The largest change is %(change)s, without %(head)s."
        ) % said(largest)
    if drop.change <= -MATTERS:
        parts = [
            gettext(
                "Switching off %(head)s lowers the similarity most: by %(size)s, from "
                "%(before)s to %(after)s."
            )
            % said(drop)
        ]
    else:
        parts = [
            gettext(
                "No head's absence lowers the similarity by %(line)s or more: the largest "
                "drop is %(size)s, without %(head)s."
            )
            % said(drop)
            if drop.change < 0
            else gettext("No head's absence lowers the similarity.")
        ]
    if rise.change >= MATTERS:
        parts.append(
            gettext(
                "Switching off %(head)s raises it most, by %(size)s: the heads whose absence "
                "raises it come last."
            )
            % said(rise)
        )
    return " ".join(parts)


def ranking_view(result: ModelResult, shown: int = 10) -> Ranking | None:
    if result.ranking is None or result.similarity is None:
        return None
    rows = [
        RankedHead(rank, e.layer, e.head, head_name(e.layer, e.head), e.similarity, e.change)
        for rank, e in enumerate(result.ranking, start=1)
    ]
    return Ranking(rows[:shown], rows[shown:], ranking_summary(result.ranking, result.similarity))
