"""What an edit does to the lab state: make the parts agree after a size changed, and the
buttons' one-off actions (generate x, randomize or reset a projection)."""

from dataclasses import replace

import numpy as np

from app.core import rules
from app.core.i18n import gettext, ngettext
from app.features.lab.schemas import AttentionResult
from app.features.lab.state import LABELS, MATRICES, LabState, Parsed
from app.math import attention as att


def fit(parsed: Parsed) -> tuple[LabState, list[str]]:
    """Make the parts agree after an edit changed a size, and say what was regenerated.

    An edit changes only what was edited: the tokens that stay keep their x rows and only
    new tokens get generated rows; a wider d_model, d_k or d_v keeps every column there is and
    generates only the new ones (a narrower one drops the last); the padding, the custom
    pattern and the query follow the number of tokens. Generating everything again is what
    the buttons are for.
    """
    state = replace(parsed.state, matrices=dict(parsed.state.matrices))
    notes: list[str] = list(parsed.notes)
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
        state.matrices["x"] = grown_x(x, tokens, state.d_model or len(x[0]), state.seed)
    x = state.matrices.get("x")
    d_model = state.d_model or (len(x[0]) if x else None)
    for name in MATRICES[1:]:
        w = state.matrices.get(name)
        if w is None or len({len(row) for row in w}) != 1 or d_model is None:
            continue
        state.matrices[name] = grown(w, d_model, widths[name] or len(w[0]), state.seed, name)

    past = [p for p in state.pad if p >= n]
    if past:
        notes.append(
            ngettext(
                "pad %(positions)s is past the last token (%(last)s): left out",
                "pad %(positions)s are past the last token (%(last)s): left out",
                len(past),
            )
            % {"positions": ", ".join(map(str, past)), "last": n - 1}
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
        notes.append(
            gettext("query %(given)s is past the last token (%(last)s): showing %(last)s")
            % {"given": state.query, "last": n - 1}
        )
        state.query = n - 1
    return state, notes


def grown_x(x: list[list[float]], tokens: list[str], d_model: int, seed: int) -> list[list[float]]:
    """x for these tokens and width: the rows and columns it has, generated ones for the rest
    (new tokens' rows from their text, as "Generate from the text" would make them)."""
    fresh = att.token_vectors(tokens, d_model, seed)
    old = np.asarray(x, dtype=float)
    rows, cols = min(len(old), len(tokens)), min(old.shape[1], d_model)
    fresh[:rows, :cols] = old[:rows, :cols]
    return fresh.tolist()


def grown(w: list[list[float]], rows: int, cols: int, seed: int, name: str) -> list[list[float]]:
    """A projection of rows × cols: the entries it has, seeded ones where it grew."""
    old = np.asarray(w, dtype=float)
    if old.shape == (rows, cols):
        return w
    fresh = att.random_projection(rows, cols, seed, name)
    r, c = min(old.shape[0], rows), min(old.shape[1], cols)
    fresh[:r, :c] = old[:r, :c]
    return fresh.tolist()


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
