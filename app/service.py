"""From a validated request to one result dict, shared by the JSON API and the pages.

Fills in what the request left out (the worked example, or seeded generation), checks the
server's limits, runs the pure math, and lays the result out under the field names of
shared/API.md. Values stay numpy arrays: orjson writes them, templates format them.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from app import attention as att
from app.config import Settings
from app.errors import InputError
from app.schemas import AttentionRequest, MaskSpec, check_limits, check_mask

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
        "tokens": inputs.tokens,
        "d_model": inputs.x.shape[1],
        "d_k": inputs.w_q.shape[1],
        "d_v": inputs.w_v.shape[1],
        "scale_factor": stages.scale_factor,
        "x": inputs.x,
        "w_q": inputs.w_q,
        "w_k": inputs.w_k,
        "w_v": inputs.w_v,
        "mask": inputs.mask.model_dump(exclude_none=True),
        **fields,
        "query": query_breakdown(inputs.tokens, fields, inputs.query),
    }
