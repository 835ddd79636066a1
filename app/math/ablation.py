"""Many ablations of one sentence at once: the encoder's layers on (B, n, d_model) arrays.

Run b switches off the heads whose gate is 0 in gates[b] (L × h): their block of the
concatenation entering W_O is multiplied by 0, exactly as `forward` zeroes it. Only hidden
states are kept, no stages, so that 72 runs (one per head) cost little more than a few
forward passes: see `single_head_ablations`.
"""

import math
from collections.abc import Collection

import numpy as np

from app.math.minilm import (
    Encoder,
    EncoderConfig,
    EncoderStages,
    Head,
    LayerWeights,
    check_heads,
    feed_forward,
    layer_norm,
    sentence_embedding,
)


def head_gates(config: EncoderConfig, ablate: Collection[Head] = ()) -> np.ndarray:
    """(L, h): 1 for a head that is on, 0 for one switched off."""
    check_heads(config, ablate)
    gates = np.ones((config.layers, config.heads), dtype=np.float32)
    for layer, head in ablate:
        gates[layer, head] = 0.0
    return gates


def batched_attention(x: np.ndarray, weights: LayerWeights, config: EncoderConfig) -> np.ndarray:
    """Every head's output for B hidden states at once: (B, n, d_model) → (B, h, n, d_head).

    Bidirectional and unpadded, as in `forward`: softmax(q·kᵀ / √d_head) · v with the row
    maximum subtracted first.
    """
    b, n, _ = x.shape
    h, d_head = config.heads, config.d_head

    def project(w: np.ndarray, bias: np.ndarray) -> np.ndarray:
        return (x @ w + bias).reshape(b, n, h, d_head).transpose(0, 2, 1, 3)  # (B, h, n, d_head)

    q = project(weights.w_q, weights.b_q)
    k = project(weights.w_k, weights.b_k)
    v = project(weights.w_v, weights.b_v)
    scores = q @ k.transpose(0, 1, 3, 2) / np.float32(math.sqrt(d_head))  # (B, h, n, n)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True)) @ v  # (B, h, n, d_head)


def gated_layer(
    x: np.ndarray,
    outputs: np.ndarray,
    gates: np.ndarray,
    weights: LayerWeights,
    config: EncoderConfig,
) -> np.ndarray:
    """The rest of a layer from its heads' outputs (B, h, n, d_head), each gated by (B, h)."""
    b, h, n, d_head = outputs.shape
    gated = outputs * gates[:, :, None, None].astype(outputs.dtype)
    concat = gated.transpose(0, 2, 1, 3).reshape(b, n, h * d_head)  # (B, n, h·d_head)
    a = layer_norm(x + concat @ weights.w_o + weights.b_o, weights.norm_1, config.eps)
    return feed_forward(a, weights, config)  # (B, n, d_model)


def run_layers(encoder: Encoder, x: np.ndarray, gates: np.ndarray, start: int = 0) -> np.ndarray:
    """B runs at once from the hidden states (B, n, d_model) entering layer `start`.

    gates: (B, L, h), run b's head gates. Returns the last hidden states (B, n, d_model).
    """
    for number in range(start, encoder.config.layers):
        weights = encoder.layers[number]
        outputs = batched_attention(x, weights, encoder.config)
        x = gated_layer(x, outputs, gates[:, number], weights, encoder.config)
    return x


def single_head_ablations(encoder: Encoder, stages: EncoderStages) -> np.ndarray:
    """(L, h, d_model): the sentence embedding with each head switched off in turn.

    On top of whatever `stages` had already switched off. Switching off a head of layer l
    changes nothing before layer l, and not that layer's attention weights either: each
    layer's h variants start from the run's own hidden state and head outputs, and only
    the layers after it are run again, h at a time.
    """
    config = encoder.config
    h = config.heads
    base = head_gates(config, stages.ablated)
    embeddings = np.empty((config.layers, h, config.d_model), dtype=np.float32)
    for number, layer in enumerate(stages.layers):
        gates = np.repeat(base[None], h, axis=0)  # (h, L, h): variant i …
        gates[np.arange(h), number, np.arange(h)] = 0.0  # … also switches head i off
        outputs = np.stack([head.output for head in layer.heads])  # (h, n, d_head)
        x = np.broadcast_to(layer.x, (h, *layer.x.shape))  # (h, n, d_model)
        x = gated_layer(x, np.broadcast_to(outputs, (h, *outputs.shape)), gates[:, number],
                        encoder.layers[number], config)  # fmt: skip
        last = run_layers(encoder, x, gates, number + 1)
        embeddings[number] = sentence_embedding(last)
    return embeddings
