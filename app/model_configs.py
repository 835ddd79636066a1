"""Published attention configurations of real models, each with where it was read.

The numbers are copied from each model's config.json on its Hugging Face Hub page (or, where
that file leaves a field out, from the model card or paper named in `source`). The width of
one head is the configuration's `head_dim` when it states one (Gemma 2: 256, although
hidden_size / heads = 3584 / 16 = 224); otherwise hidden_size / heads. Nothing is fetched
at run time.
"""

from dataclasses import dataclass, field

from app.cost import AttentionConfig


@dataclass(frozen=True)
class ModelPreset:
    id: str
    name: str
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    hidden_size: int
    max_context: int
    source: str
    decoder: bool = True
    window: int | None = None
    window_layer_indices: tuple[int, ...] = ()
    notes: str = ""
    config_fields: dict[str, int | bool | str | None] = field(default_factory=dict)

    @property
    def window_layers(self) -> int | None:
        return len(self.window_layer_indices) if self.window is not None else None

    @property
    def attention(self) -> AttentionConfig:
        return AttentionConfig(
            self.layers, self.heads, self.kv_heads, self.head_dim, self.window, self.window_layers
        )

    def as_dict(self) -> dict[str, object]:
        return {
            "id": self.id,
            "name": self.name,
            "layers": self.layers,
            "heads": self.heads,
            "kv_heads": self.kv_heads,
            "head_dim": self.head_dim,
            "hidden_size": self.hidden_size,
            "max_context": self.max_context,
            "window": self.window,
            "window_layers": self.window_layers,
            "window_layer_indices": list(self.window_layer_indices),
            "attention": self.attention.kind,
            "decoder": self.decoder,
            "source": self.source,
            "config_fields": self.config_fields,
            "notes": self.notes,
        }


PRESETS: tuple[ModelPreset, ...] = (
    ModelPreset(
        id="gpt2",
        name="GPT-2 small",
        layers=12,
        heads=12,
        kv_heads=12,
        head_dim=64,
        hidden_size=768,
        max_context=1024,
        source=(
            "config.json of openai-community/gpt2 on the Hugging Face Hub; Radford et al. "
            "(2019), Language Models are Unsupervised Multitask Learners"
        ),
        config_fields={"n_layer": 12, "n_head": 12, "n_embd": 768, "n_positions": 1024},
        notes="No head_dim field: each head is n_embd / n_head = 768 / 12 = 64 wide.",
    ),
    ModelPreset(
        id="bert-base",
        name="BERT-base (uncased)",
        layers=12,
        heads=12,
        kv_heads=12,
        head_dim=64,
        hidden_size=768,
        max_context=512,
        decoder=False,
        source=(
            "config.json of google-bert/bert-base-uncased on the Hugging Face Hub; Devlin et "
            "al. (2019), BERT: Pre-training of Deep Bidirectional Transformers"
        ),
        config_fields={
            "num_hidden_layers": 12,
            "num_attention_heads": 12,
            "hidden_size": 768,
            "max_position_embeddings": 512,
        },
        notes=(
            "An encoder: it reads the whole input in one pass and generates nothing token by "
            "token, so in use it keeps no KV cache. The KV figure is what K and V of one pass "
            "occupy."
        ),
    ),
    ModelPreset(
        id="llama-2-7b",
        name="Llama-2-7B",
        layers=32,
        heads=32,
        kv_heads=32,
        head_dim=128,
        hidden_size=4096,
        max_context=4096,
        source=(
            "config.json of meta-llama/Llama-2-7b-hf on the Hugging Face Hub; Touvron et al. "
            "(2023), Llama 2: Open Foundation and Fine-Tuned Chat Models"
        ),
        config_fields={
            "num_hidden_layers": 32,
            "num_attention_heads": 32,
            "num_key_value_heads": 32,
            "hidden_size": 4096,
            "max_position_embeddings": 4096,
        },
        notes="Multi-head attention: every query head has its own keys and values.",
    ),
    ModelPreset(
        id="llama-2-70b",
        name="Llama-2-70B",
        layers=80,
        heads=64,
        kv_heads=8,
        head_dim=128,
        hidden_size=8192,
        max_context=4096,
        source=(
            "config.json of meta-llama/Llama-2-70b-hf on the Hugging Face Hub; Touvron et al. "
            "(2023), Llama 2 (grouped-query attention in the 34B and 70B models)"
        ),
        config_fields={
            "num_hidden_layers": 80,
            "num_attention_heads": 64,
            "num_key_value_heads": 8,
            "hidden_size": 8192,
            "max_position_embeddings": 4096,
        },
        notes="Grouped-query attention: 8 query heads share each key/value head.",
    ),
    ModelPreset(
        id="llama-3-8b",
        name="Llama-3-8B",
        layers=32,
        heads=32,
        kv_heads=8,
        head_dim=128,
        hidden_size=4096,
        max_context=8192,
        source="config.json of meta-llama/Meta-Llama-3-8B on the Hugging Face Hub",
        config_fields={
            "num_hidden_layers": 32,
            "num_attention_heads": 32,
            "num_key_value_heads": 8,
            "hidden_size": 4096,
            "max_position_embeddings": 8192,
        },
        notes=(
            "Same width and depth as Llama-2-7B, but 8 key/value heads instead of 32: "
            "a quarter of the KV cache per token."
        ),
    ),
    ModelPreset(
        id="mistral-7b-v0.1",
        name="Mistral-7B (v0.1)",
        layers=32,
        heads=32,
        kv_heads=8,
        head_dim=128,
        hidden_size=4096,
        max_context=32768,
        window=4096,
        window_layer_indices=tuple(range(32)),
        source=(
            "config.json of mistralai/Mistral-7B-v0.1 on the Hugging Face Hub; Jiang et al. "
            "(2023), Mistral 7B (sliding-window attention with a rolling buffer cache)"
        ),
        config_fields={
            "num_hidden_layers": 32,
            "num_attention_heads": 32,
            "num_key_value_heads": 8,
            "hidden_size": 4096,
            "max_position_embeddings": 32768,
            "sliding_window": 4096,
        },
        notes=(
            "Every layer attends to at most the last 4,096 tokens, so a rolling cache never "
            "holds more than 4,096 tokens per layer. Later Mistral-7B versions dropped the window."
        ),
    ),
    ModelPreset(
        id="gemma-2-9b",
        name="Gemma-2-9B",
        layers=42,
        heads=16,
        kv_heads=8,
        head_dim=256,
        hidden_size=3584,
        max_context=8192,
        window=4096,
        window_layer_indices=tuple(range(0, 42, 2)),
        source=(
            "config.json of google/gemma-2-9b on the Hugging Face Hub; Gemma Team (2024), "
            "Gemma 2: Improving Open Language Models at a Practical Size"
        ),
        config_fields={
            "num_hidden_layers": 42,
            "num_attention_heads": 16,
            "num_key_value_heads": 8,
            "head_dim": 256,
            "hidden_size": 3584,
            "max_position_embeddings": 8192,
            "sliding_window": 4096,
        },
        notes=(
            "head_dim is 256 although hidden_size / heads = 3584 / 16 = 224. Layers alternate: "
            "the even-numbered ones (0, 2, …, 40) use a local 4,096-token window, the odd ones "
            "attend globally over the 8,192-token context."
        ),
    ),
    ModelPreset(
        id="qwen2.5-7b",
        name="Qwen2.5-7B",
        layers=28,
        heads=28,
        kv_heads=4,
        head_dim=128,
        hidden_size=3584,
        max_context=131072,
        source=(
            "config.json of Qwen/Qwen2.5-7B on the Hugging Face Hub; Qwen Team (2024), "
            "Qwen2.5 Technical Report"
        ),
        config_fields={
            "num_hidden_layers": 28,
            "num_attention_heads": 28,
            "num_key_value_heads": 4,
            "hidden_size": 3584,
            "max_position_embeddings": 131072,
            "use_sliding_window": False,
        },
        notes=(
            "Grouped-query attention with only 4 key/value heads for 28 query heads. The config "
            "lists a sliding_window value but use_sliding_window is false: every layer is global."
        ),
    ),
    ModelPreset(
        id="falcon-7b",
        name="Falcon-7B",
        layers=32,
        heads=71,
        kv_heads=1,
        head_dim=64,
        hidden_size=4544,
        max_context=2048,
        source=(
            "config.json of tiiuae/falcon-7b on the Hugging Face Hub (multi_query: true); "
            "context length 2,048 from its model card; Almazrouei et al. (2023), The Falcon "
            "Series of Open Language Models"
        ),
        config_fields={
            "num_hidden_layers": 32,
            "num_attention_heads": 71,
            "hidden_size": 4544,
            "multi_query": True,
        },
        notes=(
            "Multi-query attention: all 71 query heads share one key/value head of width "
            "4544 / 71 = 64."
        ),
    ),
    ModelPreset(
        id="phi-3-mini-4k",
        name="Phi-3-mini (4k)",
        layers=32,
        heads=32,
        kv_heads=32,
        head_dim=96,
        hidden_size=3072,
        max_context=4096,
        window=2047,
        window_layer_indices=tuple(range(32)),
        source=(
            "config.json of microsoft/Phi-3-mini-4k-instruct on the Hugging Face Hub; Abdin et "
            "al. (2024), Phi-3 Technical Report"
        ),
        config_fields={
            "num_hidden_layers": 32,
            "num_attention_heads": 32,
            "num_key_value_heads": 32,
            "hidden_size": 3072,
            "max_position_embeddings": 4096,
            "sliding_window": 2047,
        },
        notes=(
            "Multi-head attention with heads 3072 / 32 = 96 wide. The config sets a "
            "2,047-token sliding window on every layer; a runtime that ignores it keeps all "
            "4,096 tokens (clear the window field to see that size)."
        ),
    ),
)

PRESETS_BY_ID: dict[str, ModelPreset] = {p.id: p for p in PRESETS}
