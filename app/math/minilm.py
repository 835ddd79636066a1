"""A trained BERT encoder (all-MiniLM-L6-v2) in pure numpy, with every head's stages exposed.

Each of the L layers maps the hidden state x (n × d_model) entering it to the next one:

    head_i = softmax((x·W_Q + b_Q)_i · (x·W_K + b_K)_iᵀ / √d_head) · (x·W_V + b_V)_i
    a      = LayerNorm(x + [head_0 | … | head_{h−1}] · W_O + b_O)
    x'     = LayerNorm(a + GELU(a·W_1 + b_1) · W_2 + b_2)

where (·)_i is the i-th block of d_head columns. The first x is
LayerNorm(word + position + token-type embeddings). The encoder is bidirectional: every
token sees every token (one sentence, no padding, so the mask hides nothing).

Switching a head off (ablation) zeroes its block of the concatenation before W_O, which is
what a head mask of 0 does in the reference implementation: the head still attends, but
nothing it found reaches the rest of the model. Everything downstream is recomputed.
`forward` keeps each head's q, k, v, weights and output (its scores on request);
app/math/ablation.py runs many ablations of one sentence at once through the same functions.

Row-vector convention as in app/math/attention.py: Q = x·W_Q, so W_Q is d_model × d_model here.
The weight files store each Linear layer as (out, in); `load_encoder` transposes them.
Each head's stages are those of app/math/attention.py's `attend`, the lab's head (the tests
hold them to it), computed for all h heads at once.
"""

import json
import math
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from safetensors.numpy import load_file

from app.math.attention import HeadStages, build_mask

WEIGHTS_FILE = "model.safetensors"
CONFIG_FILE = "config.json"


@dataclass(frozen=True)
class EncoderConfig:
    """The shape of the encoder, from the model's config.json."""

    layers: int
    heads: int
    d_model: int
    d_ff: int
    eps: float  # LayerNorm's ε
    activation: str  # "gelu": the exact, erf-based GELU

    @property
    def d_head(self) -> int:
        return self.d_model // self.heads

    @classmethod
    def from_json(cls, config: dict) -> "EncoderConfig":
        activation = config["hidden_act"]
        if activation != "gelu":
            raise ValueError(f"hidden_act {activation!r} is not supported; only 'gelu' (erf) is")
        return cls(
            layers=config["num_hidden_layers"],
            heads=config["num_attention_heads"],
            d_model=config["hidden_size"],
            d_ff=config["intermediate_size"],
            eps=config["layer_norm_eps"],
            activation=activation,
        )


@dataclass(frozen=True)
class LayerNormWeights:
    gamma: np.ndarray  # (d_model,)
    beta: np.ndarray  # (d_model,)


@dataclass(frozen=True)
class LayerWeights:
    """One encoder layer, every matrix in row-vector convention (in × out)."""

    w_q: np.ndarray  # (d_model, d_model): all heads' W_Q side by side
    b_q: np.ndarray  # (d_model,)
    w_k: np.ndarray
    b_k: np.ndarray
    w_v: np.ndarray
    b_v: np.ndarray
    w_o: np.ndarray  # (d_model, d_model)
    b_o: np.ndarray
    norm_1: LayerNormWeights  # after attention
    w_1: np.ndarray  # (d_model, d_ff)
    b_1: np.ndarray  # (d_ff,)
    w_2: np.ndarray  # (d_ff, d_model)
    b_2: np.ndarray  # (d_model,)
    norm_2: LayerNormWeights  # after the feed-forward block


@dataclass(frozen=True)
class Encoder:
    config: EncoderConfig
    word: np.ndarray  # (vocab, d_model)
    position: np.ndarray  # (max_positions, d_model)
    token_type: np.ndarray  # (type_vocab, d_model)
    norm: LayerNormWeights  # after the embeddings
    layers: tuple[LayerWeights, ...]


def load_encoder(model_dir: Path) -> Encoder:
    """Read config.json and model.safetensors (a Hugging Face BertModel) into numpy."""
    config = EncoderConfig.from_json(json.loads((model_dir / CONFIG_FILE).read_text()))
    tensors = load_file(model_dir / WEIGHTS_FILE)

    def get(name: str) -> np.ndarray:
        return tensors.pop(name)

    def linear(name: str) -> tuple[np.ndarray, np.ndarray]:
        # Stored (out, in) for y = x·Wᵀ + b; we keep W as (in, out) for y = x·W + b.
        return np.ascontiguousarray(get(f"{name}.weight").T), get(f"{name}.bias")

    def norm(name: str) -> LayerNormWeights:
        return LayerNormWeights(get(f"{name}.weight"), get(f"{name}.bias"))

    layers = []
    for i in range(config.layers):
        p = f"encoder.layer.{i}."
        w_q, b_q = linear(p + "attention.self.query")
        w_k, b_k = linear(p + "attention.self.key")
        w_v, b_v = linear(p + "attention.self.value")
        w_o, b_o = linear(p + "attention.output.dense")
        w_1, b_1 = linear(p + "intermediate.dense")
        w_2, b_2 = linear(p + "output.dense")
        layers.append(
            LayerWeights(
                w_q=w_q,
                b_q=b_q,
                w_k=w_k,
                b_k=b_k,
                w_v=w_v,
                b_v=b_v,
                w_o=w_o,
                b_o=b_o,
                norm_1=norm(p + "attention.output.LayerNorm"),
                w_1=w_1,
                b_1=b_1,
                w_2=w_2,
                b_2=b_2,
                norm_2=norm(p + "output.LayerNorm"),
            )
        )
    return Encoder(
        config,
        word=get("embeddings.word_embeddings.weight"),
        position=get("embeddings.position_embeddings.weight"),
        token_type=get("embeddings.token_type_embeddings.weight"),
        norm=norm("embeddings.LayerNorm"),
        layers=tuple(layers),
    )


# ---------------------------------------------------------------- building blocks
#
# In float32 (the weights' type) and in place where it can: at 256 word pieces a layer holds
# 256 × 1536 feed-forward and 12 × 256 × 256 attention numbers, and a new array of that size
# costs more to obtain (fresh pages from the operating system) than to fill. Every function
# works row by row on any leading shape: app/math/ablation.py batches runs through them.


def layer_norm(x: np.ndarray, norm: LayerNormWeights, eps: float) -> np.ndarray:
    """(x − mean) / √(variance + ε) · γ + β, over each row's d_model numbers (x is kept)."""
    centred = x - x.mean(axis=-1, keepdims=True)  # (…, n, d_model), a new array
    variance = np.square(centred).mean(axis=-1, keepdims=True)  # (…, n, 1)
    centred /= np.sqrt(variance + eps)
    centred *= norm.gamma
    centred += norm.beta
    return centred


# erfc(z) ≈ t·exp(−z² + P(t)), t = 1 / (1 + z/2), for z ≥ 0: Chebyshev fit with relative
# error below 1.2e-7 everywhere (Numerical Recipes, erfcc), i.e. float32 precision.
_ERFC_COEFFICIENTS = (
    -1.26551223, 1.00002368, 0.37409196, 0.09678418, -0.18628806,
    0.27886807, -1.13520398, 1.48851587, -0.82215223, 0.17087277,
)  # fmt: skip


def erfc_(z: np.ndarray, t: np.ndarray | None = None) -> np.ndarray:
    """z ← erfc(z) = 1 − erf(z) for z ≥ 0, elementwise and in place (numpy has no erf).

    t, if given, is scratch space of z's shape (its contents are lost). A trailing _ marks
    a function that overwrites its argument, as in PyTorch.
    """
    t = np.multiply(z, 0.5, out=t)
    t += 1.0
    np.reciprocal(t, out=t)  # t = 1 / (1 + z/2)
    poly = t * _ERFC_COEFFICIENTS[-1]
    poly += _ERFC_COEFFICIENTS[-2]
    for c in reversed(_ERFC_COEFFICIENTS[:-2]):  # Horner: P(t) = c_0 + t·(c_1 + t·(…))
        poly *= t
        poly += c
    np.square(z, out=z)
    poly -= z  # P(t) − z²
    np.exp(poly, out=poly)
    return np.multiply(poly, t, out=z)  # t·exp(−z² + P(t))


_SQRT_HALF = math.sqrt(0.5)


def gelu_(x: np.ndarray) -> np.ndarray:
    """x ← GELU(x) = x · Φ(x), in place, with the exact normal CDF Φ (the erf form).

    Φ(x) = 1 − Φ(−x) gives one formula for both signs, with Φ(−|x|) = erfc(|x|/√2) / 2:

        GELU(x) = max(x, 0) − |x| · Φ(−|x|)
    """
    size = np.abs(x)
    tail = np.multiply(size, _SQRT_HALF)
    erfc_(tail, t=size)
    tail *= 0.5  # Φ(−|x|)
    tail *= np.abs(x, out=size)
    np.maximum(x, 0.0, out=x)
    x -= tail
    return x


# ---------------------------------------------------------------- the forward pass

Head = tuple[int, int]  # (layer, head), 0-based


@dataclass(frozen=True)
class LayerStages:
    """What one layer computed: its input, every head's q, k, v, weights and output, what
    attention added, and the hidden state it passed on."""

    x: np.ndarray  # (n, d_model) the hidden state entering the layer
    q: np.ndarray  # (h, n, d_head)
    k: np.ndarray  # (h, n, d_head)
    v: np.ndarray  # (h, n, d_head)
    weights: np.ndarray  # (h, n, n) softmax(q·kᵀ / √d_head), row by row
    outputs: np.ndarray  # (h, n, d_head) weights · v, as each head computed it
    attention: np.ndarray  # (n, d_model) the attention block's part: concat·W_O + b_O
    output: np.ndarray  # (n, d_model) the hidden state leaving the layer
    ablated: frozenset[int] = frozenset()  # heads whose output was zeroed before W_O

    def head(self, i: int) -> HeadStages:
        """Head i's stages, as app/math/attention.py's `attend` names them.

        A run keeps only the weights of its 72 heads; a head's scores and scaled scores
        are computed again from its q and k when asked for (keeping them for every head
        would triple a run's largest arrays).
        """
        q, k = self.q[i], self.k[i]
        scores = q @ k.T  # (n, n)
        scale_factor = float(np.sqrt(q.shape[-1]))
        scaled = scores / scale_factor
        allowed = build_mask(len(q))  # bidirectional, nothing padded: nothing is masked
        return HeadStages(
            q=q,
            k=k,
            v=self.v[i],
            scores=scores,
            scale_factor=scale_factor,
            scaled=scaled,
            allowed=allowed,
            masked=scaled,
            weights=self.weights[i],
            output=self.outputs[i],
        )


@dataclass(frozen=True)
class EncoderStages:
    """Every layer's stages, from the embeddings to the last hidden state."""

    embeddings: np.ndarray  # (n, d_model) the first x
    layers: list[LayerStages]
    weights: np.ndarray  # (L, h, n, n) every head's weights; layer l's are layers[l].weights

    @property
    def hidden_states(self) -> list[np.ndarray]:
        """L + 1 states: the embeddings, then each layer's output."""
        return [self.embeddings, *(layer.output for layer in self.layers)]

    @property
    def ablated(self) -> frozenset[Head]:
        return frozenset((n, i) for n, layer in enumerate(self.layers) for i in layer.ablated)


def embed(encoder: Encoder, ids: np.ndarray, type_ids: np.ndarray) -> np.ndarray:
    """LayerNorm(word[id] + position[p] + token_type[type]) for each position p."""
    n = len(ids)
    x = encoder.word[ids] + encoder.position[:n] + encoder.token_type[type_ids]  # (n, d_model)
    return layer_norm(x, encoder.norm, encoder.config.eps)


def split_heads(y: np.ndarray, heads: int) -> np.ndarray:
    """(…, n, h·d_head) → (…, h, n, d_head): head i gets columns i·d_head … (i+1)·d_head − 1."""
    *lead, n, width = y.shape
    return np.ascontiguousarray(np.swapaxes(y.reshape(*lead, n, heads, width // heads), -3, -2))


def linear(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    """x·W + b for rows of any leading shape, as one matrix product (…, d_in) → (…, d_out).

    numpy multiplies a stack (B, n, d_in) by W one matrix at a time, several times slower
    than the same rows as one (B·n, d_in) matrix.
    """
    y = x.reshape(-1, x.shape[-1]) @ w
    y += b
    return y.reshape(*x.shape[:-1], w.shape[-1])


def project_heads(x: np.ndarray, w: np.ndarray, b: np.ndarray, heads: int) -> np.ndarray:
    """x·W + b, split into the heads' blocks: (…, n, d_model) → (…, h, n, d_head)."""
    return split_heads(linear(x, w, b), heads)


def attention_weights(q: np.ndarray, k: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """softmax(q·kᵀ / √d_head) row by row: (…, n, d_head) twice → (…, n, n), in one array.

    Every key is visible (the encoder is bidirectional and nothing is padded), so no mask
    is added. The row maximum is subtracted before exp, which changes no weight.
    """
    w = np.matmul(q, np.swapaxes(k, -1, -2), out=out)  # scores q·kᵀ
    w /= np.float32(math.sqrt(q.shape[-1]))  # scaled
    w -= w.max(axis=-1, keepdims=True)
    np.exp(w, out=w)
    w /= w.sum(axis=-1, keepdims=True)
    return w


def combine_heads(outputs: np.ndarray, gates: np.ndarray, weights: LayerWeights) -> np.ndarray:
    """[g_0·head_0 | … | g_{h−1}·head_{h−1}] · W_O + b_O: (…, h, n, d_head) → (…, n, d_model).

    gates (…, h): 1 for a head that is on, 0 for one switched off (times 1 changes no bit).
    """
    gated = outputs * gates[..., None, None]
    *lead, h, n, d_head = gated.shape
    concat = np.swapaxes(gated, -3, -2).reshape(*lead, n, h * d_head)  # (…, n, h·d_head)
    return linear(concat, weights.w_o, weights.b_o)


def feed_forward(a: np.ndarray, weights: LayerWeights, config: EncoderConfig) -> np.ndarray:
    """LayerNorm(a + GELU(a·W_1 + b_1)·W_2 + b_2), row by row (any leading shape)."""
    hidden = gelu_(linear(a, weights.w_1, weights.b_1))  # (…, n, d_ff)
    y = linear(hidden, weights.w_2, weights.b_2)  # (…, n, d_model)
    y += a
    return layer_norm(y, weights.norm_2, config.eps)


def after_attention(
    x: np.ndarray, attention: np.ndarray, weights: LayerWeights, config: EncoderConfig
) -> np.ndarray:
    """The rest of a layer: a = LayerNorm(x + attention), then the feed-forward block."""
    return feed_forward(layer_norm(x + attention, weights.norm_1, config.eps), weights, config)


def encoder_layer(
    x: np.ndarray,
    weights: LayerWeights,
    config: EncoderConfig,
    ablated: frozenset[int] = frozenset(),
    out: np.ndarray | None = None,
) -> LayerStages:
    """Multi-head self-attention, then the feed-forward block, each with residual + norm.

    out: where to write the heads' weights (h, n, n), if not in a new array.
    """
    h = config.heads
    q = project_heads(x, weights.w_q, weights.b_q, h)  # (h, n, d_head)
    k = project_heads(x, weights.w_k, weights.b_k, h)
    v = project_heads(x, weights.w_v, weights.b_v, h)
    w = attention_weights(q, k, out)  # (h, n, n)
    outputs = w @ v  # (h, n, d_head)
    gates = np.ones(h, dtype=outputs.dtype)
    gates[list(ablated)] = 0.0
    attention = combine_heads(outputs, gates, weights)
    output = after_attention(x, attention, weights, config)
    return LayerStages(x, q, k, v, w, outputs, attention, output, ablated)


def check_heads(config: EncoderConfig, heads: Collection[Head]) -> None:
    """Refuse a (layer, head) pair the encoder does not have."""
    for layer, head in heads:
        if not (0 <= layer < config.layers and 0 <= head < config.heads):
            raise ValueError(
                f"head ({layer}, {head}) does not exist: layers 0–{config.layers - 1}, "
                f"heads 0–{config.heads - 1}"
            )


def forward(
    encoder: Encoder,
    ids: np.ndarray,
    type_ids: np.ndarray | None = None,
    ablate: Collection[Head] = (),
) -> EncoderStages:
    """Run one sentence (token ids, [CLS] … [SEP]) through every layer, `ablate` switched off."""
    config = encoder.config
    check_heads(config, ablate)
    ids = np.asarray(ids)
    type_ids = np.zeros_like(ids) if type_ids is None else np.asarray(type_ids)
    n = len(ids)
    weights = np.empty((config.layers, config.heads, n, n), dtype=encoder.word.dtype)
    embeddings = x = embed(encoder, ids, type_ids)
    layers = []
    for number, layer_weights in enumerate(encoder.layers):
        off = frozenset(i for layer, i in ablate if layer == number)
        layer = encoder_layer(x, layer_weights, config, off, out=weights[number])
        layers.append(layer)
        x = layer.output
    return EncoderStages(embeddings, layers, weights)


def sentence_embedding(last_hidden: np.ndarray) -> np.ndarray:
    """The sentence vector: the mean of the last hidden states, scaled to length 1.

    Any leading shape: (n, d_model) → (d_model,), (B, n, d_model) → (B, d_model).
    """
    pooled = last_hidden.mean(axis=-2)  # (…, d_model)
    return pooled / np.linalg.norm(pooled, axis=-1, keepdims=True)
