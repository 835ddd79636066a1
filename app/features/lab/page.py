"""The head lab's page: the state computed from the URL (never failing on bad input), its
controls, presets and cost panel."""

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from pydantic import ValidationError

from app.core.errors import InputError, validation_errors
from app.core.formatting import number_text
from app.core.i18n import N_, format_number, format_size, gettext
from app.core.limits import MAX_GRID_WIDTH
from app.features.lab.edits import apply_action, fit
from app.features.lab.schemas import AttentionResult
from app.features.lab.service import compute_attention
from app.features.lab.state import (
    LABELS,
    MATRICES,
    LabState,
    StateError,
    parse_items,
)
from app.features.lab.url import encode, state_params
from app.features.stages.page import head_stages
from app.features.stages.service import PositionDemo, position_demo
from app.math.cost import score_bytes, score_entries
from app.settings import Settings
from app.web.nav import NAV


@dataclass
class LabPage:
    """A computed lab: the state shown, its result, its URL, and what went wrong."""

    state: LabState
    result: AttentionResult
    params: list[tuple[str, Any]]  # the canonical state, in URL order
    problems: list[str]
    notes: list[str]
    action: str | None
    demo: PositionDemo | None = None  # shuffle the tokens: does the head notice?

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def query(self) -> str:
        """The canonical query string (without "?")."""
        return encode(self.params)

    @property
    def given(self) -> set[str]:
        """The matrices the URL writes out (the others are generated)."""
        return {name for name, _ in self.params if name in MATRICES}


def _compute(state: LabState, settings: Settings) -> AttentionResult:
    """Raises StateError with readable sentences when the request or its limits are wrong."""
    try:
        return compute_attention(state.to_request(), settings)
    except ValidationError as error:
        raise StateError(" ".join(e["msg"] for e in validation_errors(error.errors()))) from None
    except InputError as error:
        raise StateError(error.msg) from None


def lab_page(items: Iterable[tuple[str, str]], settings: Settings) -> LabPage:
    """Query items → the lab to show. Never raises for bad input: when the state cannot be
    computed, its numbers are generated from the text instead, or the worked example is
    shown, and `problems` says why."""
    parsed = parse_items(items, settings.max_tokens)
    state, notes = fit(parsed)
    problems = list(parsed.problems)
    fallbacks = [
        state,
        replace(state, matrices={}, mask="causal", allowed=None, query=None),
        LabState(),
    ]
    for attempt, candidate in enumerate(fallbacks):
        try:
            result = _compute(candidate, settings)
        except StateError as problem:
            if attempt == 0:
                problems.append(str(problem))
            continue
        if attempt == 1:
            notes.append(
                gettext("The numbers below are generated from the text until that is fixed.")
            )
        elif attempt == 2:
            notes.append(gettext("The page shows the worked example until that is fixed."))
        state = candidate
        break
    if parsed.action and not problems:
        state = apply_action(state, result, parsed.action)
        result = _compute(state, settings)
    params = state_params(state, result, settings)
    demo = position_demo(state.to_request(), result, compute_attention, settings)
    return LabPage(state, result, params, problems, notes, parsed.action, demo)


LONG_SENTENCE = (
    "On a quiet morning the old fisherman walked down to the harbour, checked the ropes of "
    "his small blue boat, and watched the gulls circle above the calm grey water until sunrise"
)


GENERATED = {"d_model": 4, "d_k": 4, "d_v": 4}


def _preset(tokens: str, **rest: Any) -> str:
    return "/?" + encode([("tokens", tokens), *GENERATED.items(), *rest.items()])


PRESETS: list[tuple[str, str, str]] = [
    (
        N_("Worked example"),
        "/",
        N_("“The cat sleeps”, causal: the numbers of the worked example."),
    ),
    (
        N_("Repeated tokens"),
        _preset("the cat saw the cat", mask="bidirectional", query=3),
        N_("Equal words get equal rows when nothing marks their position."),
    ),
    (
        N_("Padded sequence"),
        _preset("Hello world <pad> <pad>", mask="bidirectional", pad="2,3", query=1),
        N_("Two padding tokens that no query may look at."),
    ),
    (
        N_("Sliding window"),
        _preset("one two three four five six seven eight", mask="window", window=3, query=7),
        N_("Each token sees itself and the two tokens before it."),
    ),
    (
        N_("Longer sentence (n = 32)"),
        _preset(LONG_SENTENCE, mask="causal", query=31),
        N_("Thirty-two tokens with generated vectors: a strip too big for printed values."),
    ),
]


MASK_MODES = [
    ("causal", N_("Causal (a decoder)")),
    ("bidirectional", N_("Bidirectional (an encoder)")),
    ("window", N_("Sliding window")),
    ("custom", N_("Custom pattern")),
]


PATTERN_UP_TO = 16  # the custom pattern is edited by clicking n × n cells


REFERENCE_LENGTH = 4096  # the cost panel's comparison, as in the worked example's table


def lab_editor(page: LabPage) -> dict[str, Any]:
    """The controls of the lab, filled in with the state shown (exact numbers, so that the
    form sends back what it received)."""
    result, state = page.result, page.state
    tokens = list(result.tokens)
    d_model, d_k, d_v = (result.d_model, result.d_k, result.d_v)
    inputs = [f"x{d}" for d in range(d_model)]
    shapes = {
        "x": (tokens, [f"d{d}" for d in range(d_model)]),
        "w_q": (inputs, [f"q{d}" for d in range(d_k)]),
        "w_k": (inputs, [f"k{d}" for d in range(d_k)]),
        "w_v": (inputs, [f"v{d}" for d in range(d_v)]),
    }
    grids = [
        {
            "name": name,
            "label": LABELS[name],
            "rows": [
                (rows[i], [number_text(v) for v in line])
                for i, line in enumerate(np.asarray(getattr(result, name)).tolist())
            ],
            "cols": cols,
            "given": name in page.given,
        }
        for name, (rows, cols) in shapes.items()
    ]
    n = len(tokens)
    pattern = state.pattern().tolist() if n <= PATTERN_UP_TO else None
    return {
        "text": " ".join(tokens),
        "tokens": tokens,
        "dims": {"d_model": d_model, "d_k": d_k, "d_v": d_v},
        "widths": range(1, MAX_GRID_WIDTH + 1),
        "seed": state.seed,
        "grids": grids,
        "modes": MASK_MODES,
        "mask": state.mask,
        "window": state.window,
        "pattern": pattern,
        "pad": set(state.pad),
        "scale": state.scale,
        "positional": state.positional,
        "query": result.query.index,
    }


def cost_panel(n: int) -> dict[str, Any]:
    """One head's score matrix now and at 4,096 tokens (one source: app/math/cost.py)."""
    return {
        "n": n,
        "entries": format_number(score_entries(n)),
        "size": format_size(score_bytes(n)),
        "reference": format_number(REFERENCE_LENGTH),
        "reference_entries": format_number(score_entries(REFERENCE_LENGTH)),
        "reference_size": format_size(score_bytes(REFERENCE_LENGTH)),
        "link": "/cost" if any(path == "/cost" for path, _ in NAV) else None,
    }


def lab_context(page: LabPage, with_editor: bool = True) -> dict[str, Any]:
    """Everything templates/lab.html and its fragment show (the fragment of a live edit
    leaves the controls out, so their contents are not built for it)."""
    n = len(page.result.tokens)
    return {
        "page": page,
        "result": page.result,
        "view": head_stages(page.result.head()),
        "with_editor": with_editor,
        "editor": lab_editor(page) if with_editor else None,
        "presets": PRESETS,
        "cost": cost_panel(n),
        "demo": page.demo,
        "state_query": page.query,
    }
