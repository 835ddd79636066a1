"""Presentation of the /kernel page: which step is shown, its tables, figures and links.

Reads the finished results of service.compute_tiled and service.compute_decode; computes
no attention arithmetic (it only picks, labels and arranges numbers).
"""

from collections.abc import Mapping
from typing import Any

import numpy as np
from pydantic import BaseModel, Field, ValidationError

from app.core.errors import InputError
from app.core.i18n import N_, gettext
from app.core.limits import HARD_MAX_TOKENS
from app.features.kernel.results import DecodeResult, TiledResult
from app.features.kernel.schemas import MAX_SRAM_ELEMENTS, DecodeRequest, TiledRequest
from app.features.kernel.service import compute_decode, compute_tiled
from app.features.kernel.traffic import traffic_view
from app.features.lab.form import MASK_MODES, text_limits
from app.features.lab.page import LabHead
from app.features.stages.page import FULL_TABLES_UP_TO, head_stages
from app.math.flash import Transfer
from app.settings import Settings
from app.web.figures import heatmap, progress_map
from app.web.pages import state_query
from app.web.templating import fmt

Text = str | None


class KernelParams(BaseModel):
    """The /kernel page's own URL parameters, beside the lab state's (LabForm): tile sizes,
    prompt length, and where each walk-through stands."""

    text_limits = staticmethod(text_limits)  # the lab's text, cut where the lab cuts it

    block_q: Text = Field(None, description="Query rows per tile.")
    block_k: Text = Field(None, description="Key rows per tile.")
    prompt: Text = Field(None, description="Tokens in the prefill before decoding.")
    step: Text = Field(None, description="The tiled walk-through's step.")
    decode_step: Text = Field(None, description="The decoding walk-through's step.")
    order: Text = Field(None, description="fa2 (query blocks outside) or fa1.")
    sram_elements: Text = Field(None, description="On-chip memory M, in numbers.")
    cache: Text = Field(None, description="The decoding cache: full, window or sinks.")
    cache_window: Text = Field(None, description="Positions the window keeps.")
    sinks: Text = Field(None, description="First positions the sinks policy keeps.")


LAST_STEP = 10**6  # a step past the end shows the last one
CHOICES = {"order": ("fa2", "fa1"), "cache": ("full", "window", "sinks")}
ORDER_LABELS = {
    "fa2": N_("FlashAttention-2: query blocks outside"),
    "fa1": N_("FlashAttention-1: key/value blocks outside"),
}
POLICY_LABELS = {
    "full": N_("full: keep every position"),
    "window": N_("window: keep the last w positions"),
    "sinks": N_("sinks + window: keep the first s and the last w"),
}


def read_kernel_params(params: Mapping[str, str], n: int) -> tuple[dict[str, int | str], list[str]]:
    """The page's own values from the URL; a bad one is reported and left at its default."""
    bounds = {
        "block_q": (1, HARD_MAX_TOKENS),
        "block_k": (1, HARD_MAX_TOKENS),
        "prompt": (1, n),
        "step": (0, LAST_STEP),
        "decode_step": (0, LAST_STEP),
        "sram_elements": (1, MAX_SRAM_ELEMENTS),
        "cache_window": (1, HARD_MAX_TOKENS),
        "sinks": (0, HARD_MAX_TOKENS),
    }
    values: dict[str, int | str] = {}
    problems = []
    for name, allowed in CHOICES.items():
        text = params.get(name, "").strip()
        if text in allowed:
            values[name] = text
        elif text:
            problems.append(
                gettext("%(name)s: “%(text)s” is not one of %(choices)s")
                % {"name": name, "text": text, "choices": ", ".join(allowed)}
            )
    for name, (low, high) in bounds.items():
        text = params.get(name, "").strip()
        if text:
            try:
                values[name] = whole_number(text, name, low, high)
            except ValueError as problem:
                problems.append(str(problem))
    return values, problems


def whole_number(text: str, name: str, low: int, high: int) -> int:
    """A whole number from low to high, or ValueError with a sentence naming the field."""
    try:
        value = int(text.strip())
    except ValueError:
        raise ValueError(
            gettext("%(name)s: “%(text)s” is not a whole number")
            % {"name": name, "text": text.strip()}
        ) from None
    if not low <= value <= high:
        raise ValueError(
            gettext("%(name)s is %(value)s; choose a whole number from %(low)s to %(high)s")
            % {"name": name, "value": value, "low": low, "high": high}
        )
    return value


def kernel_context(page: LabHead, params: Mapping[str, str], settings: Settings) -> dict[str, Any]:
    """Both walk-throughs of the lab's state, each at the step named in the URL."""
    values, problems = read_kernel_params(params, len(page.result.tokens))
    lab = page.form.request().model_dump(exclude_none=True)
    tiling = {k: values[k] for k in ("block_q", "block_k", "sram_elements", "order") if k in values}
    try:
        tiled = compute_tiled(TiledRequest.model_validate({**lab, **tiling}), settings)
    except (InputError, ValidationError) as problem:  # too many steps, or blocks and M at once
        problems.append(_sentence(problem))
        values = {k: v for k, v in values.items() if k not in tiling or k == "order"}
        order = {"order": values["order"]} if "order" in values else {}
        tiled = compute_tiled(TiledRequest.model_validate({**lab, **order}), settings)
    prompt = {"prompt": values["prompt"]} if "prompt" in values else {}
    cache = cache_spec(values)
    try:
        decode = compute_decode(
            DecodeRequest.model_validate({**lab, **prompt, "cache": cache}), settings
        )
    except ValidationError as problem:  # a policy without its window, sinks without "sinks"
        problems.append(_sentence(problem))
        values = {k: v for k, v in values.items() if k not in ("cache", "cache_window", "sinks")}
        decode = compute_decode(DecodeRequest.model_validate({**lab, **prompt}), settings)
    step = min(values.get("step", 0), len(tiled.steps) - 1)
    decode_step = min(values.get("decode_step", 0), len(decode.steps))
    state = [*page.state, *((k, v) for k, v in values.items() if k not in ("step", "decode_step"))]
    where = {"step": step, "decode_step": decode_step}
    return {
        "page": page,
        "messages": {
            "problems": [p.message for p in page.problems] + problems,
            "notes": page.notes,
        },
        "view": head_stages(page.result.head()),
        "state": state,
        "modes": MASK_MODES,
        "lab_link": "/?" + state_query(page.state),
        "tiled": tiled,
        "decode": decode,
        "tile": tile_view(tiled, step),
        "dec": decode_view(decode, decode_step),
        "tiled_links": step_links(state, where, "step", len(tiled.steps) - 1),
        "decode_links": step_links(state, where, "decode_step", len(decode.steps)),
        "orders": [(value, gettext(ORDER_LABELS[value])) for value in CHOICES["order"]],
        "policies": [(value, gettext(POLICY_LABELS[value])) for value in CHOICES["cache"]],
        "traffic": traffic_view(tiled, step),
        # A size left empty while M sets the sizes stays empty (its size is the placeholder):
        # filled in, the next edit would send M and both sizes, which are refused.
        "tile_fields": {
            k: "" if tiled.sram_elements is not None and k not in values else getattr(tiled, k)
            for k in ("block_q", "block_k")
        },
    }


def cache_spec(values: Mapping[str, int | str]) -> dict[str, Any]:
    """The decode request's cache from the page's fields; a window left out falls back to 2."""
    policy = values.get("cache", "full")
    if policy == "full":
        return {"policy": "full"}
    spec: dict[str, Any] = {"policy": policy, "window": values.get("cache_window", 2)}
    if policy == "sinks":
        spec["sinks"] = values.get("sinks", 1)
    return spec


def _sentence(problem: InputError | ValidationError) -> str:
    if isinstance(problem, InputError):
        return problem.msg
    return "; ".join(error["msg"] for error in problem.errors())


def step_links(
    state: list[tuple[str, Any]], where: dict[str, int], name: str, last: int
) -> dict[str, str | None]:
    """first / prev / next / last as URLs of the same state; None where there is nowhere to go."""
    current = where[name]
    targets = {"first": 0, "prev": current - 1, "next": current + 1, "last": last}
    return {
        label: "/kernel?" + state_query([*state, *{**where, name: target}.items()])
        if 0 <= target <= last and target != current
        else None
        for label, target in targets.items()
    }


# ---------------------------------------------------------------- tiled attention


def tile_view(result: TiledResult, s: int) -> dict[str, Any]:
    """Step s of the tiled walk-through: the tile, the row statistics, the output so far."""
    tokens, steps = result.tokens, result.steps
    step = steps[s]
    r0, r1 = step.query_block
    c0, c1 = step.key_block
    rows = [
        {
            "token": tokens[r0 + i],
            "m_before": step.m_before[i],
            "m": step.m[i],
            "grew": bool(step.grew[i]),
            "rescale": step.rescale[i],
            "l_before": step.l_before[i],
            "l": step.l[i],
            "o_before": step.o_before[i],
            "o": step.o[i],
            "m_tile": step.m_tile[i],
            "p_scale": step.p_scale[i],
            "logsumexp": None if step.logsumexp_rows is None else step.logsumexp_rows[i],
            "output": None if step.output_rows is None else step.output_rows[i],
        }
        for i in range(r1 - r0)
    ]
    written: dict[int, np.ndarray] = {}
    for earlier in steps[: s + 1]:
        if earlier.output_rows is not None:
            start = earlier.query_block[0]
            written.update({start + i: row for i, row in enumerate(earlier.output_rows)})
    output = [
        {"token": t, "tiled": written.get(i), "dense": result.dense_output[i]}
        for i, t in enumerate(tokens)
    ]
    figures = {"progress": _progress_figure(result, s)}
    if not step.skipped:
        q_tokens, k_tokens = tokens[r0:r1], tokens[c0:c1]
        figures["scores"] = heatmap(
            step.scores, k_tokens, q_tokens, gettext("S = Q·Kᵀ / √d_k, this tile"), "diverging"
        )
        p_title = (
            gettext("P̃ = exp(S − m̃), this tile")
            if result.order == "fa1"
            else gettext("P = exp(S − m), this tile")
        )
        figures["p"] = heatmap(step.p, k_tokens, q_tokens, p_title)
    return {
        "index": s,
        "count": len(steps),
        "step": step,
        "query_tokens": tokens[r0:r1],
        "key_tokens": tokens[c0:c1],
        "rows": rows,
        "output": output,
        "finished": s == len(steps) - 1,
        "ends_row_block": step.output_rows is not None,
        "order": result.order,
        "reads": _moved(step.reads, tokens),
        "writes": _moved(step.writes, tokens),
        "peak_so_far": max(e.score_entries for e in steps[: s + 1]),
        "full_tables": len(tokens) <= FULL_TABLES_UP_TO,
        "table_limit": FULL_TABLES_UP_TO,
        "figures": figures,
    }


def _moved(transfers: list[Transfer], tokens: list[str]) -> list[dict[str, Any]]:
    """Each block moved, named as the formulas name it: K rows 2–3 (“sleeps”…), 4 numbers."""
    return [
        {
            "name": t.name,
            "first": t.rows[0],
            "last": t.rows[1] - 1,
            "tokens": tokens[t.rows[0] : t.rows[1]],
            "elements": t.elements,
        }
        for t in transfers
    ]


def _progress_figure(result: TiledResult, s: int) -> dict[str, Any]:
    """0 = not computed yet, 1 = computed in an earlier step, 2 = the tile held now, 3 = the
    tile skipped now; each computed cell labelled with its score (−∞ where the mask hides it)."""
    n, steps = len(result.tokens), result.steps
    state = steps[s].touched.astype(float)  # (n, n): 1 where computed so far
    text = [[""] * n for _ in range(n)] if n <= FULL_TABLES_UP_TO else None
    for step in steps[: s + 1] if text else ():
        if step.skipped:
            continue
        r0, c0 = step.query_block[0], step.key_block[0]
        for i, row in enumerate(step.scores):
            for j, value in enumerate(row):
                text[r0 + i][c0 + j] = fmt(value)
    current = steps[s]
    tile = slice(*current.query_block), slice(*current.key_block)
    state[tile] = 3 if current.skipped else 2
    return progress_map(state, text, result.tokens, gettext("Scores touched so far"))


# ---------------------------------------------------------------- cached decoding


def decode_view(result: DecodeResult, s: int) -> dict[str, Any]:
    """Step 0 is the prefill; step s ≥ 1 is the token at position prompt + s − 1."""
    tokens, p = result.tokens, result.prompt
    if s == 0:
        prefill = result.prefill
        held = list(prefill.cached_positions)
        figures = {
            "weights": heatmap(prefill.weights, tokens[:p], tokens[:p], gettext("prefill weights"))
        }
        token_step = None
        evicted = [j for j in range(p) if j not in held]
    else:
        token_step = result.steps[s - 1]
        held = list(token_step.cached_positions)
        evicted = list(token_step.evicted)
        figures = {
            "weights": heatmap(
                token_step.weights[None, :],
                [tokens[j] for j in held],
                [token_step.token],
                gettext("weights of the new query over the cache"),
            )
        }
    d_k, d_v = result.d_k, result.d_v
    cache_tokens = [f"{tokens[j]} ({j})" for j in held]
    figures["k_cache"] = heatmap(
        result.k[held],
        [f"d{j}" for j in range(d_k)],
        cache_tokens,
        gettext("K cache"),
        "diverging",
        x_title=gettext("dimension"),
        y_title=gettext("token"),
    )
    return {
        "index": s,
        "count": len(result.steps) + 1,
        "token_step": token_step,
        "cache_length": len(held),
        "cache_positions": held,
        "cache_tokens": cache_tokens,
        "cache_elements": len(held) * (d_k + d_v),
        "evicted": [f"{tokens[j]} ({j})" for j in evicted],
        "k_cache": result.k[held],
        "v_cache": result.v[held],
        "k_labels": [f"d{j}" for j in range(d_k)],
        "v_labels": [f"d{j}" for j in range(d_v)],
        "figures": figures,
    }
