"""GET /api/cost's new fields: kv_dtype, latent attention, sinks, what fits, warnings."""

import pytest
from fastapi.testclient import TestClient

GIB = 2**30


def cost(client: TestClient, **params: object) -> dict:
    answer = client.get("/api/cost", params=params)
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_the_seed_table_still_holds(client: TestClient) -> None:
    body = cost(client)
    assert body["score_entries_per_head"] == 16_777_216
    assert body["score_bytes_per_head"] == 33_554_432
    assert body["sizes"]["score_bytes_per_head"]["text"] == "32 MiB"


@pytest.mark.parametrize(
    ("kv_dtype", "per_token"),
    [(None, 131_072), ("fp8", 65_536), ("q8_0", 2048 * 34), ("q4_0", 2048 * 18), ("int4", 32_768)],
)
def test_kv_dtype_sets_the_cache_element_only(
    client: TestClient, kv_dtype: str | None, per_token: int
) -> None:
    params = {"preset": "llama-3.1-8b", "dtype": "bf16"}
    if kv_dtype:
        params["kv_dtype"] = kv_dtype
    body = cost(client, **params)
    assert body["kv_cache_bytes_per_token"] == per_token
    assert body["score_bytes_per_head"] == 33_554_432  # scores stay bf16
    assert body["kv_dtype"] == (kv_dtype or "bf16")


def test_latent_attention_from_the_query(client: TestClient) -> None:
    body = cost(client, layers=60, heads=128, kv_lora_rank=512, rope_head_dim=64, seq_len=1000)
    assert body["attention"] == "MLA"
    assert body["kv_elements_per_token_layer"] == 576
    assert body["kv_cache_bytes_per_token"] == 60 * 576 * 2 == 69_120
    assert body["kv_cache_bytes"] == 1000 * 69_120


def test_sinks_add_to_each_windowed_layer(client: TestClient) -> None:
    body = cost(client, layers=2, heads=4, kv_heads=2, head_dim=64, window=100, window_layers=1,
                sinks=4, seq_len=1000)  # fmt: skip
    # one windowed layer keeps 104 tokens, one global layer 1,000; 2 · 2 · 64 · 2 bytes each
    assert body["kv_cache_bytes"] == (104 + 1000) * 512
    assert body["kv_cached_tokens_windowed"] == 104


def test_what_fits_with_the_weights(client: TestClient) -> None:
    body = cost(client, preset="llama-3.1-8b", gpu_memory_gib=24, weight_bytes=16 * GIB,
                seq_len=8192)  # fmt: skip
    assert body["max_seq_len"] == 65_536  # 8 GiB free / 131,072 bytes per token
    assert body["max_batch"] == 8  # 1 GiB per sequence of 8,192 tokens
    assert body["fits"] is True
    tight = cost(client, preset="llama-3.1-8b", gpu_memory_gib=24, weight_bytes=16 * GIB,
                 seq_len=8192, batch=9)  # fmt: skip
    assert tight["fits"] is False
    assert any("do not fit" in w for w in tight["warnings"])


def test_a_warning_past_the_preset_context(client: TestClient) -> None:
    body = cost(client, preset="qwen3-8b", seq_len=50_000)
    assert any("40,960" in w and "Qwen3-8B" in w for w in body["warnings"])
    assert cost(client, preset="qwen3-8b", seq_len=40_960)["warnings"] == []


def test_models_list_the_new_presets_with_their_sources(client: TestClient) -> None:
    models = {m["id"]: m for m in client.get("/api/cost/models").json()["models"]}
    for preset in ("gpt-oss-120b", "deepseek-v2", "gemma-3-27b", "qwen3-8b", "llama-3.1-8b"):
        assert "config.json" in models[preset]["source"]
    assert (models["deepseek-v2"]["kv_lora_rank"], models["deepseek-v2"]["rope_head_dim"]) == (
        512,
        64,
    )
    assert models["gemma-3-27b"]["window_layers"] == 52


@pytest.mark.parametrize(
    ("params", "field", "words"),
    [
        ({"rope_head_dim": 64}, "rope_head_dim", "give kv_lora_rank too"),
        ({"sinks": 4}, "sinks", "give window too"),
        ({"kv_dtype": "q5_1"}, "kv_dtype", "q8_0"),
        ({"weight_bytes": -1}, "weight_bytes", ""),
    ],
)
def test_bad_combinations_answer_422_with_a_sentence(
    client: TestClient, params: dict, field: str, words: str
) -> None:
    answer = client.get("/api/cost", params=params)
    assert answer.status_code == 422
    detail = answer.json()["detail"][0]
    assert detail["loc"] == ["query", field]
    assert words in detail["msg"]
