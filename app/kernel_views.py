"""Presentation of the /kernel page: which step is shown, its tables, figures and links.

Reads the finished results of service.compute_tiled and service.compute_decode; computes
no attention arithmetic (it only picks, labels and arranges numbers).
"""

from typing import Any

import numpy as np
from starlette.datastructures import URL

from app.config import Settings
from app.errors import validated
from app.figures import heatmap, progress_map
from app.schemas import DecodeRequest, KernelPageQuery, TiledRequest
from app.service import compute_decode, compute_tiled
from app.templating import fmt


def kernel_context(query: KernelPageQuery, settings: Settings, url: URL) -> dict[str, Any]:
    """Both walk-throughs of one lab state, each at the step named in the URL."""
    lab = query.attention_fields()
    blocks = {"block_q": query.block_q, "block_k": query.block_k}
    tiled = compute_tiled(validated(TiledRequest, {**lab, **_given(blocks)}), settings)
    prompt = _given({"prompt": query.prompt})
    decode = compute_decode(validated(DecodeRequest, {**lab, **prompt}), settings)
    step = min(max(query.step, 0), len(tiled["steps"]) - 1)
    decode_step = min(max(query.decode_step, 0), len(decode["steps"]))
    return {
        "query": query,
        "tiled": tiled,
        "decode": decode,
        "tile": tile_view(tiled, step),
        "dec": decode_view(decode, decode_step),
        "tiled_links": step_links(url, "step", step, len(tiled["steps"]) - 1),
        "decode_links": step_links(url, "decode_step", decode_step, len(decode["steps"])),
    }


def _given(fields: dict[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in fields.items() if value is not None}


def step_links(url: URL, param: str, current: int, last: int) -> dict[str, str | None]:
    """first / prev / next / last as URLs of the same state; None where there is nowhere to go."""
    targets = {"first": 0, "prev": current - 1, "next": current + 1, "last": last}
    return {
        name: str(url.include_query_params(**{param: target}))
        if 0 <= target <= last and target != current
        else None
        for name, target in targets.items()
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
            step["scores"], k_tokens, q_tokens, "S = Q·Kᵀ / √d_k, this tile", "diverging"
        )
        figures["p"] = heatmap(step["p"], k_tokens, q_tokens, "P = exp(S − m), this tile")
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
        "figures": figures,
    }


def _progress_figure(result: dict[str, Any], s: int) -> dict[str, Any]:
    """0 = not computed yet, 1 = computed in an earlier step, 2 = the tile held now; each
    computed cell labelled with its score (−∞ where the mask hides it)."""
    n, steps = len(result["tokens"]), result["steps"]
    state = steps[s]["touched"].astype(float)  # (n, n): 1 where computed so far
    text = [[""] * n for _ in range(n)]
    for step in steps[: s + 1]:
        if step["skipped"]:
            continue
        r0, c0 = step["query_block"][0], step["key_block"][0]
        for i, row in enumerate(step["scores"]):
            for j, value in enumerate(row):
                text[r0 + i][c0 + j] = fmt(value)
    current = steps[s]
    if not current["skipped"]:
        state[slice(*current["query_block"]), slice(*current["key_block"])] = 2
    return progress_map(state, text, result["tokens"], "Scores touched so far")


# ---------------------------------------------------------------- cached decoding


def decode_view(result: dict[str, Any], s: int) -> dict[str, Any]:
    """Step 0 is the prefill; step s ≥ 1 is the token at position prompt + s − 1."""
    tokens, p = result["tokens"], result["prompt"]
    if s == 0:
        prefill = result["prefill"]
        cache = p
        figures = {
            "weights": heatmap(prefill["weights"], tokens[:p], tokens[:p], "prefill weights")
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
                "weights of the new query over the cache",
            )
        }
    d_k, d_v = result["d_k"], result["d_v"]
    figures["k_cache"] = heatmap(
        result["k"][:cache],
        [f"d{j}" for j in range(d_k)],
        tokens[:cache],
        "K cache",
        "diverging",
        x_title="dimension",
        y_title="token",
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
