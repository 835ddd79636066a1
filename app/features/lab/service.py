"""From an AttentionRequest to the /api/attention result: defaults filled in (the worked
example, or seeded generation), the server's limits checked, the math run."""

from dataclasses import dataclass
from typing import Any

import numpy as np

from app.core import rules
from app.core.budget import check_answer
from app.features.lab.schemas import AttentionRequest, AttentionResult
from app.features.stages.results import StageFields, query_breakdown
from app.features.stages.schemas import MaskSpec, SequenceRequest, check_limits, check_mask
from app.features.stages.service import (
    check_index,
    check_rope,
    mask_of,
    resolve_sequence,
)
from app.math import attention as att
from app.math import heads as mh
from app.math.positional import Positional
from app.settings import Settings

# The request fields that can fix each width, the first given one fixing it.
WIDTH_SOURCES = {
    "d_model": ("x", "d_model", "w_q", "w_k", "w_v"),
    "d_k": ("d_k", "w_q", "w_k"),
    "d_v": ("d_v", "w_v"),
}


@dataclass(frozen=True)
class HeadInputs:
    """Everything one head needs, defaults filled in: from a request (`resolve_inputs`) or
    from the lab's state as it fitted it (app/features/lab/form.py), resolved once."""

    tokens: list[str]
    x: np.ndarray  # (n, d_model)
    w_q: np.ndarray  # (d_model, d_k)
    w_k: np.ndarray  # (d_model, d_k)
    w_v: np.ndarray  # (d_model, d_v)
    mask: MaskSpec
    scale: bool
    query: int
    positional: Positional
    given: tuple[str, ...] = ()  # the fields the request gave (of WIDTH_SOURCES' names)

    @property
    def n(self) -> int:
        return len(self.tokens)

    @property
    def widths(self) -> tuple[int, int, int]:
        """(d_model, d_k, d_v)."""
        return self.x.shape[1], self.w_q.shape[1], self.w_v.shape[1]

    def field_of(self, label: str) -> str:
        """The field that fixed a width (x fixes d_model when given), to name in a message."""
        return next((name for name in WIDTH_SOURCES[label] if name in self.given), label)


WORKED_PROJECTIONS = {"w_q": rules.WORKED_W_Q, "w_k": rules.WORKED_W_K, "w_v": rules.WORKED_W_V}


def generated_x(tokens: list[str], d_model: int | None, seed: int) -> tuple[np.ndarray, bool]:
    """The x a request without x gets (generated from the text, or the worked example's rows
    for its text at seed 0 and width 2), and whether it is the worked example's."""
    _, x, worked = resolve_sequence(SequenceRequest(tokens=tokens, d_model=d_model, seed=seed))
    return x, worked


def generated_projection(
    name: str, d_model: int, width: int, seed: int, worked: bool
) -> np.ndarray:
    """The projection a request without it gets: the worked example's while x is its rows
    (`worked`) and the width is its own, else generated from the seed."""
    if worked and width == d_model:
        return WORKED_PROJECTIONS[name].copy()
    return att.random_projection(d_model, width, seed, name)


def default_query(n: int, worked: bool) -> int:
    """The query a request without one breaks down: "cat" in the worked example, else the last
    token."""
    return rules.WORKED_QUERY if worked else n - 1


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
        return generated_projection(name, d_model, width or d_model, req.seed, worked)

    w_q = projection("w_q", req.given_d_k())
    w_k = projection("w_k", w_q.shape[1])
    w_v = projection("w_v", req.d_v)
    query = req.query if req.query is not None else default_query(n, worked)
    names = {name for names in WIDTH_SOURCES.values() for name in names}
    given = tuple(name for name in sorted(names) if getattr(req, name) is not None)
    inputs = HeadInputs(
        tokens, x, w_q, w_k, w_v, req.mask, req.scale, query, req.positional, given=given
    )
    return checked(inputs, settings)


def checked(inputs: HeadInputs, settings: Settings) -> HeadInputs:
    """The inputs, if this server computes them: its limits on n and the widths, a mask that
    fits the tokens, RoPE on an even d_k, a query among the tokens."""
    n, (d_model, d_k, d_v) = inputs.n, inputs.widths
    check_limits(
        n,
        {"d_model": d_model, "d_k": d_k, "d_v": d_v},
        settings.max_tokens,
        settings.max_width,
        field_of=inputs.field_of,
    )
    check_mask(inputs.mask, n)
    check_rope(inputs.positional, "d_k", d_k)
    check_index("query", inputs.query, n, "tokens")
    return inputs


def one_head(inputs: HeadInputs, allowed: np.ndarray) -> mh.PositionedHead:
    """The single head of /api/attention, position applied as the request says: added to x
    before the projections (sinusoidal), or rotating q and k after them (rope)."""
    return mh.one_head_attention(
        inputs.x, inputs.w_q, inputs.w_k, inputs.w_v, allowed, inputs.scale, inputs.positional
    )


def inputs_used(inputs: HeadInputs, run: mh.PositionedHead) -> dict[str, Any]:
    """The inputs as they were resolved (generated numbers included), by the field names of
    ResolvedInputs."""
    return {
        "tokens": inputs.tokens,
        "d_model": inputs.x.shape[1],
        "d_k": inputs.w_q.shape[1],
        "d_v": inputs.w_v.shape[1],
        "scale_factor": run.head.scale_factor,
        "positional": inputs.positional,
        "x": inputs.x,
        "x_positioned": run.x_in,
        "w_q": inputs.w_q,
        "w_k": inputs.w_k,
        "w_v": inputs.w_v,
        "mask": inputs.mask.model_dump(exclude_none=True),
    }


BUDGET_FIELDS = ("tokens", "d_model", "d_k", "d_v")  # what a too-large answer should shrink


def answer_bytes(inputs: HeadInputs, csv: bool = False) -> int:
    """The size of this head's answer, as JSON or as the lab's CSV, before computing it."""
    size = AttentionResult.csv_bytes if csv else AttentionResult.answer_bytes
    return size(inputs.n, *inputs.widths)


def compute_attention(req: AttentionRequest, settings: Settings) -> AttentionResult:
    """The whole /api/attention result."""
    return compute_head(resolve_inputs(req, settings), settings)


def compute_head(inputs: HeadInputs, settings: Settings) -> AttentionResult:
    """The /api/attention result of inputs already resolved and checked: the head, once."""
    check_answer(answer_bytes(inputs), settings.answer_budget_bytes, BUDGET_FIELDS)
    run = one_head(inputs, mask_of(inputs.mask, inputs.n))
    return AttentionResult(
        **inputs_used(inputs, run),
        **StageFields.values_of(run.head),
        query=query_breakdown(inputs.tokens, run.head, inputs.query),
    )
