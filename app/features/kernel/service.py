"""Tiled exact attention and cached decoding of a lab state, with their counts."""

from dataclasses import asdict
from math import ceil
from typing import Any

import numpy as np

from app.core.errors import InputError
from app.features.kernel.schemas import DecodeRequest, KernelRequest, TiledRequest
from app.features.lab.service import inputs_used, one_head, resolve_inputs
from app.features.stages.service import mask_of
from app.math import kernel as kn
from app.math.cost import score_bytes, storage_bytes
from app.settings import Settings


def default_block(n: int) -> int:
    """Two blocks each way: four steps, small enough to follow, large enough to tile."""
    return max(1, ceil(n / 2))


def check_tiling(n: int, block_q: int, block_k: int, settings: Settings) -> None:
    """A walk-through returns every step with an n × n map: keep it within the settings."""
    steps = ceil(n / block_q) * ceil(n / block_k)
    if steps > settings.max_kernel_steps:
        raise InputError(
            ("block_q",),
            f"block_q = {block_q} and block_k = {block_k} cut {n} tokens into {steps:,} steps "
            f"but this server walks through at most {settings.max_kernel_steps:,}; "
            "make the blocks larger",
        )
    cells = steps * n * n
    if cells > settings.max_kernel_cells:
        raise InputError(
            ("block_q",),
            f"block_q = {block_q} and block_k = {block_k} give {steps:,} steps, each with a "
            f"{n} × {n} map of the scores touched so far: {cells:,} cells, but this server "
            f"returns at most {settings.max_kernel_cells:,}; make the blocks larger or use "
            "fewer tokens",
        )


def long_sequence_fields(req: KernelRequest) -> dict[str, Any]:
    """Tiled and cached-decoding counts for long sequences, in closed form."""
    spec = req.long_sequence
    rows = []
    for n in spec.seq_lens:
        tiled = asdict(kn.tiled_counts(n, spec.block, spec.block, spec.head_dim, spec.head_dim))
        # 2 bytes per score, as in the cost table of seed 000
        tiled["dense_score_bytes"] = score_bytes(n)
        tiled["tiled_score_bytes"] = storage_bytes(tiled["tiled_score_entries"])
        tiled["decode"] = asdict(kn.decode_counts(n, spec.head_dim, spec.head_dim))
        rows.append(tiled)
    return {"long_sequence": spec.model_dump(), "long_sequences": rows}


def tile_step_fields(step: kn.TileStep, touched: np.ndarray) -> dict[str, Any]:
    return {
        "index": step.index,
        "query_block": list(step.query_block),
        "key_block": list(step.key_block),
        "skipped": step.skipped,
        "allowed": step.allowed,
        "scores": step.scores,
        "m_before": step.m_before,
        "m": step.m,
        "grew": step.grew,
        "rescale": step.rescale,
        "p": step.p,
        "l_before": step.l_before,
        "l": step.l,
        "o_before": step.o_before,
        "o": step.o,
        "output_rows": step.output_rows,
        "score_entries": step.score_entries,
        "touched": touched,
        "touched_entries": int(touched.sum()),
    }


def compute_tiled(req: TiledRequest, settings: Settings) -> dict[str, Any]:
    """Tiled exact attention on a lab state, every step, next to the dense result."""
    inputs = resolve_inputs(req, settings)
    n = inputs.n
    block_q, block_k = req.block_q or default_block(n), req.block_k or default_block(n)
    check_tiling(n, block_q, block_k, settings)
    allowed = mask_of(inputs.mask, n)
    run = one_head(inputs, allowed)
    dense = run.heads[0]
    q, k, v = dense.q, dense.k, dense.v  # position applied, as in /api/attention
    mask = kn.mask_from_matrix(allowed)
    steps = list(kn.tiled_steps(q, k, v, mask, block_q, block_k, inputs.scale))
    output = kn.assemble(steps, n, v.shape[1])
    maps = kn.touched_maps(steps, n)
    d_k, d_v = q.shape[1], v.shape[1]
    return {
        **inputs_used(inputs, run),
        "scale": inputs.scale,
        "q": q,
        "k": k,
        "v": v,
        "allowed": allowed,
        "block_q": block_q,
        "block_k": block_k,
        "steps": [tile_step_fields(s, m) for s, m in zip(steps, maps, strict=True)],
        "output": output,
        "dense_output": dense.output,
        "max_abs_difference": float(np.abs(output - dense.output).max()),
        "empty_rows": dense.empty_rows,
        "memory": {
            "dense_score_entries": n * n,
            "peak_score_entries": max(s.score_entries for s in steps),
            "dense_dot_products": n * n,
            "tiled_dot_products": sum(s.score_entries for s in steps),
            "skipped_steps": sum(s.skipped for s in steps),
            "full_attention": asdict(kn.tiled_counts(n, block_q, block_k, d_k, d_v)),
        },
        **long_sequence_fields(req),
    }


def compute_decode(req: DecodeRequest, settings: Settings) -> dict[str, Any]:
    """A prefill of the first tokens, then one token at a time against a growing cache."""
    inputs = resolve_inputs(req, settings)
    n = inputs.n
    prompt = req.prompt or max(1, n // 2)
    if prompt > n:
        raise InputError(
            ("prompt",),
            f"prompt is {prompt} but there are only {n} tokens; the prefill takes 1 to {n} of them",
        )
    allowed = mask_of(inputs.mask.model_copy(update={"causal": True}), n)
    decoding = kn.decode(
        inputs.x,
        inputs.w_q,
        inputs.w_k,
        inputs.w_v,
        allowed,
        prompt,
        inputs.scale,
        inputs.positional,
    )
    run = one_head(inputs, allowed)
    full = run.heads[0]
    prefill = decoding.prefill
    d_k, d_v = inputs.w_q.shape[1], inputs.w_v.shape[1]
    dots_cached = dots_uncached = prompt * prompt
    steps = []
    for step in decoding.steps:
        t, row = step.position, step.stages
        dots_cached += step.dots_cached
        dots_uncached += step.dots_uncached
        steps.append(
            {
                "position": t,
                "token": inputs.tokens[t],
                "q": step.q,
                "k": step.k,
                "v": step.v,
                "cache_length": step.cache_length,
                "scores": row.scores[0],
                "scaled": row.scaled[0],
                "allowed": row.allowed[0],
                "weights": row.weights[0],
                "output": row.output[0],
                "full_output": full.output[t],
                "max_abs_difference": float(np.abs(row.output[0] - full.output[t]).max()),
                "dots_cached": step.dots_cached,
                "dots_uncached": step.dots_uncached,
                "dots_cached_total": dots_cached,
                "dots_uncached_total": dots_uncached,
                "cache_entries": step.cache_length * (d_k + d_v),
            }
        )
    output = decoding.output
    return {
        **inputs_used(inputs, run),
        "scale": inputs.scale,
        "forced_causal": not inputs.mask.causal,
        "prompt": prompt,
        "q": full.q,
        "k": full.k,
        "v": full.v,
        "allowed": allowed,
        "prefill": {
            "tokens": inputs.tokens[:prompt],
            "scores": prefill.scores,
            "scaled": prefill.scaled,
            "allowed": prefill.allowed,
            "weights": prefill.weights,
            "output": prefill.output,
            "dots": prompt * prompt,
            "cache_length": prompt,
        },
        "steps": steps,
        "output": output,
        "full_output": full.output,
        "max_abs_difference": float(np.abs(output - full.output).max()),
        "empty_rows": full.empty_rows,
        **long_sequence_fields(req),
    }
