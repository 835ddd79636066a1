"""From a validated request to one result dict, shared by the JSON API and the pages.

Fills in what the request left out (the worked example, or seeded generation), checks the
server's limits, runs the pure math, and lays the result out under the field names of
shared/API.md. Values stay numpy arrays: orjson writes them, templates format them.
"""

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from math import ceil
from typing import Any

import numpy as np

from app import attention as att
from app import heads as mh
from app import kernel as kn
from app import model as bert
from app import positional as pos
from app.config import Settings
from app.cost import kv_cache_bytes_per_token, score_bytes, storage_bytes
from app.errors import InputError
from app.model_store import load_model, word_pieces
from app.positional import Positional
from app.schemas import (
    MAX_WORD_PIECES,
    AttentionRequest,
    DecodeRequest,
    HeadsRequest,
    KernelRequest,
    MaskSpec,
    ModelRequest,
    SequenceRequest,
    TiledRequest,
    check_limits,
    check_mask,
)

DEFAULT_D_MODEL = 4
DEFAULT_D_HEAD = 2
KV_BYTES_PER_ELEMENT = 2  # fp16 / bf16, as the cost calculator defaults


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
    positional: Positional

    @property
    def n(self) -> int:
        return len(self.tokens)


def _is_worked_example(req: SequenceRequest, tokens: list[str]) -> bool:
    """The worked example's numbers apply when the request changes nothing they depend on."""
    return (
        tuple(tokens) == att.WORKED_TOKENS
        and req.seed == 0
        and req.given_d_model() in (None, att.WORKED_X.shape[1])
        and (req.x is None or np.array_equal(req.x, att.WORKED_X))
    )


WORKED_PROJECTIONS = {"w_q": att.WORKED_W_Q, "w_k": att.WORKED_W_K, "w_v": att.WORKED_W_V}


def check_index(name: str, value: int | None, count: int, what: str) -> None:
    """A 0-based position must name one of the `count` things there are."""
    if value is not None and value >= count:
        raise InputError(
            (name,),
            f"{name} is {value} but there are {count} {what}, numbered 0 to {count - 1}; "
            "pick one of those",
        )


def resolve_sequence(req: SequenceRequest) -> tuple[list[str], np.ndarray, bool]:
    """The tokens, their x rows (given, the worked example's, or generated from the text at
    the width the request fixes), and whether this is the worked example."""
    tokens = list(req.tokens) if req.tokens is not None else list(att.WORKED_TOKENS)
    worked = _is_worked_example(req, tokens)
    if req.x is not None:
        x = np.array(req.x, dtype=float)
    elif worked:
        x = att.WORKED_X.copy()
    else:
        x = att.token_vectors(tokens, req.given_d_model() or DEFAULT_D_MODEL, req.seed)
    return tokens, x, worked


def check_rope(positional: Positional, name: str, width: int) -> None:
    """RoPE rotates pairs of numbers, so q and k need an even width."""
    if positional == "rope" and width % 2:
        raise InputError(
            ("positional",),
            f"positional is rope, which rotates q and k in pairs of numbers, but {name} is "
            f"{width} (odd); choose an even {name} or another positional kind",
        )


def resolve_inputs(req: AttentionRequest, settings: Settings) -> HeadInputs:
    """The request with every default filled in, checked against this server's limits.

    The request model has already checked that the given shapes agree; what is generated
    here takes its widths from them (d_model from x, d_model or a projection's rows).
    """
    tokens, x, worked = resolve_sequence(req)
    n, d_model = x.shape

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
    check_rope(req.positional, "d_k", w_q.shape[1])
    query = req.query if req.query is not None else (att.WORKED_QUERY if worked else n - 1)
    check_index("query", query, n, "tokens")
    return HeadInputs(tokens, x, w_q, w_k, w_v, req.mask, req.scale, query, req.positional)


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


def one_head(inputs: HeadInputs, allowed: np.ndarray) -> mh.MultiHeadStages:
    """The single head of /api/attention, position applied as the request says."""
    return mh.multi_head_attention(
        inputs.x,
        inputs.w_q[None],
        inputs.w_k[None],
        inputs.w_v[None],
        allowed,
        inputs.scale,
        inputs.positional,
    )


def inputs_used(inputs: HeadInputs, run: mh.MultiHeadStages) -> dict[str, Any]:
    """The inputs as they were resolved (generated numbers included) and what they gave."""
    return {
        "tokens": inputs.tokens,
        "d_model": inputs.x.shape[1],
        "d_k": inputs.w_q.shape[1],
        "d_v": inputs.w_v.shape[1],
        "scale_factor": run.heads[0].scale_factor,
        "positional": inputs.positional,
        "x": inputs.x,
        "x_positioned": run.x_in,
        "w_q": inputs.w_q,
        "w_k": inputs.w_k,
        "w_v": inputs.w_v,
        "mask": inputs.mask.model_dump(exclude_none=True),
    }


def compute_attention(req: AttentionRequest, settings: Settings) -> dict[str, Any]:
    """The whole /api/attention result."""
    inputs = resolve_inputs(req, settings)
    run = one_head(inputs, mask_of(inputs.mask, inputs.n))
    fields = stage_fields(run.heads[0])
    return {
        **inputs_used(inputs, run),
        **fields,
        "query": query_breakdown(inputs.tokens, fields, inputs.query),
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


# ---------------------------------------------------------------- several heads


def _projections(
    given: list[list[list[float]]] | None,
    name: str,
    count: tuple[str, int],
    d_model: int,
    d_head: int,
    seed: int,
) -> np.ndarray:
    """One d_model × d_head matrix per head, given (shapes checked) or seeded."""
    count_name, number = count
    if given is None:
        return np.stack(
            [att.random_projection(d_model, d_head, seed, f"{name}[{i}]") for i in range(number)]
        )  # (count, d_model, d_head)
    if len(given) != number:
        matrices = "matrix" if len(given) == 1 else "matrices"
        role = "query" if name == "w_q" else "key/value"
        raise InputError(
            (name,),
            f"{name} has {len(given)} {matrices} but {count_name} is {number}; give one "
            f"d_model × d_head matrix per {role} head",
        )
    for i, matrix in enumerate(given):
        if len(matrix) != d_model:
            raise InputError(
                (name, i),
                f"{name}[{i}] has {len(matrix)} rows but each x row has {d_model} numbers "
                f"(d_model = {d_model}); every {name} matrix needs one row per input number",
            )
        if len(matrix[0]) != d_head:
            raise InputError(
                (name, i),
                f"{name}[{i}] has {len(matrix[0])} columns but d_head is {d_head}; every "
                "head's q, k and v have d_head numbers",
            )
    return np.array(given, dtype=float)


def _output_projection(req: HeadsRequest, rows: int, d_model: int) -> np.ndarray:
    if req.w_o is None:
        return att.random_projection(rows, d_model, req.seed, "w_o")
    if len(req.w_o) != rows or len(req.w_o[0]) != d_model:
        raise InputError(
            ("w_o",),
            f"w_o is {len(req.w_o)} × {len(req.w_o[0])} but must be (heads · d_head) × d_model "
            f"= {rows} × {d_model}: one row per number of the concatenation, one column "
            "per number of the model's width",
        )
    return np.array(req.w_o, dtype=float)


def compute_heads(req: HeadsRequest, settings: Settings) -> dict[str, Any]:
    """The whole /api/heads result: every head's stages, the concatenation, W_O, output."""
    tokens, x, _ = resolve_sequence(req)
    n, d_model = x.shape
    h = req.heads
    g = req.kv_heads or h
    given = next((w[0] for w in (req.w_q, req.w_k, req.w_v) if w is not None), None)
    d_head = req.d_head or (len(given[0]) if given is not None else DEFAULT_D_HEAD)
    if h % g:
        divisors = ", ".join(str(d) for d in range(1, h + 1) if h % d == 0)
        raise InputError(
            ("kv_heads",),
            f"kv_heads is {g} but heads is {h}, and {g} does not divide {h}; every key/value "
            f"head must serve the same number of query heads, so pick kv_heads from {divisors}",
        )
    if h > settings.max_heads:
        raise InputError(
            ("heads",), f"heads is {h} but this server allows at most {settings.max_heads}"
        )
    check_limits(
        n,
        {"d_model": d_model, "d_head": d_head},
        settings.max_tokens,
        settings.max_width,
        fields={
            "d_model": req.first_given(("x", "d_model", "w_q", "w_k", "w_v", "w_o"), "d_model"),
            "d_head": req.first_given(("d_head", "w_q", "w_k", "w_v"), "d_head"),
        },
    )
    check_mask(req.mask, n)
    check_rope(req.positional, "d_head", d_head)
    w_q = _projections(req.w_q, "w_q", ("heads", h), d_model, d_head, req.seed)
    w_k = _projections(req.w_k, "w_k", ("kv_heads", g), d_model, d_head, req.seed)
    w_v = _projections(req.w_v, "w_v", ("kv_heads", g), d_model, d_head, req.seed)
    w_o = _output_projection(req, h * d_head, d_model)

    allowed = mask_of(req.mask, n)
    stages = mh.multi_head_attention(x, w_q, w_k, w_v, allowed, req.scale, req.positional, w_o)
    return {
        "tokens": tokens,
        "d_model": d_model,
        "d_head": d_head,
        "kv_heads": g,
        "scale_factor": stages.heads[0].scale_factor,
        "positional": req.positional,
        "x": x,
        "x_positioned": stages.x_in,
        "w_q": w_q,
        "w_k": w_k,
        "w_v": w_v,
        "w_o": w_o,
        "mask": req.mask.model_dump(exclude_none=True),
        "heads": [
            {**stage_fields(s), "kv_head": kv}
            for s, kv in zip(stages.heads, stages.kv_head, strict=True)
        ],
        "concat": stages.concat,
        "output": stages.output,
        "kv_cache_bytes_per_token": {
            "bytes_per_element": KV_BYTES_PER_ELEMENT,
            "this": kv_cache_bytes_per_token(1, g, d_head, KV_BYTES_PER_ELEMENT),
            "multi_head": kv_cache_bytes_per_token(1, h, d_head, KV_BYTES_PER_ELEMENT),
        },
    }


# ---------------------------------------------------------------- position, made visible


def shuffled_mask(mask: MaskSpec, perm: np.ndarray) -> MaskSpec:
    """The mask's per-token parts travel with their tokens; causal and window stay put,
    because they are defined by position."""
    update: dict[str, Any] = {}
    if mask.padding is not None:
        update["padding"] = [mask.padding[p] for p in perm]
    if mask.allowed is not None:
        update["allowed"] = np.asarray(mask.allowed)[np.ix_(perm, perm)].tolist()
    return mask.model_copy(update=update)


def position_demo(
    req: SequenceRequest,
    result: dict[str, Any],
    compute: Callable[[Any, Settings], dict[str, Any]],
    settings: Settings,
) -> dict[str, Any]:
    """Shuffle the tokens (with their x rows and the same weights), compute again, and
    measure whether the output rows are merely the old rows shuffled the same way; also
    whether repeated tokens got identical output rows."""
    tokens = result["tokens"]
    perm = pos.shuffle_order(len(tokens), req.seed)
    update: dict[str, Any] = {
        "tokens": [tokens[p] for p in perm],
        "x": result["x"][perm].tolist(),
        "mask": shuffled_mask(req.mask, perm),
    }
    update |= {w: result[w].tolist() for w in ("w_q", "w_k", "w_v", "w_o") if w in result}
    shuffled = compute(req.model_copy(update=update), settings)
    gap = pos.permutation_gap(result["output"], shuffled["output"], perm)
    return {
        "order": perm.tolist(),
        "tokens": update["tokens"],
        "output": shuffled["output"],
        "expected": result["output"][perm],
        "gap": gap,
        "equivariant": gap < 1e-9,
        "position_in_mask": bool(req.mask.causal or req.mask.window is not None),
        "repeats": pos.repeated_token_gaps(tokens, result["output"]),
    }


def compute_model(req: ModelRequest, settings: Settings) -> dict[str, Any]:
    """The whole /api/model result: every head's weights, and one head's stages if asked."""
    loaded = load_model(settings.model_dir)
    pieces = word_pieces(loaded, req.text)
    n = len(pieces.tokens)
    if n > MAX_WORD_PIECES:
        raise InputError(
            ("text",),
            f"text makes {n} word pieces ([CLS] and [SEP] included) but the model reads at "
            f"most {MAX_WORD_PIECES}; shorten it",
        )
    config = loaded.encoder.config
    check_index("layer", req.layer, config.layers, "layers")
    check_index("head", req.head, config.heads, "heads in each layer")
    query = req.query if req.query is not None else min(1, n - 1)
    check_index("query", query, n, "word pieces")
    stages = bert.forward(loaded.encoder, pieces.ids)
    result: dict[str, Any] = {
        "model": {
            "name": loaded.name,
            "layers": config.layers,
            "heads": config.heads,
            "d_head": config.d_head,
            "d_model": config.d_model,
            "source": loaded.source,
        },
        "tokens": pieces.tokens,
        "ids": pieces.ids,
        "special": pieces.special,
        "weights": stages.weights,  # (layers, heads, n, n)
        "embedding": bert.sentence_embedding(stages.layers[-1].output),
    }
    if req.layer is not None and req.head is not None:
        layer = stages.layers[req.layer]
        head = layer.heads[req.head]
        fields = stage_fields(head)
        result["head"] = {
            "layer": req.layer,
            "head": req.head,
            "d_head": config.d_head,
            "scale_factor": head.scale_factor,
            "x": layer.x,
            **fields,
            "query": query_breakdown(pieces.tokens, fields, query),
        }
    return result
