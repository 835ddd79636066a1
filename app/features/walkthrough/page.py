"""The guided walk-through of one head: x → Q, K, V → Q·Kᵀ → ÷√d_k → + M → softmax → × V → Σ.

One step at a time, on any state of the head lab: the walk-through reads the lab's own URL
parameters (app/features/lab/form.py) and shows the lab's own stage figures and tables
(app.views.head_stages), adding only the step it is on, a sentence with that step's numbers,
and, in "predict first" mode, a guess of one weight that the server checks before revealing it.

    /walkthrough?<the lab's parameters>&step=weights&predict=1&key=0&guess=0.6
"""

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
from pydantic import BaseModel, Field
from starlette.datastructures import QueryParams

from app.core.i18n import N_, gettext
from app.features.lab.form import LabForm, text_limits
from app.features.lab.page import LabHead, lab_head
from app.features.lab.schemas import AttentionResult
from app.features.stages.page import Stage, Table, head_stages, matrix_map
from app.features.stages.results import QueryBreakdown
from app.settings import Settings

# (name in the URL, the short label in the step list)
STEPS: tuple[tuple[str, str], ...] = (
    ("x", "x"),
    ("qkv", "Q, K, V"),
    ("scores", "Q·Kᵀ"),
    ("scaled", "÷ √d_k"),
    ("masked", "+ M"),
    ("weights", "softmax"),
    ("weighted", "× V"),
    ("output", "Σ"),
)
STEP_NAMES = tuple(name for name, _ in STEPS)


Text = str | None


class WalkthroughParams(BaseModel):
    """The walk-through's own URL parameters, beside the lab state's (LabForm): the step
    shown and the guess, if any."""

    text_limits = staticmethod(text_limits)  # the lab's text, cut where the lab cuts it

    step: Text = Field(None, description="The step shown: " + ", ".join(STEP_NAMES) + ".")
    predict: Text = Field(None, description="1: guess a weight before it is revealed.")
    key: Text = Field(None, description="The key whose weight is guessed.")
    guess: Text = Field(None, description="The guessed weight, 0 to 1.")


WALK_PARAMS = frozenset(WalkthroughParams.model_fields)
# How far a guess may be from the weight and still count as close / spot on.
SPOT_ON = 0.05
CLOSE = 0.15
VERDICTS = (
    (SPOT_ON, N_("Spot on.")),
    (CLOSE, N_("Close.")),
    (float("inf"), N_("Not quite.")),
)


@dataclass(frozen=True)
class Guess:
    """A student's guess of the weight the query gives one key, and how it went."""

    key: int
    value: float | None  # None until the student has guessed
    weight: float

    @property
    def made(self) -> bool:
        return self.value is not None

    @property
    def off_by(self) -> float:
        return abs((self.value or 0.0) - self.weight)

    @property
    def verdict(self) -> str:
        return gettext(next(text for limit, text in VERDICTS if self.off_by <= limit))


def _number(text: str | None, low: float, high: float) -> float | None:
    try:
        value = float((text or "").replace("−", "-").replace(",", "."))
    except ValueError:
        return None
    return value if np.isfinite(value) and low <= value <= high else None


def split_items(
    items: Iterable[tuple[str, str]],
) -> tuple[list[tuple[str, str]], dict[str, str]]:
    """The lab's state items, and the walk-through's own parameters (last value wins)."""
    lab, own = [], {}
    for key, value in items:
        if key in WALK_PARAMS:
            own[key] = value
        else:
            lab.append((key, value))
    return lab, own


def input_figures(result: AttentionResult) -> dict[str, Stage]:
    """Heatmaps of x, Q, K and V (rows are tokens, columns their dimensions), with tables."""
    tokens = list(result.tokens)
    figures = {}
    for name, title in (("x", "x"), ("q", "Q = x·W_Q"), ("k", "K = x·W_K"), ("v", "V = x·W_V")):
        matrix = np.asarray(getattr(result, name), dtype=float)
        dims = [f"d{j}" for j in range(matrix.shape[1])]
        picture = matrix_map(f"walk-{name}", matrix, tokens, dims, title, gettext("dimension"))
        figures[name] = Stage(name, title, picture, Table(matrix.tolist(), tokens, dims, title))
    return figures


def facts(query: QueryBreakdown) -> dict[str, Any]:
    """The numbers the step sentences quote for the selected query (read, not computed)."""
    rows = query.rows
    visible = [row for row in rows if row.visible]
    best_dot = max(rows, key=lambda row: row.dot)
    heaviest = max(visible, key=lambda row: row.weight) if visible else None
    return {
        "n": len(rows),
        "visible": len(visible),
        "hidden": [row.key_token for row in rows if not row.visible],
        "best_dot": best_dot,
        "heaviest": heaviest,
        "sees_nothing": not visible,
    }


def walkthrough_context(items: Iterable[tuple[str, str]], settings: Settings) -> dict[str, Any]:
    """Query items → everything templates/walkthrough.html shows."""
    lab_items, own = split_items(items)
    lab: LabHead = lab_head(*LabForm.read(QueryParams(lab_items)), settings)
    result = lab.result
    view = head_stages(result.head(), prefix="walk")
    query = view.query
    step = own.get("step") if own.get("step") in STEP_NAMES else STEP_NAMES[0]
    index = STEP_NAMES.index(step)
    corrections = list(lab.notes)
    if own.get("step") and own.get("step") != step:
        corrections.append(
            gettext("step “%(given)s” is not a step of this walk-through: showing “%(shown)s”")
            % {"given": own.get("step"), "shown": step}
        )
    info = facts(query)

    predict = own.get("predict") in ("1", "true", "on")
    visible_keys = [row.key_index for row in query.rows if row.visible]
    key = _number(own.get("key"), 0, len(query.rows) - 1)
    key = int(key) if key is not None and int(key) in visible_keys else None
    if key is None and visible_keys:
        key = visible_keys[0]
    guess = None
    if predict and key is not None:
        value = _number(own.get("guess"), 0.0, 1.0)
        guess = Guess(key, value, query.rows[key].weight)

    state = [(name, str(value)) for name, value in lab.state]
    return {
        "lab": lab,
        "state": state,  # the lab's canonical parameters
        "walk": state + ([("predict", "1")] if predict else []),  # … and the mode
        "view": view,
        "stages": {stage.name: stage for stage in view.stages},
        "inputs": input_figures(result) if step in ("x", "qkv") else {},
        "steps": STEPS,
        "step": step,
        "index": index,
        "previous": STEP_NAMES[index - 1] if index > 0 else None,
        "next": STEP_NAMES[index + 1] if index + 1 < len(STEPS) else None,
        "facts": info,
        "corrections": corrections,  # what the page used instead of the URL's input, said
        "predict": predict,
        "guess": guess,
        "visible_keys": visible_keys,
        # Hold the weights back until the student has guessed.
        "hold_back": step == "weights" and guess is not None and not guess.made,
    }
