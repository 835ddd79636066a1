"""Presentation of the /kernel page: which step is shown, its tables, figures and links.

Reads the finished results of service.compute_tiled and service.compute_decode; computes
no attention arithmetic (it only picks, labels and arranges numbers).
"""

from collections.abc import Mapping
from typing import Any

import numpy as np

from app.core.errors import InputError
from app.core.i18n import gettext
from app.core.limits import HARD_MAX_TOKENS
from app.features.kernel.schemas import DecodeRequest, TiledRequest
from app.features.kernel.service import compute_decode, compute_tiled
from app.features.lab.page import MASK_MODES, LabPage
from app.features.lab.state import StateError, integer
from app.features.lab.url import encode
from app.features.stages.page import FULL_TABLES_UP_TO, head_stages
from app.settings import Settings
from app.web.figures import heatmap, progress_map
from app.web.templating import fmt

# The page's own parameters, besides the lab state (app/features/lab/state.py): tile sizes, prompt
# length, and where each walk-through stands.
KERNEL_PARAMS = ("block_q", "block_k", "prompt", "step", "decode_step")
LAST_STEP = 10**6  # a step past the end shows the last one


def read_kernel_params(params: Mapping[str, str], n: int) -> tuple[dict[str, int], list[str]]:
    """The page's own numbers from the URL; a bad one is reported and left at its default."""
    bounds = {
        "block_q": (1, HARD_MAX_TOKENS),
        "block_k": (1, HARD_MAX_TOKENS),
        "prompt": (1, n),
        "step": (0, LAST_STEP),
        "decode_step": (0, LAST_STEP),
    }
    values: dict[str, int] = {}
    problems = []
    for name, (low, high) in bounds.items():
        text = params.get(name, "").strip()
        if text:
            try:
                values[name] = integer(text, name, low, high)
            except StateError as problem:
                problems.append(str(problem))
    return values, problems


def kernel_context(page: LabPage, params: Mapping[str, str], settings: Settings) -> dict[str, Any]:
    """Both walk-throughs of the lab's state, each at the step named in the URL."""
    values, problems = read_kernel_params(params, len(page.result["tokens"]))
    lab = page.state.to_request().model_dump(exclude_none=True)
    blocks = {k: values[k] for k in ("block_q", "block_k") if k in values}
    try:
        tiled = compute_tiled(TiledRequest.model_validate({**lab, **blocks}), settings)
    except InputError as problem:  # too many steps for this server: two blocks each way
        problems.append(problem.msg)
        values = {k: v for k, v in values.items() if k not in blocks}
        tiled = compute_tiled(TiledRequest.model_validate(lab), settings)
    prompt = {"prompt": values["prompt"]} if "prompt" in values else {}
    decode = compute_decode(DecodeRequest.model_validate({**lab, **prompt}), settings)
    step = min(values.get("step", 0), len(tiled["steps"]) - 1)
    decode_step = min(values.get("decode_step", 0), len(decode["steps"]))
    state = [*page.params, *((k, v) for k, v in values.items() if k not in ("step", "decode_step"))]
    where = {"step": step, "decode_step": decode_step}
    return {
        "page": page,
        "messages": {"problems": page.problems + problems, "notes": page.notes},
        "view": head_stages(page.result),
        "state": state,
        "modes": MASK_MODES,
        "lab_link": "/?" + page.query,
        "tiled": tiled,
        "decode": decode,
        "tile": tile_view(tiled, step),
        "dec": decode_view(decode, decode_step),
        "tiled_links": step_links(state, where, "step", len(tiled["steps"]) - 1),
        "decode_links": step_links(state, where, "decode_step", len(decode["steps"])),
    }


def step_links(
    state: list[tuple[str, Any]], where: dict[str, int], name: str, last: int
) -> dict[str, str | None]:
    """first / prev / next / last as URLs of the same state; None where there is nowhere to go."""
    current = where[name]
    targets = {"first": 0, "prev": current - 1, "next": current + 1, "last": last}
    return {
        label: "/kernel?" + encode([*state, *{**where, name: target}.items()])
        if 0 <= target <= last and target != current
        else None
        for label, target in targets.items()
    }


# ---------------------------------------------------------------- tiled attention


def tile_view(result: dict[str, Any], s: int) -> dict[str, Any]:
    """Step s of the tiled walk-through: the tile, the row statistics, the output so far."""
    tokens, steps = result["tokens"], result["steps"]
    step = steps[s]
    r0, r1 = step["query_block"]
    c0, c1 = step["key_block"]
    rows = [
        {
            "token": tokens[r0 + i],
            "m_before": step["m_before"][i],
            "m": step["m"][i],
            "grew": bool(step["grew"][i]),
            "rescale": step["rescale"][i],
            "l_before": step["l_before"][i],
            "l": step["l"][i],
            "o_before": step["o_before"][i],
            "o": step["o"][i],
        }
        for i in range(r1 - r0)
    ]
    written: dict[int, np.ndarray] = {}
    for earlier in steps[: s + 1]:
        if earlier["output_rows"] is not None:
            start = earlier["query_block"][0]
            written.update({start + i: row for i, row in enumerate(earlier["output_rows"])})
    output = [
        {"token": t, "tiled": written.get(i), "dense": result["dense_output"][i]}
        for i, t in enumerate(tokens)
    ]
    figures = {"progress": _progress_figure(result, s)}
    if not step["skipped"]:
        q_tokens, k_tokens = tokens[r0:r1], tokens[c0:c1]
        figures["scores"] = heatmap(
            step["scores"], k_tokens, q_tokens, gettext("S = Q·Kᵀ / √d_k, this tile"), "diverging"
        )
        figures["p"] = heatmap(step["p"], k_tokens, q_tokens, gettext("P = exp(S − m), this tile"))
    return {
        "index": s,
        "count": len(steps),
        "step": step,
        "query_tokens": tokens[r0:r1],
        "key_tokens": tokens[c0:c1],
        "rows": rows,
        "output": output,
        "finished": len(written) == len(tokens),
        "ends_row_block": step["output_rows"] is not None,
        "peak_so_far": max(e["score_entries"] for e in steps[: s + 1]),
        "full_tables": len(tokens) <= FULL_TABLES_UP_TO,
        "table_limit": FULL_TABLES_UP_TO,
        "figures": figures,
    }


def _progress_figure(result: dict[str, Any], s: int) -> dict[str, Any]:
    """0 = not computed yet, 1 = computed in an earlier step, 2 = the tile held now, 3 = the
    tile skipped now; each computed cell labelled with its score (−∞ where the mask hides it)."""
    n, steps = len(result["tokens"]), result["steps"]
    state = steps[s]["touched"].astype(float)  # (n, n): 1 where computed so far
    text = [[""] * n for _ in range(n)] if n <= FULL_TABLES_UP_TO else None
    for step in steps[: s + 1] if text else ():
        if step["skipped"]:
            continue
        r0, c0 = step["query_block"][0], step["key_block"][0]
        for i, row in enumerate(step["scores"]):
            for j, value in enumerate(row):
                text[r0 + i][c0 + j] = fmt(value)
    current = steps[s]
    tile = slice(*current["query_block"]), slice(*current["key_block"])
    state[tile] = 3 if current["skipped"] else 2
    return progress_map(state, text, result["tokens"], gettext("Scores touched so far"))


# ---------------------------------------------------------------- cached decoding


def decode_view(result: dict[str, Any], s: int) -> dict[str, Any]:
    """Step 0 is the prefill; step s ≥ 1 is the token at position prompt + s − 1."""
    tokens, p = result["tokens"], result["prompt"]
    if s == 0:
        prefill = result["prefill"]
        cache = p
        figures = {
            "weights": heatmap(
                prefill["weights"], tokens[:p], tokens[:p], gettext("prefill weights")
            )
        }
        token_step = None
    else:
        token_step = result["steps"][s - 1]
        cache = token_step["cache_length"]
        figures = {
            "weights": heatmap(
                token_step["weights"][None, :],
                tokens[:cache],
                [token_step["token"]],
                gettext("weights of the new query over the cache"),
            )
        }
    d_k, d_v = result["d_k"], result["d_v"]
    figures["k_cache"] = heatmap(
        result["k"][:cache],
        [f"d{j}" for j in range(d_k)],
        tokens[:cache],
        gettext("K cache"),
        "diverging",
        x_title=gettext("dimension"),
        y_title=gettext("token"),
    )
    return {
        "index": s,
        "count": len(result["steps"]) + 1,
        "token_step": token_step,
        "cache_length": cache,
        "cache_tokens": tokens[:cache],
        "k_cache": result["k"][:cache],
        "v_cache": result["v"][:cache],
        "k_labels": [f"d{j}" for j in range(d_k)],
        "v_labels": [f"d{j}" for j in range(d_v)],
        "figures": figures,
    }
