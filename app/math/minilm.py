"""A trained BERT encoder (all-MiniLM-L6-v2) in pure numpy, with every head's stages exposed.

Each of the L layers maps the hidden state x (n × d_model) entering it to the next one:

    head_i = softmax((x·W_Q + b_Q)_i · (x·W_K + b_K)_iᵀ / √d_head) · (x·W_V + b_V)_i
    a      = LayerNorm(x + [head_0 | … | head_{h−1}] · W_O + b_O)
    x'     = LayerNorm(a + GELU(a·W_1 + b_1) · W_2 + b_2)

where (·)_i is the i-th block of d_head columns. The first x is
LayerNorm(word + position + token-type embeddings). The encoder is bidirectional: every
token sees every token (one sentence, no padding, so the mask hides nothing).

Row-vector convention as in app/math/attention.py: Q = x·W_Q, so W_Q is d_model × d_model here.
The weight files store each Linear layer as (out, in); `load_encoder` transposes them.
Each head's stages come from app/math/attention.py's `attend`, the same code as the lab's head.
"""

import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from safetensors.numpy import load_file

from app.math.attention import HeadStages, attend, build_mask

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
    """The complementary error function 1 − erf(x), elementwise (numpy has no erf)."""
    z = np.abs(x)
    t = 1.0 / (1.0 + 0.5 * z)
    poly = np.zeros_like(t)
    for c in reversed(_ERFC_COEFFICIENTS):
        poly = poly * t + c
    tail = t * np.exp(poly - z * z)
    return np.where(x >= 0, tail, 2.0 - tail)


def gelu(x: np.ndarray) -> np.ndarray:
    """GELU(x) = x · Φ(x) = x/2 · (1 + erf(x/√2)) = x/2 · erfc(−x/√2): the exact form."""
    return 0.5 * x * erfc(-x / math.sqrt(2.0))


# ---------------------------------------------------------------- the forward pass


@dataclass(frozen=True)
class LayerStages:
    """What one layer computed: its input and every head's stages."""

    x: np.ndarray  # (n, d_model) the hidden state entering the layer
    heads: list[HeadStages]  # h heads, each with q, k, v of width d_head
    output: np.ndarray  # (n, d_model) the hidden state leaving the layer

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


def embed(encoder: Encoder, ids: np.ndarray, type_ids: np.ndarray) -> np.ndarray:
    """LayerNorm(word[id] + position[p] + token_type[type]) for each position p."""
    n = len(ids)
    x = encoder.word[ids] + encoder.position[:n] + encoder.token_type[type_ids]  # (n, d_model)
    return layer_norm(x, encoder.norm, encoder.config.eps)


def split_heads(y: np.ndarray, heads: int) -> np.ndarray:
    """(n, h·d_head) → (h, n, d_head): head i gets columns i·d_head … (i+1)·d_head − 1."""
    n, width = y.shape
    return np.ascontiguousarray(y.reshape(n, heads, width // heads).transpose(1, 0, 2))


def encoder_layer(
    x: np.ndarray, weights: LayerWeights, config: EncoderConfig, allowed: np.ndarray
) -> LayerStages:
    """Multi-head self-attention, then the feed-forward block, each with residual + norm."""
    h = config.heads
    q = split_heads(x @ weights.w_q + weights.b_q, h)  # (h, n, d_head)
    k = split_heads(x @ weights.w_k + weights.b_k, h)
    v = split_heads(x @ weights.w_v + weights.b_v, h)
    heads = [attend(q[i], k[i], v[i], allowed) for i in range(h)]
    concat = np.concatenate([head.output for head in heads], axis=-1)  # (n, h·d_head)
    a = layer_norm(x + concat @ weights.w_o + weights.b_o, weights.norm_1, config.eps)
    hidden = gelu(a @ weights.w_1 + weights.b_1)  # (n, d_ff)
    out = layer_norm(a + hidden @ weights.w_2 + weights.b_2, weights.norm_2, config.eps)
    return LayerStages(x, heads, out)


def forward(encoder: Encoder, ids: np.ndarray, type_ids: np.ndarray | None = None) -> EncoderStages:
    """Run one sentence (token ids, [CLS] … [SEP]) through every layer."""
    ids = np.asarray(ids)
    type_ids = np.zeros_like(ids) if type_ids is None else np.asarray(type_ids)
    allowed = build_mask(len(ids))  # bidirectional, nothing padded: every key visible
    embeddings = x = embed(encoder, ids, type_ids)
    layers = []
    for weights in encoder.layers:
        layer = encoder_layer(x, weights, encoder.config, allowed)
        layers.append(layer)
        x = layer.output
    return EncoderStages(embeddings, layers)


def sentence_embedding(last_hidden: np.ndarray) -> np.ndarray:
    """The sentence vector: the mean of the last hidden states, scaled to length 1."""
    pooled = last_hidden.mean(axis=0)  # (d_model,)
    return pooled / np.linalg.norm(pooled)
