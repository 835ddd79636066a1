"""From a ModelRequest to the /api/model result: word pieces, every head's weights, the sentence
embedding, and one head's stages on request."""

from collections import OrderedDict
from threading import Lock
from typing import Any

from app.core.errors import InputError
from app.core.limits import MAX_WORD_PIECES
from app.features.model.schemas import ModelRequest
from app.features.model.store import load_model, word_pieces
from app.features.stages.results import StageFields, query_breakdown
from app.features.stages.service import check_index
from app.math import minilm as bert
from app.settings import Settings

FORWARD_CACHE_SIZE = 8  # sentences whose every layer is kept: changing the head is instant
_forward_cache: OrderedDict[tuple[int, bytes], bert.EncoderStages] = OrderedDict()
_forward_lock = Lock()


def forward_cached(encoder: bert.Encoder, ids: Any) -> bert.EncoderStages:
    """bert.forward, remembered for the last few sentences: the page asks for the same
    sentence again whenever the layer, head or query changes. The stages are shared, so
    callers read them and never write to them."""
    key = (id(encoder), bytes(memoryview(ids)))
    with _forward_lock:
        if key in _forward_cache:
            _forward_cache.move_to_end(key)
            return _forward_cache[key]
    stages = bert.forward(encoder, ids)
    with _forward_lock:
        _forward_cache[key] = stages
        while len(_forward_cache) > FORWARD_CACHE_SIZE:
            _forward_cache.popitem(last=False)
    return stages


def compute_model(req: ModelRequest, settings: Settings) -> dict[str, Any]:
    """The whole /api/model result: every head's weights, and one head's stages if asked."""
    loaded = load_model(settings.model_dir)
    pieces = word_pieces(loaded, req.text)
    n = len(pieces.tokens)
    if n > MAX_WORD_PIECES:
        raise InputError(
            ("text",),
            f"text makes {n} word pieces ([CLS] and [SEP] included) but the model reads at "
            f"most {MAX_WORD_PIECES}; shorten it",
        )
    config = loaded.encoder.config
    check_index("layer", req.layer, config.layers, "layers")
    check_index("head", req.head, config.heads, "heads in each layer")
    query = req.query if req.query is not None else min(1, n - 1)
    check_index("query", query, n, "word pieces")
    stages = forward_cached(loaded.encoder, pieces.ids)
    result: dict[str, Any] = {
        "model": {
            "name": loaded.name,
            "layers": config.layers,
            "heads": config.heads,
            "d_head": config.d_head,
            "d_model": config.d_model,
            "source": loaded.source,
        },
        "tokens": pieces.tokens,
        "ids": pieces.ids,
        "special": pieces.special,
        "weights": stages.weights,  # (layers, heads, n, n)
        "embedding": bert.sentence_embedding(stages.layers[-1].output),
    }
    if req.layer is not None and req.head is not None:
        layer = stages.layers[req.layer]
        head = layer.heads[req.head]
        fields = StageFields.of(head)
        result["head"] = {
            "layer": req.layer,
            "head": req.head,
            "d_head": config.d_head,
            "scale_factor": head.scale_factor,
            "x": layer.x,
            **fields.fields(),
            "query": query_breakdown(pieces.tokens, fields, query),
        }
    return result
