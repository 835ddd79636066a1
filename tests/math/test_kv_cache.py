"""The KV calculator for today's models: latent attention, quantized caches, sinks, what fits,
and each new preset's bytes per token worked by hand."""

from fractions import Fraction

import pytest

from app import cost
from app.cost import AttentionConfig
from app.model_configs import PRESETS_BY_ID

GIB = 2**30
BF16 = 2


def test_the_seed_table_is_unchanged() -> None:
    assert cost.score_entries(4096) == 16_777_216
    assert cost.score_bytes(4096, 2) == 33_554_432 == 32 * 2**20


@pytest.mark.parametrize(
    ("kv_dtype", "bytes_per_value"),
    [
        ("fp32", 4),
        ("fp16", 2),
        ("bf16", 2),
        ("fp8", 1),
        ("int4", Fraction(1, 2)),
        ("q8_0", Fraction(34, 32)),
        ("q4_0", Fraction(18, 32)),
    ],
)
def test_kv_element_sizes_include_llama_cpp_blocks(kv_dtype: str, bytes_per_value: int) -> None:
    assert cost.KV_DTYPE_BYTES[kv_dtype] == bytes_per_value


def test_quantized_caches_count_whole_blocks_of_32() -> None:
    # Llama-3.1-8B: 2 · 32 layers · 8 heads · 128 = 65,536 values per token = 2,048 blocks
    per_token_q8 = cost.kv_cache_bytes_per_token(32, 8, 128, cost.KV_DTYPE_BYTES["q8_0"])
    per_token_q4 = cost.kv_cache_bytes_per_token(32, 8, 128, cost.KV_DTYPE_BYTES["q4_0"])
    assert per_token_q8 == 2048 * 34 == 69_632
    assert per_token_q4 == 2048 * 18 == 36_864
    # 32 values that need one block, and a 33rd that starts a second one (rounded up to bytes)
    assert cost.storage_bytes(32, cost.KV_DTYPE_BYTES["q4_0"]) == 18
    assert cost.storage_bytes(64, cost.KV_DTYPE_BYTES["q8_0"]) == 68


def test_latent_attention_caches_rank_plus_rope_per_layer() -> None:
    mla = AttentionConfig(layers=60, heads=128, kv_heads=128, head_dim=192, kv_lora_rank=512,
                          rope_head_dim=64)  # fmt: skip
    assert mla.kind == "MLA"
    assert mla.kv_cache_bytes_per_token(BF16) == 60 * (512 + 64) * 2 == 69_120
    assert mla.kv_cache_bytes(1000, BF16, batch=3) == 3 * 1000 * 69_120
    mha = AttentionConfig(layers=60, heads=128, kv_heads=128, head_dim=128)
    assert mha.kv_cache_bytes_per_token(BF16) // mla.kv_cache_bytes_per_token(BF16) == 56


def test_sinks_add_to_the_window_of_windowed_layers_only() -> None:
    config = AttentionConfig(layers=4, heads=8, kv_heads=2, head_dim=64, window=100,
                             window_layers=3, sinks=4)  # fmt: skip
    per_layer_token = 2 * 2 * 64 * BF16  # 512 bytes
    # n = 50: nothing evicted yet
    assert config.kv_cache_bytes(50, BF16) == 4 * 50 * per_layer_token
    # n = 1,000: 3 windowed layers keep 100 + 4, the global one keeps 1,000
    assert config.kv_cache_bytes(1000, BF16) == (3 * 104 + 1000) * per_layer_token
    assert cost.cached_tokens(1000, 100, 4) == 104
    assert cost.cached_tokens(102, 100, 4) == 102


def test_what_fits_in_the_gpu_memory() -> None:
    llama = PRESETS_BY_ID["llama-3.1-8b"].attention  # 131,072 bytes per token in bf16
    budget, weights = 24 * GIB, 16 * GIB
    # (24 − 16) GiB = 8 GiB free = 65,536 tokens of 131,072 bytes
    assert llama.max_seq_len(BF16, 1, budget, weights, limit=10**7) == 65_536
    assert llama.max_seq_len(BF16, 4, budget, weights, limit=10**7) == 16_384
    assert llama.max_batch(8192, BF16, budget, weights) == 8  # 1 GiB per sequence
    assert llama.max_batch(8193, BF16, budget, weights) == 7
    assert llama.max_seq_len(BF16, 1, 8 * GIB, weights, limit=10**7) == 0  # weights alone overflow
    assert llama.max_batch(8192, BF16, 8 * GIB, weights) == 0


def test_a_model_windowed_on_every_layer_fits_any_length() -> None:
    mistral = PRESETS_BY_ID["mistral-7b-v0.1"].attention
    assert mistral.max_seq_len(BF16, 1, 24 * GIB, 0, limit=1_000_000) == 1_000_000


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
