"""From a validated request to one result dict, shared by the JSON API and the pages.

Fills in what the request left out (the worked example, or seeded generation), checks the
server's limits, runs the pure math, and lays the result out under the field names of
shared/API.md. Values stay numpy arrays: orjson writes them, templates format them.
"""

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from app import attention as att
from app import heads as mh
from app import positional as pos
from app.config import Settings
from app.cost import kv_cache_bytes_per_token
from app.errors import InputError
from app.positional import Positional
from app.schemas import (
    AttentionRequest,
    HeadsRequest,
    MaskSpec,
    SequenceRequest,
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
    if query >= n:
        raise InputError(
            ("query",), f"query is {query} but positions run from 0 to {n - 1}; pick one of those"
        )
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


def compute_attention(req: AttentionRequest, settings: Settings) -> dict[str, Any]:
    """The whole /api/attention result."""
    inputs = resolve_inputs(req, settings)
    allowed = mask_of(inputs.mask, inputs.n)
    heads = mh.multi_head_attention(
        inputs.x,
        inputs.w_q[None],
        inputs.w_k[None],
        inputs.w_v[None],
        allowed,
        inputs.scale,
        inputs.positional,
    )
    fields = stage_fields(heads.heads[0])
    return {
        "tokens": inputs.tokens,
        "d_model": inputs.x.shape[1],
        "d_k": inputs.w_q.shape[1],
        "d_v": inputs.w_v.shape[1],
        "scale_factor": heads.heads[0].scale_factor,
        "positional": inputs.positional,
        "x": inputs.x,
        "x_positioned": heads.x_in,
        "w_q": inputs.w_q,
        "w_k": inputs.w_k,
        "w_v": inputs.w_v,
        "mask": inputs.mask.model_dump(exclude_none=True),
        **fields,
        "query": query_breakdown(inputs.tokens, fields, inputs.query),
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
