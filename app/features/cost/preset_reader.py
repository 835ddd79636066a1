"""How a preset reads a model's published config.json, the way a runtime does.

Each preset holds the attention fields of the model's config.json on its Hugging Face Hub
page, under the names that file uses, and `read_config` reads layers, heads, key/value
heads, head width, context and sliding window from them the way a runtime does: the head
width is `head_dim` when the file states one (Gemma 2: 256, although hidden_size / heads =
3584 / 16 = 224), else hidden_size / heads; `multi_query: true` means one key/value head;
a `sliding_window` counts only when `use_sliding_window` is not false. Multi-head latent
attention (DeepSeek-V2) is read from `kv_lora_rank` and `qk_rope_head_dim`, and its query–key
width is qk_nope_head_dim + qk_rope_head_dim. Which layers are local comes from the file's
`layer_types` (gpt-oss) or `sliding_window_pattern` (Gemma 3: every 6th layer is global), and
what config.json leaves out (Falcon-7B's context, Gemma 2's local layers) from the model card or
paper named in `source`. Nothing is fetched at run time.
"""

from collections.abc import Mapping
from dataclasses import dataclass

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
        if "qk_nope_head_dim" in self.config:  # MLA: queries and keys are nope + rope wide
            return int(self.config["qk_nope_head_dim"]) + self.rope_head_dim
        return int(self.config.get("head_dim", self.hidden_size // self.heads))

    @property
    def kv_lora_rank(self) -> int | None:
        rank = self.config.get("kv_lora_rank")
        return None if rank is None else int(rank)

    @property
    def rope_head_dim(self) -> int:
        return int(self.config.get("qk_rope_head_dim", 0)) if self.kv_lora_rank else 0

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
            self.layers,
            self.heads,
            self.kv_heads,
            self.head_dim,
            self.window,
            some,
            kv_lora_rank=self.kv_lora_rank,
            rope_head_dim=self.rope_head_dim,
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
            "kv_lora_rank": self.kv_lora_rank,
            "rope_head_dim": self.rope_head_dim if self.kv_lora_rank is not None else None,
            "attention": self.attention.kind,
            "decoder": self.decoder,
            "source": self.source,
            "config_fields": dict(self.config),
            "notes": self.notes,
        }
