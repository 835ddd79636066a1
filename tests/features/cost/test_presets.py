"""Each new preset's KV cache bytes per token, worked by hand from its config.json."""

import pytest

from app.features.cost.presets import PRESETS_BY_ID

GIB = 2**30
BF16 = 2

# ---------------------------------------------------------------- each new preset, by hand
# bytes per token while no window is full = layers × (numbers per token per layer) × 2 (bf16)


@pytest.mark.parametrize(
    ("preset", "per_token", "beyond_windows"),
    [
        # 36 layers · 2 (K, V) · 8 kv heads · 64 wide · 2 bytes; past 128 tokens 18 global layers
        ("gpt-oss-120b", 36 * 2 * 8 * 64 * 2, 18 * 2 * 8 * 64 * 2),
        # 60 layers · (512 latent + 64 RoPE key) · 2 bytes
        ("deepseek-v2", 60 * 576 * 2, 60 * 576 * 2),
        # 62 layers · 2 · 16 kv heads · 128 · 2; past 1,024 tokens only 10 global layers
        ("gemma-3-27b", 62 * 2 * 16 * 128 * 2, 10 * 2 * 16 * 128 * 2),
        # 36 layers · 2 · 8 kv heads · 128 (head_dim, not 4096 / 32 by coincidence alone) · 2
        ("qwen3-8b", 36 * 2 * 8 * 128 * 2, 36 * 2 * 8 * 128 * 2),
        # 36 · 2 · 8 · 128 · 2, where hidden / heads would say 80
        ("qwen3-4b", 36 * 2 * 8 * 128 * 2, 36 * 2 * 8 * 128 * 2),
        # 32 layers · 2 · 8 kv heads · 128 (4096 / 32) · 2
        ("llama-3.1-8b", 32 * 2 * 8 * 128 * 2, 32 * 2 * 8 * 128 * 2),
        # 30 layers · 2 · 3 kv heads · 64 (576 / 9) · 2
        ("smollm2-135m", 30 * 2 * 3 * 64 * 2, 30 * 2 * 3 * 64 * 2),
    ],
)
def test_new_presets_kv_bytes_per_token(preset: str, per_token: int, beyond_windows: int) -> None:
    config = PRESETS_BY_ID[preset].attention
    assert config.kv_cache_bytes_per_token(BF16) == per_token
    n = PRESETS_BY_ID[preset].max_context
    added = config.kv_cache_bytes(n, BF16) - config.kv_cache_bytes(n - 1, BF16)
    assert added == beyond_windows  # the last token of a full context


def test_new_presets_read_their_config_fields() -> None:
    p = PRESETS_BY_ID
    assert [p["gpt-oss-120b"].window, p["gpt-oss-120b"].window_layers] == [128, 18]
    assert p["gpt-oss-120b"].windowed_layer_indices[:3] == (0, 2, 4)
    assert (p["deepseek-v2"].kv_lora_rank, p["deepseek-v2"].rope_head_dim) == (512, 64)
    assert p["deepseek-v2"].head_dim == 128 + 64  # the query–key width of MLA
    gemma = p["gemma-3-27b"]
    assert gemma.head_dim == 128 != gemma.hidden_size // gemma.heads
    assert set(range(62)) - set(gemma.windowed_layer_indices) == {5, 11, 17, 23, 29, 35, 41,
                                                                  47, 53, 59}  # fmt: skip
    assert p["qwen3-4b"].head_dim == 128 != p["qwen3-4b"].hidden_size // p["qwen3-4b"].heads
    assert p["llama-3.1-8b"].max_context == 131_072
    # the whole 131,072-token context of Llama-3.1-8B in bf16: 16 GiB for one sequence
    assert p["llama-3.1-8b"].attention.kv_cache_bytes(131_072, BF16) == 16 * GIB
    for preset in ("gpt-oss-120b", "deepseek-v2", "gemma-3-27b", "qwen3-8b", "llama-3.1-8b"):
        assert "config.json" in p[preset].source
