"""POST /api/attention: the HTTP round trip against an in-process floor, n = 3 … 256.

The floor does the least any server must do for the same request: parse the same JSON with
orjson, compute every stage with plain numpy, and serialize the same fields with orjson.
The round trip is `python -m app` (uvicorn on 127.0.0.1, a free port, started here) asked
one request at a time over one keep-alive connection, reading the whole response, without
compression. The last column asks the same with `Accept-Encoding: gzip`, as browsers and
most HTTP libraries do, to show what compressing the response costs.

    .venv/bin/python bench/bench_api.py
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # the floor runs numpy as the app does

import http.client
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import orjson
from server import Server

ROOT = Path(__file__).resolve().parents[1]
# (n, d_model = d_k = d_v, timed repeats)
CASES = [(3, 4, 400), (16, 8, 300), (64, 64, 100), (256, 64, 30)]


def request_body(n: int, d: int) -> bytes:
    rng = np.random.default_rng(n)

    def matrix(rows: int, cols: int) -> list[list[float]]:
        return np.round(rng.standard_normal((rows, cols)), 3).tolist()

    return orjson.dumps(
        {
            "tokens": [f"t{i}" for i in range(n)],
            "x": matrix(n, d),
            "w_q": matrix(d, d),
            "w_k": matrix(d, d),
            "w_v": matrix(d, d),
            "mask": {"causal": True},
            "query": n - 1,
        }
    )


def floor(body: bytes) -> bytes:
    """The same request answered with nothing but orjson and plain numpy."""
    req = orjson.loads(body)
    x, w_q, w_k, w_v = (np.array(req[f], dtype=float) for f in ("x", "w_q", "w_k", "w_v"))
    tokens, i = req["tokens"], req["query"]
    n = len(tokens)
    q, k, v = x @ w_q, x @ w_k, x @ w_v
    scores = q @ k.T
    scale_factor = np.sqrt(q.shape[1])
    scaled = scores / scale_factor
    allowed = np.tril(np.ones((n, n), dtype=bool))
    masked = np.where(allowed, scaled, -np.inf)
    exp = np.exp(masked - masked.max(axis=1, keepdims=True))
    weights = exp / exp.sum(axis=1, keepdims=True)
    output = weights @ v
    weighted = weights[i][:, None] * v
    rows = [
        {
            "key_index": j,
            "key_token": tokens[j],
            "dot": scores[i, j],
            "scaled": scaled[i, j],
            "visible": allowed[i, j],
            "weight": weights[i, j],
            "weighted_value": weighted[j],
        }
        for j in range(n)
    ]
    result = {
        "tokens": tokens,
        "scale_factor": scale_factor,
        "x": x,
        "w_q": w_q,
        "w_k": w_k,
        "w_v": w_v,
        "q": q,
        "k": k,
        "v": v,
        "scores": scores,
        "scaled": scaled,
        "allowed": allowed,
        "masked": masked,
        "weights": weights,
        "output": output,
        "empty_rows": [],
        "query": {"index": i, "token": tokens[i], "rows": rows, "output": weighted.sum(axis=0)},
    }
    return orjson.dumps(result, option=orjson.OPT_SERIALIZE_NUMPY)


def median_seconds(calls: list[Callable[[], Any]], repeats: int) -> list[float]:
    """Median time of each call, the calls taking turns so that both see the same machine load."""
    times: list[list[float]] = [[] for _ in calls]
    for round_ in range(max(3, repeats // 10) + repeats):
        for call, spent in zip(calls, times, strict=True):
            start = time.perf_counter()
            call()
            if round_ >= max(3, repeats // 10):  # the first rounds only warm up
                spent.append(time.perf_counter() - start)
    return [statistics.median(spent) for spent in times]


@contextmanager
def running_app(workers: int = 1) -> Iterator[int]:
    """`python -m app` on a free port of 127.0.0.1 for the length of the block: its port.
    The response cache is off: the same body is sent again and again, and the point here is
    the cost of computing and serializing it."""
    server = Server(env={"RESPONSE_CACHE_BYTES": "0"}, workers=workers)
    try:
        yield server.port
    finally:
        server.stop()


def post(
    conn: http.client.HTTPConnection,
    body: bytes,
    path: str = "/api/attention",
    encoding: str = "identity",
) -> bytes:
    headers = {"Content-Type": "application/json", "Accept-Encoding": encoding}
    conn.request("POST", path, body, headers)
    response = conn.getresponse()
    data = response.read()
    if response.status != 200:
        raise RuntimeError(f"{response.status}: {data[:300]!r}")
    return data


def main() -> None:
    with running_app() as port:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
        print(f"POST /api/attention, median of repeated single requests (uvicorn on :{port})")
        print(f"load average before: {load} on {os.cpu_count()} CPUs")
        header = f"{'n':>5} {'width':>5} {'request':>9} {'response':>9} {'floor':>9} {'HTTP':>9}"
        print(f"{header} {'HTTP/floor':>10} {'HTTP gzip':>10}")
        for n, d, repeats in CASES:
            body = request_body(n, d)
            answer = post(conn, body)
            floor_s, http_s, gzip_s = median_seconds(
                [
                    lambda body=body: floor(body),
                    lambda body=body: post(conn, body),
                    lambda body=body: post(conn, body, encoding="gzip"),
                ],
                repeats,
            )
            print(
                f"{n:>5} {d:>5} {len(body) / 1e3:>7.1f}kB {len(answer) / 1e3:>7.1f}kB "
                f"{floor_s * 1e3:>7.2f}ms {http_s * 1e3:>7.2f}ms {http_s / floor_s:>9.2f}x "
                f"{gzip_s * 1e3:>8.2f}ms"
            )
        conn.close()


if __name__ == "__main__":
    main()
