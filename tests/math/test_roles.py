"""Head roles and entropy (Clark et al. 2019) against a plain-Python reading of the weights."""

import math

import numpy as np
import pytest

from app.features.model.store import load_model, word_pieces
from app.math import minilm as bert
from app.math import roles

CAT = "The cat sat on the mat because it was tired"


@pytest.fixture(scope="module")
def cat() -> tuple[list[str], np.ndarray]:
    loaded = load_model()
    pieces = word_pieces(loaded, CAT)
    return pieces.tokens, bert.forward(loaded.encoder, pieces.ids).weights  # (6, 12, n, n)


def plain_roles(w: list[list[float]]) -> dict[str, float]:
    """Clark et al.'s means for one head, with loops over Python floats."""
    n = len(w)
    entropies = [-math.fsum(p * math.log(p) for p in row if p > 0) for row in w]
    return {
        "previous": math.fsum(w[i][i - 1] for i in range(1, n)) / (n - 1),
        "next": math.fsum(w[i][i + 1] for i in range(n - 1)) / (n - 1),
        "self": math.fsum(w[i][i] for i in range(n)) / n,
        "cls": math.fsum(w[i][0] for i in range(n)) / n,
        "sep": math.fsum(w[i][n - 1] for i in range(n)) / n,
        "entropy": math.fsum(entropies) / n,
    }


def plain_labels(means: dict[str, float], n: int) -> list[str]:
    found = [k for k in ("previous", "next", "self") if means[k] > 0.5]
    found += [k for k in ("cls", "sep") if means[k] > 0.6]
    return found + (["broad"] if means["entropy"] >= 0.8 * math.log(n) else [])


def test_every_heads_means_match_a_plain_loop(cat: tuple) -> None:
    _, weights = cat
    means = roles.role_means(weights)
    assert means.previous.shape == (6, 12)
    for layer in range(6):
        for head in range(12):
            plain = plain_roles(weights[layer, head].astype(float).tolist())
            for name, value in plain.items():
                assert means.measure(name)[layer, head] == pytest.approx(value, abs=1e-9), name
            assert means.labels((layer, head)) == plain_labels(plain, means.n)


def test_the_cat_sentence_has_one_previous_token_head(cat: tuple) -> None:
    """Layer 0, head 2 puts almost all of its weight on the token before."""
    _, weights = cat
    means = roles.role_means(weights)
    assert means.heads_with("previous") == [(0, 2)]
    assert means.previous[0, 2] > 0.99
    assert np.sort(means.previous.ravel())[-2] < 0.5


def test_entropy_of_known_rows() -> None:
    uniform = np.full((4, 4), 0.25)
    np.testing.assert_allclose(roles.row_entropy(uniform), math.log(4))
    one_hot = np.eye(3)
    np.testing.assert_array_equal(roles.row_entropy(one_hot), 0.0)  # 0 · ln 0 counts as 0
    half = np.array([[0.5, 0.5, 0.0]])
    assert roles.row_entropy(half)[0] == pytest.approx(math.log(2))
    assert roles.mean_entropy(np.stack([uniform[:3, :3] * 4 / 3, np.eye(3)])).tolist() == (
        pytest.approx([math.log(3), 0.0])
    )


def shifted(n: int, offset: int) -> np.ndarray:
    """Each query puts all its weight on key i + offset (clamped at the ends)."""
    w = np.zeros((n, n))
    for i in range(n):
        w[i, min(max(i + offset, 0), n - 1)] = 1.0
    return w


@pytest.mark.parametrize(
    ("weights", "labels"),
    [
        (shifted(6, -1), ["previous"]),  # query 0 looks at itself, the rest one back
        (shifted(6, 1), ["next"]),
        (np.eye(6), ["self"]),
        (np.full((6, 6), 1 / 6), ["broad"]),
        (np.tile(np.eye(6)[0], (6, 1)), ["cls"]),
        (np.tile(np.eye(6)[5], (6, 1)), ["sep"]),
    ],
)
def test_pure_patterns_get_their_labels(weights: np.ndarray, labels: list[str]) -> None:
    means = roles.role_means(weights[None])
    assert means.labels((0,)) == labels


def test_thresholds_are_strict_for_means() -> None:
    # previous = (0.5 + 0.5) / 2 = 0.5 exactly: not over 0.5; self = 2/3 is
    w = np.array([[1.0, 0.0, 0.0], [0.5, 0.5, 0.0], [0.0, 0.5, 0.5]])
    means = roles.role_means(w)
    assert float(means.previous) == 0.5
    assert means.labels(()) == ["self"]
    n = 4
    cls_only = np.zeros((n, n))
    cls_only[:, 0] = 0.6
    cls_only[:, 1:] = 0.4 / (n - 1)
    assert float(roles.role_means(cls_only).cls) == pytest.approx(0.6, abs=1e-15)
    assert "cls" not in roles.role_means(cls_only).labels(())  # 0.6 is not over 0.6
    cls_only[:, 0] += 1e-9
    assert "cls" in roles.role_means(cls_only).labels(())


def test_broad_starts_at_eight_tenths_of_ln_n() -> None:
    assert roles.broad_threshold(4) == pytest.approx(0.8 * math.log(4))
    # a row with weight p on one key and the rest spread evenly over the other n − 1
    n = 8
    for p, broad in ((0.5, True), (0.7, False)):
        w = np.full((n, n), (1 - p) / (n - 1))
        np.fill_diagonal(w, p)
        means = roles.role_means(w)
        assert (float(means.entropy) >= 0.8 * math.log(n)) is broad
        assert ("broad" in means.labels(())) is broad


def test_attention_to_chosen_keys(cat: tuple) -> None:
    tokens, weights = cat
    means = roles.role_means(weights)
    first = np.array([i == 0 for i in range(len(tokens))])
    np.testing.assert_allclose(roles.attention_to(weights, first), means.cls, atol=1e-12)
    everything = np.ones(len(tokens), dtype=bool)
    np.testing.assert_allclose(roles.attention_to(weights, everything), 1.0, atol=1e-6)


@pytest.mark.parametrize(
    ("piece", "expected"),
    [(".", True), (",", True), ("!", True), ("##-", True), ("...", True), ("'", True),
     ("cat", False), ("##s", False), ("[SEP]", False), ("3", False), ("", False), ("##", False)],
)  # fmt: skip
def test_punctuation_pieces(piece: str, expected: bool) -> None:
    assert roles.is_punctuation(piece) is expected


def test_too_small_or_non_square_weights_are_refused() -> None:
    with pytest.raises(ValueError, match="n ≥ 2"):
        roles.role_means(np.ones((1, 1)))
    with pytest.raises(ValueError, match="square"):
        roles.role_means(np.ones((2, 3)))


# ---------------------------------------------------------------- a causal decoder's heads


def causal_rows(weights: np.ndarray) -> dict[str, np.ndarray]:
    """The per-row measures the decoder's AttentionLog keeps, for one head's n × n weights."""
    n = weights.shape[-1]
    i = np.arange(n)
    return {
        "previous": np.where(i > 0, weights[i, np.maximum(i - 1, 0)], 0.0),
        "itself": weights[i, i],
        "first": weights[:, 0],
        "entropy": roles.row_entropy(weights),
        "visible": i + 1,
    }


def test_causal_roles_label_a_previous_token_head_a_sink_and_a_broad_head() -> None:
    n = 6
    previous = np.eye(n, k=-1)
    previous[0, 0] = 1.0  # query 0 can only see itself
    sink = np.zeros((n, n))
    sink[:, 0] = 1.0
    broad = np.tri(n) / np.arange(1, n + 1)[:, None]  # every visible key alike
    heads = [causal_rows(w) for w in (previous, sink, broad)]
    means = roles.causal_role_means(
        *(
            np.stack([h[name] for h in heads])
            for name in ("previous", "itself", "first", "entropy")
        ),
        heads[0]["visible"],
    )
    # the sink head's query 1 finds position 0 just before it: 1 of 5 rows
    assert means.previous.tolist() == [1.0, 0.2, pytest.approx(np.mean(1 / np.arange(2, n + 1)))]
    assert means.first[1] == 1.0  # queries 1 … 5 all on position 0 (query 0 left out)
    assert means.itself[0] == 0.0
    assert means.broad_at == pytest.approx(0.8 * np.mean(np.log(np.arange(2, n + 1))))
    assert [means.labels((h,)) for h in range(3)] == [["previous"], ["first"], ["broad"]]


def test_causal_roles_of_a_single_token_read_query_zero() -> None:
    one = np.ones((1, 1))
    rows = causal_rows(one)
    means = roles.causal_role_means(
        rows["previous"], rows["itself"], rows["first"], rows["entropy"], rows["visible"]
    )
    assert (float(means.itself), float(means.first), means.broad_at) == (1.0, 1.0, 0.0)


def test_the_induction_score_averages_the_second_copy_only() -> None:
    lookback = np.array([[0.9, 0.9, 0.9, 0.1, 0.3, 0.5, 0.7, 0.0]])  # length 3, then a 7th token
    np.testing.assert_allclose(roles.induction_scores(lookback, 3), [0.3])
