"""A deliberately plain second implementation of one head, for the property tests to compare.

Python loops and the math module only, no numpy and nothing from app/: if the engine and this
agree on random inputs, neither is likely to share the other's mistake. Also the hypothesis
strategy that draws the requests both sides answer.
"""

import dataclasses
import math
from typing import Any

from hypothesis import strategies as st

Matrix = list[list[float]]


def matmul(a: Matrix, b: Matrix) -> Matrix:
    return [
        [math.fsum(a[i][t] * b[t][j] for t in range(len(b))) for j in range(len(b[0]))]
        for i in range(len(a))
    ]


def transpose(a: Matrix) -> Matrix:
    return [[a[i][j] for i in range(len(a))] for j in range(len(a[0]))]


def visible(i: int, j: int, mask: dict[str, Any]) -> bool:
    """Query i may see key j when every restriction of the mask allows it."""
    causal = mask.get("causal", False)
    window = mask.get("window")
    if causal and j > i:
        return False
    if window is not None:
        near = i - window < j <= i if causal else abs(i - j) < window
        if not near:
            return False
    if mask.get("padding") is not None and mask["padding"][j]:
        return False
    return mask.get("allowed") is None or mask["allowed"][i][j]


def softmax_visible(row: list[float], seen: list[bool]) -> list[float]:
    if not any(seen):
        return [0.0] * len(row)
    top = max(s for s, ok in zip(row, seen, strict=True) if ok)
    exp = [math.exp(s - top) if ok else 0.0 for s, ok in zip(row, seen, strict=True)]
    total = math.fsum(exp)
    return [e / total for e in exp]


def plain_head(
    tokens: list[str],
    x: Matrix,
    w_q: Matrix,
    w_k: Matrix,
    w_v: Matrix,
    mask: dict[str, Any],
    scale: bool,
    query: int,
) -> dict[str, Any]:
    """Every stage of API.md, `masked` with None where hidden (as JSON writes −∞)."""
    n = len(x)
    q, k, v = matmul(x, w_q), matmul(x, w_k), matmul(x, w_v)
    scores = matmul(q, transpose(k))
    scale_factor = math.sqrt(len(w_q[0])) if scale else 1.0
    scaled = [[s / scale_factor for s in row] for row in scores]
    allowed = [[visible(i, j, mask) for j in range(n)] for i in range(n)]
    masked = [
        [s if ok else None for s, ok in zip(srow, arow, strict=True)]
        for srow, arow in zip(scaled, allowed, strict=True)
    ]
    weights = [softmax_visible(srow, arow) for srow, arow in zip(scaled, allowed, strict=True)]
    output = matmul(weights, v)
    weighted = [[weights[query][j] * value for value in v[j]] for j in range(n)]
    rows = [
        {
            "key_index": j,
            "key_token": tokens[j],
            "dot": scores[query][j],
            "scaled": scaled[query][j],
            "visible": allowed[query][j],
            "weight": weights[query][j],
            "weighted_value": weighted[j],
        }
        for j in range(n)
    ]
    return {
        "scale_factor": scale_factor,
        "q": q,
        "k": k,
        "v": v,
        "scores": scores,
        "scaled": scaled,
        "allowed": allowed,
        "masked": masked,
        "weights": weights,
        "output": output,
        "empty_rows": [i for i in range(n) if not any(allowed[i])],
        "query": {
            "index": query,
            "token": tokens[query],
            "rows": rows,
            "output": [math.fsum(col) for col in zip(*weighted, strict=True)],
        },
    }


# ---------------------------------------------------------------- random requests

number = st.one_of(
    st.floats(-4, 4, allow_nan=False, allow_infinity=False),
    st.integers(-3, 3).map(float),
)


def matrix(rows: int, cols: int) -> st.SearchStrategy[Matrix]:
    return st.lists(st.lists(number, min_size=cols, max_size=cols), min_size=rows, max_size=rows)


@st.composite
def head_requests(draw: st.DrawFn) -> dict[str, Any]:
    """A valid /api/attention request: n 1–16, widths 1–8, any mix of given and generated
    inputs, any AND of causal, padding, window and allowed, scaled or not."""
    n = draw(st.integers(1, 16))
    d_model, d_k, d_v = (draw(st.integers(1, 8)) for _ in range(3))
    flags = st.lists(st.booleans(), min_size=n, max_size=n)
    mask = {
        "causal": draw(st.booleans()),
        "padding": draw(st.none() | flags),
        "window": draw(st.none() | st.integers(1, n + 1)),
        "allowed": draw(st.none() | st.lists(flags, min_size=n, max_size=n)),
    }
    request: dict[str, Any] = {
        "tokens": draw(st.lists(st.sampled_from(["ab", "cd", "ef", "g"]), min_size=n, max_size=n)),
        "mask": {key: value for key, value in mask.items() if value is not None},
        "scale": draw(st.booleans()),
        "seed": draw(st.integers(0, 2**32 - 1)),
        "d_model": d_model,
        "d_k": d_k,
        "d_v": d_v,
    }
    shapes = {"x": (n, d_model), "w_q": (d_model, d_k), "w_k": (d_model, d_k)}
    shapes["w_v"] = (d_model, d_v)
    for name, (rows, cols) in shapes.items():
        if draw(st.booleans()):
            request[name] = draw(matrix(rows, cols))
    if draw(st.booleans()):
        request["query"] = draw(st.integers(0, n - 1))
    return request


# ---------------------------------------------------------------- comparing


def plain_answer(request: dict[str, Any], result: Any) -> dict[str, Any]:
    """What the plain head computes from the inputs the engine says it used."""
    n = len(request["tokens"])
    query = request.get("query", n - 1)
    used = plain(result)  # a typed result or its JSON
    inputs = [used[name] for name in ("x", "w_q", "w_k", "w_v")]
    return plain_head(request["tokens"], *inputs, request["mask"], request["scale"], query)


def plain(value: Any) -> Any:
    """Typed results, numpy arrays and scalars as Python dicts, lists and numbers; −∞ as
    None, as JSON writes it."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, list):
        return [plain(item) for item in value]
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    return None if value == -math.inf else value


def assert_stages_close(got: dict[str, Any], want: dict[str, Any]) -> None:
    """Every field of `want` in `got`: flags, indices and labels equal, numbers within 1e-9
    of the largest number in the same field (the plain sums round differently from BLAS)."""
    for key, value in want.items():
        size = max((abs(v) for v in leaves(value) if isinstance(v, float)), default=0.0)
        assert_close(got[key], value, key, 1e-9 * max(1.0, size))


def assert_close(got: Any, want: Any, path: str, tol: float) -> None:
    if isinstance(want, dict):
        assert set(got) >= set(want), path
        for key in want:
            assert_close(got[key], want[key], f"{path}.{key}", tol)
    elif isinstance(want, list):
        assert isinstance(got, list), path
        assert len(got) == len(want), path
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            assert_close(g, w, f"{path}[{i}]", tol)
    elif isinstance(want, float):
        assert isinstance(got, float), f"{path}: {got!r} is not a number"
        assert math.isclose(got, want, rel_tol=1e-9, abs_tol=tol), f"{path}: {got} != {want}"
    else:  # bool, int, str, None
        assert got == want, f"{path}: {got!r} != {want!r}"
        assert type(got) is type(want), f"{path}: {got!r} is not a {type(want).__name__}"


def leaves(value: Any) -> list[Any]:
    if isinstance(value, dict):
        value = list(value.values())
    return [x for item in value for x in leaves(item)] if isinstance(value, list) else [value]
