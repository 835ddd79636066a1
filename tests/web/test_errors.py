"""Every kind of bad input answers 422 with the field's `loc` and a sentence that says what to fix.

One table: each row is a request, where its error must point, and phrases its message must
contain. The server under test has small limits (4 tokens, width 3) so that the settings'
limits are cheap to cross.
"""

import json
import math
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.core.errors import field_name
from app.main import create_app
from app.settings import Settings

X3 = [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]  # the worked example's x: 3 tokens, d_model 2
JSON = {"content-type": "application/json"}


def raw(body: bytes, headers: dict[str, str] | None = JSON) -> dict[str, Any]:
    return {"content": body, "headers": headers or {}}


CASES: list[tuple[str, Any, list[Any], list[str]]] = [
    # (id, JSON body or raw(...), loc, phrases the msg must contain)
    ("ragged x", {"tokens": ["a", "b"], "x": [[1, 2], [3]]}, ["x", 1], ["x row 1 has 1", "same"]),
    ("ragged w_q", {"w_q": [[1, 0], [1]]}, ["w_q", 1], ["w_q row 1", "same length"]),
    ("x rows ≠ tokens", {"tokens": ["a", "b"], "x": X3}, ["x"], ["3 rows", "2 tokens", "one row"]),
    ("x rows ≠ default tokens", {"x": [[1.0]] * 5}, ["x"], ["5 rows", "left out", "one row"]),
    ("d_model ≠ x width", {"x": X3, "d_model": 3}, ["d_model"], ["d_model is 3", "2 numbers"]),
    (
        "w_q rows ≠ x width",
        {"x": X3, "w_q": [[1, 0], [0, 1], [1, 1]]},
        ["w_q"],
        ["w_q has 3 rows but each x row has 2 numbers (d_model = 2)", "one row per number"],
    ),
    (
        "w_k rows ≠ d_model",
        {"d_model": 3, "w_k": [[1, 0]] * 2},
        ["w_k"],
        ["2 rows", "d_model is 3"],
    ),
    (
        "w_v rows ≠ w_q rows",
        {"tokens": ["a"], "w_q": [[1.0]] * 2, "w_v": [[1.0]] * 3},
        ["w_v"],
        ["w_v has 3 rows but w_q has 2 rows", "one row per number"],
    ),
    (
        "w_k width ≠ w_q width",
        {"w_q": [[1, 0], [0, 1]], "w_k": [[1, 0, 0], [0, 1, 0]]},
        ["w_k"],
        ["w_k has 3 columns but w_q has 2", "same width d_k"],
    ),
    ("w_q width ≠ d_k", {"d_k": 3, "w_q": [[1, 0], [0, 1]]}, ["w_q"], ["2 columns", "d_k is 3"]),
    ("w_v width ≠ d_v", {"d_v": 1, "w_v": [[1, 0], [0, 1]]}, ["w_v"], ["2 columns", "d_v is 1"]),
    ("text as number", {"x": [[1, "a"], [0, 1], [1, 1]]}, ["x", 0, 1], ["must be a number", '"a"']),
    ("boolean as number", {"x": [[1, True], [0, 1], [1, 1]]}, ["x", 0, 1], ["number", "not true"]),
    ("null as number", {"w_v": [[None, 1], [0, 1]]}, ["w_v", 0, 0], ["number", "not null"]),
    ("list as number", {"x": [[[1], 0], [0, 1], [1, 1]]}, ["x", 0, 0], ["number", "a list"]),
    ("boolean as integer", {"query": True}, ["query"], ["whole number", "not true"]),
    ("fraction as integer", {"seed": 1.5}, ["seed"], ["whole number", "1.5"]),
    ("number as boolean", {"mask": {"causal": 1}}, ["mask", "causal"], ["true or false"]),
    ("text as boolean", {"scale": "yes"}, ["scale"], ["true or false"]),
    ("NaN", raw(b'{"x": [[NaN, 1], [0, 1], [1, 1]]}'), ["x", 0, 0], ["finite", "not NaN"]),
    ("-Infinity", raw(b'{"w_q": [[1, 0], [0, -Infinity]]}'), ["w_q", 1, 1], ["not -Infinity"]),
    ("overflow", raw(b'{"w_v": [[1e400, 1], [0, 1]]}'), ["w_v", 0, 0], ["finite", "not Infinity"]),
    ("NaN as integer", raw(b'{"query": NaN}'), ["query"], ["whole number", "not NaN"]),
    ("NaN and deep", raw(b'{"x": NaN, "y": ' + b"[" * 1020 + b"]" * 1020 + b"}"), [], ["deeply"]),
    ("magnitude over 1e6", {"x": [[2e6, 0], [0, 1], [1, 1]]}, ["x", 0, 0], ["at most 1000000"]),
    (
        "magnitude under -1e6",
        {"w_k": [[0, -1e6 - 1], [0, 1]]},
        ["w_k", 0, 1],
        ["at least -1000000"],
    ),
    ("empty token", {"tokens": ["a", ""]}, ["tokens", 1], ["tokens[1] is empty", "label"]),
    ("over-long token", {"tokens": ["a" * 41]}, ["tokens", 0], ["longer than 40", "shorten"]),
    ("token not text", {"tokens": ["a", 3]}, ["tokens", 1], ["text in quotes", "not 3"]),
    ("no tokens", {"tokens": []}, ["tokens"], ["0 entries", "at least 1"]),
    ("too many tokens", {"tokens": list("abcde")}, ["tokens"], ["5 labels", "at most 4"]),
    ("x too wide", {"tokens": ["a"], "x": [[1, 2, 3, 4]]}, ["x"], ["d_model = 4", "up to 3"]),
    ("d_model too wide", {"d_model": 4}, ["d_model"], ["d_model is 4", "up to 3", "smaller"]),
    ("w_q too wide", {"tokens": ["a"], "x": [[1]], "w_q": [[1, 2, 3, 4]]}, ["w_q"], ["d_k = 4"]),
    ("d_v too wide", {"d_v": 5}, ["d_v"], ["d_v is 5", "up to 3"]),
    ("width over the hard cap", {"d_k": 5000}, ["d_k"], ["at most 1024"]),
    (
        "padding too short",
        {"mask": {"padding": [True]}},
        ["mask", "padding"],
        ["1 flags", "3 tokens"],
    ),
    (
        "allowed too few rows",
        {"mask": {"allowed": [[True] * 3]}},
        ["mask", "allowed"],
        ["1 rows", "3 × 3"],
    ),
    (
        "allowed row too long",
        {"mask": {"allowed": [[True] * 3, [True] * 4, [True] * 3]}},
        ["mask", "allowed", 1],
        ["row 1 has 4 flags", "3 × 3"],
    ),
    ("window 0", {"mask": {"window": 0}}, ["mask", "window"], ["is 0", "at least 1"]),
    ("query past the end", {"query": 3}, ["query"], ["query is 3", "0 to 2"]),
    ("query negative", {"query": -1}, ["query"], ["query is -1", "at least 0"]),
    ("malformed JSON", raw(b'{"x": [1,'), [9], ["not valid JSON", "character 9", "brackets"]),
    ("trailing comma", raw(b'{"seed": 1,}'), [11], ["not valid JSON"]),
    ("not UTF-8", raw(b'{"tokens": ["\xff"]}'), [], ["could not be read as JSON", "UTF-8"]),
    ("deep nesting", raw(b"[" * 100_000), [], ["deeply"]),
    ("5,000 digits", raw(b'{"seed": ' + b"9" * 5000 + b"}"), [], ["4,300 digits"]),
    ("deep but valid", {"x": [[[[[[[[1]]]]]]]]}, ["x", 0, 0], ["must be a number", "a list"]),
    ("body a list", raw(b"[]"), [], ["body must be a JSON object", "not a list"]),
    ("body a string", raw(b'"hello"'), [], ["JSON object", '"hello"']),
    ("body a number", raw(b"3"), [], ["JSON object", "not 3"]),
    ("empty body", raw(b""), [], ["needs a JSON body", "{}"]),
    ("unknown field", {"tokenz": ["a"]}, ["tokenz"], ["not a field", "spelling"]),
    ("unknown mask field", {"mask": {"casual": True}}, ["mask", "casual"], ["not a field"]),
    ("mask not an object", {"mask": [True]}, ["mask"], ["object", "not a list"]),
    ("tokens not a list", {"tokens": "a b"}, ["tokens"], ["list", '"a b"']),
    ("x empty", {"x": []}, ["x"], ["0 entries", "at least 1"]),
    ("x row empty", {"x": [[]]}, ["x", 0], ["0 entries", "at least 1"]),
    ("seed negative", {"seed": -1}, ["seed"], ["at least 0"]),
]


@pytest.fixture(scope="module")
def small_client() -> Iterator[TestClient]:
    app = create_app(Settings(max_tokens=4, max_width=3))
    with TestClient(app, raise_server_exceptions=False) as client:
        yield client


@pytest.mark.parametrize(
    ("body", "loc", "phrases"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_bad_input_gets_a_422_that_says_where_and_what_to_fix(
    small_client: TestClient, body: Any, loc: list[Any], phrases: list[str]
) -> None:
    sent = body if "content" in body and "headers" in body else {"json": body}
    response = small_client.post("/api/attention", **sent)
    assert response.status_code == 422, response.text
    [error] = response.json()["detail"]
    assert error["loc"] == ["body", *loc]
    field = field_name(error["loc"]).split("[")[0]  # x[0][1] → x; [9] (a JSON position) → ""
    assert error["msg"].startswith(field or "the request")
    for phrase in phrases:
        assert phrase in error["msg"]
    assert ";" in error["msg"] or "must" in error["msg"]  # a what-to-do clause


def test_every_error_of_a_request_is_reported(small_client: TestClient) -> None:
    body = {"tokens": [""], "x": [[True]], "seed": -1}
    detail = small_client.post("/api/attention", json=body).json()["detail"]
    assert [e["loc"] for e in detail] == [
        ["body", "tokens", 0],
        ["body", "x", 0, 0],
        ["body", "seed"],
    ]


# Any JSON at all, often under the request's own field names: never a 500.
FIELDS = ["tokens", "x", "w_q", "w_k", "w_v", "d_model", "d_k", "d_v", "mask", "scale", "query"]
junk = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-5, 300)
    | st.floats(-2e6, 2e6)
    | st.sampled_from([math.nan, math.inf, -math.inf, 1e300])
    | st.text(max_size=3),
    lambda inner: (
        st.lists(inner, max_size=5)
        | st.dictionaries(
            st.sampled_from([*FIELDS, "causal", "padding", "window", "allowed"]), inner
        )
    ),
    max_leaves=30,
)


@settings(
    max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(body=junk | st.dictionaries(st.sampled_from(FIELDS), junk))
def test_no_json_makes_the_server_fail(small_client: TestClient, body: Any) -> None:
    # Python's json writes NaN and Infinity as they are: the server must cope with those too.
    response = small_client.post("/api/attention", content=json.dumps(body), headers=JSON)
    assert response.status_code in (200, 422), response.text
    if response.status_code == 422:
        assert all(e["msg"] and e["loc"][0] == "body" for e in response.json()["detail"])


@pytest.mark.parametrize(
    ("loc", "name"),
    [
        (("body", "x", 0, 1), "x[0][1]"),
        (("body", "mask", "allowed", 2), "mask.allowed[2]"),
        (("body", "query"), "query"),  # the request's field `query`
        (("query", "seq_len"), "seq_len"),  # a query parameter
        (("query",), "query"),  # a model validated in Python: its field `query`
        (("body",), ""),
        (("body", 9), "[9]"),
    ],
)
def test_field_names_read_as_a_student_writes_them(loc: tuple, name: str) -> None:
    assert field_name(loc) == name


def test_a_body_with_thousands_of_bad_numbers_lists_twenty_and_counts_the_rest(
    small_client: TestClient,
) -> None:
    cells = ", ".join(["NaN"] * 3)
    body = '{"tokens": ["a", "b", "c"], "x": [' + ", ".join([f"[{cells}]"] * 3) + "]}"
    few = small_client.post("/api/attention", **raw(body.encode())).json()["detail"]
    assert len(few) == 9  # nine problems: all listed, no count entry
    assert {e["type"] for e in few} == {"finite_number"}

    many = '{"x": [' + ", ".join(["[" + ", ".join(["NaN"] * 100) + "]"] * 50) + "]}"
    detail = small_client.post("/api/attention", **raw(many.encode())).json()["detail"]
    assert len(detail) == 21
    assert [e["loc"] for e in detail[:2]] == [["body", "x", 0, 0], ["body", "x", 0, 1]]
    assert detail[-1]["type"] == "too_many_errors"
    assert detail[-1]["msg"].startswith("and 4,980 more problems")


@pytest.mark.parametrize(
    "headers",
    [{}, {"content-type": "text/plain"}, {"content-type": "application/x-www-form-urlencoded"}],
    ids=["no content-type", "text/plain", "form encoded (curl -d without -H)"],
)
def test_a_body_not_sent_as_json_gets_415_with_the_header_to_add(
    small_client: TestClient, headers: dict[str, str]
) -> None:
    for path in ("/api/attention", "/api/heads", "/api/kernel/tiled", "/api/model"):
        response = small_client.post(path, content=b"{}", headers=headers)
        assert response.status_code == 415
        assert "content-type: application/json" in response.json()["detail"]
    sent = small_client.post(
        "/api/attention", content=b"{}", headers={"content-type": "application/json; charset=utf-8"}
    )
    assert sent.status_code == 200
