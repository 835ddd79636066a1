"""Switching heads off in PyTorch, for the reference scripts (make_model_fixtures.py,
make_decoder_fixtures.py): a forward pre-hook on each layer's output projection zeroes the
heads' slices of its input, the concatenated head outputs, as app/math does before W_O."""

from collections.abc import Callable
from typing import Any


def zero_head_slices(
    projection_of: Callable[[int], Any], heads: tuple[tuple[int, int], ...], d_head: int
) -> list:
    """Hook the output projection of every layer with a head in `heads`; returns the hooks
    (remove them to switch the heads back on)."""
    hooks = []
    for layer in sorted({layer for layer, _ in heads}):
        columns = [h for number, h in heads if number == layer]

        def zero(module, args, columns=columns):  # type: ignore[no-untyped-def]
            (concat,) = args
            concat = concat.clone()
            for h in columns:
                concat[..., h * d_head : (h + 1) * d_head] = 0.0
            return (concat,)

        hooks.append(projection_of(layer).register_forward_pre_hook(zero))
    return hooks
