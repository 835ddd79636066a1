"""Presentation of computed results: which figures a page shows, with which labels.

Reads finished results; computes no attention arithmetic.
"""

from typing import Any

from app.figures import heatmap


def head_figures(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The heatmap strip of one head, stage by stage."""
    tokens = result["tokens"]
    k = f"{result['scale_factor']:.3g}"
    return {
        "scores": heatmap(result["scores"], tokens, tokens, "Q·Kᵀ", "diverging"),
        "scaled": heatmap(result["scaled"], tokens, tokens, f"÷ √d_k = ÷ {k}", "diverging"),
        "masked": heatmap(result["masked"], tokens, tokens, "+ M (−∞ where hidden)", "diverging"),
        "weights": heatmap(result["weights"], tokens, tokens, "softmax weights"),
        "output": heatmap(
            result["output"],
            [f"d{j}" for j in range(result["d_v"])],
            tokens,
            "output = weights · V",
            "diverging",
            x_title="output dimension",
        ),
    }
