"""Presentation of computed results: which figures a page shows, with which labels.

Reads finished results; computes no attention arithmetic.
"""

from typing import Any

import numpy as np
from pydantic import ValidationError

from app.config import Settings
from app.errors import InputError, ModelUnavailableError, validation_errors
from app.figures import heatmap, heatmap_grid
from app.model_store import MODEL_SHAPE
from app.schemas import MODEL_PAGE_DEFAULTS, ModelPageParams
from app.service import compute_model


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


# ---------------------------------------------------------------- the trained model's page


def shown_positions(result: dict[str, Any], hide_special: bool) -> list[int]:
    """The positions the page shows: all, or all but [CLS] and [SEP]."""
    special = result["special"]
    keep = [i for i in range(len(result["tokens"])) if not (hide_special and special[i])]
    return keep or list(range(len(result["tokens"])))  # a text of special pieces only


def strongest_keys(weights: np.ndarray, tokens: list[str]) -> list[list[dict[str, Any]]]:
    """For each layer and head: the key that gets the most weight, averaged over the
    queries. A text version of the grid, and its links to each head."""
    mean = weights.mean(axis=2)  # (layers, heads, n): each key's average weight
    best = mean.argmax(axis=-1)  # (layers, heads)
    return [
        [{"token": tokens[j], "weight": float(row[h, j])} for h, j in enumerate(bests)]
        for row, bests in zip(mean, best, strict=True)
    ]


BY_TOKEN = ("q", "k", "v", "output")  # n × d_head: one row per token
BY_PAIR = ("scores", "scaled", "masked", "weights")  # n × n: query row, key column
PROJECTIONS = {"q": "Q = x·W_Q + b_Q", "k": "K = x·W_K + b_K", "v": "V = x·W_V + b_V"}


def model_view(result: dict[str, Any], hide_special: bool) -> dict[str, Any]:
    """What the /model page shows of a result: the grid of every head, its text version,
    and the selected head's stages (Q, K, V, then the lab's strip), [CLS]/[SEP] optional."""
    model = result["model"]
    keep = shown_positions(result, hide_special)
    tokens = [result["tokens"][i] for i in keep]
    selected = (result["head"]["layer"], result["head"]["head"]) if "head" in result else None
    weights = result["weights"][:, :, keep][:, :, :, keep]  # (layers, heads, m, m)
    view: dict[str, Any] = {
        "tokens": tokens,
        "hidden": len(keep) < len(result["tokens"]),
        "grid": heatmap_grid(
            weights,
            tokens,
            [f"layer {i}" for i in range(model["layers"])],
            [f"head {i}" for i in range(model["heads"])],
            selected,
        ),
        "strongest": strongest_keys(weights, tokens),
    }
    if "head" not in result:
        return view
    head = result["head"]
    rows = np.asarray(keep)
    dims = [f"d{j}" for j in range(head["d_head"])]
    tables = {name: head[name][rows] for name in BY_TOKEN}
    tables.update({name: head[name][np.ix_(rows, rows)] for name in BY_PAIR})
    # Figures get 4 decimals (float32's long decimal forms would triple the page's size);
    # the tables format the exact numbers.
    drawn = {name: np.round(table.astype(float), 4) for name, table in tables.items()}
    strip = {
        name: heatmap(drawn[name], dims, tokens, label, "diverging", x_title="dimension")
        for name, label in PROJECTIONS.items()
    }
    widths = {"scale_factor": head["scale_factor"], "d_v": head["d_head"]}
    strip.update(head_figures({**drawn, **widths, "tokens": tokens}))
    view["strip"] = strip
    view["tables"] = tables
    view["dims"] = dims
    return view


def model_page(params: dict[str, str], settings: Settings) -> tuple[dict[str, Any], int]:
    """The /model page's context and status: the view of the URL's sentence and head, or
    the sentences saying what to fix (422) or how to install the model (503)."""
    form = {**MODEL_PAGE_DEFAULTS, **params}
    context: dict[str, Any] = {"form": form, "errors": [], "result": None, "shape": MODEL_SHAPE}
    try:
        page = ModelPageParams.model_validate(form)
        result = compute_model(page.request(), settings)
    except ValidationError as exc:
        context["errors"] = [e["msg"] for e in validation_errors(exc.errors())]
        return context, 422
    except InputError as exc:
        context["errors"] = [exc.msg]
        return context, 422
    except ModelUnavailableError as exc:
        context["errors"] = [exc.msg]
        return context, 503
    shape = (result["model"]["layers"], result["model"]["heads"])
    context.update(result=result, view=model_view(result, page.hide_special), shape=shape)
    return context, 200
