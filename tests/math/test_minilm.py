"""The numpy encoder against PyTorch's reference numbers (tests/make_model_fixtures.py)."""

import itertools
import math
from pathlib import Path

import numpy as np
import pytest

from app.features.model.store import LoadedModel, load_model, word_pieces
from app.math import ablation
from app.math import minilm as bert
from app.math.attention import attend

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
    head = layer.head(5)
    # float32: a product of the whole matrix and one of a column block may round differently
    # (BLAS picks its blocking by shape), so equal to float32 precision, not bit for bit.
    close = {"rtol": 1e-5, "atol": 1e-6}
    np.testing.assert_allclose(
        head.q, layer.x @ weights.w_q[:, block] + weights.b_q[block], **close
    )
    np.testing.assert_allclose(
        head.k, layer.x @ weights.w_k[:, block] + weights.b_k[block], **close
    )
    np.testing.assert_allclose(
        head.v, layer.x @ weights.w_v[:, block] + weights.b_v[block], **close
    )
    assert head.q.shape == (len(case["pieces"].tokens), 32)
    assert head.scale_factor == pytest.approx(math.sqrt(32))


def test_all_heads_at_once_are_the_labs_one_head_stages(case: dict) -> None:
    for layer in case["stages"].layers[::5]:
        for head in map(layer.head, range(12)):
            one = attend(head.q, head.k, head.v, head.allowed)
            for name in ("scores", "scaled", "masked", "weights", "output"):
                np.testing.assert_allclose(getattr(head, name), getattr(one, name), atol=1e-6)
            assert head.scale_factor == one.scale_factor


def test_the_encoder_is_bidirectional_and_rows_sum_to_one(case: dict) -> None:
    for layer in case["stages"].layers:
        for head in map(layer.head, range(12)):
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
    assert float(bert.gelu_(np.array([x]))[0]) == pytest.approx(exact, rel=2e-7, abs=1e-12)


def test_gelu_works_in_place_and_in_float32() -> None:
    x = np.linspace(-8, 8, 4001, dtype=np.float32)
    exact = np.array([0.5 * v * (1 + math.erf(v / math.sqrt(2))) for v in x.tolist()])
    y = bert.gelu_(x)
    assert y is x
    assert y.dtype == np.float32
    np.testing.assert_allclose(y, exact, rtol=2e-6, atol=1e-8)


def test_erfc_is_float32_accurate_on_a_grid() -> None:
    z = np.linspace(0, 9, 3001)
    exact = np.array([math.erfc(v) for v in z])
    np.testing.assert_allclose(bert.erfc_(z.copy()), exact, rtol=1.3e-7)


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


# ---------------------------------------------------------------- switching heads off


@pytest.fixture(scope="module")
def cat(loaded: LoadedModel) -> tuple[np.ndarray, bert.EncoderStages]:
    ids = word_pieces(loaded, SENTENCES[0]).ids
    return ids, bert.forward(loaded.encoder, ids)


def test_switching_no_head_off_changes_nothing(loaded: LoadedModel, cat: tuple) -> None:
    ids, plain = cat
    none = bert.forward(loaded.encoder, ids, ablate=[])
    assert none.ablated == frozenset()
    np.testing.assert_array_equal(none.embeddings, plain.embeddings)
    for a, b in zip(none.layers, plain.layers, strict=True):
        np.testing.assert_array_equal(a.weights, b.weights)
        np.testing.assert_array_equal(a.attention, b.attention)
        np.testing.assert_array_equal(a.output, b.output)


@pytest.mark.parametrize("name", ["heads", "layer"])
def test_switched_off_heads_match_pytorch_with_a_hook(loaded: LoadedModel, name: str) -> None:
    heads = [tuple(int(v) for v in pair) for pair in REFERENCE[f"ablate/{name}/heads"]]
    stages = bert.forward(loaded.encoder, word_pieces(loaded, SENTENCES[0]).ids, ablate=heads)
    assert stages.ablated == frozenset(heads)
    last = stages.layers[-1]
    np.testing.assert_allclose(
        last.weights, REFERENCE[f"ablate/{name}/last_weights"], atol=TOLERANCE
    )
    np.testing.assert_allclose(last.output, REFERENCE[f"ablate/{name}/last_hidden"], atol=TOLERANCE)
    embedding = bert.sentence_embedding(last.output)
    np.testing.assert_allclose(embedding, REFERENCE[f"ablate/{name}/embedding"], atol=TOLERANCE)
    # …and the change is real: far larger than the tolerance
    assert np.abs(embedding - REFERENCE["0/embedding"]).max() > 100 * TOLERANCE


@pytest.mark.parametrize("number", range(6))
def test_a_layer_with_every_head_off_adds_only_its_output_bias(
    loaded: LoadedModel, cat: tuple, number: int
) -> None:
    ids, _ = cat
    weights = loaded.encoder.layers[number]
    stages = bert.forward(loaded.encoder, ids, ablate=[(number, h) for h in range(12)])
    layer = stages.layers[number]
    np.testing.assert_array_equal(layer.attention, np.broadcast_to(weights.b_o, layer.x.shape))
    config = loaded.encoder.config
    a = bert.layer_norm(layer.x + weights.b_o, weights.norm_1, config.eps)
    np.testing.assert_array_equal(layer.output, bert.feed_forward(a, weights, config))


def test_a_head_off_changes_nothing_before_its_layer(loaded: LoadedModel, cat: tuple) -> None:
    ids, plain = cat
    stages = bert.forward(loaded.encoder, ids, ablate=[(3, 5)])
    for number in range(3):
        np.testing.assert_array_equal(stages.layers[number].output, plain.layers[number].output)
    # layer 3 still attends as before (weights unchanged); only what it passes on differs
    np.testing.assert_array_equal(stages.layers[3].weights, plain.layers[3].weights)
    assert not np.allclose(stages.layers[3].output, plain.layers[3].output, atol=1e-4)
    assert not np.allclose(stages.layers[4].weights, plain.layers[4].weights, atol=1e-4)


@pytest.mark.parametrize("pair", [(-1, 0), (6, 0), (0, 12), (2, -1)])
def test_a_head_that_does_not_exist_is_refused(loaded: LoadedModel, pair: tuple) -> None:
    with pytest.raises(ValueError, match=r"layers 0–5, heads 0–11"):
        bert.forward(loaded.encoder, np.array([101, 102]), ablate=[pair])


def test_batched_layers_agree_with_the_forward_pass(loaded: LoadedModel, cat: tuple) -> None:
    ids, plain = cat
    ablate = [(1, 4), (4, 0)]
    gates = np.stack(
        [
            ablation.head_gates(loaded.encoder.config),
            ablation.head_gates(loaded.encoder.config, ablate),
        ]
    )
    x = np.broadcast_to(plain.embeddings, (2, *plain.embeddings.shape))
    last = ablation.run_layers(loaded.encoder, x, gates)
    np.testing.assert_allclose(last[0], plain.layers[-1].output, atol=1e-5)
    off = bert.forward(loaded.encoder, ids, ablate=ablate)
    np.testing.assert_allclose(last[1], off.layers[-1].output, atol=1e-5)


def test_each_head_off_alone_equals_its_own_forward_pass(loaded: LoadedModel, cat: tuple) -> None:
    """The shortcut (start from the state entering the head's layer, run only that layer's
    rest and the layers after it) gives what a whole ablated run gives, for all 72 heads, on
    top of heads already switched off."""
    ids, _ = cat
    already_off = {(1, 3), (4, 0)}
    base = bert.forward(loaded.encoder, ids, ablate=already_off)
    plain = bert.sentence_embedding(base.layers[-1].output)
    sweep = ablation.single_head_ablations(loaded.encoder, base)
    assert sweep.shape == (6, 12, 384)
    for layer, head in itertools.product(range(6), range(12)):
        if (layer, head) in already_off:  # switching it off again changes nothing
            np.testing.assert_allclose(sweep[layer, head], plain, rtol=0, atol=1e-6)
            continue
        one = bert.forward(loaded.encoder, ids, ablate={*already_off, (layer, head)})
        expected = bert.sentence_embedding(one.layers[-1].output)
        np.testing.assert_allclose(sweep[layer, head], expected, rtol=0, atol=1e-6)
        assert np.abs(expected - plain).max() > 1e-5  # …and the head did matter
    np.testing.assert_allclose(np.linalg.norm(sweep, axis=-1), 1.0, atol=1e-6)


def test_256_word_pieces_match_pytorch(loaded: LoadedModel) -> None:
    pieces = word_pieces(loaded, str(REFERENCE["long/text"]))
    assert len(pieces.ids) == 256
    assert pieces.ids.tolist() == REFERENCE["long/ids"].tolist()
    stages = bert.forward(loaded.encoder, pieces.ids)
    last = stages.layers[-1]
    np.testing.assert_allclose(last.output[[0, -1]], REFERENCE["long/hidden_ends"], atol=TOLERANCE)
    np.testing.assert_allclose(
        last.weights[:, [0, -1]], REFERENCE["long/weights_ends"], atol=TOLERANCE
    )
    embedding = bert.sentence_embedding(last.output)
    np.testing.assert_allclose(embedding, REFERENCE["long/embedding"], atol=TOLERANCE)
