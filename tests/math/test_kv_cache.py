"""The KV calculator's formulas for today's models: latent attention, quantized caches, sinks,
and what fits in a GPU."""

from fractions import Fraction

import pytest

from app.math import cost
from app.math.cost import AttentionConfig

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
    llama = AttentionConfig(32, 32, 8, 128)  # Llama-3.1-8B: 131,072 bytes per token in bf16
    budget, weights = 24 * GIB, 16 * GIB
    # (24 − 16) GiB = 8 GiB free = 65,536 tokens of 131,072 bytes
    assert llama.max_seq_len(BF16, 1, budget, weights, limit=10**7) == 65_536
    assert llama.max_seq_len(BF16, 4, budget, weights, limit=10**7) == 16_384
    assert llama.max_batch(8192, BF16, budget, weights) == 8  # 1 GiB per sequence
    assert llama.max_batch(8193, BF16, budget, weights) == 7
    assert llama.max_seq_len(BF16, 1, 8 * GIB, weights, limit=10**7) == 0  # weights alone overflow
    assert llama.max_batch(8192, BF16, 8 * GIB, weights) == 0


def test_a_model_windowed_on_every_layer_fits_any_length() -> None:
    mistral = AttentionConfig(32, 32, 8, 128, window=4096)
    assert mistral.max_seq_len(BF16, 1, 24 * GIB, 0, limit=1_000_000) == 1_000_000
