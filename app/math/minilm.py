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
`forward` keeps every stage of one run; app/math/ablation.py runs many ablations of one
sentence at once.

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

from app.math.attention import HeadStages, build_mask, masked_softmax

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
                w_q, b_q, w_k, b_k, w_v, b_v, w_o, b_o, norm(p + "attention.output.LayerNorm"),
                w_1, b_1, w_2, b_2, norm(p + "output.LayerNorm"),
            )
        )  # fmt: skip
    return Encoder(
        config,
        word=get("embeddings.word_embeddings.weight"),
        position=get("embeddings.position_embeddings.weight"),
        token_type=get("embeddings.token_type_embeddings.weight"),
        norm=norm("embeddings.LayerNorm"),
        layers=tuple(layers),
    )


# ---------------------------------------------------------------- building blocks


def layer_norm(x: np.ndarray, norm: LayerNormWeights, eps: float) -> np.ndarray:
    """(x − mean) / √(variance + ε) · γ + β, over each row's d_model numbers."""
    mean = x.mean(axis=-1, keepdims=True)  # (n, 1)
    centred = x - mean
    variance = (centred * centred).mean(axis=-1, keepdims=True)  # (n, 1)
    return centred / np.sqrt(variance + eps) * norm.gamma + norm.beta


# erfc(z) ≈ t·exp(−z² + P(t)), t = 1 / (1 + z/2), for z ≥ 0: Chebyshev fit with relative
# error below 1.2e-7 everywhere (Numerical Recipes, erfcc), i.e. float32 precision.
_ERFC_COEFFICIENTS = (
    -1.26551223, 1.00002368, 0.37409196, 0.09678418, -0.18628806,
    0.27886807, -1.13520398, 1.48851587, -0.82215223, 0.17087277,
)  # fmt: skip


def erfc(x: np.ndarray) -> np.ndarray:
    """The complementary error function 1 − erf(x), elementwise (numpy has no erf).

    Worked in place on two arrays of x's shape: at 256 word pieces the feed-forward block
    calls it on 256 × 1536 numbers per layer.
    """
    z = np.abs(x)
    t = 0.5 * z
    t += 1.0
    np.reciprocal(t, out=t)  # t = 1 / (1 + z/2)
    poly = np.full_like(t, _ERFC_COEFFICIENTS[-1])
    for c in reversed(_ERFC_COEFFICIENTS[:-1]):
        poly *= t
        poly += c
    np.square(z, out=z)
    poly -= z  # P(t) − z²
    np.exp(poly, out=poly)
    poly *= t  # the tail t·exp(−z² + P(t)) = erfc(|x|)
    return np.where(x >= 0, poly, 2.0 - poly)


def gelu(x: np.ndarray) -> np.ndarray:
    """GELU(x) = x · Φ(x) = x/2 · (1 + erf(x/√2)) = x/2 · erfc(−x/√2): the exact form."""
    return 0.5 * x * erfc(-x / math.sqrt(2.0))


# ---------------------------------------------------------------- the forward pass

Head = tuple[int, int]  # (layer, head), 0-based


@dataclass(frozen=True)
class LayerStages:
    """What one layer computed: its input, every head's stages, what attention added."""

    x: np.ndarray  # (n, d_model) the hidden state entering the layer
    heads: list[HeadStages]  # h heads, each with q, k, v of width d_head
    attention: np.ndarray  # (n, d_model) the attention block's part: concat·W_O + b_O
    output: np.ndarray  # (n, d_model) the hidden state leaving the layer
    ablated: frozenset[int] = frozenset()  # heads whose output was zeroed before W_O

    @property
    def weights(self) -> np.ndarray:
        return np.stack([head.weights for head in self.heads])  # (h, n, n)


@dataclass(frozen=True)
class EncoderStages:
    """Every layer's stages, from the embeddings to the last hidden state."""

    embeddings: np.ndarray  # (n, d_model) the first x
    layers: list[LayerStages]

    @property
    def hidden_states(self) -> list[np.ndarray]:
        """L + 1 states: the embeddings, then each layer's output."""
        return [self.embeddings, *(layer.output for layer in self.layers)]

    @property
    def weights(self) -> np.ndarray:
        return np.stack([layer.weights for layer in self.layers])  # (L, h, n, n)

    @property
    def ablated(self) -> frozenset[Head]:
        return frozenset((n, i) for n, layer in enumerate(self.layers) for i in layer.ablated)


def embed(encoder: Encoder, ids: np.ndarray, type_ids: np.ndarray) -> np.ndarray:
    """LayerNorm(word[id] + position[p] + token_type[type]) for each position p."""
    n = len(ids)
    x = encoder.word[ids] + encoder.position[:n] + encoder.token_type[type_ids]  # (n, d_model)
    return layer_norm(x, encoder.norm, encoder.config.eps)


def split_heads(y: np.ndarray, heads: int) -> np.ndarray:
    """(n, h·d_head) → (h, n, d_head): head i gets columns i·d_head … (i+1)·d_head − 1."""
    n, width = y.shape
    return np.ascontiguousarray(y.reshape(n, heads, width // heads).transpose(1, 0, 2))


def attend_heads(
    q: np.ndarray, k: np.ndarray, v: np.ndarray, allowed: np.ndarray
) -> list[HeadStages]:
    """`attend` for h heads at once: q, k, v (h, n, d_head) → h HeadStages (views of (h, n, n)).

    softmax(q·kᵀ / √d_head + M) · v. With every key visible (the encoder's case) M = 0, the
    masked scores are the scaled ones, and the softmax needs no mask.
    """
    scale_factor = float(np.sqrt(q.shape[-1]))
    scores = q @ k.transpose(0, 2, 1)  # (h, n, n)
    scaled = scores / scale_factor
    if allowed.all():
        masked = scaled
        weights = scaled - scaled.max(axis=-1, keepdims=True)  # (h, n, n), ≤ 0
        np.exp(weights, out=weights)
        weights /= weights.sum(axis=-1, keepdims=True)
    else:
        masked = np.where(allowed, scaled, -np.inf)
        weights = masked_softmax(scaled, allowed)
    output = weights @ v  # (h, n, d_head)
    return [
        HeadStages(q[i], k[i], v[i], scores[i], scale_factor, scaled[i], allowed, masked[i],
                   weights[i], output[i])
        for i in range(len(q))
    ]  # fmt: skip


def feed_forward(a: np.ndarray, weights: LayerWeights, config: EncoderConfig) -> np.ndarray:
    """LayerNorm(a + GELU(a·W_1 + b_1)·W_2 + b_2), row by row (any leading shape)."""
    hidden = gelu(a @ weights.w_1 + weights.b_1)  # (…, n, d_ff)
    return layer_norm(a + hidden @ weights.w_2 + weights.b_2, weights.norm_2, config.eps)


def encoder_layer(
    x: np.ndarray,
    weights: LayerWeights,
    config: EncoderConfig,
    allowed: np.ndarray,
    ablated: frozenset[int] = frozenset(),
) -> LayerStages:
    """Multi-head self-attention, then the feed-forward block, each with residual + norm."""
    h = config.heads
    q = split_heads(x @ weights.w_q + weights.b_q, h)  # (h, n, d_head)
    k = split_heads(x @ weights.w_k + weights.b_k, h)
    v = split_heads(x @ weights.w_v + weights.b_v, h)
    heads = attend_heads(q, k, v, allowed)
    outputs = [
        np.zeros_like(hd.output) if i in ablated else hd.output for i, hd in enumerate(heads)
    ]
    concat = np.concatenate(outputs, axis=-1)  # (n, h·d_head)
    attention = concat @ weights.w_o + weights.b_o  # (n, d_model)
    a = layer_norm(x + attention, weights.norm_1, config.eps)
    return LayerStages(x, heads, attention, feed_forward(a, weights, config), ablated)


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
    check_heads(encoder.config, ablate)
    ids = np.asarray(ids)
    type_ids = np.zeros_like(ids) if type_ids is None else np.asarray(type_ids)
    allowed = build_mask(len(ids))  # bidirectional, nothing padded: every key visible
    embeddings = x = embed(encoder, ids, type_ids)
    layers = []
    for number, weights in enumerate(encoder.layers):
        off = frozenset(i for layer, i in ablate if layer == number)
        layer = encoder_layer(x, weights, encoder.config, allowed, off)
        layers.append(layer)
        x = layer.output
    return EncoderStages(embeddings, layers)


def sentence_embedding(last_hidden: np.ndarray) -> np.ndarray:
    """The sentence vector: the mean of the last hidden states, scaled to length 1.

    Any leading shape: (n, d_model) → (d_model,), (B, n, d_model) → (B, d_model).
    """
    pooled = last_hidden.mean(axis=-2)  # (…, d_model)
    return pooled / np.linalg.norm(pooled, axis=-1, keepdims=True)
