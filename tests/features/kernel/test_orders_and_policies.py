"""/api/kernel/tiled's loop orders and traffic, /api/kernel/decode's cache policies, over HTTP."""

import numpy as np
import pytest
from fastapi.testclient import TestClient

from app.features.kernel.schemas import DecodeResponse, TiledResponse

SENTENCE = {"tokens": ["a", "b", "c", "d", "e", "f"], "mask": {"causal": True}, "d_model": 4}


@pytest.mark.parametrize("order", ["fa1", "fa2"])
def test_both_orders_give_the_lab_output_and_its_log_sum_exp(
    client: TestClient, order: str
) -> None:
    body = client.post("/api/kernel/tiled", json={**SENTENCE, "order": order}).json()
    TiledResponse.model_validate(body)
    lab = client.post("/api/attention", json=SENTENCE).json()
    np.testing.assert_allclose(body["output"], lab["output"], rtol=0, atol=1e-12)
    assert body["max_abs_difference"] < 1e-12
    scaled = np.array([[np.nan if x is None else x for x in r] for r in lab["masked"]])
    lse = np.log(np.nansum(np.exp(scaled), axis=1))  # over the visible keys of each row
    np.testing.assert_allclose(body["logsumexp"], lse, rtol=0, atol=1e-12)
    assert body["order"] == order
    assert all(s["order"] == order for s in body["steps"])


def test_fa1_walks_key_blocks_outside_and_writes_back_every_step(client: TestClient) -> None:
    body = client.post("/api/kernel/tiled", json={**SENTENCE, "order": "fa1"}).json()
    # 6 tokens, two blocks of 3 each way: (K0: Q0, Q1), (K1: Q0 skipped, Q1)
    assert [(s["key_block"], s["query_block"], s["skipped"]) for s in body["steps"]] == [
        ([0, 3], [0, 3], False),
        ([0, 3], [3, 6], False),
        ([3, 6], [0, 3], True),
        ([3, 6], [3, 6], False),
    ]
    first = body["steps"][0]
    assert [t["name"] for t in first["reads"]] == ["K", "V", "Q", "O", "l", "m"]
    assert [t["name"] for t in first["writes"]] == ["O", "l", "m"]
    assert [t["name"] for t in body["steps"][1]["reads"]] == ["Q", "O", "l", "m"]  # K, V held
    assert body["steps"][2]["reads"] == body["steps"][2]["writes"] == []


def test_fa2_rescales_once_and_writes_the_log_sum_exp(client: TestClient) -> None:
    body = client.post("/api/kernel/tiled", json={**SENTENCE, "order": "fa2"}).json()
    finals = [s for s in body["steps"] if s["final_rescale"]]
    assert [s["query_block"] for s in finals] == [[0, 3], [3, 6]]
    for s in finals:
        assert [t["name"] for t in s["writes"]] == ["O", "L"]
        np.testing.assert_allclose(s["output_rows"], np.array(s["o"]) / np.array(s["l"])[:, None])


def test_traffic_totals_and_the_standard_count(client: TestClient) -> None:
    """n = 6, d_k = d_v = 4 (d_model), b = 3: counted by hand from the loops."""
    fa2 = client.post("/api/kernel/tiled", json={**SENTENCE, "order": "fa2"}).json()["traffic"]
    # reads: Q once (6·4) + K, V of 3 visible tiles (3 · 3·8); writes O and L (6·5)
    assert fa2["tiled"] == {"reads": 24 + 72, "writes": 30}
    # standard: Q, K (2·6·4), V (6·4), S and P (2·36); writes S, P (2·36) and O (6·4)
    assert fa2["standard"] == {"reads": 48 + 24 + 72, "writes": 72 + 24}
    assert (fa2["tiles"], fa2["skipped_tiles"]) == (4, 1)
    fa1 = client.post("/api/kernel/tiled", json={**SENTENCE, "order": "fa1"}).json()["traffic"]
    # setup writes 6·(4 + 2); K, V of 2 columns (6·8); 3 visible tiles read Q, O, l, m
    # (3·3·10) and write O, l, m (3·3·6)
    assert fa1["setup_writes"] == 36
    assert fa1["tiled"] == {"reads": 48 + 90, "writes": 36 + 54}


def test_sram_sets_the_paper_block_sizes(client: TestClient) -> None:
    body = client.post("/api/kernel/tiled", json={**SENTENCE, "sram_elements": 80}).json()
    # d = 4: B_c = ⌈80 / 16⌉ = 5, B_r = min(5, 4) = 4
    assert (body["block_q"], body["block_k"], body["blocks_from_sram"]) == (4, 5, True)


def test_sram_with_both_block_sizes_is_refused(client: TestClient) -> None:
    answer = client.post(
        "/api/kernel/tiled", json={"sram_elements": 24, "block_q": 1, "block_k": 1}
    )
    assert answer.status_code == 422
    detail = answer.json()["detail"][0]
    assert detail["loc"][-1] == "sram_elements"
    assert "leave out sram_elements" in detail["msg"]


@pytest.mark.parametrize(
    ("cache", "held_last"),
    [
        ({"policy": "full"}, [0, 1, 2, 3, 4, 5]),
        ({"policy": "window", "window": 2}, [4, 5]),
        ({"policy": "sinks", "window": 2, "sinks": 1}, [0, 4, 5]),
    ],
)
def test_cache_policies_hold_their_positions(
    client: TestClient, cache: dict, held_last: list[int]
) -> None:
    body = client.post("/api/kernel/decode", json={**SENTENCE, "prompt": 2, "cache": cache})
    body = body.json()
    DecodeResponse.model_validate(body)
    last = body["steps"][-1]
    assert last["cached_positions"] == held_last
    assert last["cached_tokens"] == [SENTENCE["tokens"][j] for j in held_last]
    assert len(last["weights"]) == len(held_last)
    assert last["cache_elements"] == len(held_last) * (4 + 4)
    assert body["policy_mask_difference"] < 1e-12  # the dense head with the policy as a mask
    if cache["policy"] == "full":
        assert body["max_abs_difference"] < 1e-12
    else:
        assert body["max_abs_difference"] > 1e-6  # dropping positions changes the output


@pytest.mark.parametrize(
    ("cache", "field", "words"),
    [
        ({"policy": "window"}, "window", "give window"),
        ({"policy": "full", "window": 3}, "window", "has no effect"),
        ({"policy": "window", "window": 2, "sinks": 1}, "sinks", 'set policy to "sinks"'),
        ({"policy": "sinks", "window": 0}, "window", ""),
    ],
)
def test_bad_cache_combinations_get_a_sentence(
    client: TestClient, cache: dict, field: str, words: str
) -> None:
    answer = client.post("/api/kernel/decode", json={"cache": cache})
    assert answer.status_code == 422
    detail = answer.json()["detail"][0]
    assert detail["loc"][-1] == field
    assert words in detail["msg"]
