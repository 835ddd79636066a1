"""What an edit does to the lab state: make the parts agree after a size changed, and the
buttons' one-off actions (generate x, randomize or reset a projection)."""

from dataclasses import replace

import numpy as np

from app.core import rules
from app.core.i18n import gettext
from app.features.lab.schemas import AttentionResult
from app.features.lab.state import LABELS, MATRICES, LabState, Parsed
from app.math import attention as att


def fit(parsed: Parsed) -> tuple[LabState, list[str]]:
    """Make the parts agree after an edit changed a size, and say what was regenerated.

    New tokens keep the x rows they had and get generated rows; a matrix whose width no
    longer matches d_model, d_k or d_v is generated again; the padding, the custom pattern
    and the query follow the number of tokens.
    """
    state = replace(parsed.state, matrices=dict(parsed.state.matrices))
    notes: list[str] = []
    n = state.n
    tokens = state.tokens if state.tokens is not None else list(rules.WORKED_TOKENS)
    heights = {"x": n, "w_q": state.d_model, "w_k": state.d_model, "w_v": state.d_model}
    widths = {"x": state.d_model, "w_q": state.d_k, "w_k": state.d_k, "w_v": state.d_v}
    for name, cells in parsed.cells.items():
        width = widths[name] or (len(cells) // heights[name] if heights[name] else None)
        if width and len(cells) % width == 0:
            state.matrices[name] = [cells[r : r + width] for r in range(0, len(cells), width)]
        else:
            notes.append(
                gettext("%(label)s did not fill whole rows, so it was generated again")
                % {"label": LABELS[name]}
            )

    x = state.matrices.get("x")
    if x is not None and len({len(row) for row in x}) == 1:
        width = len(x[0])
        if state.d_model is not None and width != state.d_model:
            del state.matrices["x"]
            notes.append(
                gettext("x was generated again from the text for d_model = %(d_model)s")
                % {"d_model": state.d_model}
            )
        elif len(x) != n:
            extra = att.token_vectors(tokens[len(x) :], width, state.seed).tolist()
            state.matrices["x"] = (x + extra)[:n]
    d_model = state.d_model or (len(x[0]) if x else None)
    for name in MATRICES[1:]:
        w = state.matrices.get(name)
        if w is None or len({len(row) for row in w}) != 1 or d_model is None:
            continue
        if len(w) != d_model or (widths[name] is not None and len(w[0]) != widths[name]):
            del state.matrices[name]
            notes.append(
                gettext("%(label)s was generated again to fit the new widths")
                % {"label": LABELS[name]}
            )

    state.pad = [p for p in state.pad if p < n]
    if state.mask == "custom":
        start = state.allowed
        if start is None and parsed.visible_cells is not None:
            start = [[(i, j) in parsed.visible_cells for j in range(n)] for i in range(n)]
        causal = att.causal_mask(n)
        state.allowed = [
            [
                bool(start[i][j])
                if start and i < len(start) and j < len(start[i])
                else bool(causal[i, j])
                for j in range(n)
            ]
            for i in range(n)
        ]
    else:
        state.allowed = None
    if state.query is not None and state.query >= n:
        state.query = n - 1
    return state, notes


def apply_action(state: LabState, result: AttentionResult, action: str) -> LabState:
    """A button's effect on a computed state: generate x, or fill one projection."""
    d_model = result.d_model
    state = replace(state, query=result.query.index)
    if action == "generate-x":
        x = att.token_vectors(result.tokens, d_model, state.seed).tolist()
        return replace(state, matrices={**state.matrices, "x": x})
    kind, name = action.split("-", 1)
    width = result.d_v if name == "w_v" else result.d_k
    # Keep every other matrix exactly as it is now, whatever the seed generates next.
    frozen = {m: np.asarray(getattr(result, m)).tolist() for m in MATRICES}
    if kind == "identity":
        frozen[name] = np.eye(d_model, width).tolist()
        return replace(state, matrices=frozen)
    seed = (state.seed + 1) % 2**32
    frozen[name] = att.random_projection(d_model, width, seed, name).tolist()
    return replace(state, seed=seed, matrices=frozen)
