"""What the /model page shows of a result: the grid of every head, its text version, and the
selected head's stages (laid out for the shared stage strip)."""

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from pydantic import ValidationError

from app.core.errors import InputError, ModelUnavailableError, validation_errors
from app.core.i18n import gettext
from app.features.model.schemas import MODEL_PAGE_DEFAULTS, ModelPageParams
from app.features.model.service import compute_model
from app.features.model.store import MODEL_SHAPE
from app.features.stages.page import _table, head_stages
from app.features.stages.results import OneHead
from app.settings import Settings
from app.web.figures import heatmap
from app.web.multiples import heatmap_grid


def shown_positions(result: Mapping[str, Any], hide_special: bool) -> list[int]:
    """The positions the page shows: all, or all but [CLS] and [SEP]."""
    special = result["special"]
    keep = [i for i in range(len(result["tokens"])) if not (hide_special and special[i])]
    return keep or list(range(len(result["tokens"])))  # a text of special pieces only


def strongest_keys(weights: np.ndarray, tokens: Sequence[str]) -> list[list[dict[str, Any]]]:
    """For each layer and head: the key that gets the most weight, averaged over the
    queries. A text version of the grid, and its links to each head."""
    mean = weights.mean(axis=2)  # (layers, heads, n): each key's average weight
    best = mean.argmax(axis=-1)  # (layers, heads)
    return [
        [{"token": tokens[j], "weight": float(row[h, j])} for h, j in enumerate(bests)]
        for row, bests in zip(mean, best, strict=True)
    ]


BY_TOKEN = ("q", "k", "v", "output")  # n × d_head: one row per token


BY_PAIR = ("scores", "scaled", "allowed", "masked", "weights")  # n × n: query row, key column


PROJECTIONS = {"q": "Q = x·W_Q + b_Q", "k": "K = x·W_K + b_K", "v": "V = x·W_V + b_V"}


def shown_head(head: Mapping[str, Any], keep: list[int], tokens: list[str]) -> OneHead:
    """One trained head's stages at the shown positions, for the stage strip."""
    rows = np.asarray(keep)
    by_token = {name: np.asarray(head[name])[rows] for name in BY_TOKEN}
    by_pair = {name: np.asarray(head[name])[np.ix_(rows, rows)] for name in BY_PAIR}
    everything = len(keep) == len(head["q"])
    return OneHead(
        **by_token,
        **by_pair,
        empty_rows=[keep.index(r) for r in head["empty_rows"] if r in keep],
        tokens=tokens,
        x=np.asarray(head["x"])[rows],
        d_k=head["d_head"],
        scale_factor=head["scale_factor"],
        query=head["query"] if everything else None,  # nothing hidden: the service's own
    )


def model_view(result: Mapping[str, Any], hide_special: bool) -> dict[str, Any]:
    """What the /model page shows of a result: the grid of every head, its text version,
    and the selected head's stages: its 32-wide Q, K, V, then the lab's strip and query
    table. [CLS] and [SEP] may be left out."""
    model = result["model"]
    keep = shown_positions(result, hide_special)
    tokens = [result["tokens"][i] for i in keep]
    weights = result["weights"][:, :, keep][:, :, :, keep]  # (layers, heads, m, m)
    selected = (result["head"]["layer"], result["head"]["head"]) if "head" in result else None
    view: dict[str, Any] = {
        "tokens": tokens,
        "hidden": len(keep) < len(result["tokens"]),
        "grid": heatmap_grid(
            weights,
            tokens,
            [gettext("layer %(i)s") % {"i": i} for i in range(model["layers"])],
            [gettext("head %(h)s") % {"h": i} for i in range(model["heads"])],
            selected,
        ),
        "strongest": strongest_keys(weights, tokens),
    }
    if "head" not in result:
        return view
    head = result["head"]
    shown = shown_head(head, keep, tokens)
    query = head["query"].index
    dims = [f"d{j}" for j in range(head["d_head"])]
    projections = [
        {
            "name": name,
            "title": title,
            "fig": heatmap(
                getattr(shown, name), dims, tokens, title, "diverging", x_title=gettext("dimension")
            ),
            "table": _table(getattr(shown, name), tokens, dims, title),
        }
        for name, title in PROJECTIONS.items()
    ]
    view["projections"] = {"stages": projections, "full_tables": True}
    view["stages"] = head_stages(shown, keep.index(query) if query in keep else 0)
    return view


def model_page(params: Mapping[str, str], settings: Settings) -> tuple[dict[str, Any], int]:
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
        context.update(errors=[exc.msg], unavailable=True)
        return context, 503
    shape = (result["model"]["layers"], result["model"]["heads"])
    context.update(result=result, view=model_view(result, page.hide_special), shape=shape)
    return context, 200
