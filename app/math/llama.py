"""A Llama decoder (SmolLM2-135M) in pure numpy, with a real key/value cache.

Each of the L layers adds two blocks to the hidden state x (n × d_model), each reading a
normalised copy of it (Touvron et al. 2023, "LLaMA"):

    h       = RMSNorm(x) = x / √(mean(x²) + ε) · g                  (no mean removed, no bias)
    q, k, v = h·W_Q, h·W_K, h·W_V, split into heads; q and k rotated by RoPE at their positions
    head_i  = softmax(q_i · k_{g(i)}ᵀ / √d_head + M) · v_{g(i)}           (M: causal, and the cache)
    x       = x + [head_0 | … | head_{h−1}] · W_O
    x       = x + (SiLU(h'·W_gate) ⊙ h'·W_up) · W_down,   h' = RMSNorm(x)  (SwiGLU, Shazeer 2020)

and the next-token logits are RMSNorm(x) · Eᵀ, E being the same matrix that embeds the tokens
(tied embeddings). Grouped-query attention (Ainslie et al. 2023): the h query heads share
g key/value heads, query head i reading key/value head g(i) = ⌊i / (h/g)⌋, so one cached K row
and one V row serve h/g queries.

RoPE rotates the pairs (2i, 2i+1) of every q and k row at position p by p · base^(−2i/d_head),
as app/math/positional.py does (base 100,000 for SmolLM2). The GGUF file stores W_Q and W_K
with their output columns permuted by llama.cpp's converter into exactly that pairing; the
Hugging Face checkpoint pairs column i with i + d_head/2 instead. Both are the same model:
q and k are permuted alike, so every dot product q·k is unchanged.

The cache: a `Decoder` feeds tokens in blocks. The prompt goes in as one block (the prefill),
then each new token alone: its row is projected, its k and v rows are appended to every
layer's cache, and its single query row per head is scored against the rows the cache holds.
The causal mask is what makes this exact: no row ever depends on a later token. A cache policy
(app/math/decoding.py: full, window, sinks) decides which rows stay; positions keep their RoPE
angles. Row-vector convention: W_Q is d_model × (h · d_head).
"""

import math
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, fields

import numpy as np

from app.math import attention as att
from app.math import decoding as dc
from app.math.positional import rope
from app.math.roles import row_entropy

Head = tuple[int, int]  # (layer, query head), 0-based


@dataclass(frozen=True)
class LlamaConfig:
    layers: int
    heads: int  # query heads per layer
    kv_heads: int  # key/value heads per layer
    d_model: int
    d_ff: int  # the SwiGLU block's hidden width
    vocab: int
    context: int  # longest sequence the model was trained on
    rope_base: float
    eps: float  # RMSNorm's ε

    @property
    def d_head(self) -> int:
        return self.d_model // self.heads

    @property
    def group(self) -> int:
        """Query heads per key/value head."""
        return self.heads // self.kv_heads

    def kv_head(self, head: int) -> int:
        """g(i) = ⌊i / (h/g)⌋: the key/value head that query head i reads."""
        return head // self.group

    def kv_groups(self) -> list[list[int]]:
        """The query heads of each key/value head, in order: [[0, 1, 2], [3, 4, 5], …]."""
        return [list(range(g * self.group, (g + 1) * self.group)) for g in range(self.kv_heads)]


@dataclass(frozen=True)
class LlamaWeights:
    """Every matrix as (in, out), the layers stacked on a first axis of length L."""

    config: LlamaConfig
    embedding: np.ndarray  # (vocab, d_model) E: embeds the tokens and, transposed, unembeds
    attn_norm: np.ndarray  # (L, d_model) RMSNorm gain before attention
    w_q: np.ndarray  # (L, d_model, heads · d_head)
    w_k: np.ndarray  # (L, d_model, kv_heads · d_head)
    w_v: np.ndarray  # (L, d_model, kv_heads · d_head)
    w_o: np.ndarray  # (L, heads · d_head, d_model)
    mlp_norm: np.ndarray  # (L, d_model) RMSNorm gain before the SwiGLU block
    w_gate: np.ndarray  # (L, d_model, d_ff)
    w_up: np.ndarray  # (L, d_model, d_ff)
    w_down: np.ndarray  # (L, d_ff, d_model)
    final_norm: np.ndarray  # (d_model,)

    @classmethod
    def array_names(cls) -> list[str]:
        return [f.name for f in fields(cls) if f.name != "config"]


# ---------------------------------------------------------------- building blocks


def rms_norm(x: np.ndarray, gain: np.ndarray, eps: float) -> np.ndarray:
    """x / √(mean(x²) + ε) · g over each row's d_model numbers."""
    mean_square = np.square(x).sum(axis=-1, keepdims=True) / x.shape[-1]  # (r, 1)
    return x / np.sqrt(mean_square + eps) * gain


def silu(x: np.ndarray) -> np.ndarray:
    """x · σ(x), with σ(x) = (1 + tanh(x/2)) / 2, which never overflows."""
    return x * (0.5 + 0.5 * np.tanh(0.5 * x))


def swiglu(h: np.ndarray, w_gate: np.ndarray, w_up: np.ndarray, w_down: np.ndarray) -> np.ndarray:
    """(SiLU(h·W_gate) ⊙ h·W_up) · W_down: (r, d_model) → (r, d_ff) → (r, d_model)."""
    return (silu(h @ w_gate) * (h @ w_up)) @ w_down


def split_heads(y: np.ndarray, heads: int) -> np.ndarray:
    """(r, heads · d_head) → (heads, r, d_head): head i gets columns i·d_head … (i+1)·d_head − 1."""
    r, width = y.shape
    return y.reshape(r, heads, width // heads).transpose(1, 0, 2)


def merge_heads(y: np.ndarray) -> np.ndarray:
    """(heads, r, d_head) → (r, heads · d_head): the heads side by side, in head order."""
    heads, r, d_head = y.shape
    return y.transpose(1, 0, 2).reshape(r, heads * d_head)


def grouped_attention(
    q: np.ndarray, k: np.ndarray, v: np.ndarray, allowed: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """softmax(q_i · k_{g(i)}ᵀ / √d_head + M) · v_{g(i)} for every query head at once.

    q (h, r, d_head); k, v (g, c, d_head); allowed (r, c), the mask M as booleans.
    Returns the weights (h, r, c) and the heads' outputs (h, r, d_head).
    """
    h, r, d_head = q.shape
    g = k.shape[0]
    grouped = q.reshape(g, h // g, r, d_head)  # the query heads of each key/value head
    scores = grouped @ k[:, None].swapaxes(-1, -2)  # (g, h/g, r, c)
    scaled = scores / math.sqrt(d_head)
    weights = att.softmax(np.where(allowed, scaled, -np.inf))
    out = weights @ v[:, None]  # (g, h/g, r, d_head)
    return weights.reshape(h, r, -1), out.reshape(h, r, d_head)


def head_gates(config: LlamaConfig, ablate: Collection[Head] = ()) -> np.ndarray:
    """(L, h): 1 for a head that is on, 0 for one switched off."""
    gates = np.ones((config.layers, config.heads), dtype=np.float32)
    for layer, head in ablate:
        if not (0 <= layer < config.layers and 0 <= head < config.heads):
            raise ValueError(f"head ({layer}, {head}) does not exist")
        gates[layer, head] = 0.0
    return gates


def unembed(h: np.ndarray, model: LlamaWeights) -> np.ndarray:
    """Logits h · Eᵀ for final-normed rows h: (r, d_model) → (r, vocab)."""
    return h @ model.embedding.T


# ---------------------------------------------------------------- decoding with a cache


@dataclass(frozen=True)
class LayerRows:
    """What one layer computed for the rows just fed, against the keys its cache held."""

    layer: int
    positions: np.ndarray  # (r,) positions of the new rows
    keys: np.ndarray  # (c,) positions of the cached keys, ascending (the new rows included)
    allowed: np.ndarray  # (r, c) which of them each new row may see
    x: np.ndarray  # (r, d_model) RMSNorm(x): what W_Q, W_K and W_V read
    q: np.ndarray  # (h, r, d_head) after RoPE
    k: np.ndarray  # (g, r, d_head) the rows appended to the K cache, after RoPE
    v: np.ndarray  # (g, r, d_head) the rows appended to the V cache
    weights: np.ndarray  # (h, r, c)


Observer = Callable[[LayerRows], None]


def keep_going() -> None:
    """The default check between layers: never stops."""


class Decoder:
    """One sequence: every layer's KV cache, fed token blocks in order.

    `observers` see every layer's rows as they are computed; `check` is called before each
    layer and may raise to abandon the work (a request whose client has gone).
    """

    def __init__(
        self,
        model: LlamaWeights,
        capacity: int,
        policy: dc.CachePolicy = dc.FULL,
        ablate: Collection[Head] = (),
        observers: Sequence[Observer] = (),
        check: Callable[[], None] = keep_going,
    ) -> None:
        config = model.config
        width = config.kv_heads * config.d_head  # one cached row: every key/value head's
        dtype = model.embedding.dtype
        self.model, self.policy, self.observers, self.check = model, policy, observers, check
        self.caches = [dc.KVCache(capacity, width, width, dtype) for _ in range(config.layers)]
        self.gates = head_gates(config, ablate)  # (L, h)
        self.length = 0  # positions fed so far

    def resume(self, earlier: "KVRecord", r: int) -> None:
        """Start after positions 0 … r − 1, as an earlier sequence with the same first r tokens
        (and the same policy and heads) computed them: every layer's cache gets their K and V
        rows and keeps what the policy keeps after position r − 1. The causal mask makes this
        exact: those rows never depended on the tokens after them."""
        if self.length:
            raise ValueError("only a decoder that has been fed nothing can resume")
        for layer, cache in enumerate(self.caches):
            cache.append(earlier.k[layer, :r], earlier.v[layer, :r])
            cache.keep(self.policy.kept(r - 1))
        self.length = r

    def feed(self, ids: Sequence[int] | np.ndarray) -> np.ndarray:
        """Run the next r tokens through every layer (appending to each layer's cache) and
        return their final-normed hidden states, (r, d_model), ready for `unembed`."""
        model, config = self.model, self.model.config
        positions = np.arange(self.length, self.length + len(ids))
        x = model.embedding[np.asarray(ids)]  # (r, d_model)
        for layer in range(config.layers):
            self.check()
            x = self.layer(layer, x, positions)
        self.length += len(ids)
        return rms_norm(x, model.final_norm, config.eps)

    def layer(self, layer: int, x: np.ndarray, positions: np.ndarray) -> np.ndarray:
        """One layer for the new rows x at `positions`: attention over the cache, then SwiGLU."""
        m, c = self.model, self.model.config
        h = rms_norm(x, m.attn_norm[layer], c.eps)  # (r, d_model)
        start = int(positions[0])
        q = rope(split_heads(h @ m.w_q[layer], c.heads), start, c.rope_base)  # (h, r, d_head)
        k = rope(split_heads(h @ m.w_k[layer], c.kv_heads), start, c.rope_base)  # (g, r, d_head)
        v = split_heads(h @ m.w_v[layer], c.kv_heads)  # (g, r, d_head)
        cache = self.caches[layer]
        cache.append(merge_heads(k), merge_heads(v))
        keys = cache.positions  # (c,)
        allowed = self.policy.visible(positions, keys)  # (r, c)
        cached_k, cached_v = split_heads(cache.k, c.kv_heads), split_heads(cache.v, c.kv_heads)
        weights, out = grouped_attention(q, cached_k, cached_v, allowed)
        cache.keep(self.policy.kept(int(positions[-1])))
        for observe in self.observers:
            observe(LayerRows(layer, positions, keys, allowed, h, q, k, v, weights))
        gated = out * self.gates[layer][:, None, None]  # a head switched off adds nothing
        x = x + merge_heads(gated) @ m.w_o[layer]
        h = rms_norm(x, m.mlp_norm[layer], c.eps)
        return x + swiglu(h, m.w_gate[layer], m.w_up[layer], m.w_down[layer])

    @property
    def cached_positions(self) -> np.ndarray:
        """The positions every layer's cache holds now (the same in every layer)."""
        return self.caches[0].positions

    @property
    def cache_bytes(self) -> int:
        """Bytes of the K and V rows every layer holds now."""
        return sum(cache.nbytes for cache in self.caches)

    @property
    def allocated_bytes(self) -> int:
        """Bytes of every layer's cache buffers."""
        return sum(cache.allocated_bytes for cache in self.caches)


# ---------------------------------------------------------------- what the heads read


def weight_on(weights: np.ndarray, keys: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """Each row's weight on one key position: weights (h, r, c) over `keys` (c, ascending),
    targets (r,) → (h, r), or several targets per row at once, (t, r) → (t, h, r); 0 where
    the target is not among the keys."""
    index = np.minimum(np.searchsorted(keys, targets), len(keys) - 1)  # (…, r)
    found = keys[index] == targets
    picked = weights[:, np.arange(targets.shape[-1]), index]  # (h, …, r)
    return np.where(found[..., None, :], np.moveaxis(picked, 0, -2), 0.0)


class KVRecord:
    """Every layer's K and V rows as they were computed, before a cache policy dropped any:
    what `Decoder.resume` needs to start another sequence that begins with the same tokens."""

    def __init__(self, config: LlamaConfig, n: int, dtype: np.dtype) -> None:
        shape = (config.layers, n, config.kv_heads * config.d_head)
        self.k, self.v = np.zeros(shape, dtype=dtype), np.zeros(shape, dtype=dtype)

    def __call__(self, rows: LayerRows) -> None:
        self.k[rows.layer, rows.positions] = merge_heads(rows.k)
        self.v[rows.layer, rows.positions] = merge_heads(rows.v)

    def resume(self, earlier: "KVRecord", r: int) -> None:
        """Positions 0 … r − 1 as `earlier` recorded them."""
        self.k[:, :r], self.v[:, :r] = earlier.k[:, :r], earlier.v[:, :r]

    @property
    def nbytes(self) -> int:
        return self.k.nbytes + self.v.nbytes


class AttentionLog:
    """Per layer, head and query row, the numbers that describe a head, filled in as rows are
    computed (prefill and cached steps alike): the weight on the previous position, on itself,
    on position 0, the row's entropy, how many keys it saw, and (with `lookback` = λ) the
    weight on position i − λ. `dense_layers` keep their whole n × n weights as well."""

    def __init__(
        self,
        config: LlamaConfig,
        n: int,
        dense_layers: Collection[int] = (),
        lookback: int | None = None,
    ) -> None:
        shape = (config.layers, config.heads, n)
        self.previous, self.itself, self.first = np.zeros(shape), np.zeros(shape), np.zeros(shape)
        self.entropy = np.zeros(shape)
        self.visible = np.zeros(n, dtype=int)
        self.lookback = lookback
        self.back = np.zeros(shape) if lookback is not None else None
        self.dense = {
            layer: np.zeros((config.heads, n, n), dtype=np.float32) for layer in dense_layers
        }

    def __call__(self, rows: LayerRows) -> None:
        w, p, keys, layer = rows.weights, rows.positions, rows.keys, rows.layer
        back = [] if self.lookback is None else [p - self.lookback]
        on = weight_on(w, keys, np.stack([p - 1, p, np.zeros_like(p), *back]))  # one pass
        self.previous[layer][:, p], self.itself[layer][:, p], self.first[layer][:, p] = on[:3]
        self.entropy[layer][:, p] = row_entropy(w)
        self.visible[p] = rows.allowed.sum(axis=-1)
        if self.back is not None:
            self.back[layer][:, p] = on[3]
        if layer in self.dense:
            self.dense[layer][:, p[:, None], keys[None, :]] = w

    def resume(self, earlier: "AttentionLog", r: int) -> None:
        """Positions 0 … r − 1 as `earlier` logged them (the same layers kept dense and the
        same lookback): a sequence that begins with the same r tokens."""
        for mine, theirs in zip(self.per_row, earlier.per_row, strict=True):
            mine[..., :r] = theirs[..., :r]
        for layer, dense in self.dense.items():
            dense[:, :r, :r] = earlier.dense[layer][:, :r, :r]

    @property
    def per_row(self) -> list[np.ndarray]:
        """The arrays with one value per position on their last axis."""
        rows = [self.previous, self.itself, self.first, self.entropy, self.visible]
        return rows if self.back is None else [*rows, self.back]

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in self.per_row) + sum(a.nbytes for a in self.dense.values())


class LayerWatch:
    """Every row of one layer as its heads saw them (normed input, q, k, v), for one head's
    stages over the whole sequence once decoding is over."""

    def __init__(self, config: LlamaConfig, layer: int, n: int, dtype: np.dtype) -> None:
        d = config.d_head
        self.layer = layer
        self.x = np.zeros((n, config.d_model), dtype=dtype)
        self.q = np.zeros((config.heads, n, d), dtype=dtype)
        self.k = np.zeros((config.kv_heads, n, d), dtype=dtype)
        self.v = np.zeros((config.kv_heads, n, d), dtype=dtype)

    def __call__(self, rows: LayerRows) -> None:
        if rows.layer != self.layer:
            return
        p = rows.positions
        self.x[p], self.q[:, p], self.k[:, p], self.v[:, p] = rows.x, rows.q, rows.k, rows.v

    def resume(self, earlier: "LayerWatch", r: int) -> None:
        """Positions 0 … r − 1 as `earlier` saw them (the same layer)."""
        self.x[:r], self.q[:, :r] = earlier.x[:r], earlier.q[:, :r]
        self.k[:, :r], self.v[:, :r] = earlier.k[:, :r], earlier.v[:, :r]

    @property
    def nbytes(self) -> int:
        return self.x.nbytes + self.q.nbytes + self.k.nbytes + self.v.nbytes
