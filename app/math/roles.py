"""What a trained head does, read from its weights: the measures of Clark et al. (2019).

"What Does BERT Look At? An Analysis of BERT's Attention" describes heads by where their
weight goes on average. For one head's weights w (n × n, row i = query i, rows sum to 1):

    previous = mean over i ≥ 1      of w[i, i − 1]      (the token before)
    next     = mean over i ≤ n − 2  of w[i, i + 1]      (the token after)
    self     = mean over i          of w[i, i]
    cls      = mean over i          of w[i, 0]          ([CLS], the first piece)
    sep      = mean over i          of w[i, n − 1]      ([SEP], the last piece)
    entropy  = mean over i of H(w[i]) = −Σ_j w[i, j] · ln w[i, j]   (nats, 0 · ln 0 = 0)

A head gets a label when its mean passes a threshold: previous, next or self above 0.5,
cls or sep above 0.6, and broad when its mean entropy is at least 0.8 · ln n (ln n is the
entropy of a row spread evenly over all n keys). Every function takes the weights of any
number of heads at once, (…, n, n), and returns one number per head, (…).
"""

import math
import unicodedata
from dataclasses import dataclass

import numpy as np

POSITION_THRESHOLD = 0.5  # previous, next, self
SPECIAL_THRESHOLD = 0.6  # cls, sep
BROAD_FRACTION = 0.8  # of ln n
LABELS = ("previous", "next", "self", "cls", "sep", "broad")


def row_entropy(weights: np.ndarray) -> np.ndarray:
    """H(row) = −Σ_j w_j · ln w_j in nats for each row, (…, n, n) → (…, n); 0 · ln 0 = 0."""
    w = np.asarray(weights, dtype=np.float64)
    logs = np.log(np.where(w > 0, w, 1.0))  # ln 1 = 0 where w = 0
    return np.maximum(-(w * logs).sum(axis=-1), 0.0)  # rounding can give −1e-17


def mean_entropy(weights: np.ndarray) -> np.ndarray:
    """The mean over queries of each row's entropy, (…, n, n) → (…)."""
    return row_entropy(weights).mean(axis=-1)


def broad_threshold(n: int) -> float:
    """0.8 · ln n: a head at least this spread out is labelled broad."""
    return BROAD_FRACTION * math.log(n)


@dataclass(frozen=True)
class RoleMeans:
    """Clark et al.'s numbers for each head, every array of shape (…), e.g. (layers, heads)."""

    n: int  # word pieces, [CLS] and [SEP] included
    previous: np.ndarray
    next: np.ndarray
    itself: np.ndarray  # "self" in the API: the mean diagonal weight
    cls: np.ndarray
    sep: np.ndarray
    entropy: np.ndarray  # nats

    def measure(self, name: str) -> np.ndarray:
        """The array behind one label's name ("self" included)."""
        return self.itself if name == "self" else getattr(self, name)

    def labels(self, index: tuple[int, ...]) -> list[str]:
        """The labels of one head, in the order of LABELS."""
        found = [
            name
            for name, limit in (
                ("previous", POSITION_THRESHOLD),
                ("next", POSITION_THRESHOLD),
                ("self", POSITION_THRESHOLD),
                ("cls", SPECIAL_THRESHOLD),
                ("sep", SPECIAL_THRESHOLD),
            )
            if self.measure(name)[index] > limit
        ]
        if self.entropy[index] >= broad_threshold(self.n):
            found.append("broad")
        return found

    def heads_with(self, label: str) -> list[tuple[int, ...]]:
        """Every head index carrying `label`, in index order."""
        return [i for i in np.ndindex(self.entropy.shape) if label in self.labels(i)]


def role_means(weights: np.ndarray) -> RoleMeans:
    """Clark et al.'s measures for every head of weights (…, n, n), n ≥ 2."""
    w = np.asarray(weights, dtype=np.float64)
    n = w.shape[-1]
    if n < 2 or w.shape[-2] != n:
        raise ValueError(f"role_means needs square weights with n ≥ 2, not {w.shape[-2:]}")
    return RoleMeans(
        n=n,
        previous=np.diagonal(w, offset=-1, axis1=-2, axis2=-1).mean(axis=-1),  # w[i, i−1]
        next=np.diagonal(w, offset=1, axis1=-2, axis2=-1).mean(axis=-1),  # w[i, i+1]
        itself=np.diagonal(w, axis1=-2, axis2=-1).mean(axis=-1),
        cls=w[..., :, 0].mean(axis=-1),
        sep=w[..., :, n - 1].mean(axis=-1),
        entropy=mean_entropy(w),
    )


def attention_to(weights: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Mean over queries of the total weight on the chosen keys, (…, n, n) → (…).

    keys: n booleans. Clark et al.'s Figure 2 plots this per head and layer for [CLS],
    [SEP] and punctuation.
    """
    chosen = np.asarray(keys, dtype=bool)
    return np.asarray(weights, dtype=np.float64)[..., chosen].sum(axis=-1).mean(axis=-1)


def is_punctuation(piece: str) -> bool:
    """A word piece made only of punctuation characters ("." "," "!" "##-" …)."""
    text = piece.removeprefix("##")
    return bool(text) and all(unicodedata.category(c).startswith("P") for c in text)


# ---------------------------------------------------------------- a causal decoder's heads
#
# A decoder's query i sees only keys 0 … i, so its measures are read from what each row saw:
# the weight on the previous position, on itself and on the first position (a head whose
# rows pile their weight there is an attention sink), and the entropy against ln of the keys
# the row could see. Query 0 sees itself alone and says nothing about a head: the means are
# over queries 1 … n − 1 (over query 0 only when it is the whole sequence).

FIRST_THRESHOLD = 0.5


@dataclass(frozen=True)
class CausalRoleMeans:
    """Each head's means, arrays of shape (…), e.g. (layers, heads)."""

    previous: np.ndarray
    itself: np.ndarray  # "self" in the API
    first: np.ndarray  # the weight on position 0
    entropy: np.ndarray  # nats
    broad_at: float  # 0.8 · the mean over the same queries of ln(keys seen)

    def labels(self, index: tuple[int, ...]) -> list[str]:
        """previous, self (> 0.5), first (> 0.5), broad (entropy ≥ broad_at), in that order."""
        found = [
            name
            for name, values, limit in (
                ("previous", self.previous, POSITION_THRESHOLD),
                ("self", self.itself, POSITION_THRESHOLD),
                ("first", self.first, FIRST_THRESHOLD),
            )
            if values[index] > limit
        ]
        if self.entropy[index] >= self.broad_at:
            found.append("broad")
        return found


def causal_role_means(
    previous: np.ndarray,
    itself: np.ndarray,
    first: np.ndarray,
    entropy: np.ndarray,
    visible: np.ndarray,
) -> CausalRoleMeans:
    """Means of per-row measures (…, n) and the keys each row saw (n,) → CausalRoleMeans."""
    rows = slice(1, None) if len(visible) > 1 else slice(None)

    def mean(values: np.ndarray) -> np.ndarray:
        return np.asarray(values)[..., rows].mean(axis=-1)

    return CausalRoleMeans(
        previous=mean(previous),
        itself=mean(itself),
        first=mean(first),
        entropy=mean(entropy),
        broad_at=BROAD_FRACTION * float(np.log(np.asarray(visible)[rows]).mean()),
    )


def induction_scores(lookback: np.ndarray, length: int) -> np.ndarray:
    """Olsson et al. (2022): on `length` random tokens repeated once, a head's mean weight from
    each position i of the second copy to i − length + 1, the token that followed the same
    token in the first copy. lookback (…, 2·length): each row's weight on i − length + 1."""
    return np.asarray(lookback)[..., length : 2 * length].mean(axis=-1)
