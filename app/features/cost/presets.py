"""Published attention configurations of real models, each with where it was read.

Each preset holds the attention fields of the model's config.json on its Hugging Face Hub
page, under the names that file uses, and `read_config` reads layers, heads, key/value
heads, head width, context and sliding window from them the way a runtime does: the head
width is `head_dim` when the file states one (Gemma 2: 256, although hidden_size / heads =
3584 / 16 = 224), else hidden_size / heads; `multi_query: true` means one key/value head;
a `sliding_window` counts only when `use_sliding_window` is not false. What config.json
leaves out (Falcon-7B's context, which of Gemma 2's layers are local) comes from the model
card or paper named in `source`. Nothing is fetched at run time.
"""

from collections.abc import Mapping
from dataclasses import dataclass

from app.core.i18n import N_
from app.math.cost import AttentionConfig

ConfigValue = int | bool
FIELD_NAMES = {  # our name: the names config.json files use for it, GPT-2's last
    "layers": ("num_hidden_layers", "n_layer"),
    "heads": ("num_attention_heads", "n_head"),
    "hidden_size": ("hidden_size", "n_embd"),
    "max_context": ("max_position_embeddings", "n_positions"),
}


def _field(config: Mapping[str, ConfigValue], ours: str) -> int | None:
    for name in FIELD_NAMES[ours]:
        if name in config:
            return int(config[name])
    return None


@dataclass(frozen=True)
class ModelPreset:
    id: str
    name: str
    config: Mapping[str, ConfigValue]  # the attention fields of config.json, as published
    source: str
    notes: str = ""
    decoder: bool = True
    context: int | None = None  # when config.json does not state it
    window_layer_indices: tuple[int, ...] | None = None  # None: every layer, when windowed

    @property
    def layers(self) -> int:
        return _field(self.config, "layers") or 0

    @property
    def heads(self) -> int:
        return _field(self.config, "heads") or 0

    @property
    def hidden_size(self) -> int:
        return _field(self.config, "hidden_size") or 0

    @property
    def kv_heads(self) -> int:
        if self.config.get("multi_query"):
            return 1
        return int(self.config.get("num_key_value_heads", self.heads))

    @property
    def head_dim(self) -> int:
        return int(self.config.get("head_dim", self.hidden_size // self.heads))

    @property
    def max_context(self) -> int:
        return self.context or _field(self.config, "max_context") or 0

    @property
    def window(self) -> int | None:
        if self.config.get("use_sliding_window") is False or "sliding_window" not in self.config:
            return None
        return int(self.config["sliding_window"])

    @property
    def windowed_layer_indices(self) -> tuple[int, ...]:
        if self.window is None:
            return ()
        return self.window_layer_indices or tuple(range(self.layers))

    @property
    def window_layers(self) -> int | None:
        return len(self.windowed_layer_indices) if self.window is not None else None

    @property
    def attention(self) -> AttentionConfig:
        """The configuration the calculator uses; a window on every layer is stated as such
        (window_layers None), so that overriding `layers` keeps every layer windowed."""
        some = self.window_layers if self.window_layers != self.layers else None
        return AttentionConfig(
            self.layers, self.heads, self.kv_heads, self.head_dim, self.window, some
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
            "window_layer_indices": list(self.windowed_layer_indices),
            "attention": self.attention.kind,
            "decoder": self.decoder,
            "source": self.source,
            "config_fields": dict(self.config),
            "notes": self.notes,
        }


PRESETS: tuple[ModelPreset, ...] = (
    ModelPreset(
        id="gpt2",
        name="GPT-2 small",
        source=(
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
        source=(
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
        source=(
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
        source=(
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
        source="config.json of meta-llama/Meta-Llama-3-8B on the Hugging Face Hub",
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
        source=(
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
        source=(
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
        source=(
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
        source=(
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
        source=(
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
)

PRESETS_BY_ID: dict[str, ModelPreset] = {p.id: p for p in PRESETS}
