"""The model service remembers the last sentences' forward passes: a new head is instant."""

import numpy as np

from app.features.model import service
from app.features.model.store import load_model, word_pieces
from app.math import minilm as bert


def test_the_same_sentence_runs_once_and_gives_the_same_stages() -> None:
    loaded = load_model()
    ids = word_pieces(loaded, "the cat sat on the mat").ids
    first = service.forward_cached(loaded.encoder, ids)
    assert service.forward_cached(loaded.encoder, ids.copy()) is first
    np.testing.assert_array_equal(first.weights, bert.forward(loaded.encoder, ids).weights)
    other = service.forward_cached(loaded.encoder, word_pieces(loaded, "a dog barked").ids)
    assert other is not first
    assert other.weights.shape[-1] != first.weights.shape[-1]


def test_only_the_last_few_sentences_are_kept() -> None:
    loaded = load_model()
    for k in range(service.FORWARD_CACHE_SIZE + 3):
        service.forward_cached(loaded.encoder, word_pieces(loaded, f"word {k}").ids)
    assert len(service._forward_cache) == service.FORWARD_CACHE_SIZE
