"""The cost calculator: formulas (app/math/cost.py), presets, /api/cost, /api/cost/models,
the timing panel, the figures and the /cost page."""

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from fractions import Fraction
from typing import TypeVar

import httpx
import pytest
from anyio import to_thread
from fastapi.testclient import TestClient
from hypothesis import given, settings
from hypothesis import strategies as st

from app.features.cost import measure
from app.features.cost.page import kv_chart, kv_label, measure_chart, scores_chart
from app.features.cost.presets import PRESETS_BY_ID
from app.features.cost.schemas import CostQuery
from app.features.cost.service import compute_cost
from app.main import create_app
from app.math import cost
from app.settings import Settings
from tests.aio import run_async
from tests.web.test_charts import assert_valid_chart

T = TypeVar("T")
MiB = 2**20
GiB = 2**30

# ---------------------------------------------------------------- seed 000's table

SEED_TABLE = [
    # sequence length, score entries per head, naive score storage (2 bytes per element)
    (4_096, 16_777_216, 32 * MiB, "32 MiB"),
    (8_192, 67_108_864, 128 * MiB, "128 MiB"),
    (16_384, 268_435_456, 512 * MiB, "512 MiB"),
]


@pytest.mark.parametrize(("n", "entries", "n_bytes", "text"), SEED_TABLE)
def test_seed_table_from_the_formulas(n: int, entries: int, n_bytes: int, text: str) -> None:
    assert cost.score_entries(n) == entries
    assert cost.score_bytes(n) == n_bytes  # bytes_per_element defaults to 2
    assert cost.score_bytes(n, bytes_per_element=2) == n_bytes
    assert cost.binary_size(n_bytes).text == text


@pytest.mark.parametrize(("n", "entries", "n_bytes", "text"), SEED_TABLE)
def test_seed_table_from_the_api(
    client: TestClient, n: int, entries: int, n_bytes: int, text: str
) -> None:
    body = client.get("/api/cost", params={"seq_len": n}).json()
    assert body["score_entries_per_head"] == entries
    assert body["score_bytes_per_head"] == n_bytes
    assert body["sizes"]["score_bytes_per_head"]["text"] == text


def test_default_query_is_the_seed_table(client: TestClient) -> None:
    body = client.get("/api/cost").json()
    rows = [(r["seq_len"], r["score_entries_per_head"], r["size"]["text"]) for r in body["scaling"]]
    assert rows == [(n, entries, text) for n, entries, _, text in SEED_TABLE]
    assert (body["heads"], body["kv_heads"], body["head_dim"], body["layers"]) == (1, 1, 128, 1)
    assert (body["batch"], body["bytes_per_element"], body["window"]) == (1, 2, None)


# ---------------------------------------------------------------- KV cache of real models
# Each figure is worked out by hand from the model's published config.json:
# bytes per token = 2 (K and V) × layers × kv_heads × head_dim × bytes per element.

KV_BY_HAND = [
    # Llama-2-7B: 32 layers, 32 kv heads (MHA), head_dim 4096 / 32 = 128, fp16.
    # 2 × 32 × 32 × 128 × 2 = 524,288 bytes per token (512 KiB);
    # × 4,096 tokens = 2,147,483,648 bytes = 2 GiB.
    ("llama-2-7b", 4_096, "fp16", 524_288, 2_147_483_648, "2 GiB"),
    # Llama-3-8B: 32 layers, 8 kv heads (GQA), head_dim 128, fp16.
    # 2 × 32 × 8 × 128 × 2 = 131,072 bytes per token (128 KiB), a quarter of Llama-2-7B;
    # × 8,192 tokens = 1,073,741,824 bytes = 1 GiB.
    ("llama-3-8b", 8_192, "fp16", 131_072, 1_073_741_824, "1 GiB"),
    # Llama-2-70B: 80 layers, 8 kv heads, head_dim 8192 / 64 = 128, fp16.
    # 2 × 80 × 8 × 128 × 2 = 327,680 bytes per token (320 KiB);
    # × 4,096 tokens = 1,342,177,280 bytes = 1.25 GiB.
    ("llama-2-70b", 4_096, "fp16", 327_680, 1_342_177_280, "1.25 GiB"),
    # Qwen2.5-7B: 28 layers, 4 kv heads, head_dim 3584 / 28 = 128, bf16.
    # 2 × 28 × 4 × 128 × 2 = 57,344 bytes per token (56 KiB);
    # × 32,768 tokens = 1,879,048,192 bytes = 1.75 GiB.
    ("qwen2.5-7b", 32_768, "bf16", 57_344, 1_879_048_192, "1.75 GiB"),
    # Falcon-7B: 32 layers, multi-query (1 kv head), head_dim 4544 / 71 = 64, bf16.
    # 2 × 32 × 1 × 64 × 2 = 8,192 bytes per token (8 KiB);
    # × 2,048 tokens = 16,777,216 bytes = 16 MiB.
    ("falcon-7b", 2_048, "bf16", 8_192, 16_777_216, "16 MiB"),
    # GPT-2 small: 12 layers, 12 heads (MHA), head_dim 768 / 12 = 64, fp32.
    # 2 × 12 × 12 × 64 × 4 = 73,728 bytes per token (72 KiB);
    # × 1,024 tokens = 75,497,472 bytes = 72 MiB.
    ("gpt2", 1_024, "fp32", 73_728, 75_497_472, "72 MiB"),
    # Mistral-7B v0.1: 32 layers, 8 kv heads, head_dim 128, fp16, window 4,096 on every layer.
    # 2 × 32 × 8 × 128 × 2 = 131,072 bytes per token; at 32,768 tokens each layer keeps only
    # the last 4,096: 131,072 × 4,096 = 536,870,912 bytes = 512 MiB (not 4 GiB).
    ("mistral-7b-v0.1", 32_768, "fp16", 131_072, 536_870_912, "512 MiB"),
    # Gemma-2-9B: 42 layers, 8 kv heads, head_dim 256 (from the config: not 3584 / 16 = 224).
    # 2 × 42 × 8 × 256 × 2 = 344,064 bytes per token. At 8,192 tokens the 21 global layers keep
    # 8,192 tokens and the 21 local layers 4,096: (21 × 8,192 + 21 × 4,096) × 2 × 8 × 256 × 2
    # = 258,048 × 8,192 = 2,113,929,216 bytes = 1.96875 GiB.
    ("gemma-2-9b", 8_192, "bf16", 344_064, 2_113_929_216, "1.97 GiB"),
    # Phi-3-mini: 32 layers, 32 kv heads, head_dim 3072 / 32 = 96, window 2,047 on every layer.
    # 2 × 32 × 32 × 96 × 2 = 393,216 bytes per token; × 2,047 kept tokens = 804,913,152 bytes.
    ("phi-3-mini-4k", 4_096, "fp16", 393_216, 804_913_152, "767.63 MiB"),
    # Llama-3-8B in int4: half a byte per element.
    # 2 × 32 × 8 × 128 × 0.5 = 32,768 bytes per token; × 8,192 = 268,435,456 bytes = 256 MiB.
    ("llama-3-8b", 8_192, "int4", 32_768, 268_435_456, "256 MiB"),
]


@pytest.mark.parametrize(
    ("preset", "n", "dtype", "per_token", "total", "text"),
    KV_BY_HAND,
    ids=[f"{row[0]}-{row[2]}" for row in KV_BY_HAND],
)
def test_kv_cache_of_real_models(
    client: TestClient, preset: str, n: int, dtype: str, per_token: int, total: int, text: str
) -> None:
    body = client.get("/api/cost", params={"preset": preset, "seq_len": n, "dtype": dtype}).json()
    assert body["kv_cache_bytes_per_token"] == per_token
    assert body["kv_cache_bytes"] == total
    assert body["sizes"]["kv_cache_bytes"]["text"] == text
    assert body["preset"]["id"] == preset


def test_kv_cache_formula_with_published_numbers() -> None:
    # The same figures straight from app/math/cost.py with the published numbers typed in.
    assert cost.kv_cache_bytes_per_token(32, 8, 128, 2) == 2 * 32 * 8 * 128 * 2 == 131_072
    assert cost.kv_cache_bytes(8_192, 32, 8, 128, 2) == 131_072 * 8_192
    assert cost.kv_cache_bytes(4_096, 80, 8, 128, 2, batch=8) == 327_680 * 4_096 * 8
    assert cost.kv_cache_bytes_per_token(32, 8, 128, Fraction(1, 2)) == 32_768


def test_gqa_shrinks_the_cache_by_heads_over_kv_heads() -> None:
    mha = cost.kv_cache_bytes(4_096, 32, 32, 128, 2)
    gqa = cost.kv_cache_bytes(4_096, 32, 8, 128, 2)
    mqa = cost.kv_cache_bytes(4_096, 32, 1, 128, 2)
    assert mha == 4 * gqa == 32 * mqa


# ---------------------------------------------------------------- windows, local/global


def test_window_caps_each_windowed_layer() -> None:
    per_layer_token = 2 * 8 * 128 * 2  # K and V, 8 kv heads, head_dim 128, 2 bytes
    # window longer than the sequence: no saving
    assert cost.kv_cache_bytes(1_000, 32, 8, 128, 2, window=4_096) == 32 * 1_000 * per_layer_token
    # every layer windowed: at most w tokens, whatever n
    for n in (4_096, 100_000, 1_000_000_000):
        assert cost.kv_cache_bytes(n, 32, 8, 128, 2, window=4_096) == 32 * 4_096 * per_layer_token


def test_alternating_local_and_global_layers() -> None:
    # 42 layers, 21 local (window 4,096) and 21 global, at 16,384 tokens
    per_layer_token = 2 * 8 * 256 * 2
    expected = (21 * 4_096 + 21 * 16_384) * per_layer_token
    assert cost.kv_cache_bytes(16_384, 42, 8, 256, 2, window=4_096, window_layers=21) == expected
    # window_layers = layers is the same as every layer windowed; the global part grows with n
    assert cost.kv_cache_bytes(9, 4, 1, 1, 1, window=3, window_layers=4) == 2 * 4 * 3
    assert cost.kv_cache_bytes(9, 4, 1, 1, 1, window=3, window_layers=1) == 2 * (3 + 3 * 9)


def test_window_through_the_api(client: TestClient) -> None:
    params = {"seq_len": 16_384, "layers": 42, "heads": 16, "kv_heads": 8, "head_dim": 256}
    body = client.get("/api/cost", params={**params, "window": 4_096, "window_layers": 21}).json()
    assert body["kv_cache_bytes"] == (21 * 4_096 + 21 * 16_384) * 2 * 8 * 256 * 2
    assert (body["window_layers"], body["global_layers"]) == (21, 21)
    full = client.get("/api/cost", params=params).json()
    assert full["kv_cache_bytes"] == 42 * 16_384 * 2 * 8 * 256 * 2
    # the per-token figure of API.md ignores the window: 2 × L × g × d × b
    assert body["kv_cache_bytes_per_token"] == full["kv_cache_bytes_per_token"] == 344_064


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 300), st.one_of(st.none(), st.integers(1, 400)))
def test_causal_pairs_count_what_the_mask_shows(n: int, w: int | None) -> None:
    # Σ over queries i of the keys it may see: min(i + 1, w), or i + 1 without a window
    assert cost.causal_pairs(n, w) == sum(min(i + 1, w or n) for i in range(n))


def test_flops_prefill_is_quadratic_decoding_linear() -> None:
    d = 128
    assert cost.prefill_flops_per_head(4_096, d) == 2 * 4_096**2 * d + 2 * 4_096**2 * d
    assert cost.prefill_flops_per_head(8_192, d) == 4 * cost.prefill_flops_per_head(4_096, d)
    assert cost.decode_flops_per_head(8_192, d) == 2 * cost.decode_flops_per_head(4_096, d)
    assert cost.decode_flops_per_head(8_192, d, window=4_096) == 4 * 4_096 * d
    # a causal kernel computes n(n+1)/2 of the n² pairs: a little over half
    causal = cost.causal_prefill_flops_per_head(4_096, d)
    assert causal == 4 * d * 4_096 * 4_097 // 2
    assert causal / cost.prefill_flops_per_head(4_096, d) == pytest.approx(0.5, abs=1e-3)


def test_model_flops_multiply_heads_layers_batch() -> None:
    config = cost.AttentionConfig(layers=32, heads=32, kv_heads=8, head_dim=128)
    assert config.prefill_flops(4_096, batch=2) == 2 * 32 * 32 * 4 * 4_096**2 * 128
    assert config.decode_flops(4_096) == 32 * 32 * 4 * 4_096 * 128
    windowed = cost.AttentionConfig(42, 16, 8, 256, window=4_096, window_layers=21)
    assert windowed.decode_flops(8_192) == 16 * 4 * 256 * (21 * 8_192 + 21 * 4_096)


# ---------------------------------------------------------------- sizes and units


@pytest.mark.parametrize(
    ("n_bytes", "text"),
    [
        (0, "0 bytes"),
        (1_023, "1,023 bytes"),
        (1_024, "1 KiB"),
        (1_536, "1.5 KiB"),
        (32 * MiB, "32 MiB"),
        (24 * GiB, "24 GiB"),
        (5 * 2**40, "5 TiB"),
    ],
)
def test_binary_units_name_the_unit(n_bytes: int, text: str) -> None:
    assert cost.binary_size(n_bytes).text == text


@pytest.mark.parametrize(
    ("dtype", "per_token"),
    [("fp32", 262_144), ("fp16", 131_072), ("bf16", 131_072), ("fp8", 65_536), ("int4", 32_768)],
)
def test_element_types(client: TestClient, dtype: str, per_token: int) -> None:
    params = {"layers": 32, "heads": 32, "kv_heads": 8, "head_dim": 128, "dtype": dtype}
    body = client.get("/api/cost", params=params).json()
    assert body["kv_cache_bytes_per_token"] == per_token
    assert body["dtype"] == dtype
    assert isinstance(body["kv_cache_bytes"], int)


@pytest.mark.parametrize(
    ("size", "dtype", "per_token"),
    [(4, "fp32", 262_144), (0.5, "int4", 32_768), (3, None, 196_608)],
)
def test_bytes_per_element_in_halves(
    client: TestClient, size: float, dtype: str | None, per_token: int
) -> None:
    params = {"layers": 32, "heads": 32, "kv_heads": 8, "head_dim": 128}
    body = client.get("/api/cost", params={**params, "bytes_per_element": size}).json()
    assert (body["bytes_per_element"], body["dtype"]) == (size, dtype)
    assert body["kv_cache_bytes_per_token"] == per_token


def test_int4_rounds_up_to_whole_bytes() -> None:
    assert cost.storage_bytes(3, Fraction(1, 2)) == 2  # two int4 share a byte; the third needs one
    assert cost.storage_bytes(3, 0.5) == 2
    assert cost.score_bytes(3, Fraction(1, 2)) == 5  # 9 entries


def test_gpu_verdict(client: TestClient) -> None:
    # Llama-2-7B at 32,768 tokens: 524,288 × 32,768 = 16 GiB of cache
    params = {"preset": "llama-2-7b", "seq_len": 32_768, "gpu_memory_gib": 24}
    gpu = client.get("/api/cost", params=params).json()["gpu"]
    assert gpu["kv_cache_fits"] is True
    assert gpu["kv_cache_share"] == pytest.approx(16 / 24)
    # 24 GiB / 512 KiB per token = 49,152 tokens exactly
    assert gpu["longest_kv_fit"] == 49_152
    small = client.get("/api/cost", params={**params, "gpu_memory_gib": 8}).json()["gpu"]
    assert small["kv_cache_fits"] is False


def test_huge_values_stay_valid_json(client: TestClient) -> None:
    params = {"seq_len": 1_000_000_000, "heads": 128, "layers": 128, "batch": 64}
    response = client.get("/api/cost", params=params)
    assert response.status_code == 200
    body = response.json()
    assert body["score_entries_per_head"] == 10**18  # still an exact integer
    assert body["score_bytes_model"] == pytest.approx(10**18 * 2 * 128 * 128 * 64)


# ---------------------------------------------------------------- validation

INVALID = [
    ({"seq_len": 0}, "seq_len"),
    ({"seq_len": 1_000_000_001}, "seq_len"),
    ({"seq_len": "many"}, "seq_len"),
    ({"heads": 0}, "heads"),
    ({"layers": -1}, "layers"),
    ({"batch": 0}, "batch"),
    ({"head_dim": 0}, "head_dim"),
    ({"heads": 8, "kv_heads": 3}, "kv_heads"),
    ({"heads": 4, "kv_heads": 8}, "kv_heads"),
    ({"layers": 2, "window": 8, "window_layers": 3}, "window_layers"),
    ({"window_layers": 1}, "window_layers"),
    ({"window": 0}, "window"),
    ({"bytes_per_element": 0}, "bytes_per_element"),
    ({"bytes_per_element": 0.3}, "bytes_per_element"),
    ({"dtype": "fp64"}, "dtype"),
    ({"dtype": "int4", "bytes_per_element": 2}, "bytes_per_element"),
    ({"gpu_memory_gib": 0}, "gpu_memory_gib"),
    ({"gpu_memory_gib": "nan"}, "gpu_memory_gib"),
    ({"preset": "gpt-5"}, "preset"),
    ({"preset": "llama-3-8b", "heads": 12}, "kv_heads"),
    ({"seqlen": 8_192}, "seqlen"),
]


@pytest.mark.parametrize(("params", "field"), INVALID)
def test_invalid_queries_answer_422_naming_the_field(
    client: TestClient, params: dict[str, object], field: str
) -> None:
    response = client.get("/api/cost", params=params)
    assert response.status_code == 422
    [error] = response.json()["detail"]
    assert error["loc"] == ["query", field]
    assert error["msg"].startswith(field)


def test_blank_form_fields_mean_not_given(client: TestClient) -> None:
    body = client.get("/api/cost?seq_len=4096&window=&window_layers=&kv_heads=").json()
    assert body["window"] is None
    assert body["kv_heads"] == body["heads"]


# ---------------------------------------------------------------- presets


def test_models_endpoint_lists_every_preset_with_a_source(client: TestClient) -> None:
    models = client.get("/api/cost/models").json()["models"]
    ids = {m["id"] for m in models}
    assert ids >= {
        "gpt2",
        "bert-base",
        "llama-2-7b",
        "llama-2-70b",
        "llama-3-8b",
        "mistral-7b-v0.1",
        "gemma-2-9b",
        "qwen2.5-7b",
        "falcon-7b",
        "phi-3-mini-4k",
    }
    for m in models:
        assert "config.json" in m["source"]
        assert m["heads"] % m["kv_heads"] == 0
        assert m["window_layers"] is None or m["window_layers"] <= m["layers"]


PUBLISHED = [
    # id, layers, heads, kv_heads, head_dim, max context, window, windowed layers
    ("gpt2", 12, 12, 12, 64, 1_024, None, None),
    ("bert-base", 12, 12, 12, 64, 512, None, None),
    ("llama-2-7b", 32, 32, 32, 128, 4_096, None, None),
    ("llama-2-70b", 80, 64, 8, 128, 4_096, None, None),
    ("llama-3-8b", 32, 32, 8, 128, 8_192, None, None),
    ("mistral-7b-v0.1", 32, 32, 8, 128, 32_768, 4_096, 32),
    ("gemma-2-9b", 42, 16, 8, 256, 8_192, 4_096, 21),
    ("qwen2.5-7b", 28, 28, 4, 128, 131_072, None, None),
    ("falcon-7b", 32, 71, 1, 64, 2_048, None, None),
    ("phi-3-mini-4k", 32, 32, 32, 96, 4_096, 2_047, 32),
]


@pytest.mark.parametrize(
    ("preset_id", "layers", "heads", "kv_heads", "head_dim", "context", "window", "windowed"),
    PUBLISHED,
)
def test_presets_read_their_published_configs(
    preset_id: str,
    layers: int,
    heads: int,
    kv_heads: int,
    head_dim: int,
    context: int,
    window: int | None,
    windowed: int | None,
) -> None:
    p = PRESETS_BY_ID[preset_id]
    assert (p.layers, p.heads, p.kv_heads, p.head_dim) == (layers, heads, kv_heads, head_dim)
    assert (p.max_context, p.window, p.window_layers) == (context, window, windowed)
    assert p.heads % p.kv_heads == 0


def test_config_reader_rules() -> None:
    # multi_query: true means one key/value head, whatever the number of query heads
    assert PRESETS_BY_ID["falcon-7b"].kv_heads == 1
    # GPT-2's own field names (n_layer, n_head, n_embd, n_positions) are understood
    assert PRESETS_BY_ID["gpt2"].head_dim == 768 // 12
    # a sliding_window with use_sliding_window false does not count
    qwen = PRESETS_BY_ID["qwen2.5-7b"]
    assert qwen.config["sliding_window"] == 131_072
    assert qwen.window is None


def test_head_dim_is_read_not_derived_for_gemma_2() -> None:
    gemma = PRESETS_BY_ID["gemma-2-9b"]
    assert gemma.hidden_size // gemma.heads == 224
    assert gemma.head_dim == 256
    assert gemma.windowed_layer_indices == tuple(range(0, 42, 2))


def test_query_overrides_a_preset(client: TestClient) -> None:
    body = client.get("/api/cost", params={"preset": "llama-3-8b", "kv_heads": 32}).json()
    assert (body["layers"], body["heads"], body["kv_heads"]) == (32, 32, 32)
    assert body["attention"] == "MHA"
    # a window on every layer stays on every layer when the depth changes
    body = client.get("/api/cost", params={"preset": "mistral-7b-v0.1", "layers": 16}).json()
    assert (body["window"], body["window_layers"]) == (4_096, 16)
    assert body["kv_cache_bytes"] == 16 * 4_096 * 2 * 8 * 128 * 2


# ---------------------------------------------------------------- figures


@pytest.mark.parametrize(
    "query",
    [
        CostQuery(),
        CostQuery(preset="gemma-2-9b", seq_len=8_192),
        CostQuery(preset="falcon-7b", seq_len=1, gpu_memory_gib=0.001),
        CostQuery(preset="mistral-7b-v0.1", seq_len=1_000_000_000, batch=64),
    ],
)
def test_every_chart_is_a_valid_plotly_figure(query: CostQuery) -> None:
    result = compute_cost(query)
    for chart in (scores_chart(result), kv_chart(result)):
        assert_valid_chart(chart)
        layout = chart.figure["layout"]
        assert layout["xaxis"]["type"] == layout["yaxis"]["type"] == "log"
    names = [entry.name for entry in kv_chart(result).legend]
    assert any(name.startswith("MHA") for name in names)
    assert "your length" in names


def test_markers_sit_at_the_chosen_length_and_the_gpu_capacity() -> None:
    result = compute_cost(CostQuery(preset="llama-2-7b", seq_len=4_096))
    kv = {t["name"]: t for t in kv_chart(result).figure["data"]}
    assert kv["your length"]["x"] == [4_096.0]
    assert kv["your length"]["y"] == [2_147_483_648.0]
    assert kv["GPU full"]["x"] == [49_152.0]
    assert kv["GPU full"]["y"] == [24.0 * GiB]
    legend = {entry.name: entry.text for entry in kv_chart(result).legend}
    assert legend["your length"] == "n = 4,096: 2 GiB"
    assert legend["GPU full"] == "the KV cache fills the GPU at n = 49,152"


def test_kv_chart_compares_mha_gqa_mqa_and_window() -> None:
    result = compute_cost(CostQuery(preset="llama-3-8b"))
    curves = result.curves
    assert [s.id for s in curves.kv_cache_bytes] == ["mha", "gqa", "mqa", "window"]
    labels = [kv_label(s, result) for s in curves.kv_cache_bytes]
    assert labels[:3] == ["MHA (g = h = 32)", "GQA (g = 8)", "MQA (g = 1)"]
    assert labels[3] == "GQA (g = 8), window 4,096 on every layer"
    assert curves.kv_chosen == "gqa"
    # the chosen series is the result's own KV cache at its own length
    chosen = next(s for s in curves.kv_cache_bytes if s.id == curves.kv_chosen)
    at_n = chosen.bytes[curves.seq_len.index(result.seq_len)]
    assert at_n == result.kv_cache_bytes == 536_870_912  # 4096 · 32 · 2 · 8 · 128 · 2 B


# ---------------------------------------------------------------- measuring


def test_measure_sizes_double_up_to_the_maximum() -> None:
    assert measure.measure_sizes(2_048) == [128, 256, 512, 1_024, 2_048]


def test_fit_of_an_exact_quadratic() -> None:
    ns = [128, 256, 512]
    c, slope = measure.fit_quadratic(ns, [3e-9 * n**2 for n in ns])
    assert c == pytest.approx(3e-9)
    assert slope == pytest.approx(2.0)


def test_time_cap_skips_what_cannot_finish() -> None:
    result = measure.measure_scaling(256, time_cap_s=1e-9)
    assert [r.n for r in result.rows] == [16]
    assert result.skipped == [32, 64, 128, 256]


@pytest.fixture
def held_run(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[list[int], threading.Event]]:
    """measure_scaling replaced by a run that lasts until the test sets the event."""
    calls: list[int] = []
    release = threading.Event()
    real_run = measure.measure_scaling

    def slow_run(max_n: int, time_cap_s: float) -> dict[str, object]:
        calls.append(max_n)
        release.wait(10)
        return real_run(16, time_cap_s)

    monkeypatch.setattr(measure, "measure_scaling", slow_run)
    yield calls, release
    release.set()


def test_concurrent_requests_share_one_run(held_run: tuple[list[int], threading.Event]) -> None:
    calls, release = held_run
    cache = measure.MeasurementCache(64, 1.0, 10.0)
    results: list[object] = []
    # Each caller in its own thread and event loop, as separate server processes' loops would.
    threads = [
        threading.Thread(target=lambda: results.append(run_async(cache.get()))) for _ in range(6)
    ]
    for t in threads:
        t.start()
    release.set()
    for t in threads:
        t.join(10)
    assert calls == [64]
    assert len(results) == 6
    assert all(r is results[0] for r in results)
    assert cache.result is results[0]


def test_a_failed_run_is_started_again_by_the_next_caller(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    outcomes: list[Exception | dict[str, object]] = [MemoryError("no room"), {"rows": []}]

    def run(max_n: int, time_cap_s: float) -> dict[str, object]:
        outcome = outcomes.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    monkeypatch.setattr(measure, "measure_scaling", run)
    cache = measure.MeasurementCache(64, 1.0, 10.0)
    with pytest.raises(MemoryError):
        run_async(cache.get())
    assert cache.result is None
    assert run_async(cache.get()) == {"rows": []}
    assert outcomes == []


def test_a_request_that_waits_too_long_gets_503(
    held_run: tuple[list[int], threading.Event],
) -> None:
    app = create_app(Settings(measure_max_n=64, measure_wait_seconds=0.01))
    with TestClient(app) as client:
        response = client.get("/api/cost/measure")
        page = client.get("/cost", params={"measure": 1})
    assert response.status_code == 503
    assert response.headers["retry-after"] == "10"
    assert "try again" in response.json()["detail"]
    assert page.status_code == 200
    assert "try again in a few seconds" in page.text
    assert 'id="measure-table"' not in page.text
    assert held_run[0] == [64]  # the second request waited for the same run


def test_sixty_waiting_callers_hold_no_threads(
    held_run: tuple[list[int], threading.Event],
) -> None:
    """A class pressing "measure" together: 60 requests wait for one run, yet the worker
    threads stay free and a sync page still answers at once."""
    calls, release = held_run
    app = create_app(Settings(measure_max_n=64))

    async def scenario() -> tuple[list[httpx.Response], int, httpx.Response, float]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            waiting = [
                asyncio.create_task(client.get(path))
                for path in ["/api/cost/measure", "/cost?measure=1"] * 30
            ]
            await asyncio.sleep(0.5)  # every request has reached its await
            borrowed = int(to_thread.current_default_thread_limiter().borrowed_tokens)
            started = time.perf_counter()
            page = await client.get("/")  # a sync route: it needs a worker thread
            elapsed = time.perf_counter() - started
            assert not any(task.done() for task in waiting)
            release.set()
            return await asyncio.gather(*waiting), borrowed, page, elapsed

    answers, borrowed, page, elapsed = run_async(scenario())
    assert borrowed == 0
    assert page.status_code == 200
    assert elapsed < 5
    assert calls == [64]
    assert [a.status_code for a in answers] == [200] * 60
    assert all(a.json() == answers[0].json() for a in answers[::2])


@pytest.fixture
def small_client(make_client: Callable[..., TestClient]) -> TestClient:
    return make_client(measure_max_n=256)


def test_measure_endpoint_times_dense_attention(small_client: TestClient) -> None:
    body = small_client.get("/api/cost/measure").json()
    assert [r["n"] for r in body["rows"]] == [16, 32, 64, 128, 256]
    assert all(r["seconds"] > 0 for r in body["rows"])
    assert body["c_seconds"] > 0
    assert small_client.get("/api/cost/measure").json() == body  # the cached run
    measured = small_client.app.state.measurements.result
    assert [r.n for r in measured.rows] == [r["n"] for r in body["rows"]]
    assert_valid_chart(measure_chart(measured))


# ---------------------------------------------------------------- the page


def test_page_opens_on_the_seed_table(client: TestClient) -> None:
    html = client.get("/cost").text
    for n, entries, _, text in SEED_TABLE:
        assert f"{n:,} tokens" in html
        assert f"{entries:,}" in html
        assert text in html
    assert 'href="/cost"' in html  # in the navigation


def test_page_shows_formulas_with_numbers(client: TestClient) -> None:
    html = client.get("/cost", params={"preset": "llama-3-8b", "seq_len": 8_192}).text
    assert "2 × 32 × 8 × 128 × 2" in html
    assert "131,072" in html
    assert "config.json of meta-llama/Meta-Llama-3-8B" in html


def test_page_explains_a_wrong_input(client: TestClient) -> None:
    response = client.get("/cost", params={"heads": 8, "kv_heads": 3})
    assert response.status_code == 422
    assert "kv_heads must divide heads" in response.text
    assert 'value="3"' in response.text  # the form keeps what was typed


def test_page_measure_link_works_without_javascript(small_client: TestClient) -> None:
    html = small_client.get("/cost", params={"seq_len": 1_024, "measure": 1}).text
    assert 'id="measure-table"' in html
    assert "fig-measure" in html


def test_the_typed_result_agrees_with_itself() -> None:
    """Sizes, the GPU verdict and the preset are parts of one CostResult, read by attribute."""
    result = compute_cost(CostQuery(preset="llama-2-7b", seq_len=4_096))
    assert result.sizes.kv_cache_bytes.bytes == result.kv_cache_bytes == 2 * GiB
    assert result.sizes.kv_cache_bytes.text == "2 GiB"
    assert result.preset is not None
    assert result.preset.kv_heads == result.kv_heads == 32
    assert result.gpu.kv_cache_share == result.kv_cache_bytes / result.gpu.memory_bytes
    assert [row.seq_len for row in result.scaling] == [4_096, 8_192, 16_384]
    assert result.scaling[1].score_bytes_per_head == 4 * result.score_bytes_per_head


def test_the_page_shows_counts_beyond_28_digits(client: TestClient) -> None:
    """10³⁰ FLOPs (a billion tokens, 128 heads and layers, a batch of 65,536) are grouped in
    full, not refused with a 500 by decimal's default 28 digits of precision."""
    page = client.get("/cost?seq_len=1000000000&heads=128&layers=128&batch=65536")
    assert page.status_code == 200
    flops = 4 * 10**18 * 128 * 128 * 128 * 65_536  # 4 · n² · d_head · h · L · B
    assert f"{flops:,}" in page.text


def test_the_page_prints_products_too_large_for_the_decimal_default(
    small_client: TestClient,
) -> None:
    # 10⁹ tokens, 65,536 heads, 65,536 sequences: a KV cache of 2⁴⁵ GB and products of 30+
    # digits, which the number formatting once answered with a 500.
    response = small_client.get("/cost?seq_len=1000000000&batch=65536&heads=65536")
    assert response.status_code == 200
    api = small_client.get("/api/cost?seq_len=1000000000&batch=65536&heads=65536").json()
    kv = api["kv_cache_bytes"]
    assert kv == 2 * 1 * 65_536 * 128 * 2 * 1_000_000_000 * 65_536
    assert f"{kv:,}" in response.text


def test_window_layers_past_the_layer_count_says_the_count_without_a_plural(
    client: TestClient,
) -> None:
    response = client.get("/api/cost", params={"layers": 1, "window": 8, "window_layers": 2})
    [error] = response.json()["detail"]
    assert error["msg"] == (
        "window_layers is 2, more than the model's layer count (1); use at most 1"
    )


@pytest.mark.parametrize(
    ("typed", "english", "spanish"),
    [
        ("²", "seq_len must be a whole number such as 2, not &#34;²&#34;", "número entero"),
        ("1,000", "not &#34;1,000&#34;", "no &#34;1,000&#34;"),
        ("٣", "not &#34;٣&#34;", "no &#34;٣&#34;"),
        ("9" * 5_000, "not &#34;99999999999999999999…&#34;", "número entero"),
        ("0", "seq_len is 0 but must be at least 1", "seq_len vale 0 pero debe ser al menos 1"),
    ],
)
def test_strict_numbers_are_problems_never_500s(
    client: TestClient, typed: str, english: str, spanish: str
) -> None:
    """The one rule for numbers in a query string: a page of 422 with the sentence beside
    the seed's table, and the live fragment 200 carrying the 422 and the state it used."""
    page = client.get("/cost", params={"seq_len": typed})
    assert page.status_code == 422
    assert english in page.text
    assert f"{SEED_TABLE[0][1]:,}" in page.text  # the table of the default length instead
    live = client.get("/cost", params={"seq_len": typed, "fragment": "1", "lang": "es"})
    assert (live.status_code, live.headers["x-input-status"]) == (200, "422")
    assert live.headers["x-page-state"].startswith("seq_len=4096&")
    assert spanish in live.text
    assert "<html" not in live.text  # the fragment only
