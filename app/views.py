"""Presentation of computed results: which figures and tables a page shows, with which labels,
and the arithmetic a reader sees when hovering a cell.

Reads finished results and formats them; the attention itself was computed by the service.
Any page with a result dict carrying the stage fields of /api/attention (tokens, q, k, v,
scores, scaled, allowed, masked, weights, output, scale_factor) can call `head_stages` and
render it with the macros of templates/_stages.html.
"""

import csv
import io
import math
from collections.abc import Mapping, Sequence
from typing import Any, Literal
from urllib.parse import urlencode

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from app.config import Settings
from app.cost import binary_size, score_bytes, score_entries
from app.errors import InputError, ModelUnavailableError, validation_errors
from app.figures import (
    LABEL_CELLS_UP_TO,
    Series,
    fmt,
    heatmap,
    heatmap_grid,
    log_log_lines,
    thumbnail,
)
from app.i18n import N_, format_number, gettext
from app.labstate import LABELS, MAX_GRID_WIDTH, LabPage, encode, number_text
from app.model_store import MODEL_SHAPE
from app.nav import NAV
from app.scaling import saturation
from app.schemas import MODEL_PAGE_DEFAULTS, HeadsRequest, MaskSpec, ModelPageParams, PositionalKind
from app.service import compute_heads, compute_model, position_demo, query_breakdown

# Above these sizes a page stays fast: hover shows the value only, and a heatmap's text
# alternative is the selected query's row (the full matrices are in the CSV download).
HOVER_ARITHMETIC_UP_TO = 32
FULL_TABLES_UP_TO = 32
# Sums longer than this are written with "…" in the hover text.
MAX_TERMS = 8


def short(value: float) -> str:
    """A factor in a hover sum: 0.5, 1, (−0.34): three decimals at most, no trailing zeros,
    negatives in parentheses so that "×" and "+" read unambiguously."""
    text = fmt(value, 3)
    text = text.rstrip("0").rstrip(".") if "." in text else text
    return f"({text})" if text.startswith("−") else text


def _sum(terms: Sequence[str]) -> str:
    shown = list(terms[:MAX_TERMS])
    if len(terms) > MAX_TERMS:
        shown.append("…")
    return " + ".join(shown)


def scale_label(result: Mapping[str, Any]) -> str:
    """ "√2" when the scores are divided by √d_k, "1" when scaling is switched off."""
    d_k = int(result["d_k"])
    if math.isclose(float(result["scale_factor"]), math.sqrt(d_k)) and d_k > 1:
        return f"√{d_k}"
    return "1"


def dot_hover(result: Mapping[str, Any], tokens: Sequence[str]) -> list[list[str]]:
    """ "q_cat · k_The = 0×0.5 + 1×1 = 1.000" for every query–key pair."""
    q, k, scores = (np.asarray(result[name], dtype=float) for name in ("q", "k", "scores"))
    return [
        [
            f"q_{ti} · k_{tj} = "
            + _sum([f"{short(a)}×{short(b)}" for a, b in zip(q[i], k[j], strict=True)])
            + f" = {fmt(scores[i, j])}"
            for j, tj in enumerate(tokens)
        ]
        for i, ti in enumerate(tokens)
    ]


def scaled_hover(result: Mapping[str, Any], dots: list[list[str]]) -> list[list[str]]:
    """The dot product, then ", ÷ √2 = 0.707"."""
    scaled = np.asarray(result["scaled"], dtype=float)
    by = scale_label(result)
    return [
        [f"{text}, ÷ {by} = {fmt(scaled[i, j])}" for j, text in enumerate(row)]
        for i, row in enumerate(dots)
    ]


def masked_hover(result: Mapping[str, Any], tokens: Sequence[str]) -> list[list[str]]:
    """ "0.707 + 0 = 0.707" where the key is visible, "+ (−∞) = −∞: hidden" where it is not."""
    scaled = np.asarray(result["scaled"], dtype=float)
    allowed = np.asarray(result["allowed"], dtype=bool)
    visible, hidden = gettext("visible"), gettext("hidden by the mask")
    return [
        [
            f"{ti} → {tj}: {fmt(scaled[i, j])} + 0 = {fmt(scaled[i, j])} ({visible})"
            if allowed[i, j]
            else f"{ti} → {tj}: {fmt(scaled[i, j])} + (−∞) = −∞ ({hidden})"
            for j, tj in enumerate(tokens)
        ]
        for i, ti in enumerate(tokens)
    ]


def weight_hover(result: Mapping[str, Any], tokens: Sequence[str]) -> list[list[str]]:
    """ "e^0.707 / (e^0.707 + e^0.000) = 0.670": softmax over the row's visible keys."""
    scaled = np.asarray(result["scaled"], dtype=float)
    allowed = np.asarray(result["allowed"], dtype=bool)
    weights = np.asarray(result["weights"], dtype=float)
    rows = []
    for i, ti in enumerate(tokens):
        visible = np.flatnonzero(allowed[i])
        if visible.size == 0:
            none = gettext("%(query)s sees no key: its weights are all 0") % {"query": ti}
            rows.append([none for _ in tokens])
            continue
        if visible.size <= 4:
            total = "(" + " + ".join(f"e^{fmt(scaled[i, j])}" for j in visible) + ")"
        else:
            total = gettext("Σ over its %(n)d visible keys") % {"n": visible.size}
        rows.append(
            [
                f"{ti} → {tj}: e^{fmt(scaled[i, j])} / {total} = {fmt(weights[i, j])}"
                if allowed[i, j]
                else f"{ti} → {tj}: " + gettext("hidden key, weight 0")
                for j, tj in enumerate(tokens)
            ]
        )
    return rows


def weighted_hover(query: Mapping[str, Any], v: np.ndarray) -> list[list[str]]:
    """ "0.670 × v_The[0] = 0.670 × 1 = 0.670" for each key and value dimension."""
    return [
        [
            f"{fmt(row['weight'])} × v_{row['key_token']}[{d}] = {fmt(row['weight'])} × "
            f"{short(v[row['key_index'], d])} = {fmt(value)}"
            for d, value in enumerate(row["weighted_value"])
        ]
        for row in query["rows"]
    ]


def output_hover(result: Mapping[str, Any], tokens: Sequence[str]) -> list[list[str]]:
    """ "out_cat[0] = 0.670×1 + 0.330×0.5 + 0×1.5 = 0.835": the weighted sum of values."""
    weights = np.asarray(result["weights"], dtype=float)
    v = np.asarray(result["v"], dtype=float)
    output = np.asarray(result["output"], dtype=float)
    return [
        [
            f"out_{ti}[{d}] = "
            + _sum([f"{short(w)}×{short(x)}" for w, x in zip(weights[i], v[:, d], strict=True)])
            + f" = {fmt(output[i, d])}"
            for d in range(v.shape[1])
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


def head_stages(result: Mapping[str, Any], query_index: int | None = None) -> dict[str, Any]:
    """Everything templates/_stages.html shows for one head: the token table's rows, the
    heatmap strip (each figure with its table as text alternative) and the query breakdown.

    `result` holds the stage fields of /api/attention. The breakdown is `result["query"]`
    when present, else it is built here for `query_index` (default: the last token)."""
    tokens = list(result["tokens"])
    n = len(tokens)
    if "query" in result and query_index in (None, result["query"]["index"]):
        query = result["query"]
    else:
        query = query_breakdown(tokens, result, n - 1 if query_index is None else query_index)
    i = query["index"]
    v = np.asarray(result["v"], dtype=float)
    dims = [f"d{d}" for d in range(v.shape[1])]
    weighted = np.array([row["weighted_value"] for row in query["rows"]], dtype=float)
    allowed = np.asarray(result["allowed"], dtype=bool)
    hover = n <= HOVER_ARITHMETIC_UP_TO
    full = n <= FULL_TABLES_UP_TO
    by = scale_label(result)
    dots = dot_hover(result, tokens) if hover else None
    weighted_title = gettext("weight × V for “%(token)s”") % {"token": query["token"]}

    def square(name: str, caption: str) -> dict[str, Any]:
        rows = slice(None) if full else slice(i, i + 1)
        matrix = np.asarray(result[name], dtype=float)[rows]
        if name == "masked":
            matrix = np.where(allowed[rows], matrix, np.nan)
        cells = [[None if np.isnan(x) else x for x in row] for row in matrix.tolist()]
        return _table(cells, tokens[rows], tokens, caption)

    stages = [
        {
            "name": "scores",
            "title": "Q·Kᵀ",
            "fig": heatmap(result["scores"], tokens, tokens, "Q·Kᵀ", "diverging", hover=dots),
            "table": square("scores", gettext("Q·Kᵀ: query rows, key columns")),
        },
        {
            "name": "scaled",
            "title": f"÷ {by}",
            "fig": heatmap(
                result["scaled"],
                tokens,
                tokens,
                f"÷ {by}",
                "diverging",
                hover=scaled_hover(result, dots) if dots else None,
            ),
            "table": square("scaled", f"Q·Kᵀ ÷ {by}"),
        },
        {
            "name": "masked",
            "title": "+ M",
            "fig": heatmap(
                result["scaled"],
                tokens,
                tokens,
                gettext("+ M (grey = hidden, −∞)"),
                "diverging",
                hover=masked_hover(result, tokens) if hover else None,
                hidden=~allowed,
            ),
            "table": square("masked", gettext("Q·Kᵀ ÷ √d_k + M (−∞ where hidden)")),
        },
        {
            "name": "weights",
            "title": "softmax",
            "fig": heatmap(
                result["weights"],
                tokens,
                tokens,
                gettext("softmax weights (grey = hidden, 0)"),
                hover=weight_hover(result, tokens) if hover else None,
                hidden=~allowed,
                hidden_text="0",
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
                hover=weighted_hover(query, v) if hover else None,
                hidden=np.broadcast_to(~allowed[i][:, None], weighted.shape),
                hidden_text="0",
            ),
            "table": _table(
                weighted,
                tokens,
                dims,
                gettext("weight_j × v_j for the query “%(token)s”") % {"token": query["token"]},
            ),
        },
        {
            "name": "output",
            "title": "weights · V",
            "fig": heatmap(
                result["output"],
                dims,
                tokens,
                gettext("output = weights · V"),
                "diverging",
                x_title=gettext("output dimension"),
                hover=output_hover(result, tokens) if hover else None,
            ),
            "table": _table(
                result["output"], tokens, dims, gettext("Output = weights · V, one row per token")
            ),
        },
    ]
    return {
        "tokens": tokens,
        "n": n,
        "result": result,
        "query": query,
        "weight_sum": float(sum(row["weight"] for row in query["rows"])),
        "scale_label": by,
        "stages": stages,
        "full_tables": full,
        "cell_text": n <= LABEL_CELLS_UP_TO,
        "empty_rows": [tokens[r] for r in result.get("empty_rows", [])],
    }


# ---------------------------------------------------------------- the head lab

LONG_SENTENCE = (
    "On a quiet morning the old fisherman walked down to the harbour, checked the ropes of "
    "his small blue boat, and watched the gulls circle above the calm grey water until sunrise"
)
GENERATED = {"d_model": 4, "d_k": 4, "d_v": 4}


def _preset(tokens: str, **rest: Any) -> str:
    return "/?" + encode([("tokens", tokens), *GENERATED.items(), *rest.items()])


PRESETS: list[tuple[str, str, str]] = [
    (
        N_("Worked example"),
        "/",
        N_("“The cat sleeps”, causal: the numbers of the worked example."),
    ),
    (
        N_("Repeated tokens"),
        _preset("the cat saw the cat", mask="bidirectional", query=3),
        N_("Equal words get equal rows when nothing marks their position."),
    ),
    (
        N_("Padded sequence"),
        _preset("Hello world <pad> <pad>", mask="bidirectional", pad="2,3", query=1),
        N_("Two padding tokens that no query may look at."),
    ),
    (
        N_("Sliding window"),
        _preset("one two three four five six seven eight", mask="window", window=3, query=7),
        N_("Each token sees itself and the two tokens before it."),
    ),
    (
        N_("Longer sentence (n = 32)"),
        _preset(LONG_SENTENCE, mask="causal", query=31),
        N_("Thirty-two tokens with generated vectors: a strip too big for printed values."),
    ),
]
MASK_MODES = [
    ("causal", N_("Causal (a decoder)")),
    ("bidirectional", N_("Bidirectional (an encoder)")),
    ("window", N_("Sliding window")),
    ("custom", N_("Custom pattern")),
]
PATTERN_UP_TO = 16  # the custom pattern is edited by clicking n × n cells
REFERENCE_LENGTH = 4096  # the cost panel's comparison, as in the worked example's table


def lab_editor(page: LabPage) -> dict[str, Any]:
    """The controls of the lab, filled in with the state shown (exact numbers, so that the
    form sends back what it received)."""
    result, state = page.result, page.state
    tokens = list(result["tokens"])
    d_model, d_k, d_v = (int(result[name]) for name in ("d_model", "d_k", "d_v"))
    inputs = [f"x{d}" for d in range(d_model)]
    shapes = {
        "x": (tokens, [f"d{d}" for d in range(d_model)]),
        "w_q": (inputs, [f"q{d}" for d in range(d_k)]),
        "w_k": (inputs, [f"k{d}" for d in range(d_k)]),
        "w_v": (inputs, [f"v{d}" for d in range(d_v)]),
    }
    grids = [
        {
            "name": name,
            "label": LABELS[name],
            "rows": [
                (rows[i], [number_text(v) for v in line])
                for i, line in enumerate(np.asarray(result[name]).tolist())
            ],
            "cols": cols,
            "given": name in page.given,
        }
        for name, (rows, cols) in shapes.items()
    ]
    n = len(tokens)
    pattern = state.pattern().tolist() if n <= PATTERN_UP_TO else None
    return {
        "text": " ".join(tokens),
        "tokens": tokens,
        "dims": {"d_model": d_model, "d_k": d_k, "d_v": d_v},
        "widths": range(1, MAX_GRID_WIDTH + 1),
        "seed": state.seed,
        "grids": grids,
        "modes": MASK_MODES,
        "mask": state.mask,
        "window": state.window,
        "pattern": pattern,
        "pad": set(state.pad),
        "scale": state.scale,
        "positional": state.positional,
        "query": int(result["query"]["index"]),
    }


def cost_panel(n: int) -> dict[str, Any]:
    """One head's score matrix now and at 4,096 tokens (one source: app/cost.py)."""
    return {
        "n": n,
        "entries": format_number(score_entries(n)),
        "size": binary_size(score_bytes(n)).text,
        "reference": format_number(REFERENCE_LENGTH),
        "reference_entries": format_number(score_entries(REFERENCE_LENGTH)),
        "reference_size": binary_size(score_bytes(REFERENCE_LENGTH)).text,
        "link": "/cost" if any(path == "/cost" for path, _ in NAV) else None,
    }


def lab_context(page: LabPage) -> dict[str, Any]:
    """Everything templates/lab.html and its fragment show."""
    n = len(page.result["tokens"])
    return {
        "page": page,
        "result": page.result,
        "view": head_stages(page.result),
        "editor": lab_editor(page),
        "presets": PRESETS,
        "cost": cost_panel(n),
        "demo": page.demo,
        "state_query": page.query,
    }


def stages_csv(result: Mapping[str, Any]) -> str:
    """Every stage in one long table: stage, row, row label, column, column label, value.
    Hidden scores read -inf; the mask reads 1 (visible) or 0 (hidden)."""
    tokens = list(result["tokens"])
    dims = {
        name: [f"{prefix}{d}" for d in range(int(result[name]))]
        for name, prefix in (("d_model", "d"), ("d_k", "d"), ("d_v", "d"))
    }
    inputs = [f"x{d}" for d in range(int(result["d_model"]))]
    query = result["query"]
    weighted = np.array([row["weighted_value"] for row in query["rows"]], dtype=float)
    tables = [
        ("x", result["x"], tokens, dims["d_model"]),
        ("w_q", result["w_q"], inputs, dims["d_k"]),
        ("w_k", result["w_k"], inputs, dims["d_k"]),
        ("w_v", result["w_v"], inputs, dims["d_v"]),
        ("q", result["q"], tokens, dims["d_k"]),
        ("k", result["k"], tokens, dims["d_k"]),
        ("v", result["v"], tokens, dims["d_v"]),
        ("scores", result["scores"], tokens, tokens),
        ("scaled", result["scaled"], tokens, tokens),
        ("allowed", np.asarray(result["allowed"], dtype=int), tokens, tokens),
        ("masked", result["masked"], tokens, tokens),
        ("weights", result["weights"], tokens, tokens),
        (f"weighted_values_query_{query['index']}", weighted, tokens, dims["d_v"]),
        ("output", result["output"], tokens, dims["d_v"]),
    ]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["stage", "row", "row_label", "column", "column_label", "value"])
    for stage, values, rows, cols in tables:
        for i, line in enumerate(np.asarray(values, dtype=float).tolist()):
            for j, value in enumerate(line):
                writer.writerow([stage, i, rows[i], j, cols[j], number_text(value)])
    return out.getvalue()


# ---------------------------------------------------------------- the heads page

HEADS_PAGE_MAX_TOKENS = 32
KV_GROUP_COLOURS = 8  # CSS classes kv-group-0 … kv-group-7, cycled


class HeadsForm(BaseModel):
    """The /heads page's GET form: every page state is one of these, and its URL."""

    model_config = ConfigDict(extra="ignore")

    text: str = Field("the cat sat on the mat", max_length=2000)
    d_model: int = Field(8, ge=1, le=64)
    heads: int = Field(4, ge=1, le=16)
    kv_heads: int = Field(2, ge=1, le=16)
    d_head: int = Field(4, ge=1, le=64)
    mask: Literal["bidirectional", "causal"] = "bidirectional"
    positional: PositionalKind = "none"
    scale: Literal["on", "off"] = "on"
    seed: int = Field(0, ge=0, le=2**32 - 1)
    head: int = Field(0, ge=0, le=15)
    preset: Literal["mha", "gqa", "mqa"] | None = None

    def params(self, **changes: Any) -> str:
        """This state (with `changes`) as a query string; the preset is already applied."""
        values = self.model_dump(exclude={"preset"}) | changes
        return urlencode(values)


def gqa_kv_heads(heads: int) -> int | None:
    """The grouped-query preset: the fewest groups larger than 1 (h = 8 → g = 2)."""
    return next((g for g in range(2, heads) if heads % g == 0), None)


def snap_kv_heads(form: HeadsForm) -> tuple[HeadsForm, str | None]:
    """Apply a preset, and move a g that does not divide h to the nearest divisor below."""
    h = form.heads
    wanted = {"mha": h, "gqa": gqa_kv_heads(h) or h, "mqa": 1}.get(form.preset or "", form.kv_heads)
    g = max(d for d in range(1, min(wanted, h) + 1) if h % d == 0)
    note = None
    if g != wanted:
        note = gettext(
            "%(wanted)s key/value heads cannot be shared evenly by %(h)s query heads; "
            "showing g = %(g)s."
        ) % {"wanted": wanted, "h": h, "g": g}
    return form.model_copy(
        update={"kv_heads": g, "preset": None, "head": min(form.head, h - 1)}
    ), note


def heads_request(form: HeadsForm) -> HeadsRequest:
    tokens = form.text.split()
    if not tokens:
        raise InputError(("text",), gettext("text is empty; type at least one word to have tokens"))
    if len(tokens) > HEADS_PAGE_MAX_TOKENS:
        raise InputError(
            ("text",),
            gettext(
                "text has %(n)s tokens but this page shows at most %(max)s; shorten it "
                "(the API takes more)"
            )
            % {"n": len(tokens), "max": HEADS_PAGE_MAX_TOKENS},
        )
    return HeadsRequest(
        tokens=tokens,
        d_model=form.d_model,
        heads=form.heads,
        kv_heads=form.kv_heads,
        d_head=form.d_head,
        mask=MaskSpec(causal=form.mask == "causal"),
        positional=form.positional,
        scale=form.scale == "on",
        seed=form.seed,
    )


def matrix_figure(matrix: Any, rows: list[str], title: str, x_title: str) -> dict[str, Any]:
    columns = [str(j) for j in range(np.shape(matrix)[1])]
    return heatmap(matrix, columns, rows, title, "diverging", x_title=x_title, y_title="")


def heads_figures(result: dict[str, Any], selected: int) -> dict[str, Any]:
    """Small multiples of every head's weights, the chosen head's stage strip, and the
    concatenation, W_O and output as matrices."""
    tokens = result["tokens"]
    h, d_head = len(result["heads"]), result["d_head"]
    head = result["heads"][selected]
    one = {  # the projections saw x with position added (x itself unless sinusoidal)
        **head,
        "tokens": tokens,
        "x": result["x_positioned"],
        "scale_factor": result["scale_factor"],
        "d_k": d_head,
    }
    concat_columns = [f"h{i}·{j}" for i in range(h) for j in range(d_head)]
    return {
        "thumbs": [
            thumbnail(
                heatmap(s["weights"], tokens, tokens, ""),
                gettext("head %(i)s · KV %(g)s") % {"i": i, "g": s["kv_head"]},
            )
            for i, s in enumerate(result["heads"])
        ],
        "view": head_stages(one),
        "concat": matrix_figure(
            result["concat"], tokens, "concat (n × h·d_head)", gettext("head · column")
        ),
        "w_o": matrix_figure(
            result["w_o"], concat_columns, "W_O ((h·d_head) × d_model)", gettext("model dimension")
        ),
        "output": matrix_figure(
            result["output"], tokens, gettext("output = concat · W_O"), gettext("model dimension")
        ),
    }


def scaling_figures(curves: dict[str, list]) -> dict[str, dict[str, Any]]:
    """The √d_k panel: four measures against d_k, with and without the division."""
    d_k = curves["d_k"]

    def pair(measure: str, title: str, y_title: str) -> dict[str, Any]:
        series = [
            Series("÷ √d_k", curves[f"scaled_{measure}"]),
            Series(gettext("raw Q·K"), curves[f"raw_{measure}"], dash="dash"),
        ]
        return log_log_lines(d_k, series, title, y_title, x_title="d_k", mode="lines+markers")

    return {
        "score_std": pair(
            "score_std", gettext("Spread of the scores"), gettext("standard deviation")
        ),
        "max_weight": pair(
            "max_weight", gettext("Largest weight in a row"), gettext("mean of row maxima")
        ),
        "entropy_bits": pair("entropy_bits", gettext("Entropy of a softmax row"), "bits"),
        "gradient": pair(
            "gradient", gettext("Gradient that reaches the scores"), gettext("mean ‖∂p/∂s‖")
        ),
    }


def heads_page(params: Mapping[str, str], settings: Settings) -> dict[str, Any]:
    """Everything /heads shows for one URL; problems become messages on the page."""
    errors: list[str] = []
    try:
        form = HeadsForm.model_validate(dict(params))
    except ValidationError as exc:
        errors = [e["msg"] for e in validation_errors(exc.errors())]
        form = HeadsForm()
    form, note = snap_kv_heads(form)
    context: dict[str, Any] = {
        "form": form,
        "note": note,
        "errors": errors,
        "gqa": gqa_kv_heads(form.heads),
        "head_urls": [f"/heads?{form.params(head=i)}" for i in range(form.heads)],
        "scaling": saturation(form.seed % 1000),
        "result": None,
    }
    context["scaling_figures"] = scaling_figures(context["scaling"])
    try:
        req = heads_request(form)
        result = compute_heads(req, settings)
    except InputError as exc:
        errors.append(exc.msg)
        return context
    except ValidationError as exc:
        errors.extend(e["msg"] for e in validation_errors(exc.errors()))
        return context
    kv = [s["kv_head"] for s in result["heads"]]
    context.update(
        result=result,
        request_json=req.model_dump(exclude_defaults=True),
        groups=[[i for i, j in enumerate(kv) if j == g] for g in range(form.kv_heads)],
        group_colours=KV_GROUP_COLOURS,
        figures=heads_figures(result, form.head),
        demo=position_demo(req, result, compute_heads, settings),
    )
    return context


# ---------------------------------------------------------------- the trained model's page


def shown_positions(result: Mapping[str, Any], hide_special: bool) -> list[int]:
    """The positions the page shows: all, or all but [CLS] and [SEP]."""
    special = result["special"]
    keep = [i for i in range(len(result["tokens"])) if not (hide_special and special[i])]
    return keep or list(range(len(result["tokens"])))  # a text of special pieces only


def strongest_keys(weights: np.ndarray, tokens: Sequence[str]) -> list[list[dict[str, Any]]]:
    """For each layer and head: the key that gets the most weight, averaged over the
    queries. A text version of the grid, and its links to each head."""
    mean = weights.mean(axis=2)  # (layers, heads, n): each key's average weight
    best = mean.argmax(axis=-1)  # (layers, heads)
    return [
        [{"token": tokens[j], "weight": float(row[h, j])} for h, j in enumerate(bests)]
        for row, bests in zip(mean, best, strict=True)
    ]


BY_TOKEN = ("q", "k", "v", "output")  # n × d_head: one row per token
BY_PAIR = ("scores", "scaled", "allowed", "masked", "weights")  # n × n: query row, key column
PROJECTIONS = {"q": "Q = x·W_Q + b_Q", "k": "K = x·W_K + b_K", "v": "V = x·W_V + b_V"}


def shown_head(head: Mapping[str, Any], keep: list[int], tokens: list[str]) -> dict[str, Any]:
    """One trained head's stage fields at the shown positions, laid out as /api/attention's
    result so that `head_stages` (templates/_stages.html) can show them."""
    rows = np.asarray(keep)
    shown: dict[str, Any] = {name: np.asarray(head[name])[rows] for name in BY_TOKEN}
    shown.update({name: np.asarray(head[name])[np.ix_(rows, rows)] for name in BY_PAIR})
    shown.update(tokens=tokens, d_k=head["d_head"], scale_factor=head["scale_factor"])
    if len(keep) == len(head["q"]):
        shown["query"] = head["query"]  # nothing hidden: the service's own breakdown
    return shown


def model_view(result: Mapping[str, Any], hide_special: bool) -> dict[str, Any]:
    """What the /model page shows of a result: the grid of every head, its text version,
    and the selected head's stages: its 32-wide Q, K, V, then the lab's strip and query
    table. [CLS] and [SEP] may be left out."""
    model = result["model"]
    keep = shown_positions(result, hide_special)
    tokens = [result["tokens"][i] for i in keep]
    weights = result["weights"][:, :, keep][:, :, :, keep]  # (layers, heads, m, m)
    selected = (result["head"]["layer"], result["head"]["head"]) if "head" in result else None
    view: dict[str, Any] = {
        "tokens": tokens,
        "hidden": len(keep) < len(result["tokens"]),
        "grid": heatmap_grid(
            weights,
            tokens,
            [gettext("layer %(i)s") % {"i": i} for i in range(model["layers"])],
            [gettext("head %(h)s") % {"h": i} for i in range(model["heads"])],
            selected,
        ),
        "strongest": strongest_keys(weights, tokens),
    }
    if "head" not in result:
        return view
    head = result["head"]
    shown = shown_head(head, keep, tokens)
    query = head["query"]["index"]
    dims = [f"d{j}" for j in range(head["d_head"])]
    projections = [
        {
            "name": name,
            "title": title,
            "fig": heatmap(
                shown[name], dims, tokens, title, "diverging", x_title=gettext("dimension")
            ),
            "table": _table(shown[name], tokens, dims, title),
        }
        for name, title in PROJECTIONS.items()
    ]
    view["projections"] = {"stages": projections, "full_tables": True}
    view["stages"] = head_stages(shown, keep.index(query) if query in keep else 0)
    return view


def model_page(params: Mapping[str, str], settings: Settings) -> tuple[dict[str, Any], int]:
    """The /model page's context and status: the view of the URL's sentence and head, or
    the sentences saying what to fix (422) or how to install the model (503)."""
    form = {**MODEL_PAGE_DEFAULTS, **params}
    context: dict[str, Any] = {"form": form, "errors": [], "result": None, "shape": MODEL_SHAPE}
    try:
        page = ModelPageParams.model_validate(form)
        result = compute_model(page.request(), settings)
    except ValidationError as exc:
        context["errors"] = [e["msg"] for e in validation_errors(exc.errors())]
        return context, 422
    except InputError as exc:
        context["errors"] = [exc.msg]
        return context, 422
    except ModelUnavailableError as exc:
        context["errors"] = [exc.msg]
        return context, 503
    shape = (result["model"]["layers"], result["model"]["heads"])
    context.update(result=result, view=model_view(result, page.hide_special), shape=shape)
    return context, 200
