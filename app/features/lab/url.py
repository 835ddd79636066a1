"""The lab state written back as its canonical URL: a matrix is written out only when leaving it
out would give different numbers, so generated states stay short."""

from typing import Any
from urllib.parse import urlencode

import numpy as np

from app.core.formatting import matrix_text
from app.features.lab.schemas import AttentionRequest, AttentionResult
from app.features.lab.service import resolve_inputs
from app.features.lab.state import MATRICES, LabState
from app.settings import Settings


def state_params(
    state: LabState, result: AttentionResult, settings: Settings
) -> list[tuple[str, Any]]:
    """The canonical parameters of a computed state. A matrix is written out only when
    leaving it out would give different numbers, so generated states stay short."""
    tokens = list(result.tokens)
    dims = {"d_model": result.d_model, "d_k": result.d_k, "d_v": result.d_v}
    params: list[tuple[str, Any]] = [("tokens", " ".join(tokens)), *dims.items()]
    if state.seed:
        params.append(("seed", state.seed))
    # Each matrix against what leaving it out would give with the ones before it written
    # out (a written x means the worked example's projections are no longer the default).
    written: dict[str, Any] = {}
    for name in MATRICES:
        request = AttentionRequest(tokens=tokens, seed=state.seed, **dims, **written)
        value = getattr(result, name)
        if not np.array_equal(value, getattr(resolve_inputs(request, settings), name)):
            written[name] = np.asarray(value).tolist()
            params.append((name, matrix_text(value)))
    params.append(("mask", state.mask))
    if state.mask == "window":
        params.append(("window", state.window))
    if state.mask == "custom" and state.allowed is not None:
        params.append(("allowed", ";".join("".join("01"[b] for b in row) for row in state.allowed)))
    if state.pad:
        params.append(("pad", ",".join(map(str, state.pad))))
    if not state.scale:
        params.append(("scale", 0))
    if state.positional != "none":
        params.append(("positional", state.positional))
    params.append(("query", result.query.index))
    return params


def encode(params: list[tuple[str, Any]]) -> str:
    """A query string that stays readable: "," and ";" are left as they are."""
    return urlencode(params, safe=",;")
