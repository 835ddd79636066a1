"""Sentence similarity: the model's own job, as published, and the heads it needs."""

import numpy as np
import pytest

from app.features.model.store import load_model, word_pieces
from app.math import ablation
from app.math import minilm as bert
from app.math import similarity as sim

QUICKSTART = ("The weather is lovely today.", "It's so sunny outside!", "He drove to the stadium.")


def embedding(text: str) -> np.ndarray:
    loaded = load_model()
    stages = bert.forward(loaded.encoder, word_pieces(loaded, text).ids)
    return bert.sentence_embedding(stages.layers[-1].output)


@pytest.mark.parametrize(
    ("a", "b", "published"),
    [(0, 1, 0.6660), (0, 2, 0.1046), (1, 2, 0.1411)],
)
def test_the_sentence_transformers_quickstart_similarities(
    a: int, b: int, published: float
) -> None:
    """The similarities printed by the sentence-transformers quickstart for this model."""
    value = float(sim.cosine(embedding(QUICKSTART[a]), embedding(QUICKSTART[b])))
    assert value == pytest.approx(published, abs=1e-3)


def test_cosine_ignores_length_and_sign_follows_direction() -> None:
    a, b = np.array([1.0, 2.0, 2.0]), np.array([2.0, 0.0, 1.0])
    assert float(sim.cosine(a, b)) == pytest.approx(4 / (3 * np.sqrt(5)))
    assert float(sim.cosine(5 * a, 0.1 * b)) == pytest.approx(float(sim.cosine(a, b)))
    assert float(sim.cosine(a, -a)) == pytest.approx(-1.0, abs=1e-15)
    assert float(sim.cosine(a, a)) == pytest.approx(1.0, abs=1e-15)
    batch = sim.cosine(np.stack([a, b]), np.stack([b, b]))
    assert batch.shape == (2,)
    assert batch[1] == pytest.approx(1.0, abs=1e-15)


def test_cosine_of_a_zero_vector_is_refused() -> None:
    with pytest.raises(ValueError, match="zero vector"):
        sim.cosine(np.zeros(3), np.ones(3))


def test_heads_are_ranked_by_how_much_the_similarity_drops_without_them() -> None:
    ablated = np.array([[0.50, 0.40, 0.62], [0.70, 0.45, 0.50]])
    ranking = sim.rank_heads(0.5, ablated)
    # the largest drop first, no change in (layer, head) order, the rises last
    assert [(e.layer, e.head) for e in ranking] == [(0, 1), (1, 1), (0, 0), (1, 2), (0, 2), (1, 0)]
    assert ranking[0].change == pytest.approx(-0.1)
    assert ranking[1].change == pytest.approx(-0.05)
    assert ranking[2].similarity == 0.5
    assert ranking[-1].change == pytest.approx(0.2)


def test_ranking_the_models_heads_for_two_sentences() -> None:
    loaded = load_model()
    runs = [bert.forward(loaded.encoder, word_pieces(loaded, t).ids) for t in QUICKSTART[:2]]
    base = float(sim.cosine(*(bert.sentence_embedding(r.layers[-1].output) for r in runs)))
    sweeps = [ablation.single_head_ablations(loaded.encoder, r) for r in runs]
    ranking = sim.rank_heads(base, sim.cosine(*sweeps))
    assert len(ranking) == 72
    assert len({(e.layer, e.head) for e in ranking}) == 72
    top = ranking[0]
    one_off = [
        bert.forward(loaded.encoder, word_pieces(loaded, t).ids, ablate=[(top.layer, top.head)])
        for t in QUICKSTART[:2]
    ]
    direct = float(sim.cosine(*(bert.sentence_embedding(r.layers[-1].output) for r in one_off)))
    assert top.similarity == pytest.approx(direct, abs=1e-5)
    assert top.change == min(e.change for e in ranking)
    assert [e.change for e in ranking] == sorted(e.change for e in ranking)
    assert top.change < -1e-3  # some head matters
