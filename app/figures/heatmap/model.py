"""What a view hands the renderer: one heatmap, or a group of heatmaps on one colour scale."""

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from itertools import chain

import numpy as np
from numpy.typing import ArrayLike

from app.core.i18n import format_rows, gettext
from app.figures.heatmap.scale import HIDDEN_COLOUR, Scale, hex_to_rgb

# A figure's id is its DOM id and the prefix of its parts' ids and of its CSS rule.
ID_PATTERN = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")
PLAIN_TIP = "{r} → {c}: {v}"  # a cell without arithmetic: "query → key: value"


@dataclass(frozen=True, eq=False)
class Tips:
    """The arithmetic a figure's cells show on hover and keyboard focus, written once per
    figure: sentence templates, and the numbers they take once per row, per column or per
    cell. static/js/heatmap.js fills a cell's template when it is pointed at or focused, so
    the page carries each number once, not a whole sentence per cell.

    In a template, `{v}` is the cell's number as the figure writes it (the hidden text where
    hidden), `{r}` and `{c}` its row's and column's label (whole, as typed), `{rK}` and `{cK}`
    the K-th operand (from 1) of its row and column (`rows[i][K - 1]`, `cols[j][K - 1]`), and
    `{xK}` the K-th per-cell operand (`cells[K][i][j]`, from 0). `templates[k]` is for the
    cells of kind k: `kinds` (rows × cols) when given, else 0 for visible cells and, if there
    is a second template, 1 for hidden ones. The templates are the sentences' one source:
    they come translated, with the figure-wide numbers (a scale factor) written in."""

    templates: tuple[str, ...]
    rows: Sequence[Sequence[str]] = ()
    cols: Sequence[Sequence[str]] = ()
    cells: Sequence[Sequence[Sequence[str]]] = ()
    kinds: ArrayLike | None = None

    @classmethod
    def sentences(cls, hover: Sequence[Sequence[str]]) -> "Tips":
        """Whole sentences, one per cell (for a figure whose cells share no wording)."""
        return cls(("{x0}",), cells=(hover,))


def _operands(labels: Sequence[str], operands: Sequence[Sequence[str]]) -> list[list[str]]:
    """Each row's (or column's) label, then its operands: `{r}` is item 0, `{rK}` item K."""
    return [[str(label), *(operands[i] if operands else ())] for i, label in enumerate(labels)]


@dataclass(frozen=True, kw_only=True, eq=False)
class Heatmap:
    """A rows × cols matrix drawn as coloured cells, rows top to bottom as in the tables.

    - `id`: unique on the page (letters, digits, - and _), the figure's DOM id.
    - `title`: shown above the picture, and the name of its downloads.
    - `values`: the numbers (rows × cols); `scale` gives each its colour.
    - `row_labels`, `col_labels`: the tokens (or dimensions) along each axis, as typed.
    - `hidden`: True where the mask hides the pair; those cells are drawn in the hidden look
      and read `hidden_text` ("−∞" for a score, "0" for a weight). Non-finite values (the −∞
      of the masked scores) are hidden too.
    - `row_title`, `col_title`: the axes' names ("query", "key" when left out).
    - `hover`: the arithmetic of the cells, shown on hover and on keyboard focus: `Tips` (a
      template and its operands, the figure's wording written once), or rows × cols whole
      sentences; without it a cell says "query → key: value".
    - `cell_texts`: the values as the tables print them, when the view has them already
      (else they are formatted here, `digits` decimals, in the reader's convention).
    - `selected_row`: the chosen query, outlined, its label always shown.
    - `href`: a link for the title (a panel of a group that selects its head).
    - `room`: the most px across the page gives the picture where it does not shrink to fit
      (presenter mode): its cells are made small enough, their numbers kept only where they
      still fit, every k-th label shown. Elsewhere the picture shrinks to its box anyway.
    """

    id: str
    title: str
    values: ArrayLike
    row_labels: Sequence[str]
    col_labels: Sequence[str]
    scale: Scale
    hidden: ArrayLike | None = None
    hidden_text: str = "−∞"
    row_title: str | None = None
    col_title: str | None = None
    hover: "Tips | Sequence[Sequence[str]] | None" = None
    cell_texts: Sequence[Sequence[str]] | None = None
    selected_row: int | None = None
    digits: int = 3
    href: str | None = None
    room: float | None = None

    def __post_init__(self) -> None:
        if not ID_PATTERN.fullmatch(self.id):
            raise ValueError(f"heatmap id {self.id!r}: letters, digits, - and _ only")
        shape = self.matrix.shape
        if len(shape) != 2 or shape != (len(self.row_labels), len(self.col_labels)):
            raise ValueError(
                f"heatmap {self.id}: values {shape} against "
                f"{len(self.row_labels)} row and {len(self.col_labels)} column labels"
            )
        tips = self.tip_parts
        matrices = [("cell_texts", self.cell_texts)] + [("hover", m) for m in tips.cells]
        for name, rows in matrices:
            if rows is not None and (len(rows), len(rows[0]) if len(rows) else 0) != shape:
                raise ValueError(f"heatmap {self.id}: {name} is not {shape[0]} × {shape[1]}")
        if (tips.rows and len(tips.rows) != shape[0]) or (tips.cols and len(tips.cols) != shape[1]):
            raise ValueError(f"heatmap {self.id}: hover operands are not {shape[0]} × {shape[1]}")
        if self.hidden is not None and np.shape(self.hidden) != shape:
            raise ValueError(f"heatmap {self.id}: hidden is not {shape[0]} × {shape[1]}")
        if self.selected_row is not None and not 0 <= self.selected_row < shape[0]:
            raise ValueError(f"heatmap {self.id}: no row {self.selected_row}")

    @property
    def row_axis(self) -> str:
        return gettext("query") if self.row_title is None else self.row_title

    @property
    def col_axis(self) -> str:
        return gettext("key") if self.col_title is None else self.col_title

    @cached_property
    def matrix(self) -> np.ndarray:
        return np.asarray(self.values, dtype=float)

    @property
    def shape(self) -> tuple[int, int]:
        rows, cols = self.matrix.shape
        return rows, cols

    @cached_property
    def mask(self) -> np.ndarray:
        """True where the cell is drawn hidden: `hidden`, and every non-finite value."""
        mask = ~np.isfinite(self.matrix)
        if self.hidden is not None:
            mask |= np.asarray(self.hidden, dtype=bool)
        return mask

    @cached_property
    def rgb(self) -> np.ndarray:
        """Every cell's fill as (rows, cols, 3) uint8: the scale's colour, or the hidden grey."""
        rgb = self.scale.rgb(self.matrix)
        rgb[self.mask] = hex_to_rgb(HIDDEN_COLOUR)
        return rgb

    @cached_property
    def texts(self) -> list[list[str]]:
        """The number each cell shows: the table's text, or `hidden_text` where hidden."""
        if self.cell_texts is not None:
            rows = [list(row) for row in self.cell_texts]
        else:
            rows = format_rows(np.where(self.mask, 0.0, self.matrix), self.digits)
        if self.mask.any():
            for i, j in zip(*np.nonzero(self.mask), strict=True):
                rows[i][j] = self.hidden_text
        return rows

    @cached_property
    def tip_parts(self) -> Tips:
        if self.hover is None:
            return Tips((PLAIN_TIP,))
        return self.hover if isinstance(self.hover, Tips) else Tips.sentences(self.hover)

    @cached_property
    def tip_kinds(self) -> np.ndarray:
        """Which template each cell takes (rows × cols)."""
        tips = self.tip_parts
        if tips.kinds is not None:
            return np.asarray(tips.kinds, dtype=int)
        return self.mask.astype(int) if len(tips.templates) > 1 else np.zeros(self.shape, int)

    def tip_data(self) -> str:
        """The hover texts' parts as the JSON static/js/heatmap.js reads: "t" the templates,
        "r" and "c" each row's and column's label then its operands, "v" the cells' numbers
        and "x" the per-cell operands (row by row), "k" each cell's template (a digit each),
        left out where every cell takes the first. "<" is escaped: it sits in a <script>."""
        tips = self.tip_parts
        data: dict[str, object] = {
            "t": list(tips.templates),
            "r": _operands(self.row_labels, tips.rows),
            "c": _operands(self.col_labels, tips.cols),
            "v": list(chain.from_iterable(self.texts)),
        }
        if tips.cells:
            data["x"] = [list(chain.from_iterable(m)) for m in tips.cells]
        kinds = self.tip_kinds
        if kinds.any():
            data["k"] = "".join(map(str, kinds.ravel().tolist()))
        text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
        return text.replace("<", "\\u003c")


@dataclass(frozen=True)
class PanelSection:
    """A run of consecutive panels of a group under one heading: the query heads that share
    a key/value head, the heads of one layer."""

    title: str
    size: int  # how many panels, from where the previous section ended


@dataclass(frozen=True, kw_only=True, eq=False)
class HeatmapGroup:
    """Small multiples: several heatmaps (one per head) side by side on one colour scale,
    with one colour bar. Every panel must have the same `scale` (build it once, e.g.
    `signed_scale(*matrices)`, for the whole group) and the same `hidden_text`.

    `columns` is the most panels side by side; narrower screens get fewer (CSS). `selected`
    is the index of the outlined panel (the chosen head). `sections`, when given, split the
    panels in order into titled runs (their sizes add up to the number of panels): a section
    starts a new row of at most `columns` panels, and sections smaller than a row share it.
    `panel_size` scales the panels' cells from the usual size of a small multiple (labels
    keep their size, fewer of them shown where they would overlap): below 1 for many panels,
    such as a model's 72 heads."""

    id: str
    title: str
    panels: Sequence[Heatmap]
    columns: int = 4
    selected: int | None = None
    sections: Sequence[PanelSection] = ()
    panel_size: float = 1.0

    def __post_init__(self) -> None:
        if not ID_PATTERN.fullmatch(self.id):
            raise ValueError(f"group id {self.id!r}: letters, digits, - and _ only")
        if not self.panels:
            raise ValueError(f"group {self.id}: no panel")
        if len({p.scale for p in self.panels}) != 1:
            raise ValueError(f"group {self.id}: the panels must share one scale")
        if len({p.hidden_text for p in self.panels}) != 1:
            raise ValueError(f"group {self.id}: the panels must share one hidden_text")
        if self.selected is not None and not 0 <= self.selected < len(self.panels):
            raise ValueError(f"group {self.id}: no panel {self.selected}")
        if self.columns < 1:
            raise ValueError(f"group {self.id}: columns must be at least 1")
        sizes = [section.size for section in self.sections]
        if sizes and (min(sizes) < 1 or sum(sizes) != len(self.panels)):
            raise ValueError(
                f"group {self.id}: sections of {sizes} panels for {len(self.panels)} panels"
            )
        if not 0 < self.panel_size <= 4:
            raise ValueError(f"group {self.id}: panel_size must be in (0, 4]")

    @property
    def scale(self) -> Scale:
        return self.panels[0].scale

    @property
    def hidden_text(self) -> str:
        return self.panels[0].hidden_text

    @property
    def has_hidden(self) -> bool:
        return any(p.mask.any() for p in self.panels)
