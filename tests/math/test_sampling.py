"""From logits to the next token: probabilities, surprisal, the top candidates, the choice."""

import numpy as np
import pytest

from app.math import sampling as sm

LOGITS = np.array([2.0, -1.0, 0.5, 2.0, 3.0, -5.0])


def softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max())
    return e / e.sum()


def test_log_softmax_is_the_log_of_probabilities_that_sum_to_one() -> None:
    rows = np.array([LOGITS, LOGITS * 100, LOGITS - 1e4])  # huge and shifted rows stay finite
    log_p = sm.log_softmax(rows)
    np.testing.assert_allclose(np.exp(log_p).sum(axis=1), 1.0, rtol=1e-12)
    np.testing.assert_allclose(np.exp(log_p[0]), softmax(LOGITS), rtol=1e-12)
    np.testing.assert_allclose(log_p[0], log_p[2], atol=1e-9)  # a shift changes nothing


def test_surprisal_is_minus_the_log_probability_of_the_token_that_came() -> None:
    rows = np.array([LOGITS, LOGITS[::-1]])
    got = sm.surprisal(rows, np.array([4, 4]))
    expected = [-np.log(softmax(LOGITS)[4]), -np.log(softmax(LOGITS[::-1])[4])]
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    uniform = sm.surprisal(np.zeros((1, 49152)), np.array([7]))
    assert uniform[0] == pytest.approx(np.log(49152))  # ln V when every token is as likely


def test_top_candidates_come_most_likely_first_ties_by_id() -> None:
    ids, p = sm.top_candidates(LOGITS, 3)
    assert ids.tolist() == [4, 0, 3]  # 3.0, then the two 2.0 by id
    np.testing.assert_allclose(p, softmax(LOGITS)[[4, 0, 3]], rtol=1e-12)
    assert sm.top_candidates(LOGITS, 99)[0].tolist() == [4, 0, 3, 2, 1, 5]


def test_greedy_takes_the_most_likely_token() -> None:
    assert sm.Sampler("greedy").choose(LOGITS) == (4, 1.0)


def test_the_same_seed_draws_the_same_tokens_and_another_seed_others() -> None:
    logits = np.random.default_rng(1).standard_normal(1000)

    def draw(seed: int) -> list[int]:
        sampler = sm.Sampler("sample", temperature=1.5, top_k=200, seed=seed)
        return [sampler.choose(logits)[0] for _ in range(20)]

    assert draw(7) == draw(7)
    assert draw(7) != draw(8)


def test_sampling_draws_among_the_top_k_with_their_renormalised_probabilities() -> None:
    sampler = sm.Sampler("sample", temperature=0.5, top_k=2, seed=0)
    drawn = [sampler.choose(LOGITS) for _ in range(200)]
    assert {token for token, _ in drawn} <= {4, 0}  # the two most likely (ties by id)
    p4 = softmax(np.array([3.0, 2.0]) / 0.5)[0]
    assert {round(p, 12) for token, p in drawn if token == 4} == {round(p4, 12)}
    share = sum(token == 4 for token, _ in drawn) / len(drawn)
    assert share == pytest.approx(p4, abs=0.08)


@pytest.mark.parametrize(("temperature", "top_k"), [(0.0, 5), (-1.0, 5), (1.0, 0)])
def test_a_sampler_refuses_a_temperature_or_top_k_it_cannot_use(
    temperature: float, top_k: int
) -> None:
    with pytest.raises(ValueError, match=r"temperature|top_k"):
        sm.Sampler("sample", temperature=temperature, top_k=top_k)
