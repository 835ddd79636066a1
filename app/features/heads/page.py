"""What /heads shows for one URL: its form, small multiples of every head, the chosen head's
stage strip, the concatenation and W_O, the shuffle demo and the √d_k panel."""

from collections.abc import Mapping
from typing import Any, Literal
from urllib.parse import urlencode

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from app.core.errors import InputError, validation_errors
from app.core.i18n import gettext, ngettext
from app.core.limits import HARD_MAX_HEADS, HARD_MAX_WIDTH
from app.core.rules import grouped_query_kv_heads, kv_head_choices, nearest_kv_heads
from app.features.heads.schemas import HeadsRequest, HeadsResult
from app.features.heads.service import compute_heads
from app.features.stages.page import head_stages
from app.features.stages.schemas import MaskSpec, PositionalKind
from app.features.stages.service import position_demo
from app.math.scaling import saturation
from app.settings import Settings
from app.web.figures import Series, TitledFigure, heatmap, log_log_lines
from app.web.multiples import small_multiples

HEADS_PAGE_MAX_TOKENS = 32


KV_GROUP_COLOURS = 8  # CSS classes kv-group-0 … kv-group-7, cycled


class HeadsForm(BaseModel):
    """The /heads page's GET form: every page state is one of these, and its URL."""

    model_config = ConfigDict(extra="ignore")

    text: str = Field("the cat sat on the mat", max_length=2000)
    d_model: int = Field(8, ge=1, le=HARD_MAX_WIDTH)
    heads: int = Field(4, ge=1, le=HARD_MAX_HEADS)
    kv_heads: int = Field(2, ge=1, le=HARD_MAX_HEADS)
    d_head: int = Field(4, ge=1, le=HARD_MAX_WIDTH)
    mask: Literal["bidirectional", "causal"] = "bidirectional"
    positional: PositionalKind = "none"
    scale: Literal["on", "off"] = "on"
    seed: int = Field(0, ge=0, le=2**32 - 1)
    head: int = Field(0, ge=0, le=HARD_MAX_HEADS - 1)
    preset: Literal["mha", "gqa", "mqa"] | None = None

    def params(self, **changes: Any) -> str:
        """This state (with `changes`) as a query string; the preset is already applied."""
        values = self.model_dump(exclude={"preset"}) | changes
        return urlencode(values)


def snap_kv_heads(form: HeadsForm) -> tuple[HeadsForm, str | None]:
    """Apply a preset, and move a g that does not divide h to the nearest divisor below."""
    h = form.heads
    grouped = grouped_query_kv_heads(h) or h
    wanted = {"mha": h, "gqa": grouped, "mqa": 1}.get(form.preset or "", form.kv_heads)
    g = nearest_kv_heads(h, wanted)
    note = None
    if g != wanted:
        note = ngettext(
            "%(wanted)s key/value heads cannot be shared evenly by %(h)s query head; "
            "showing g = %(g)s.",
            "%(wanted)s key/value heads cannot be shared evenly by %(h)s query heads; "
            "showing g = %(g)s.",
            h,
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


def matrix_figure(matrix: Any, rows: list[str], title: str, x_title: str) -> TitledFigure:
    columns = [str(j) for j in range(np.shape(matrix)[1])]
    fig = heatmap(matrix, columns, rows, title, "diverging", x_title=x_title, y_title="")
    return TitledFigure(fig, title, columns)


def heads_figures(result: HeadsResult, selected: int) -> dict[str, Any]:
    """Small multiples of every head's weights, the chosen head's stage strip, and the
    concatenation, W_O and output as matrices."""
    tokens = result.tokens
    h, d_head = len(result.heads), result.d_head
    concat_columns = [f"h{i}·{j}" for i in range(h) for j in range(d_head)]
    # Every head in one figure (one plotly plot draws many times faster than one per head),
    # a row per key/value group, one shared colour bar on [0, 1].
    order = sorted(range(h), key=lambda i: (result.heads[i].kv_head, i))
    per_group = h // max(1, len({s.kv_head for s in result.heads}))
    return {
        "heads": small_multiples(
            [result.heads[i].weights for i in order],
            tokens,
            [
                gettext("head %(i)s · KV %(g)s") % {"i": i, "g": result.heads[i].kv_head}
                for i in order
            ],
            hidden=~np.asarray(result.heads[selected].allowed, dtype=bool),
            columns=min(4, per_group) if per_group > 1 else 4,
            selected=selected,
            ids=order,
        ),
        "view": head_stages(result.head(selected)),
        "concat": matrix_figure(
            result.concat, tokens, "concat (n × h·d_head)", gettext("head · column")
        ),
        "w_o": matrix_figure(
            result.w_o, concat_columns, "W_O ((h·d_head) × d_model)", gettext("model dimension")
        ),
        "output": matrix_figure(
            result.output, tokens, gettext("output = concat · W_O"), gettext("model dimension")
        ),
    }


def scaling_figures(curves: dict[str, list]) -> dict[str, TitledFigure]:
    """The √d_k panel: four measures against d_k, with and without the division."""
    d_k = curves["d_k"]

    def pair(measure: str, title: str, y_title: str) -> TitledFigure:
        series = [
            Series("÷ √d_k", curves[f"scaled_{measure}"]),
            Series(gettext("raw Q·K"), curves[f"raw_{measure}"], dash="dash"),
        ]
        fig = log_log_lines(d_k, series, title, y_title, x_title="d_k", mode="lines+markers")
        return TitledFigure(fig, title, [])

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
        "gqa": grouped_query_kv_heads(form.heads),
        "kv_head_choices": kv_head_choices(form.heads),
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
    kv = [s.kv_head for s in result.heads]
    context.update(
        result=result,
        request_json=req.model_dump(exclude_defaults=True),
        groups=[[i for i, j in enumerate(kv) if j == g] for g in range(form.kv_heads)],
        group_colours=KV_GROUP_COLOURS,
        figures=heads_figures(result, form.head),
        demo=position_demo(req, result, compute_heads, settings),
    )
    return context
