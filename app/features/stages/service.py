"""What every one-head computation shares: the token sequence with its x rows, the mask, the
stage fields, the key-by-key breakdown of one query, and the shuffle demo of position."""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from app.core import rules
from app.core.arrays import Matrix
from app.core.errors import InputError
from app.core.i18n import gettext
from app.features.stages.schemas import MaskSpec, SequenceRequest
from app.math import attention as att
from app.math import positional as pos
from app.math.positional import Positional
from app.settings import Settings

DEFAULT_D_MODEL = 4


def _is_worked_example(req: SequenceRequest, tokens: list[str]) -> bool:
    """The worked example's numbers apply when the request changes nothing they depend on."""
    return (
        tuple(tokens) == rules.WORKED_TOKENS
        and req.seed == 0
        and req.given_d_model() in (None, rules.WORKED_X.shape[1])
        and (req.x is None or np.array_equal(req.x, rules.WORKED_X))
    )


def check_index(name: str, value: int | None, count: int, what: str) -> None:
    """A 0-based position must name one of the `count` things there are."""
    if value is not None and value >= count:
        raise InputError(
            (name,),
            gettext(
                "%(name)s is %(value)s but there are %(count)s %(what)s, numbered 0 to "
                "%(last)s; pick one of those"
            )
            % {"name": name, "value": value, "count": count, "what": what, "last": count - 1},
        )


def resolve_sequence(req: SequenceRequest) -> tuple[list[str], np.ndarray, bool]:
    """The tokens, their x rows (given, the worked example's, or generated from the text at
    the width the request fixes), and whether this is the worked example."""
    tokens = list(req.tokens) if req.tokens is not None else list(rules.WORKED_TOKENS)
    worked = _is_worked_example(req, tokens)
    if req.x is not None:
        x = np.array(req.x, dtype=float)
    elif worked:
        x = rules.WORKED_X.copy()
    else:
        x = att.token_vectors(tokens, req.given_d_model() or DEFAULT_D_MODEL, req.seed)
    return tokens, x, worked


def check_rope(positional: Positional, name: str, width: int) -> None:
    """RoPE rotates pairs of numbers, so q and k need an even width."""
    if positional == "rope" and width % 2:
        raise InputError(
            ("positional",),
            gettext(
                "positional is rope, which rotates q and k in pairs of numbers, but %(name)s "
                "is %(width)s (odd); choose an even %(name)s or another positional kind"
            )
            % {"name": name, "width": width},
        )


def mask_of(spec: MaskSpec, n: int) -> np.ndarray:
    return att.build_mask(n, spec.causal, spec.padding, spec.window, spec.allowed)


def shuffled_mask(mask: MaskSpec, perm: np.ndarray) -> MaskSpec:
    """The mask's per-token parts travel with their tokens; causal and window stay put,
    because they are defined by position."""
    update: dict[str, Any] = {}
    if mask.padding is not None:
        update["padding"] = [mask.padding[p] for p in perm]
    if mask.allowed is not None:
        update["allowed"] = np.asarray(mask.allowed)[np.ix_(perm, perm)].tolist()
    return mask.model_copy(update=update)


@dataclass(frozen=True, kw_only=True)
class PositionDemo:
    """The tokens shuffled (with their x rows and the same weights) and computed again: are
    the output rows merely the old rows shuffled the same way? And do repeated tokens get
    identical output rows?"""

    order: list[int]  # the shuffled position of each token
    tokens: list[str]  # in the shuffled order
    output: Matrix  # computed on the shuffled sequence
    expected: Matrix  # the original output rows, shuffled the same way
    gap: float  # largest difference between the two
    equivariant: bool  # gap < 1e-9: the head did not notice the order
    position_in_mask: bool  # a causal mask or window is itself a kind of position
    repeats: list[dict[str, Any]]  # repeated tokens and how far apart their output rows are


class Shuffleable(Protocol):
    """A computed result the demo can shuffle: tokens, x and the output (and projections)."""

    tokens: list[str]
    x: np.ndarray
    output: np.ndarray


def position_demo(
    req: SequenceRequest,
    result: Shuffleable,
    compute: Callable[[Any, Settings], Shuffleable],
    settings: Settings,
) -> PositionDemo:
    """Shuffle the tokens (with their x rows and the same weights), compute again, and
    measure whether the output rows are merely the old rows shuffled the same way; also
    whether repeated tokens got identical output rows."""
    tokens = result.tokens
    perm = pos.shuffle_order(len(tokens), req.seed)
    update: dict[str, Any] = {
        "tokens": [tokens[p] for p in perm],
        "x": result.x[perm].tolist(),
        "mask": shuffled_mask(req.mask, perm),
    }
    for name in ("w_q", "w_k", "w_v", "w_o"):
        if hasattr(result, name):
            update[name] = getattr(result, name).tolist()
    shuffled = compute(req.model_copy(update=update), settings)
    gap = pos.permutation_gap(result.output, shuffled.output, perm)
    return PositionDemo(
        order=perm.tolist(),
        tokens=update["tokens"],
        output=shuffled.output,
        expected=result.output[perm],
        gap=gap,
        equivariant=gap < 1e-9,
        position_in_mask=bool(req.mask.causal or req.mask.window is not None),
        repeats=pos.repeated_token_gaps(tokens, result.output),
    )
