"""From logits to the next token: probabilities, surprisal, the top candidates, and the choice.

    p(t | context) = softmax(logits)_t = exp(logit_t − m) / Σ_u exp(logit_u − m),  m = max logit
    surprisal      = −ln p(actual next token)          (nats: 0 when certain, ln V when uniform)

Greedy decoding takes the most likely token. Sampling divides the logits by a temperature T
(T < 1 sharpens the distribution, T > 1 flattens it), keeps the k most likely tokens, and draws
one from their renormalised softmax with a seeded generator, so the same seed draws the same
tokens.
"""

from typing import Literal

import numpy as np

Method = Literal["greedy", "sample"]


def log_normaliser(logits: np.ndarray) -> np.ndarray:
    """ln Σ_j exp(logit_j) over the last axis, the largest logit taken out first so that
    nothing overflows: ln p(t) = logit_t − this, for every t of the row."""
    top = logits.max(axis=-1)
    return top + np.log(np.exp(logits - top[..., None]).sum(axis=-1))


def log_softmax(logits: np.ndarray) -> np.ndarray:
    """ln softmax over the last axis: ln p(t) for every t of each row."""
    return logits - log_normaliser(logits)[..., None]


def surprisal_of(normaliser: np.ndarray, logit: np.ndarray) -> np.ndarray:
    """−ln p(t) = ln Σ_j exp(logit_j) − logit_t, from a row's normaliser and its logit of t."""
    return normaliser - logit


def surprisal(logits: np.ndarray, next_ids: np.ndarray) -> np.ndarray:
    """−ln p(next_ids[i] | row i's context) for logits (r, V) and r next tokens → (r,)."""
    return surprisal_of(log_normaliser(logits), logits[np.arange(len(next_ids)), next_ids])


def top_candidates(logits: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The k most likely tokens of one row of logits (V,), most likely first: (ids, p)."""
    k = min(k, logits.shape[-1])
    ids = np.argpartition(-logits, k - 1)[:k]
    ids = ids[np.lexsort((ids, -logits[ids]))]  # by probability, ties by id
    p = np.exp(log_softmax(logits.astype(np.float64))[ids])
    return ids, p


class Sampler:
    """How the next token is chosen: greedy, or a seeded draw at temperature T among the top k.
    One sampler draws one sequence: its generator moves on with every draw."""

    def __init__(
        self, method: Method = "greedy", temperature: float = 1.0, top_k: int = 50, seed: int = 0
    ) -> None:
        if temperature <= 0:
            raise ValueError("the temperature must be above 0")
        if top_k < 1:
            raise ValueError("top_k keeps at least one token")
        self.method, self.temperature, self.top_k = method, temperature, top_k
        self.rng = np.random.default_rng(seed)

    def choose(self, logits: np.ndarray) -> tuple[int, float]:
        """(token id, the probability it was chosen with) for one row of logits (V,)."""
        if self.method == "greedy":
            return int(np.argmax(logits)), 1.0  # the first of equal maxima: the lowest id
        ids, _ = top_candidates(logits, self.top_k)
        scaled = logits[ids].astype(np.float64) / self.temperature
        p = np.exp(log_softmax(scaled))
        pick = int(self.rng.choice(len(ids), p=p))
        return int(ids[pick]), float(p[pick])
