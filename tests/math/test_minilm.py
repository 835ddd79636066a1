"""The numpy encoder against PyTorch's reference numbers (tests/make_model_fixtures.py)."""

import itertools
import math
from pathlib import Path

import numpy as np
import pytest

from app.features.model.store import LoadedModel, load_model, word_pieces
from app.math import minilm as bert

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "model_reference.npz"
REFERENCE = np.load(FIXTURE)
SENTENCES = [str(s) for s in REFERENCE["sentences"]]
TOLERANCE = 1e-5


@pytest.fixture(scope="module")
def loaded() -> LoadedModel:
    return load_model()


@pytest.fixture(scope="module", params=range(len(SENTENCES)), ids=SENTENCES)
def case(request: pytest.FixtureRequest, loaded: LoadedModel) -> dict:
    s = request.param
    pieces = word_pieces(loaded, SENTENCES[s])
    return {
        "ref": {name: REFERENCE[f"{s}/{name}"] for name in ("tokens", "ids", "weights", "hidden")},
        "embedding": REFERENCE[f"{s}/embedding"],
        "pieces": pieces,
        "stages": bert.forward(loaded.encoder, pieces.ids),
    }


def test_word_pieces_match_the_reference_tokenizer(case: dict) -> None:
    pieces = case["pieces"]
    assert pieces.tokens == case["ref"]["tokens"].tolist()
    assert pieces.ids.tolist() == case["ref"]["ids"].tolist()
    assert pieces.tokens[0] == "[CLS]"
    assert pieces.tokens[-1] == "[SEP]"
    assert pieces.special == [True] + [False] * (len(pieces.tokens) - 2) + [True]


def test_every_heads_weights_match_pytorch(case: dict) -> None:
    weights = case["stages"].weights
    assert weights.shape == case["ref"]["weights"].shape  # (6, 12, n, n)
    np.testing.assert_allclose(weights, case["ref"]["weights"], rtol=0, atol=TOLERANCE)


def test_hidden_states_match_pytorch(case: dict) -> None:
    hidden = case["stages"].hidden_states
    for ref, layer in zip(case["ref"]["hidden"], REFERENCE["hidden_layers"], strict=True):
        np.testing.assert_allclose(hidden[layer], ref, rtol=0, atol=TOLERANCE)


def test_sentence_embedding_matches_and_has_length_one(case: dict) -> None:
    embedding = bert.sentence_embedding(case["stages"].layers[-1].output)
    np.testing.assert_allclose(embedding, case["embedding"], rtol=0, atol=TOLERANCE)
    assert float(np.linalg.norm(embedding)) == pytest.approx(1.0, abs=1e-6)


def test_each_layer_starts_from_the_previous_output(case: dict) -> None:
    layers = case["stages"].layers
    for before, after in itertools.pairwise(layers):
        assert after.x is before.output


def test_a_head_is_its_column_block_of_the_projections(loaded: LoadedModel, case: dict) -> None:
    """Row-vector convention: head i's q is x·W_Q[:, block i] + b_Q[block i]."""
    layer = case["stages"].layers[2]
    weights = loaded.encoder.layers[2]
    block = slice(5 * 32, 6 * 32)
    head = layer.heads[5]
    np.testing.assert_allclose(head.q, layer.x @ weights.w_q[:, block] + weights.b_q[block])
    np.testing.assert_allclose(head.k, layer.x @ weights.w_k[:, block] + weights.b_k[block])
    np.testing.assert_allclose(head.v, layer.x @ weights.w_v[:, block] + weights.b_v[block])
    assert head.q.shape == (len(case["pieces"].tokens), 32)
    assert head.scale_factor == pytest.approx(math.sqrt(32))


def test_the_encoder_is_bidirectional_and_rows_sum_to_one(case: dict) -> None:
    for layer in case["stages"].layers:
        for head in layer.heads:
            assert head.allowed.all()
            np.testing.assert_array_equal(head.masked, head.scaled)
            np.testing.assert_allclose(head.weights.sum(axis=-1), 1.0, atol=1e-6)


def test_config_is_read_from_the_model(loaded: LoadedModel) -> None:
    config = loaded.encoder.config
    assert (config.layers, config.heads, config.d_model, config.d_head) == (6, 12, 384, 32)
    assert (config.d_ff, config.eps, config.activation) == (1536, 1e-12, "gelu")
    assert loaded.encoder.layers[0].w_1.shape == (384, 1536)  # stored (1536, 384): transposed


def test_unsupported_activation_is_refused() -> None:
    config = {"hidden_act": "gelu_new", "num_hidden_layers": 1}
    with pytest.raises(ValueError, match="gelu_new"):
        bert.EncoderConfig.from_json(config)


@pytest.mark.parametrize("x", [-6.0, -3.0, -1.5, -0.5, -1e-3, 0.0, 1e-3, 0.5, 1.5, 3.0, 6.0])
def test_gelu_is_the_exact_erf_form(x: float) -> None:
    exact = 0.5 * x * (1 + math.erf(x / math.sqrt(2)))
    assert float(bert.gelu(np.array([x]))[0]) == pytest.approx(exact, rel=2e-7, abs=1e-12)


def test_erfc_is_float32_accurate_on_a_grid() -> None:
    x = np.linspace(-5, 5, 2001)
    exact = np.array([math.erfc(v) for v in x])
    np.testing.assert_allclose(bert.erfc(x), exact, rtol=1.3e-7)


def test_layer_norm_centres_and_scales_each_row() -> None:
    x = np.array([[1.0, 2.0, 3.0, 6.0], [-1.0, 0.0, 0.0, 1.0]])
    norm = bert.LayerNormWeights(np.ones(4), np.zeros(4))
    y = bert.layer_norm(x, norm, 1e-12)
    np.testing.assert_allclose(y.mean(axis=-1), 0.0, atol=1e-12)
    np.testing.assert_allclose(y.var(axis=-1), 1.0, atol=1e-9)
    shifted = bert.layer_norm(x, bert.LayerNormWeights(2 * np.ones(4), np.ones(4)), 1e-12)
    np.testing.assert_allclose(shifted, 2 * y + 1)


def test_split_heads_gives_each_head_its_columns() -> None:
    y = np.arange(2 * 6).reshape(2, 6)  # n = 2, 3 heads of width 2
    heads = bert.split_heads(y, 3)
    assert heads.shape == (3, 2, 2)
    assert heads[1].tolist() == [[2, 3], [8, 9]]
    assert heads.flags.c_contiguous
