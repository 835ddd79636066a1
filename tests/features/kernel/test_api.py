"""/api/kernel/tiled and /api/kernel/decode through the HTTP stack."""

from collections.abc import Callable

import numpy as np
import pytest
from fastapi.testclient import TestClient

from tests.features.kernel.documented import check_documented


def test_tiled_worked_example_matches_the_lab(client: TestClient) -> None:
    body = client.post("/api/kernel/tiled", json={}).json()
    assert check_documented(client, "/api/kernel/tiled", body) == "TiledResult"
    lab = client.post("/api/attention", json={}).json()
    np.testing.assert_allclose(body["output"], lab["output"], rtol=0, atol=1e-12)
    assert body["dense_output"] == lab["output"]
    assert (body["block_q"], body["block_k"]) == (2, 2)
    assert [s["skipped"] for s in body["steps"]] == [False, True, False, False]
    assert body["steps"][1]["scores"] == [[None], [None]]  # −∞ travels as null
    assert body["steps"][0]["m_before"] == [None, None]
    last = body["steps"][3]
    assert (last["grew"], round(last["rescale"][0], 3)) == ([True], 0.493)
    assert last["touched"] == [[True, True, False], [True, True, False], [True, True, True]]
    assert body["memory"] == {
        "dense_score_entries": 9,
        "peak_score_entries": 4,
        "dense_dot_products": 9,
        "tiled_dot_products": 7,
        "skipped_steps": 1,
        "full_attention": {
            "n": 3,
            "block_q": 2,
            "block_k": 2,
            "steps": 4,
            "dense_score_entries": 9,
            "tiled_score_entries": 4,
            "dot_products": 9,
            "dense_traffic": 4 * 9 + 2 * 3 * 2 + 2 * 3 * 2,
            "tiled_traffic": 3 * 2 + 2 * 3 * 4 + 3 * 2,
        },
    }
    first = body["long_sequences"][0]
    assert (first["n"], first["dense_score_entries"], first["dense_score_bytes"]) == (
        4096,
        16_777_216,
        33_554_432,
    )


def test_tiled_on_a_generated_padded_state_equals_the_lab(client: TestClient) -> None:
    state = {
        "tokens": ["the", "model", "reads", "every", "cached", "key", "again"],
        "seed": 3,
        "d_model": 5,
        "mask": {"causal": True, "padding": [True, False, False, False, False, False, True]},
    }
    body = client.post("/api/kernel/tiled", json={**state, "block_q": 3, "block_k": 2}).json()
    lab = client.post("/api/attention", json=state).json()
    assert body["q"] == lab["q"]
    np.testing.assert_allclose(body["output"], lab["output"], rtol=0, atol=1e-12)
    assert body["max_abs_difference"] <= 1e-12
    assert body["empty_rows"] == lab["empty_rows"] == [0]
    assert len(body["steps"]) == 3 * 4


def test_decode_worked_example_rows_equal_the_causal_lab(client: TestClient) -> None:
    body = client.post("/api/kernel/decode", json={}).json()
    assert check_documented(client, "/api/kernel/decode", body) == "DecodeResult"
    lab = client.post("/api/attention", json={}).json()
    assert body["prompt"] == 1
    assert body["prefill"]["tokens"] == ["The"]
    assert [s["token"] for s in body["steps"]] == ["cat", "sleeps"]
    cat = body["steps"][0]
    assert cat["cache_length"] == 2
    assert [round(w, 3) for w in cat["weights"]] == [0.670, 0.330]
    assert [round(o, 2) for o in cat["output"]] == [0.83, -0.34]
    assert [(s["dots_cached"], s["dots_uncached"]) for s in body["steps"]] == [(2, 4), (3, 9)]
    assert [s["dots_cached_total"] for s in body["steps"]] == [1 + 2, 1 + 2 + 3]
    assert body["k"] == lab["k"]
    np.testing.assert_allclose(body["output"], lab["output"], rtol=0, atol=1e-12)
    assert body["forced_causal"] is False


def test_decode_makes_a_bidirectional_state_causal(client: TestClient) -> None:
    body = client.post("/api/kernel/decode", json={"mask": {}, "prompt": 2}).json()
    causal = client.post("/api/attention", json={"mask": {"causal": True}}).json()
    assert body["forced_causal"] is True
    assert body["allowed"] == causal["allowed"]
    assert body["full_output"] == causal["output"]


@pytest.mark.parametrize(
    ("path", "body", "field", "words"),
    [
        ("tiled", {"block_q": 0}, "block_q", "at least one query row"),
        ("tiled", {"block_k": -3}, "block_k", "at least one key row"),
        ("tiled", {"block_q": "2"}, "block_q", "whole number"),
        ("tiled", {"tokens": ["a"] * 40, "block_q": 1, "block_k": 1}, "block_q", "1,600 steps"),
        ("tiled", {"tokens": ["a"] * 200, "block_q": 30, "block_k": 30}, "block_q", "cells"),
        ("tiled", {"long_sequence": {"seq_lens": [0]}}, "long_sequence", "at least 1"),
        ("decode", {"prompt": 4}, "prompt", "only 3 tokens"),
        ("decode", {"prompt": 0}, "prompt", "at least 1"),
        ("decode", {"mask": {"padding": [True]}}, "mask", "one flag per token"),
    ],
)
def test_bad_kernel_input_is_a_clear_422(
    client: TestClient, path: str, body: dict, field: str, words: str
) -> None:
    response = client.post(f"/api/kernel/{path}", json=body)
    assert response.status_code == 422
    error = response.json()["detail"][0]
    assert field in error["loc"]
    assert words in error["msg"]
    assert error["msg"].startswith(field)


def test_the_step_cap_comes_from_the_settings(make_client: Callable[..., TestClient]) -> None:
    small = make_client(max_kernel_steps=3)
    assert small.post("/api/kernel/tiled", json={}).status_code == 422
    assert small.post("/api/kernel/tiled", json={"block_q": 3}).status_code == 200


def test_openapi_documents_both_walk_throughs(client: TestClient) -> None:
    spec = client.get("/openapi.json").json()
    for path in ("/api/kernel/tiled", "/api/kernel/decode"):
        post = spec["paths"][path]["post"]
        assert "422" in post["responses"]
    schemas = spec["components"]["schemas"]
    assert {"block_q", "block_k", "tokens", "mask"} <= set(schemas["TiledRequest"]["properties"])
    assert "prompt" in schemas["DecodeRequest"]["properties"]
    assert "touched" in schemas["TileStep"]["properties"]


# ---------------------------------------------------------------- the page, rendered


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("/kernel", ["Step 1 of 4: query rows 0–1 against key rows 0–1", "prefill of the first 1"]),
        ("/kernel?step=1", ["The mask hides every pair in this tile"]),
        ("/kernel?step=3&decode_step=2", ["Step 4 of 4", "m grew", "token 2 “sleeps”"]),
        ("/kernel?step=99&decode_step=99", ["Step 4 of 4", "Step 3 of 3"]),
        ("/kernel?tokens=a+b+c+d&mask=bidirectional&block_q=1&block_k=4", ["Step 1 of 4"]),
        ("/kernel?tokens=a+b+c&pad=0,1,2&step=3", ["stay at m = −∞ and l = 0"]),
    ],
)
def test_the_page_shows_the_step_in_the_url(client: TestClient, url: str, shown: list[str]) -> None:
    response = client.get(url)
    assert response.status_code == 200
    for text in shown:
        assert text in response.text


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("/kernel?block_q=0", "block_q is &#34;0&#34; but must be at least 1"),
        ("/kernel?prompt=9", "prompt is 9 but there are only 3 tokens"),
        (
            "/kernel?tokens=" + "+".join("abcdefghijklmnopqrstu") + "&block_q=1&block_k=1",
            "441 steps",
        ),
    ],
)
def test_bad_page_input_is_explained_and_the_page_still_renders(
    client: TestClient, url: str, message: str
) -> None:
    response = client.get(url)
    assert response.status_code == 422
    assert message in response.text
    assert "Step 1 of" in response.text  # shown with the defaults instead


def test_a_long_state_leaves_the_tile_tables_out_but_keeps_the_steps(client: TestClient) -> None:
    tokens = "+".join(f"t{i}" for i in range(40))
    response = client.get(f"/kernel?tokens={tokens}&step=2")
    assert response.status_code == 200
    assert 'id="tile-scores"' not in response.text
    assert "POST /api/kernel/tiled returns every one of them" in response.text
    assert "Step 3 of 4" in response.text


@pytest.mark.parametrize("positional", ["none", "sinusoidal", "rope"])
def test_both_walk_throughs_apply_position_like_the_lab(
    client: TestClient, positional: str
) -> None:
    state = {"tokens": ["a", "cat", "saw", "a", "cat"], "d_k": 4, "positional": positional}
    lab = client.post("/api/attention", json=state).json()
    tiled = client.post("/api/kernel/tiled", json={**state, "block_q": 2, "block_k": 3}).json()
    decode = client.post("/api/kernel/decode", json={**state, "prompt": 2}).json()
    assert tiled["q"] == lab["q"]
    assert tiled["x_positioned"] == lab["x_positioned"]
    np.testing.assert_allclose(tiled["output"], lab["output"], rtol=0, atol=1e-12)
    np.testing.assert_allclose(decode["output"], lab["output"], rtol=0, atol=1e-12)
    np.testing.assert_allclose([s["k"] for s in decode["steps"]], lab["k"][2:], atol=1e-12)
