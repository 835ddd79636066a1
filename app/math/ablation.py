"""Many ablations of one sentence at once: the encoder's layers on (B, n, d_model) arrays.

Run b switches off the heads whose gate is 0 in gates[b] (L × h): their block of the
concatenation entering W_O is multiplied by 0, as `forward` does. The layers are
app/math/minilm.py's own functions on a leading batch axis, so a batched run gives the same
numbers as `forward`. Only hidden states are kept, no stages, so that 72 runs (one per
head) cost a fraction of 72 forward passes: see `single_head_ablations`.
"""

from collections.abc import Callable, Collection

import numpy as np

from app.math.minilm import (
    Encoder,
    EncoderConfig,
    EncoderStages,
    Head,
    LayerWeights,
    after_attention,
    attention_weights,
    check_heads,
    combine_heads,
    project_heads,
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
    """Every head's output for B hidden states at once: (B, n, d_model) → (B, h, n, d_head)."""
    h = config.heads
    q = project_heads(x, weights.w_q, weights.b_q, h)  # (B, h, n, d_head)
    k = project_heads(x, weights.w_k, weights.b_k, h)
    v = project_heads(x, weights.w_v, weights.b_v, h)
    return attention_weights(q, k) @ v


def run_layers(encoder: Encoder, x: np.ndarray, gates: np.ndarray, start: int = 0) -> np.ndarray:
    """B runs at once from the hidden states (B, n, d_model) entering layer `start`.

    gates: (B, L, h), run b's head gates. Returns the last hidden states (B, n, d_model).
    """
    config = encoder.config
    for number in range(start, config.layers):
        weights = encoder.layers[number]
        outputs = batched_attention(x, weights, config)
        x = after_attention(x, combine_heads(outputs, gates[:, number], weights), weights, config)
    return x


def single_head_ablations(
    encoder: Encoder, stages: EncoderStages, check: Callable[[], None] | None = None
) -> np.ndarray:
    """(L, h, d_model): the sentence embedding with each head switched off in turn.

    On top of whatever `stages` had already switched off. Switching off a head of layer l
    changes nothing before layer l, and not that layer's attention weights either: so the
    h variants of layer l start from the run's own hidden state x entering layer l and its
    heads' outputs there, and only the rest of layer l and the layers after it are run
    again, h variants at a time. `check` is called before each layer's variants; it may
    raise to stop the work.
    """
    config = encoder.config
    h = config.heads
    base = head_gates(config, stages.ablated)
    embeddings = np.empty((config.layers, h, config.d_model), dtype=np.float32)
    for number, layer in enumerate(stages.layers):
        if check is not None:
            check()
        gates = np.repeat(base[None], h, axis=0)  # (h, L, h): variant i …
        gates[np.arange(h), number, np.arange(h)] = 0.0  # … also switches head i off
        weights = encoder.layers[number]
        attention = combine_heads(layer.outputs, gates[:, number], weights)  # (h, n, d_model)
        x = after_attention(layer.x, attention, weights, config)
        last = run_layers(encoder, x, gates, number + 1)
        embeddings[number] = sentence_embedding(last)
    return embeddings
