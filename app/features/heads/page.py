"""What /heads shows for one state: small multiples of every head, the chosen head's stage
strip, the concatenation and W_O, the shuffle demo and the √d_k panel."""

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from pydantic import ValidationError

from app.core.errors import InputError, validation_errors
from app.core.i18n import gettext
from app.core.rules import grouped_query_kv_heads, kv_head_choices
from app.features.heads.form import HeadsForm
from app.features.heads.schemas import HeadsResult
from app.features.heads.service import compute_heads
from app.features.stages.page import head_stages
from app.features.stages.service import PositionDemo, position_demo
from app.figures.charts import Chart, Series, log_log_lines
from app.math.scaling import saturation
from app.settings import Settings
from app.web.classroom import url
from app.web.figures import TitledFigure, heatmap
from app.web.multiples import small_multiples
from app.web.pages import Page, Problem

KV_GROUP_COLOURS = 8  # CSS classes kv-group-0 … kv-group-7, cycled


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
        "view": head_stages(result.head(selected), prefix="head"),
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


def scaling_figures(curves: dict[str, list]) -> dict[str, Chart]:
    """The √d_k panel: four measures against d_k, with and without the division."""
    d_k = curves["d_k"]

    def pair(measure: str, title: str, y_title: str) -> Chart:
        series = [
            Series("÷ √d_k", curves[f"scaled_{measure}"]),
            Series(gettext("raw Q·K"), curves[f"raw_{measure}"], dash="dash"),
        ]
        return log_log_lines(
            f"fig-scaling-{measure}",
            d_k,
            series,
            title=title,
            y_title=y_title,
            x_title="d_k",
            mode="lines+markers",
        )

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


@dataclass(frozen=True, kw_only=True)
class HeadsView:
    """Everything /heads shows for one state; `result` is None when it cannot be computed."""

    form: HeadsForm
    kv_head_choices: list[int]
    grouped_query: int | None  # the grouped-query preset's g, when h allows one
    scaling: dict[str, list[float]]  # the √d_k panel's measurements
    scaling_figures: dict[str, Chart]
    result: HeadsResult | None = None
    request_json: dict[str, Any] | None = None
    groups: list[list[int]] | None = None  # query heads by the key/value head they share
    figures: dict[str, Any] | None = None
    demo: PositionDemo | None = None
    group_colours: int = KV_GROUP_COLOURS

    def head_link(self, head: int) -> str:
        return url("/heads", self.form.state(head=head))


def heads_page(
    form: HeadsForm, problems: list[Problem], notes: list[str], settings: Settings
) -> Page:
    """Everything /heads shows for one state, computed once; what cannot be used is said."""
    form, note = form.snapped()
    notes = [*notes, note] if note else notes
    scaling = saturation(form.seed % 1000)
    view = HeadsView(
        form=form,
        kv_head_choices=kv_head_choices(form.heads),
        grouped_query=grouped_query_kv_heads(form.heads),
        scaling=scaling,
        scaling_figures=scaling_figures(scaling),
    )
    try:
        req = form.request()
        result = compute_heads(req, settings)
    except InputError as error:
        problems = [*problems, Problem(str(error.loc[0]), error.msg)]
    except ValidationError as error:
        problems = [*problems, *(Problem("", e["msg"]) for e in validation_errors(error.errors()))]
    else:
        kv = [s.kv_head for s in result.heads]
        view = replace(
            view,
            result=result,
            request_json=req.model_dump(exclude_defaults=True),
            groups=[[i for i, j in enumerate(kv) if j == g] for g in range(form.kv_heads)],
            figures=heads_figures(result, form.head),
            demo=position_demo(req, result, compute_heads, settings),
        )
    return Page(
        template="heads/heads.html",
        fragment="heads/_live.html",
        view=view,
        problems=problems,
        notes=notes,
        state=form.state(),
    )
