"""From a validated request to one result dict, shared by the JSON API and the pages.

Fills in what the request left out (the worked example, or seeded generation), checks the
server's limits, runs the pure math, and lays the result out under the field names of
shared/API.md. Values stay numpy arrays: orjson writes them, templates format them.
"""

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from math import ceil
from typing import Any

import numpy as np

from app import attention as att
from app import kernel as kn
from app.config import Settings
from app.cost import score_bytes, storage_bytes
from app.errors import InputError
from app.schemas import (
    AttentionRequest,
    DecodeRequest,
    KernelRequest,
    MaskSpec,
    TiledRequest,
    check_limits,
    check_mask,
)

DEFAULT_D_MODEL = 4


@dataclass(frozen=True)
class HeadInputs:
    """Everything one head needs, defaults filled in."""

    tokens: list[str]
    x: np.ndarray  # (n, d_model)
    w_q: np.ndarray  # (d_model, d_k)
    w_k: np.ndarray  # (d_model, d_k)
    w_v: np.ndarray  # (d_model, d_v)
    mask: MaskSpec
    scale: bool
    query: int

    @property
    def n(self) -> int:
        return len(self.tokens)


def _is_worked_example(req: AttentionRequest, tokens: list[str]) -> bool:
    """The worked example's numbers apply when the request changes nothing they depend on."""
    return (
        tuple(tokens) == att.WORKED_TOKENS
        and req.seed == 0
        and req.given_d_model() in (None, att.WORKED_X.shape[1])
        and (req.x is None or np.array_equal(req.x, att.WORKED_X))
    )


WORKED_PROJECTIONS = {"w_q": att.WORKED_W_Q, "w_k": att.WORKED_W_K, "w_v": att.WORKED_W_V}


def resolve_inputs(req: AttentionRequest, settings: Settings) -> HeadInputs:
    """The request with every default filled in, checked against this server's limits.

    The request model has already checked that the given shapes agree; what is generated
    here takes its widths from them (d_model from x, d_model or a projection's rows).
    """
    tokens = list(req.tokens) if req.tokens is not None else list(att.WORKED_TOKENS)
    worked = _is_worked_example(req, tokens)
    n = len(tokens)

    if req.x is not None:
        x = np.array(req.x, dtype=float)
    elif worked:
        x = att.WORKED_X.copy()
    else:
        x = att.token_vectors(tokens, req.given_d_model() or DEFAULT_D_MODEL, req.seed)
    d_model = x.shape[1]

    def projection(name: str, width: int | None) -> np.ndarray:
        given = getattr(req, name)
        if given is not None:
            return np.array(given, dtype=float)
        if worked and width in (None, d_model):
            return WORKED_PROJECTIONS[name].copy()
        return att.random_projection(d_model, width or d_model, req.seed, name)

    w_q = projection("w_q", req.given_d_k())
    w_k = projection("w_k", w_q.shape[1])
    w_v = projection("w_v", req.d_v)

    check_limits(
        n,
        {"d_model": d_model, "d_k": w_q.shape[1], "d_v": w_v.shape[1]},
        settings.max_tokens,
        settings.max_width,
        fields={
            "d_model": req.first_given(("x", "d_model", "w_q", "w_k", "w_v"), "d_model"),
            "d_k": req.first_given(("d_k", "w_q", "w_k"), "d_k"),
            "d_v": req.first_given(("d_v", "w_v"), "d_v"),
        },
    )
    check_mask(req.mask, n)
    query = req.query if req.query is not None else (att.WORKED_QUERY if worked else n - 1)
    if query >= n:
        raise InputError(
            ("query",), f"query is {query} but positions run from 0 to {n - 1}; pick one of those"
        )
    return HeadInputs(tokens, x, w_q, w_k, w_v, req.mask, req.scale, query)


def mask_of(spec: MaskSpec, n: int) -> np.ndarray:
    return att.build_mask(n, spec.causal, spec.padding, spec.window, spec.allowed)


def stage_fields(stages: att.HeadStages) -> dict[str, Any]:
    """The stage fields every head shares (API.md: q … output, empty_rows)."""
    return {
        "q": stages.q,
        "k": stages.k,
        "v": stages.v,
        "scores": stages.scores,
        "scaled": stages.scaled,
        "allowed": stages.allowed,
        "masked": stages.masked,
        "weights": stages.weights,
        "output": stages.output,
        "empty_rows": stages.empty_rows,
    }


def query_breakdown(tokens: list[str], fields: Mapping[str, Any], i: int) -> dict[str, Any]:
    """One query's row, key by key: dot, scaled, visible, weight, weight × value.

    `fields` holds the stage fields (`stage_fields` of a head, or a result dict)."""
    scores, scaled, allowed, weights, v = (
        np.asarray(fields[name]) for name in ("scores", "scaled", "allowed", "weights", "v")
    )
    weighted = weights[i][:, None] * v  # (n, d_v)
    rows = [
        {
            "key_index": j,
            "key_token": tokens[j],
            "dot": float(scores[i, j]),
            "scaled": float(scaled[i, j]),
            "visible": bool(allowed[i, j]),
            "weight": float(weights[i, j]),
            "weighted_value": weighted[j],
        }
        for j in range(len(tokens))
    ]
    return {"index": i, "token": tokens[i], "rows": rows, "output": weighted.sum(axis=0)}


def compute_attention(req: AttentionRequest, settings: Settings) -> dict[str, Any]:
    """The whole /api/attention result."""
    inputs = resolve_inputs(req, settings)
    allowed = mask_of(inputs.mask, inputs.n)
    stages = att.attention_head(inputs.x, inputs.w_q, inputs.w_k, inputs.w_v, allowed, inputs.scale)
    fields = stage_fields(stages)
    return {
        **inputs_used(inputs),
        "scale_factor": stages.scale_factor,
        **fields,
        "query": query_breakdown(inputs.tokens, fields, inputs.query),
    }


def inputs_used(inputs: HeadInputs) -> dict[str, Any]:
    """The inputs as they were resolved: generated numbers included."""
    return {
        "tokens": inputs.tokens,
        "d_model": inputs.x.shape[1],
        "d_k": inputs.w_q.shape[1],
        "d_v": inputs.w_v.shape[1],
        "x": inputs.x,
        "w_q": inputs.w_q,
        "w_k": inputs.w_k,
        "w_v": inputs.w_v,
        "mask": inputs.mask.model_dump(exclude_none=True),
    }


# ---------------------------------------------------------------- inside the kernel


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


def projected(inputs: HeadInputs) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return inputs.x @ inputs.w_q, inputs.x @ inputs.w_k, inputs.x @ inputs.w_v


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
    q, k, v = projected(inputs)
    dense = att.attend(q, k, v, allowed, inputs.scale)
    mask = kn.mask_from_matrix(allowed)
    steps = list(kn.tiled_steps(q, k, v, mask, block_q, block_k, inputs.scale))
    output = kn.assemble(steps, n, v.shape[1])
    maps = kn.touched_maps(steps, n)
    d_k, d_v = q.shape[1], v.shape[1]
    return {
        **inputs_used(inputs),
        "scale": inputs.scale,
        "scale_factor": dense.scale_factor,
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
        inputs.x, inputs.w_q, inputs.w_k, inputs.w_v, allowed, prompt, inputs.scale
    )
    full = att.attention_head(inputs.x, inputs.w_q, inputs.w_k, inputs.w_v, allowed, inputs.scale)
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
        **inputs_used(inputs),
        "scale": inputs.scale,
        "forced_causal": not inputs.mask.causal,
        "scale_factor": full.scale_factor,
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
