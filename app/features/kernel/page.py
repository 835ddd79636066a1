"""What /kernel shows for one state: the lab's head run as a tiled kernel and decoded with a
cache of keys and values, each walk-through at the step its URL names.

Reads the finished results of service.compute_tiled and service.compute_decode; computes no
attention arithmetic (it only picks, labels and arranges numbers).
"""

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from pydantic import ValidationError

from app.core.errors import InputError, validation_errors
from app.core.i18n import N_, gettext, ngettext
from app.features.kernel.form import KernelForm
from app.features.kernel.results import DecodeResult, DecodeStep, TiledResult, TileStep
from app.features.kernel.schemas import DecodeRequest, TiledRequest
from app.features.kernel.service import compute_decode, compute_tiled
from app.features.kernel.traffic import TrafficView, traffic_view
from app.features.lab.form import MASK_MODES
from app.features.lab.page import LabHead
from app.features.stages.page import FULL_TABLES_UP_TO, HeadStages, head_stages
from app.figures.heatmap import (
    Heatmap,
    categorical_scale,
    sequential_scale,
    signed_scale,
    weights_scale,
)
from app.math.flash import Transfer
from app.settings import Settings
from app.web.pages import Page, Problem, state_query
from app.web.templating import fmt

ORDER_LABELS = {
    "fa2": N_("FlashAttention-2: query blocks outside"),
    "fa1": N_("FlashAttention-1: key/value blocks outside"),
}
POLICY_LABELS = {
    "full": N_("full: keep every position"),
    "window": N_("window: keep the last w positions"),
    "sinks": N_("sinks + window: keep the first s and the last w"),
}
# The states of a score entry in the tiled walk-through, each with its own colour (light
# grey, blue, orange, dark grey: told apart with every common colour-vision deficiency).
PROGRESS = (
    ("#ececf1", N_("not computed yet")),
    ("#6baed6", N_("computed earlier, discarded")),
    ("#e6550d", N_("this tile: held now")),
    ("#7a7a85", N_("this tile: skipped, the mask hides all of it")),
)
NOT_YET, EARLIER, HELD, SKIPPED = range(len(PROGRESS))


# ---------------------------------------------------------------- tiled attention


@dataclass(frozen=True)
class Moved:
    """A block moved to or from slow memory, named as the formulas name it: K rows 2–3."""

    name: str
    first: int
    last: int
    elements: int


@dataclass(frozen=True)
class RowState:
    """One query row's running statistics in a step (None: −∞, or not written yet)."""

    token: str
    m_before: float | None
    m: float | None
    m_tile: float | None
    grew: bool
    rescale: float
    p_scale: float
    l_before: float
    l: float  # noqa: E741 (the paper's name)
    o_before: ArrayLike
    o: ArrayLike
    output: ArrayLike | None
    logsumexp: float | None


@dataclass(frozen=True)
class OutputRow:
    """An output row: the tiled kernel's once written, beside the dense head's."""

    token: str
    tiled: ArrayLike | None
    dense: ArrayLike


@dataclass(frozen=True, kw_only=True)
class TileView:
    """Step `index` of the tiled walk-through, as the page shows it."""

    index: int
    count: int
    status: str
    step: TileStep
    order: str
    query_tokens: list[str]
    key_tokens: list[str]
    rows: list[RowState]
    output: list[OutputRow]
    finished: bool
    ends_row_block: bool
    reads: list[Moved]
    writes: list[Moved]
    peak_so_far: int
    full_tables: bool
    table_limit: int
    progress: Heatmap
    scores: Heatmap | None  # None: a skipped tile, nothing computed
    p: Heatmap | None


def _moved(transfers: list[Transfer]) -> list[Moved]:
    return [Moved(t.name, t.rows[0], t.rows[1] - 1, t.elements) for t in transfers]


def _none_if_infinite(value: float | None) -> float | None:
    return None if value is None or not np.isfinite(value) else float(value)


def progress_map(result: TiledResult, s: int) -> Heatmap:
    """The n × n scores as the kernel sees them at step s: not computed yet, computed in an
    earlier step (and discarded), the tile held now, or a tile skipped now; each computed
    score written in its cell (−∞ where the mask hides the pair)."""
    tokens, steps = result.tokens, result.steps
    n = len(tokens)
    state = np.where(steps[s].touched, EARLIER, NOT_YET)  # (n, n)
    current = steps[s]
    tile = slice(*current.query_block), slice(*current.key_block)
    state[tile] = SKIPPED if current.skipped else HELD
    texts = [[""] * n for _ in range(n)]
    for step in steps[: s + 1]:
        if not step.skipped:
            r0, c0 = step.query_block[0], step.key_block[0]
            for i, row in enumerate(step.scores):
                texts[r0 + i][c0 : c0 + len(row)] = [fmt(v) for v in row]
    names = [gettext(name) for _, name in PROGRESS]
    hover = None
    if n <= FULL_TABLES_UP_TO:
        hover = [
            [
                f"{q} → {k}: {names[c]}" + (f": {t}" if t else "")
                for k, c, t in zip(tokens, row, text_row, strict=True)
            ]
            for q, row, text_row in zip(tokens, state.tolist(), texts, strict=True)
        ]
    return Heatmap(
        id="fig-tiled-progress",
        title=gettext("Scores touched so far"),
        values=state,
        row_labels=tokens,
        col_labels=tokens,
        scale=categorical_scale(
            [(colour, name) for (colour, _), name in zip(PROGRESS, names, strict=True)],
            gettext("scores"),
        ),
        cell_texts=texts,
        hover=hover,
    )


def tile_maps(result: TiledResult, step: TileStep) -> tuple[Heatmap, Heatmap]:
    """This tile's scores S (−∞ where hidden) and P, the exponentials the sums gather."""
    r0, r1 = step.query_block
    c0, c1 = step.key_block
    rows, cols = result.tokens[r0:r1], result.tokens[c0:c1]
    scores = np.asarray(step.scores, dtype=float)
    fa1 = result.order == "fa1"
    return (
        Heatmap(
            id="fig-tiled-scores",
            title=gettext("S = Q·Kᵀ / √d_k, this tile"),
            values=scores,
            row_labels=rows,
            col_labels=cols,
            scale=signed_scale(scores),
        ),
        Heatmap(
            id="fig-tiled-p",
            title=gettext("P̃ = exp(S − m̃), this tile")
            if fa1
            else gettext("P = exp(S − m), this tile"),
            values=step.p,
            row_labels=rows,
            col_labels=cols,
            scale=sequential_scale(0.0, 1.0, "P̃" if fa1 else "P"),
            hidden=~np.isfinite(scores),
            hidden_text="0",
        ),
    )


def tile_view(result: TiledResult, s: int) -> TileView:
    """Step s of the tiled walk-through: the tile, the row statistics, the output so far."""
    tokens, steps = result.tokens, result.steps
    step = steps[s]
    r0, r1 = step.query_block
    c0, c1 = step.key_block
    rows = [
        RowState(
            token=tokens[r0 + i],
            m_before=_none_if_infinite(step.m_before[i]),
            m=_none_if_infinite(step.m[i]),
            m_tile=_none_if_infinite(step.m_tile[i]),
            grew=bool(step.grew[i]),
            rescale=float(step.rescale[i]),
            p_scale=float(step.p_scale[i]),
            l_before=float(step.l_before[i]),
            l=float(step.l[i]),
            o_before=step.o_before[i],
            o=step.o[i],
            output=None if step.output_rows is None else step.output_rows[i],
            logsumexp=None
            if step.logsumexp_rows is None
            else _none_if_infinite(step.logsumexp_rows[i]),
        )
        for i in range(r1 - r0)
    ]
    written: dict[int, np.ndarray] = {}
    for earlier in steps[: s + 1]:
        if earlier.output_rows is not None:
            start = earlier.query_block[0]
            written.update({start + i: row for i, row in enumerate(earlier.output_rows)})
    scores, p = (None, None) if step.skipped else tile_maps(result, step)
    return TileView(
        index=s,
        count=len(steps),
        status=gettext(
            "Step %(i)s of %(count)s: query rows %(r0)s–%(r1)s against key rows %(c0)s–%(c1)s"
        )
        % {"i": s + 1, "count": len(steps), "r0": r0, "r1": r1 - 1, "c0": c0, "c1": c1 - 1},
        step=step,
        order=result.order,
        query_tokens=tokens[r0:r1],
        key_tokens=tokens[c0:c1],
        rows=rows,
        output=[OutputRow(t, written.get(i), result.dense_output[i]) for i, t in enumerate(tokens)],
        finished=s == len(steps) - 1,
        ends_row_block=step.output_rows is not None,
        reads=_moved(step.reads),
        writes=_moved(step.writes),
        peak_so_far=max(e.score_entries for e in steps[: s + 1]),
        full_tables=len(tokens) <= FULL_TABLES_UP_TO,
        table_limit=FULL_TABLES_UP_TO,
        progress=progress_map(result, s),
        scores=scores,
        p=p,
    )


# ---------------------------------------------------------------- cached decoding


@dataclass(frozen=True, kw_only=True)
class DecodeView:
    """Step `index` of decoding: 0 is the prefill; s ≥ 1 the token at position prompt + s − 1."""

    index: int
    count: int
    status: str
    token_step: DecodeStep | None  # None: the prefill
    cache_length: int
    cache_tokens: list[str]  # "token (position)" of every cached row
    cache_elements: int
    evicted: list[str]
    k_cache: np.ndarray
    v_cache: np.ndarray
    k_labels: list[str]
    v_labels: list[str]
    weights: Heatmap
    k_map: Heatmap


def decode_view(result: DecodeResult, s: int) -> DecodeView:
    tokens, p = result.tokens, result.prompt
    if s == 0:
        prefill = result.prefill
        held = list(prefill.cached_positions)
        evicted = [j for j in range(p) if j not in held]
        token_step = None
        status = ngettext(
            "Step 1 of %(count)s: prefill of the first %(num)s token",
            "Step 1 of %(count)s: prefill of the first %(num)s tokens",
            p,
        ) % {"count": len(result.steps) + 1, "num": p}
        weights = Heatmap(
            id="fig-decode-weights",
            title=gettext("prefill weights"),
            values=prefill.weights,
            row_labels=tokens[:p],
            col_labels=tokens[:p],
            scale=weights_scale(),
            hidden=~np.asarray(prefill.allowed, dtype=bool),
            hidden_text="0",
        )
    else:
        token_step = result.steps[s - 1]
        held = list(token_step.cached_positions)
        evicted = list(token_step.evicted)
        status = gettext("Step %(i)s of %(count)s: token %(t)s “%(token)s”") % {
            "i": s + 1,
            "count": len(result.steps) + 1,
            "t": token_step.position,
            "token": token_step.token,
        }
        weights = Heatmap(
            id="fig-decode-weights",
            title=gettext("weights of the new query over the cache"),
            values=np.asarray(token_step.weights)[None, :],
            row_labels=[token_step.token],
            col_labels=[tokens[j] for j in held],
            scale=weights_scale(),
            hidden=~np.asarray(token_step.allowed, dtype=bool)[None, :],
            hidden_text="0",
        )
    cache_tokens = [f"{tokens[j]} ({j})" for j in held]
    k_labels = [f"d{j}" for j in range(result.d_k)]
    k_cache = np.asarray(result.k)[held]
    return DecodeView(
        index=s,
        count=len(result.steps) + 1,
        status=status,
        token_step=token_step,
        cache_length=len(held),
        cache_tokens=cache_tokens,
        cache_elements=len(held) * (result.d_k + result.d_v),
        evicted=[f"{tokens[j]} ({j})" for j in evicted],
        k_cache=k_cache,
        v_cache=np.asarray(result.v)[held],
        k_labels=k_labels,
        v_labels=[f"d{j}" for j in range(result.d_v)],
        weights=weights,
        k_map=Heatmap(
            id="fig-decode-kcache",
            title=gettext("K cache"),
            values=k_cache,
            row_labels=cache_tokens,
            col_labels=k_labels,
            scale=signed_scale(k_cache, label=gettext("value")),
            row_title=gettext("token"),
            col_title=gettext("dimension"),
        ),
    )


# ---------------------------------------------------------------- the page


@dataclass(frozen=True)
class StepLinks:
    """first / prev / next / last as URLs of the same state; None where there is nowhere to go."""

    first: str | None
    prev: str | None
    next: str | None
    last: str | None


def step_links(state: list[tuple[str, Any]], name: str, current: int, last: int) -> StepLinks:
    targets = (0, current - 1, current + 1, last)
    links = [
        "/kernel?" + state_query([(k, target if k == name else v) for k, v in state])
        if 0 <= target <= last and target != current
        else None
        for target in targets
    ]
    return StepLinks(*links)


@dataclass(frozen=True, kw_only=True)
class KernelView:
    """Everything /kernel shows for one state."""

    tokens_text: str
    mask: str
    window: int
    modes: list[tuple[str, str]]
    hidden_state: list[tuple[str, Any]]  # the lab's state the form carries along unseen
    lab_link: str
    tiled: TiledResult
    decode: DecodeResult
    form: KernelForm  # as used: a field the page could not use is back at its default
    block_fields: dict[str, int | str]  # sizes as given; "" when not
    tile: TileView
    dec: DecodeView
    tiled_links: StepLinks
    decode_links: StepLinks
    orders: list[tuple[str, str]]
    policies: list[tuple[str, str]]
    traffic: TrafficView
    stages: HeadStages


# The lab's fields this page's form shows; the rest of the lab's state rides along hidden.
SHOWN_LAB_FIELDS = ("tokens", "mask", "window")


def _sentences(error: InputError | ValidationError) -> list[Problem]:
    if isinstance(error, InputError):
        return [Problem(str(error.loc[-1]) if error.loc else "", error.msg)]
    return [
        Problem(str(e["loc"][-1]) if e["loc"] else "", e["msg"])
        for e in validation_errors(error.errors())
    ]


def run_tiled(
    lab: dict[str, Any], form: KernelForm, settings: Settings
) -> tuple[TiledResult, KernelForm, list[Problem]]:
    """The tiled run of the form's sizes; sizes it cannot use (too many steps, M and both
    sizes at once) are said, and the default sizes shown instead."""
    try:
        return compute_tiled(TiledRequest(**lab, **form.tiling()), settings), form, []
    except (InputError, ValidationError) as error:
        problems = _sentences(error)
    form = form.without("block_q", "block_k", "sram_elements")
    return compute_tiled(TiledRequest(**lab, **form.tiling()), settings), form, problems


def run_decode(
    lab: dict[str, Any], form: KernelForm, settings: Settings
) -> tuple[DecodeResult, KernelForm, list[Problem]]:
    """The cached decoding of the form's prompt and policy; what it cannot use is said, and
    the default shown instead."""
    try:
        return compute_decode(DecodeRequest(**lab, **form.decoding()), settings), form, []
    except (InputError, ValidationError) as error:
        problems = _sentences(error)
    form = form.without("prompt", "cache", "cache_window", "sinks")
    return compute_decode(DecodeRequest(**lab, **form.decoding()), settings), form, problems


def kernel_state(
    lab_params: list[tuple[str, Any]], tiled: TiledResult, decode: DecodeResult, form: KernelForm
) -> list[tuple[str, Any]]:
    """The canonical state: the lab's, then what the walk-throughs used (M and the tile sizes
    as given: a size not given follows n; the prompt, the cache policy with what it uses),
    and the steps."""
    state = [*lab_params, ("order", tiled.order)]
    if tiled.sram_elements is not None:
        state.append(("sram_elements", tiled.sram_elements))
    state += [(k, getattr(form, k)) for k in ("block_q", "block_k") if getattr(form, k)]
    cache = decode.cache
    state += [("prompt", decode.prompt), ("cache", cache.policy)]
    if cache.policy != "full":
        state.append(("cache_window", cache.window))
    if cache.policy == "sinks":
        state.append(("sinks", cache.sinks))
    return [*state, ("step", form.step), ("decode_step", form.decode_step)]


def kernel_page(
    form: KernelForm,
    problems: list[Problem],
    notes: list[str],
    lab: LabHead,
    settings: Settings,
) -> Page:
    """Both walk-throughs of the lab's state, each at the step the URL names; what cannot be
    used is said, and shown with its default instead."""
    request = lab.form.request().model_dump(exclude_none=True)
    tiled, form, tiling_problems = run_tiled(request, form, settings)
    decode, form, decoding_problems = run_decode(request, form, settings)
    form = form.model_copy(
        update={
            "step": min(form.step, len(tiled.steps) - 1),
            "decode_step": min(form.decode_step, len(decode.steps)),
        }
    )
    state = kernel_state(lab.state, tiled, decode, form)
    # A size left empty stays empty (the size used is its placeholder): it follows n, and
    # filled in, an edit of M would send M and both sizes, which are refused.
    block_fields = {k: getattr(form, k) or "" for k in ("block_q", "block_k")}
    view = KernelView(
        tokens_text=" ".join(tiled.tokens),
        mask=lab.form.mask,
        window=lab.form.window,
        modes=[(value, gettext(label)) for value, label in MASK_MODES],
        hidden_state=[(k, v) for k, v in lab.state if k not in SHOWN_LAB_FIELDS],
        lab_link="/?" + state_query(lab.state),
        tiled=tiled,
        decode=decode,
        form=form,
        block_fields=block_fields,
        tile=tile_view(tiled, form.step),
        dec=decode_view(decode, form.decode_step),
        tiled_links=step_links(state, "step", form.step, len(tiled.steps) - 1),
        decode_links=step_links(state, "decode_step", form.decode_step, len(decode.steps)),
        orders=[(value, gettext(label)) for value, label in ORDER_LABELS.items()],
        policies=[(value, gettext(label)) for value, label in POLICY_LABELS.items()],
        traffic=traffic_view(tiled, form.step),
        stages=head_stages(lab.result.head()),
    )
    return Page(
        template="kernel/kernel.html",
        fragment="kernel/_live.html",
        view=view,
        problems=[*problems, *lab.problems, *tiling_problems, *decoding_problems],
        notes=[*notes, *lab.notes],
        state=state,
    )
