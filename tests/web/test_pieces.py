"""Large answers serialized in pieces (app/web/pieces.py): the pieces joined are exactly the
bytes one orjson call writes, each about the piece size; the lab sends a long head piece by
piece from the work thread, and an answer of one piece in one go."""

import asyncio
import dataclasses
from typing import Any

import numpy as np
import orjson
import pytest
from fastapi.testclient import TestClient

from app.features.lab.schemas import AttentionRequest
from app.features.lab.service import compute_attention
from app.settings import Settings
from app.web import pieces
from app.web.json_io import dumps
from app.web.pieces import PiecesResponse, json_pieces

JSON = {"content-type": "application/json", "accept-encoding": "identity"}
HEADS = [
    {},
    {"tokens": [f"t{i}" for i in range(40)], "d_model": 16, "mask": {"causal": True}},
    {"tokens": [f"t{i}" for i in range(33)], "mask": {"padding": [i % 3 == 0 for i in range(33)]}},
    {"tokens": [f"t{i}" for i in range(50)], "d_model": 8, "d_k": 3, "mask": {"window": 4}},
    {"tokens": [f"t{i}" for i in range(256)], "d_model": 64, "mask": {"causal": True}},
]


@dataclasses.dataclass
class Nested:
    _hidden: int  # orjson leaves out fields that start with an underscore
    label: str
    grid: np.ndarray


@pytest.mark.parametrize("head", HEADS, ids=["worked", "causal", "padding", "window", "n=256"])
@pytest.mark.parametrize("piece_bytes", [4096, pieces.PIECE_BYTES])
def test_the_pieces_of_a_head_joined_are_its_json(head: dict, piece_bytes: int) -> None:
    result = compute_attention(AttentionRequest(**head), Settings())
    whole = dumps(result)
    written = list(json_pieces(result, piece_bytes))
    assert b"".join(written) == whole
    if len(whole) > 4 * piece_bytes:
        assert len(written) > len(whole) // (2 * piece_bytes)  # the matrices are split
        assert all(len(piece) >= piece_bytes // 4 for piece in written[:-1])
    if piece_bytes == pieces.PIECE_BYTES:  # larger than any list the breakdown writes whole
        assert max(len(piece) for piece in written) <= 2 * piece_bytes


WIDE = 2**70  # orjson's integers stop at 64 bits: json_io writes it as a float


@pytest.mark.parametrize(
    "value",
    [
        {"empty": {}, "keys": {1: "one", "2": [1, 2]}, "wide": WIDE, "list": [1, {"a": None}]},
        Nested(7, "n", np.arange(60.0).reshape(12, 5).T),  # not contiguous: copied first
        {
            "masked": np.where(
                np.tri(40, dtype=bool), np.linspace(-1, 1, 1600).reshape(40, 40), -np.inf
            )
        },
        {"cube": np.arange(2000).reshape(10, 20, 10), "flags": np.eye(30, dtype=bool)},
        {"one row": np.ones((1, 500)), "no rows": np.zeros((0, 3))},
        [np.ones((50, 50))],  # a list is written in one call
    ],
    ids=["dict", "dataclass", "masked", "cube", "edges", "list"],
)
def test_the_pieces_of_any_value_joined_are_what_one_orjson_call_writes(value: Any) -> None:
    whole = dumps(value)
    written = list(json_pieces(value, 256))
    assert b"".join(written) == whole
    assert orjson.loads(whole) is not None


def test_a_long_head_is_sent_in_pieces_and_a_short_answer_in_one_go(
    fresh_client: TestClient,
) -> None:
    long_head = {"tokens": [f"t{i}" for i in range(64)], "d_model": 32}  # ~400 kB
    short_head = {"tokens": [f"t{i}" for i in range(33)], "d_model": 2}  # ~90 kB
    for head, streamed in [(long_head, True), (short_head, False)]:
        expected = dumps(compute_attention(AttentionRequest(**head), Settings()))
        response = fresh_client.post("/api/attention", content=orjson.dumps(head), headers=JSON)
        assert response.status_code == 200
        assert response.content == expected
        assert response.headers["content-type"] == "application/json"
        if streamed:
            assert "content-length" not in response.headers
            assert len(expected) > pieces.PIECE_BYTES
        else:
            assert len(expected) < pieces.PIECE_BYTES
            assert response.headers["content-length"] == str(len(expected))


def test_an_error_while_writing_reaches_the_loop_after_the_first_piece() -> None:
    sent: list[dict] = []

    async def send(message: dict) -> None:
        sent.append(message)

    async def receive() -> dict:
        return {"type": "http.disconnect"}

    class Unwritable:
        pass

    answer = PiecesResponse({"grid": np.ones((400, 400)), "bad": Unwritable()})  # 640 kB
    with pytest.raises(TypeError, match="Unwritable"):
        asyncio.run(answer({"type": "http"}, receive, send))
    assert sent[0]["type"] == "http.response.start"
    assert "content-length" not in dict(sent[0]["headers"])
    assert len(sent) > 1
    assert all(m["more_body"] for m in sent[1:])  # never a last piece: the answer is cut
    assert sent[1]["body"].startswith(b'{"grid":[[1.0,')
