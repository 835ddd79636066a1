"""From a ModelRequest to the /api/model result: word pieces, every head's weights, what the
heads do (roles, entropy, rollout), the sentence embedding with any heads switched off, a
second sentence's similarity and the heads it needs, and one head's stages on request."""

from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from threading import Lock
from typing import Any, TypeVar

import numpy as np

from app.core.budget import check_answer
from app.core.errors import InputError
from app.core.i18n import gettext
from app.core.limits import MAX_RANKED_PIECES, MAX_WORD_PIECES
from app.features.model.results import (
    AttentionTo,
    Compared,
    HeadRole,
    ModelHead,
    ModelInfo,
    ModelResult,
)
from app.features.model.schemas import ModelRequest
from app.features.model.store import LoadedModel, Pieces, load_model, word_pieces
from app.features.stages.results import StageFields, query_breakdown
from app.features.stages.service import check_index
from app.math import ablation
from app.math import minilm as bert
from app.math import roles as rl
from app.math.rollout import attention_rollout, input_share
from app.math.similarity import HeadEffect, cosine, rank_heads
from app.settings import Settings

T = TypeVar("T")


class Recent:
    """The last `size` results of an expensive computation, by key. Thread-safe; the results
    are shared, so callers read them and never write to them."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[Hashable, Any] = OrderedDict()
        self._lock = Lock()

    def __len__(self) -> int:
        return len(self._items)

    def get(self, key: Hashable, compute: Callable[[], T]) -> T:
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
        value = compute()
        with self._lock:
            self._items[key] = value
            while len(self._items) > self.size:
                self._items.popitem(last=False)
        return value


FORWARD_CACHE_SIZE = 8  # runs whose every layer is kept: changing the head is instant
_forward_cache = Recent(FORWARD_CACHE_SIZE)
RANKING_CACHE_SIZE = 8  # rankings of sentence pairs: the page asks again when the head changes
_ranking_cache = Recent(RANKING_CACHE_SIZE)


def forward_cached(
    encoder: bert.Encoder, ids: Any, ablate: Sequence[tuple[int, int]] = ()
) -> bert.EncoderStages:
    """bert.forward, remembered for the last few runs: the page asks for the same sentence
    again whenever the layer, head or query changes."""
    key = (id(encoder), bytes(memoryview(ids)), tuple(ablate))
    return _forward_cache.get(key, lambda: bert.forward(encoder, ids, ablate=ablate))


def _pieces(loaded: LoadedModel, text: str, field: str) -> Pieces:
    pieces = word_pieces(loaded, text)
    n = len(pieces.tokens)
    if n > MAX_WORD_PIECES:
        raise InputError(
            (field,),
            gettext(
                "%(field)s makes %(n)s word pieces ([CLS] and [SEP] included) but the model "
                "reads at most %(most)s; shorten it"
            )
            % {"field": field, "n": n, "most": MAX_WORD_PIECES},
        )
    return pieces


def _ablate(req: ModelRequest, layers: int, heads: int) -> list[tuple[int, int]]:
    for i, (layer, head) in enumerate(req.ablate):
        if layer >= layers or head >= heads:
            raise InputError(
                ("ablate", i),
                gettext(
                    "ablate[%(i)s] is [%(layer)s, %(head)s] but the model has layers 0 to "
                    "%(last_layer)s and heads 0 to %(last_head)s in each; pick a head that exists"
                )
                % {
                    "i": i,
                    "layer": layer,
                    "head": head,
                    "last_layer": layers - 1,
                    "last_head": heads - 1,
                },
            )
    return sorted({(layer, head) for layer, head in req.ablate})


def head_roles(means: rl.RoleMeans) -> list[list[HeadRole]]:
    layers, heads = means.entropy.shape
    return [
        [
            HeadRole(
                {
                    "previous": float(means.previous[layer, head]),
                    "next": float(means.next[layer, head]),
                    "self": float(means.itself[layer, head]),
                    "cls": float(means.cls[layer, head]),
                    "sep": float(means.sep[layer, head]),
                    "entropy": float(means.entropy[layer, head]),
                    "labels": means.labels((layer, head)),
                }
            )
            for head in range(heads)
        ]
        for layer in range(layers)
    ]


def attention_to(weights: np.ndarray, tokens: list[str]) -> AttentionTo:
    n = len(tokens)
    positions = np.arange(n)
    punctuation = np.array([rl.is_punctuation(t) for t in tokens])
    return AttentionTo(
        cls=rl.attention_to(weights, positions == 0),
        sep=rl.attention_to(weights, positions == n - 1),
        punctuation=rl.attention_to(weights, punctuation),
    )


def _embedding(stages: bert.EncoderStages) -> np.ndarray:
    return bert.sentence_embedding(stages.layers[-1].output)


def _ranking(
    loaded: LoadedModel,
    pieces: tuple[Pieces, Pieces],
    runs: tuple[bert.EncoderStages, bert.EncoderStages],
    base: float,
    if_short: bool,
    check: Callable[[], None],
) -> list[HeadEffect] | None:
    longest = max(len(p.ids) for p in pieces)
    if longest > MAX_RANKED_PIECES and if_short:
        return None
    if longest > MAX_RANKED_PIECES:
        raise InputError(
            ("rank_heads",),
            gettext(
                "ranking the heads runs both sentences 144 times, so it is offered for "
                "sentences of at most %(most)s word pieces; one has %(n)s: shorten it"
            )
            % {"most": MAX_RANKED_PIECES, "n": longest},
        )

    def rank() -> list[HeadEffect]:
        sweeps = [ablation.single_head_ablations(loaded.encoder, run, check) for run in runs]
        return rank_heads(base, cosine(*sweeps))

    key = (id(loaded.encoder), *(bytes(memoryview(p.ids)) for p in pieces), runs[0].ablated)
    return _ranking_cache.get(key, rank)


def still_wanted() -> None:
    """The default `check`: nobody is asking whether the caller has left."""


def compute_model(
    req: ModelRequest,
    settings: Settings,
    rank_if_short: bool = False,
    as_json: bool = True,
    check: Callable[[], None] = still_wanted,
) -> ModelResult:
    """The whole /api/model result for one request.

    rank_if_short (the page's choice): with a second sentence, rank the heads as well when
    both sentences are short enough for it, instead of only when `rank_heads` asks.
    as_json: the answer is this result as JSON, so it must fit the answer budget. The page
    (as_json=False) sends the weights pooled into thumbnails, never the n × n maps.
    check: called between the parts of the ranking (2 sentences × 6 layers of ablated runs);
    it raises to stop the work, when the client has left. An interrupted ranking is not
    remembered.
    """
    loaded = load_model(settings.model_dir)
    pieces = _pieces(loaded, req.text, "text")
    n = len(pieces.tokens)
    config = loaded.encoder.config
    check_index("layer", req.layer, config.layers, "layers")
    check_index("head", req.head, config.heads, "heads in each layer")
    query = req.query if req.query is not None else min(1, n - 1)
    check_index("query", query, n, "word pieces")
    off = _ablate(req, config.layers, config.heads)
    other = _pieces(loaded, req.compare_text, "compare_text") if req.compare_text else None
    shape = (config.layers, config.heads, config.d_model, config.d_head)
    one_head = req.layer is not None and req.head is not None
    compare_n = len(other.tokens) if other else 0
    if as_json:
        size = ModelResult.answer_bytes(n, shape, req.include_weights, one_head, compare_n)
        check_answer(size, settings.answer_budget_bytes, ("text", "include_weights"))

    stages = forward_cached(loaded.encoder, pieces.ids, off)
    weights = stages.weights  # (layers, heads, n, n)
    embedding = _embedding(stages)
    unablated = None
    if off:
        unablated = float(cosine(embedding, _embedding(forward_cached(loaded.encoder, pieces.ids))))
    rollout = attention_rollout(weights)[-1]
    extra: dict[str, Any] = {}
    if other is not None:
        second = forward_cached(loaded.encoder, other.ids, off)
        similarity = float(cosine(embedding, _embedding(second)))
        extra.update(similarity=similarity, compare=Compared(other.tokens, _embedding(second)))
        if req.rank_heads or rank_if_short:
            extra["ranking"] = _ranking(
                loaded, (pieces, other), (stages, second), similarity, not req.rank_heads, check
            )
    if req.layer is not None and req.head is not None:
        layer = stages.layers[req.layer]
        head = layer.head(req.head)
        stage = StageFields.of(head)
        extra["head"] = ModelHead(
            **stage.fields(),
            layer=req.layer,
            head=req.head,
            d_head=config.d_head,
            scale_factor=head.scale_factor,
            ablated=req.head in layer.ablated,
            x=layer.x,
            query=query_breakdown(pieces.tokens, stage, query),
        )
    means = rl.role_means(weights)
    return ModelResult(
        model=ModelInfo(
            loaded.name, config.layers, config.heads, config.d_head, config.d_model, loaded.source
        ),
        tokens=pieces.tokens,
        ids=pieces.ids,
        special=pieces.special,
        ablate=off,
        weights=weights if req.include_weights else None,
        embedding=embedding,
        unablated_cosine=unablated,
        entropy=means.entropy,
        roles=head_roles(means),
        attention_to=attention_to(weights, pieces.tokens),
        rollout=rollout,
        input_share=input_share(rollout),
        **extra,
    )
