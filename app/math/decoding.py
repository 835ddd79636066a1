"""Decoding one token at a time with a key/value cache, under three cache policies.

After a prefill of the first p tokens, each new token t projects only its own row, appends k_t
and v_t to the cache, and scores its single query against the keys the cache still holds. The
causal mask is what makes this valid: no earlier row ever depends on a later token.

What the cache holds once token t is in, by policy:

    full     every position 0 … t                       (grows without bound)
    window   the last w positions t − w + 1 … t          (at most w rows)
    sinks    the first s positions 0 … s − 1, and the last w   (at most s + w rows;
             StreamingLLM, Xiao et al. 2024)

A policy is the same thing as a mask: query t sees key j exactly when the cache holds j at step
t, so decoding under a policy equals the dense causal head with that mask (AND the lab's own).
A position once dropped never comes back, so the cache only appends and evicts. Positions keep
their place in the whole text (x_t + PE(t), or RoPE at angle t); StreamingLLM instead numbers
them by their slot in the cache, which matters only once positions have been evicted.
"""

from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from app.math import attention as att
from app.math import positional as pos

Policy = Literal["full", "window", "sinks"]
POLICIES: tuple[Policy, ...] = ("full", "window", "sinks")


@dataclass(frozen=True)
class CachePolicy:
    """Which positions the cache keeps: all, the last `window`, or the first `sinks` as well."""

    policy: Policy = "full"
    window: int | None = None
    sinks: int = 0

    def __post_init__(self) -> None:
        if self.policy != "full" and (self.window is None or self.window < 1):
            raise ValueError(f"the {self.policy} policy needs a window of at least 1 position")
        if self.sinks < 0:
            raise ValueError("sinks counts positions kept at the start: 0 or more")

    def kept(self, t: int) -> np.ndarray:
        """Positions held once token t is in, ascending."""
        if self.policy == "full" or self.window is None:
            return np.arange(t + 1)
        start = max(0, t - self.window + 1)
        sinks = self.sinks if self.policy == "sinks" else 0
        return np.concatenate([np.arange(min(sinks, start)), np.arange(start, t + 1)])

    def mask(self, n: int) -> np.ndarray:
        """(n, n) bool: query i sees key j when j ≤ i and the cache holds j at step i."""
        return self.visible(np.arange(n), np.arange(n))

    def visible(self, queries: np.ndarray, keys: np.ndarray) -> np.ndarray:
        """The same rule for some positions only: (len(queries), len(keys)) bool, the query at
        position i against the key at position j (a decoder's new rows against its cache)."""
        i, j = np.asarray(queries)[:, None], np.asarray(keys)[None, :]
        allowed = j <= i
        if self.policy == "full" or self.window is None:
            return allowed
        keep = i - j < self.window
        if self.policy == "sinks":
            keep = keep | (j < self.sinks)
        return allowed & keep

    @property
    def capacity(self) -> int | None:
        """Rows the cache can ever hold: unbounded (None) for full, else window (+ sinks)."""
        if self.policy == "full" or self.window is None:
            return None
        return self.window + (self.sinks if self.policy == "sinks" else 0)


FULL = CachePolicy()


class KVCache:
    """Keys and values of the positions kept so far, one row per position: rows are appended,
    and dropped by `keep`, but a row that stays never changes."""

    def __init__(self, capacity: int, d_k: int, d_v: int, dtype: npt.DTypeLike = float) -> None:
        self._k = np.zeros((capacity, d_k), dtype=dtype)
        self._v = np.zeros((capacity, d_v), dtype=dtype)
        self._positions = np.zeros(capacity, dtype=int)
        self.length = 0
        self._next = 0  # the position of the next row appended

    def append(self, k: np.ndarray, v: np.ndarray) -> None:
        """Add rows (t, d_k) and (t, d_v) for the next t positions."""
        stop = self.length + k.shape[0]
        self._k[self.length : stop], self._v[self.length : stop] = k, v
        self._positions[self.length : stop] = np.arange(self._next, self._next + k.shape[0])
        self.length, self._next = stop, self._next + k.shape[0]

    def keep(self, positions: np.ndarray) -> np.ndarray:
        """Drop every row whose position is not in `positions`; returns the dropped positions."""
        held = self.positions
        if np.array_equal(held, positions):  # nothing to drop (always, for the full policy)
            return held[:0]
        stay = np.isin(held, positions)
        dropped = held[~stay]
        count = int(stay.sum())
        self._k[:count], self._v[:count] = self.k[stay], self.v[stay]
        self._positions[:count] = held[stay]
        self.length = count
        return dropped

    # Copies, not views: a step's stages keep the K and V it read, and `keep` later moves rows
    # within the buffers.
    @property
    def k(self) -> np.ndarray:
        return self._k[: self.length].copy()  # (length, d_k)

    @property
    def v(self) -> np.ndarray:
        return self._v[: self.length].copy()  # (length, d_v)

    @property
    def positions(self) -> np.ndarray:
        return self._positions[: self.length].copy()  # (length,)

    @property
    def elements(self) -> int:
        """Numbers held: one K row and one V row per position."""
        return self.length * (self._k.shape[1] + self._v.shape[1])

    @property
    def nbytes(self) -> int:
        """Bytes of the K and V rows held, as numpy counts them."""
        return self._k[: self.length].nbytes + self._v[: self.length].nbytes

    @property
    def allocated_bytes(self) -> int:
        """Bytes of the buffers, held rows or not."""
        return self._k.nbytes + self._v.nbytes


@dataclass(frozen=True)
class DecodedToken:
    """The arithmetic of one generated token t: its single query row against the rows the
    cache holds (the API's answer is app/features/kernel/results.DecodeStep, built from this)."""

    position: int  # t
    q: np.ndarray  # (d_k,) x_t · W_Q
    k: np.ndarray  # (d_k,) x_t · W_K, the row appended to the K cache
    v: np.ndarray  # (d_v,) x_t · W_V, the row appended to the V cache
    cached_positions: np.ndarray  # (c,) positions held after this step, ascending
    evicted: np.ndarray  # positions dropped in this step
    cache_elements: int  # c · (d_k + d_v)
    stages: att.HeadStages  # one query row against the cache: scores (1, c), weights (1, c) ...

    @property
    def cache_length(self) -> int:
        return len(self.cached_positions)

    @property
    def dots_cached(self) -> int:
        """Dot products this step: the new query with every cached key."""
        return self.cache_length

    @property
    def dots_uncached(self) -> int:
        """Dot products to recompute the whole (t + 1) × (t + 1) matrix without a cache."""
        return (self.position + 1) ** 2


@dataclass(frozen=True)
class Decoding:
    policy: CachePolicy
    prefill: att.HeadStages  # the first p tokens at once: (p, p) scores, (p, d_v) output
    prefill_positions: np.ndarray  # what the cache holds after the prefill
    steps: list[DecodedToken]

    @property
    def output(self) -> np.ndarray:
        """Prefill rows, then one row per generated token: (n, d_v)."""
        rows = [s.stages.output for s in self.steps]
        return np.vstack([self.prefill.output, *rows])


def decode(
    x: np.ndarray,
    w_q: np.ndarray,
    w_k: np.ndarray,
    w_v: np.ndarray,
    allowed: np.ndarray,
    prompt: int,
    scale: bool = True,
    positional: pos.Positional = "none",
    policy: CachePolicy = FULL,
) -> Decoding:
    """Prefill x[:prompt] as one block, then decode x[prompt:] one token at a time.

    `allowed` must be causal (no key after its query): only then are the cached rows of K and
    V, and the outputs already produced, unaffected by tokens that arrive later. The prefill
    sees what the policy would keep (`policy.mask`), then the cache drops the rest.
    """
    if np.triu(allowed, k=1).any():
        raise ValueError("cached decoding needs a causal mask: no query may see a later key")
    n = x.shape[0]
    x_in = pos.add_position(x, positional)  # (n, d_model): each row has its own position
    cache = KVCache(n, w_k.shape[1], w_v.shape[1])
    cache.append(pos.rotate(x_in[:prompt] @ w_k, positional), x_in[:prompt] @ w_v)
    q = pos.rotate(x_in[:prompt] @ w_q, positional)  # (p, d_k)
    seen = allowed[:prompt, :prompt] & policy.mask(prompt)
    prefill = att.attend(q, cache.k, cache.v, seen, scale)  # (p, p) scores
    cache.keep(policy.kept(prompt - 1))
    prefill_positions = cache.positions
    steps = []
    for t in range(prompt, n):
        row = x_in[t : t + 1]  # (1, d_model): only the new token is projected
        q_t = pos.rotate(row @ w_q, positional, start=t)  # (1, d_k)
        k_t = pos.rotate(row @ w_k, positional, start=t)
        v_t = row @ w_v  # (1, d_v)
        cache.append(k_t, v_t)
        evicted = cache.keep(policy.kept(t))
        held = cache.positions  # (c,)
        stages = att.attend(q_t, cache.k, cache.v, allowed[t : t + 1, held], scale)  # (1, c)
        steps.append(DecodedToken(t, q_t[0], k_t[0], v_t[0], held, evicted, cache.elements, stages))
    return Decoding(policy, prefill, prefill_positions, steps)
