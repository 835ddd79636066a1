"""What /heads shows for one state: every head's weights as small multiples grouped by the
key/value head they share, the chosen head's stage strip, the concatenation, W_O and the
output, the shuffle demo and the √d_k panel. Every picture is drawn by the server."""

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from itertools import groupby
from typing import Any

from pydantic import ValidationError

from app.core.errors import InputError, validation_errors
from app.core.i18n import format_number, gettext, ngettext
from app.core.rules import grouped_query_kv_heads, kv_head_choices
from app.features.heads.form import HeadsForm
from app.features.heads.schemas import HeadsRequest, HeadsResult
from app.features.heads.service import compute_heads
from app.features.stages.page import HeadStages, head_stages, matrix_map
from app.features.stages.service import PositionDemo, position_demo
from app.figures.charts import Chart, Series, log_log_lines
from app.figures.heatmap import Heatmap, HeatmapGroup, PanelSection, weights_scale
from app.math.scaling import N_KEYS, saturation
from app.settings import Settings
from app.web.classroom import url
from app.web.pages import Page, Problem

MAX_COLUMNS = 4  # panels side by side at most, in a section of the group of every head


def listed(items: list[str]) -> str:
    """ "1", "1 and 2", "1, 2 and 3", in the reader's language."""
    if len(items) < 2:
        return "".join(items)
    return gettext("%(first)s and %(last)s") % {"first": ", ".join(items[:-1]), "last": items[-1]}


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
class ScalingView:
    """The √d_k panel: the measurements, their charts, and the sentences made from them."""

    seed: int
    keys: int  # random queries and keys per d_k
    curves: dict[str, list]
    figures: dict[str, Chart]

    @property
    def uniform_bits(self) -> str:
        """The entropy of a uniform row over `keys` keys, log₂ n bits."""
        return format_number(math.log2(self.keys), 2, trim=True)

    def typical_size(self) -> str:
        """How the spread of q·k grows: √d_k at the narrowest and the widest d_k."""
        low, high = self.curves["d_k"][0], self.curves["d_k"][-1]
        return gettext(
            "its typical size grows like √d_k: about %(low)s for d_k = %(d_low)s, about "
            "%(high)s for d_k = %(d_high)s"
        ) % {
            "low": format_number(math.sqrt(low), 1),
            "d_low": low,
            "high": format_number(math.sqrt(high), 1),
            "d_high": high,
        }

    def gradient_sentence(self) -> str:
        """What the gradient column shows, read off this seed's numbers."""
        curves = self.curves
        d_k, raw, scaled = curves["d_k"], curves["raw_gradient"], curves["scaled_gradient"]
        peak = max(range(len(raw)), key=raw.__getitem__)
        return gettext(
            "The gradient column: without the division it is largest at d_k = %(d_peak)s "
            "(%(peak)s) and falls to %(last)s at d_k = %(d_last)s, as the rows head for a "
            "single winner; divided by √d_k it stays between %(low)s and %(high)s for every "
            "d_k."
        ) % {
            "d_peak": d_k[peak],
            "peak": format_number(raw[peak], 3),
            "last": format_number(raw[-1], 3),
            "d_last": d_k[-1],
            "low": format_number(min(scaled), 3),
            "high": format_number(max(scaled), 3),
        }


def scaling_view(seed: int) -> ScalingView:
    seed = seed % 1000
    curves = saturation(seed)
    return ScalingView(seed=seed, keys=N_KEYS, curves=curves, figures=scaling_figures(curves))


@dataclass(frozen=True, kw_only=True)
class HeadsShown:
    """What one computed state shows: every head's weights, the chosen head, W_O."""

    result: HeadsResult
    chosen: int
    request_json: dict[str, Any]
    stages: HeadStages  # the chosen head, stage by stage
    concat_map: Heatmap
    w_o_map: Heatmap
    output_map: Heatmap
    concat_columns: list[str]  # "h0·0" …: head, then its column
    model_columns: list[str]
    demo: PositionDemo
    links: list[str]  # the state with each head chosen

    @property
    def heads(self) -> int:
        return len(self.result.heads)

    @property
    def per_kv_head(self) -> int:
        """r = h / g, the query heads each key/value head serves."""
        return self.heads // self.result.kv_heads

    def mates(self, head: int) -> list[int]:
        """The other query heads that share head's key/value head."""
        kv = self.result.heads[head].kv_head
        return [i for i, s in enumerate(self.result.heads) if s.kv_head == kv and i != head]

    def groups_sentence(self) -> str:
        h, g = self.heads, self.result.kv_heads
        if g == h:
            return ngettext(
                "One query head with its own key/value head: attention as in the head lab.",
                "h = %(num)s query heads with as many key/value heads: multi-head attention, "
                "each head compares its own queries with its own keys.",
                h,
            ) % {"num": h}
        return ngettext(
            "h = %(h)s query heads share g = %(num)s key/value head: all %(r)s compare their "
            "own queries with the same keys and mix the same values.",
            "h = %(h)s query heads share g = %(num)s key/value heads, %(r)s query heads "
            "each: heads in one group compare their own queries with the same keys and mix "
            "the same values.",
            g,
        ) % {"h": h, "num": g, "r": self.per_kv_head}

    def chosen_sentence(self) -> str:
        """Whom the chosen head shares its keys and values with, if anyone."""
        mates = self.mates(self.chosen)
        if not mates:
            return gettext(
                "Head %(i)s has key/value head %(g)s to itself: no other query head reads "
                "its keys and values."
            ) % {"i": self.chosen, "g": self.result.heads[self.chosen].kv_head}
        return ngettext(
            "Head %(i)s shares key/value head %(g)s with head %(others)s: the same keys and "
            "values, its own queries, so its own weights.",
            "Head %(i)s shares key/value head %(g)s with heads %(others)s: the same keys and "
            "values, its own queries, so its own weights.",
            len(mates),
        ) % {
            "i": self.chosen,
            "g": self.result.heads[self.chosen].kv_head,
            "others": listed([str(i) for i in mates]),
        }

    def cache_sentence(self) -> str:
        if self.per_kv_head == 1:
            return gettext(
                "With g = h every query head caches keys and values of its own: this is "
                "multi-head attention, the largest cache of the three."
            )
        return gettext(
            "This configuration caches %(r)s× less than multi-head attention: %(this)s "
            "bytes per token instead of %(mha)s."
        ) % {
            "r": self.per_kv_head,
            "this": self.result.kv_cache_bytes_per_token.this,
            "mha": self.result.kv_cache_bytes_per_token.multi_head,
        }

    def heads_group(self, link: Callable[[str], str] = str) -> HeatmapGroup:
        """Every head's weights on the 0–1 scale, one colour bar, in a section per key/value
        head; the chosen head outlined; each panel's title opens its head (`link` keeps the
        view: the template passes classroom.link)."""
        result = self.result
        tokens = result.tokens
        panels = [
            Heatmap(
                id=f"heads-{i}",
                title=gettext("head %(i)s") % {"i": i},
                values=stage.weights,
                row_labels=tokens,
                col_labels=tokens,
                scale=weights_scale(),
                hidden=~stage.allowed,
                hidden_text="0",
                href=link(self.links[i]),
            )
            for i, stage in enumerate(result.heads)
        ]
        sections = [
            PanelSection(gettext("Key/value head %(g)s") % {"g": kv}, len(list(run)))
            for kv, run in groupby(stage.kv_head for stage in result.heads)
        ]
        return HeatmapGroup(
            id="fig-heads",
            title=gettext("Attention weights of every head"),
            panels=panels,
            columns=min(MAX_COLUMNS, self.per_kv_head),
            selected=self.chosen,
            sections=sections,
        )


def heads_shown(
    form: HeadsForm, req: HeadsRequest, result: HeadsResult, demo: PositionDemo
) -> HeadsShown:
    tokens = result.tokens
    h, d_head = len(result.heads), result.d_head
    concat_columns = [f"h{i}·{j}" for i in range(h) for j in range(d_head)]
    model_columns = [str(j) for j in range(result.d_model)]
    model_dimension = gettext("model dimension")
    return HeadsShown(
        result=result,
        chosen=form.head,
        request_json=req.model_dump(exclude_defaults=True),
        stages=head_stages(result.head(form.head), prefix="head"),
        concat_map=matrix_map(
            "fig-concat",
            result.concat,
            tokens,
            concat_columns,
            gettext("concatenation (n × h·d_head)"),
            gettext("head · column"),
        ),
        w_o_map=matrix_map(
            "fig-w-o",
            result.w_o,
            concat_columns,
            model_columns,
            "W_O ((h·d_head) × d_model)",
            model_dimension,
            row_title=gettext("head · column"),
        ),
        output_map=matrix_map(
            "fig-output",
            result.output,
            tokens,
            model_columns,
            gettext("output = concatenation · W_O"),
            model_dimension,
        ),
        concat_columns=concat_columns,
        model_columns=model_columns,
        demo=demo,
        links=[url("/heads", form.state(head=i)) for i in range(h)],
    )


@dataclass(frozen=True, kw_only=True)
class HeadsView:
    """Everything /heads shows for one state; `shown` is None when it cannot be computed."""

    form: HeadsForm
    kv_head_choices: list[int]
    grouped_query: int | None  # the grouped-query preset's g, when h allows one
    scaling: ScalingView
    shown: HeadsShown | None = None


def heads_page(
    form: HeadsForm, problems: list[Problem], notes: list[str], settings: Settings
) -> Page:
    """Everything /heads shows for one state, computed once; what cannot be used is said."""
    form, note = form.snapped()
    notes = [*notes, note] if note else notes
    view = HeadsView(
        form=form,
        kv_head_choices=kv_head_choices(form.heads),
        grouped_query=grouped_query_kv_heads(form.heads),
        scaling=scaling_view(form.seed),
    )
    try:
        req = form.request()
        result = compute_heads(req, settings)
    except InputError as error:
        problems = [*problems, Problem(str(error.loc[0]), error.msg)]
    except ValidationError as error:
        problems = [*problems, *(Problem("", e["msg"]) for e in validation_errors(error.errors()))]
    else:
        demo = position_demo(req, result, compute_heads, settings)
        view = replace(view, shown=heads_shown(form, req, result, demo))
    return Page(
        template="heads/heads.html",
        fragment="heads/_live.html",
        view=view,
        problems=problems,
        notes=notes,
        state=form.state(),
    )
