"""The answer budget: each result's size estimate against real answers, and requests whose
answer would be larger than the setting refused before computing, with the fields to shrink."""

import pytest
from fastapi.testclient import TestClient

from app.features.decoder.results import DecoderResult
from app.features.decoder.schemas import DecoderRequest
from app.features.decoder.service import compute_decoder
from app.features.heads.schemas import HeadsRequest, HeadsResult
from app.features.heads.service import compute_heads
from app.features.kernel.results import DecodeResult, TiledResult
from app.features.kernel.schemas import DecodeRequest, TiledRequest
from app.features.kernel.service import compute_decode, compute_tiled
from app.features.lab.download import stages_csv
from app.features.lab.schemas import AttentionRequest
from app.features.lab.service import answer_bytes, compute_attention, resolve_inputs
from app.features.model.results import ModelResult
from app.features.model.schemas import ModelRequest
from app.features.model.service import compute_model
from app.math import heads as heads_math
from app.settings import Settings
from app.web.responses import dumps

UNBOUNDED = Settings(answer_budget_bytes=10**10)
LOW, HIGH = 0.8, 1.5  # every estimate is within these factors of the real answer


def tokens(n: int) -> list[str]:
    return [f"t{i}" for i in range(n)]


def assert_close(estimate: int, real: int) -> None:
    assert LOW * real <= estimate <= HIGH * real, (estimate, real, estimate / real)


@pytest.mark.parametrize(("n", "d"), [(3, 2), (16, 4), (64, 8), (128, 32)])
def test_the_attention_and_csv_estimates_follow_the_real_answers(n: int, d: int) -> None:
    req = AttentionRequest(tokens=tokens(n), d_model=d, d_k=d, d_v=max(1, d // 2), seed=n)
    result = compute_attention(req, UNBOUNDED)
    inputs = resolve_inputs(req, UNBOUNDED)
    assert_close(answer_bytes(inputs), len(dumps(result)))
    assert_close(answer_bytes(inputs, csv=True), len(stages_csv(result)))


@pytest.mark.parametrize(("n", "h", "g", "d"), [(4, 2, 2, 2), (32, 8, 2, 8), (128, 16, 4, 16)])
def test_the_heads_estimate_follows_the_real_answers(n: int, h: int, g: int, d: int) -> None:
    req = HeadsRequest(tokens=tokens(n), heads=h, kv_heads=g, d_model=d, d_head=d)
    real = len(dumps(compute_heads(req, UNBOUNDED)))
    assert_close(HeadsResult.answer_bytes(n, h, g, d, d), real)


@pytest.mark.parametrize(("n", "d", "block"), [(3, 2, 1), (32, 4, 8), (64, 8, 16)])
def test_the_kernel_estimates_follow_the_real_answers(n: int, d: int, block: int) -> None:
    state = {"tokens": tokens(n), "d_model": d, "d_k": d, "d_v": d}
    tiled = compute_tiled(TiledRequest(**state, block_q=block, block_k=block), UNBOUNDED)
    rows = len(tiled.long_sequence.seq_lens)
    estimate = TiledResult.answer_bytes(n, (d, d, d), (block, block), rows)
    assert_close(estimate, len(dumps(tiled)))
    decode = compute_decode(DecodeRequest(**state), UNBOUNDED)
    assert_close(DecodeResult.answer_bytes(n, (d, d, d), decode.prompt, rows), len(dumps(decode)))


@pytest.mark.parametrize(
    ("text", "options"),
    [
        ("The cat sat on the mat.", {}),
        ("word " * 60, {}),
        ("word " * 60, {"include_weights": False, "layer": 1, "head": 2}),
        ("a b c", {"compare_text": "d e"}),
    ],
)
def test_the_model_estimate_follows_the_real_answers(text: str, options: dict) -> None:
    req = ModelRequest(text=text, **options)
    result = compute_model(req, UNBOUNDED)
    shape = (result.model.layers, result.model.heads, result.model.d_model, result.model.d_head)
    compare = len(result.compare.tokens) if result.compare else 0
    one = req.layer is not None
    estimate = ModelResult.answer_bytes(
        len(result.tokens), shape, req.include_weights, one, compare
    )
    assert_close(estimate, len(dumps(result.json())))


def test_the_largest_legal_heads_request_is_refused_before_computing(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """h = 16, n = 256, d = 64 answered 97 MB; now a 422 that names the fields, and the heads'
    math is never started (it would take seconds)."""
    started: list[int] = []

    def never(*args: object, **kwargs: object) -> None:
        started.append(1)
        raise AssertionError("the heads were computed before the budget was checked")

    monkeypatch.setattr(heads_math, "multi_head_attention", never)
    body = {"tokens": tokens(256), "heads": 16, "d_model": 64, "d_head": 64}
    answer = client.post("/api/heads", json=body)
    assert answer.status_code == 422
    (error,) = answer.json()["detail"]
    assert error["loc"] == ["body", "tokens"]
    assert error["msg"] == (
        "tokens, heads, d_head, d_model: the answer would be about 98 MB, more than this "
        "server sends at once (16 MB); make tokens, heads, d_head, d_model smaller"
    )
    assert started == []


@pytest.fixture(scope="module")
def small_budget() -> TestClient:
    from app.main import create_app

    app = create_app(Settings(answer_budget_bytes=100_000))
    with TestClient(app, raise_server_exceptions=False) as test_client:
        yield test_client


STATE = {"tokens": tokens(64), "d_model": 8, "d_k": 8, "d_v": 8}  # ~340 KB as JSON


@pytest.mark.parametrize(
    ("path", "body", "fields"),
    [
        ("/api/attention", STATE, "tokens, d_model, d_k, d_v"),
        ("/api/heads", {"tokens": tokens(64), "heads": 4}, "tokens, heads, d_head, d_model"),
        ("/api/kernel/tiled", {**STATE, "block_q": 32, "block_k": 32}, "tokens, block_q, block_k"),
        ("/api/kernel/decode", STATE, "tokens, d_k, d_v"),
        ("/api/model", {"text": "word " * 30}, "text, include_weights"),
    ],
)
def test_every_api_refuses_an_answer_over_the_budget(
    small_budget: TestClient, path: str, body: dict, fields: str
) -> None:
    answer = small_budget.post(path, json=body)
    assert answer.status_code == 422
    assert answer.json()["detail"][0]["msg"].startswith(f"{fields}: the answer would be about")
    assert small_budget.post(path, json={"text": "a b"} if "model" in path else {}).is_success


LAB = {"tokens": " ".join(tokens(64)), "d_model": 8, "d_k": 8, "d_v": 8}


def test_the_csv_is_refused_when_its_own_size_is_over(make_client) -> None:
    """Its JSON (~340 KB) fits 500 KB, its CSV (~790 KB, a line per number) does not."""
    client = make_client(answer_budget_bytes=500_000)
    assert client.get("/lab.json", params=LAB).status_code == 200
    csv = client.get("/lab.csv", params=LAB)
    assert csv.status_code == 422
    assert csv.json()["detail"][0]["loc"] == ["query", "tokens"]
    assert csv.json()["detail"][0]["msg"].startswith("tokens, d_model, d_k, d_v: the answer")


def test_the_pages_refuse_it_too(small_budget: TestClient) -> None:
    query = LAB
    lab = small_budget.get("/", params=query)
    assert lab.status_code == 422
    assert "tokens, d_model, d_k, d_v: the answer would be about" in lab.text
    heads = small_budget.get("/heads", params={"text": " ".join(tokens(32)), "heads": 8})
    assert heads.status_code == 422
    assert "make tokens, heads, d_head, d_model smaller" in heads.text
    spanish = small_budget.get("/", params={**query, "lang": "es"})
    assert "la respuesta ocuparía unos" in spanish.text


@pytest.mark.parametrize(
    "body",
    [
        {"text": "The cat sat on the mat."},
        {"text": "word " * 56, "generate": 4, "weights": "all"},
        {"text": "word " * 200, "generate": 8, "weights": "layer", "head": 3, "top": 20},
        {"repeat_random": {"length": 32}, "head": 0},
    ],
)
def test_the_decoder_estimate_follows_the_real_answers(body: dict) -> None:
    req = DecoderRequest(**body)
    result = compute_decoder(req, UNBOUNDED)
    m = result.model
    layers = {"none": 0, "layer": 1, "all": m.layers}[req.weights]
    estimate = DecoderResult.answer_bytes(
        len(result.tokens), len(result.steps), req.top, (m.layers, m.heads, m.d_model, m.d_head),
        layers, req.head is not None,
    )  # fmt: skip
    assert_close(estimate, len(dumps(result.json())))
