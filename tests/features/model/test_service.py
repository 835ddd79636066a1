"""The model service remembers the last sentences' forward passes and head rankings: a new
head is instant."""

import numpy as np
import pytest

from app.features.model import service
from app.features.model.schemas import ModelRequest
from app.features.model.store import load_model, word_pieces
from app.math import minilm as bert
from app.settings import Settings


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


def test_a_ranking_is_computed_once_per_pair_of_sentences() -> None:
    def ranking(layer: int, compare: str) -> list:
        req = ModelRequest(text="the cat sat", compare_text=compare, layer=layer, head=0,
                           rank_heads=True)  # fmt: skip
        result = service.compute_model(req, Settings())
        assert result.ranking is not None
        return result.ranking

    first = ranking(0, "a dog barked")
    assert ranking(3, "a dog barked") is first  # another head: the same ranking
    other = ranking(0, "a dog slept")
    assert other is not first
    assert [e.similarity for e in other] != [e.similarity for e in first]


class LeftError(Exception):
    """What a server's check raises once the client has gone."""


def test_a_ranking_stops_between_its_parts_when_the_check_says_so() -> None:
    """The ranking's 2 × 6 batches of ablated runs each ask `check` first; a check that
    raises stops the work there, and the half-done ranking is not remembered."""
    req = ModelRequest(text="the bird sang", compare_text="a fish swam", rank_heads=True)
    calls = []

    def check() -> None:
        calls.append(len(calls))
        if len(calls) == 3:
            raise LeftError

    with pytest.raises(LeftError):
        service.compute_model(req, Settings(), check=check)
    assert len(calls) == 3  # it stopped at once
    counted: list[int] = []
    result = service.compute_model(req, Settings(), check=lambda: counted.append(1))
    assert result.ranking is not None
    assert len(counted) == 2 * 6  # computed anew: two sentences, six layers each
