"""POST /api/attention: the HTTP round trip against an in-process floor, n = 3 … 256.

The floor does the least any server must do for the same request: parse the same JSON with
orjson, compute every stage with plain numpy, and serialize the same fields with orjson.
The round trip is `python -m app` (uvicorn on 127.0.0.1, a free port, started here) asked
one request at a time over one keep-alive connection, reading the response and decoding
each piece as it arrives (as browsers, httpx and requests do), once for each
`Accept-Encoding` a client may send: identity (nothing), gzip
(httpx, requests and every browser ask for it), br and zstd (browsers). Each column is the
median round trip and its ratio to the floor; the line under a row names what the server
actually sent and how large, the next what the client's decoder alone costs of it (measured
apart: the pieces of one answer decoded again). Goals at n = 256, d = 64: ≤ 2.0 × the floor
for a client that accepts zstd, ≤ 3.0 × for a gzip-only client, and no encoding more than
20 % slower than identity over loopback.

    .venv/bin/python bench/bench_api.py          # every case
    .venv/bin/python bench/bench_api.py 256      # only n = 256
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # the floor runs numpy as the app does

import http.client
import statistics
import sys
import time
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import brotli
import numpy as np
import orjson
import zstandard
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


ENCODINGS = ("identity", "gzip", "br", "zstd")
# A decoder per encoding, fed the body piece by piece as it arrives, as browsers, httpx and
# requests decode (they never wait for the whole body first).
DECODERS: dict[str, Callable[[], Callable[[bytes], bytes]]] = {
    "identity": lambda: lambda data: data,
    "gzip": lambda: zlib.decompressobj(wbits=31).decompress,
    "br": lambda: brotli.Decompressor().process,
    "zstd": lambda: zstandard.ZstdDecompressor().decompressobj().decompress,
}
READ_BYTES = 256 * 1024  # the most one read takes off the socket


def answer_pieces(
    conn: http.client.HTTPConnection, body: bytes, encoding: str, path: str
) -> tuple[http.client.HTTPResponse, Iterator[bytes]]:
    """POST asking for `encoding`: the response, and its body's pieces as they are read off
    the socket (the connection is free for the next request once they are all read)."""
    conn.request(
        "POST", path, body, {"Content-Type": "application/json", "Accept-Encoding": encoding}
    )
    response = conn.getresponse()

    def pieces() -> Iterator[bytes]:
        while piece := response.read1(READ_BYTES):
            yield piece
        response.close()

    return response, pieces()


def round_trip(
    conn: http.client.HTTPConnection, body: bytes, encoding: str, path: str = "/api/attention"
) -> tuple[bytes, str, int]:
    """POST asking for `encoding`; the decoded answer, the encoding sent and its size. The
    answer is decoded as it arrives, each piece as soon as it is read."""
    response, pieces = answer_pieces(conn, body, encoding, path)
    sent = response.getheader("Content-Encoding", "identity")
    decode = DECODERS[sent]()
    decoded, size = [], 0
    for piece in pieces:
        size += len(piece)
        decoded.append(decode(piece))
    if response.status != 200:
        raise RuntimeError(f"{response.status}: {b''.join(decoded)[:300]!r}")
    return b"".join(decoded), sent, size


def decoding_seconds(conn: http.client.HTTPConnection, body: bytes, encoding: str) -> float:
    """What the client's decoder alone costs in a round trip asking for `encoding`: the
    median time to decode the pieces of one answer as they were read."""
    response, pieces = answer_pieces(conn, body, encoding, "/api/attention")
    decoder = DECODERS[response.getheader("Content-Encoding", "identity")]
    read = list(pieces)

    def decode_all() -> None:
        decode = decoder()
        for piece in read:
            decode(piece)

    return median_seconds([decode_all], 10)[0]


def main(only: set[int]) -> None:
    cases = [case for case in CASES if not only or case[0] in only]
    with running_app() as port:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
        print(f"POST /api/attention, median of repeated single requests (uvicorn on :{port})")
        print(f"load average before: {load} on {os.cpu_count()} CPUs")
        header = f"{'n':>4} {'d':>3} {'request':>9} {'response':>9} {'floor':>8}"
        print(header + "".join(f" {e:>15}" for e in ENCODINGS))
        for n, d, repeats in cases:
            body = request_body(n, d)
            plain, _, _ = round_trip(conn, body, "identity")
            sent = {e: round_trip(conn, body, e)[1:] for e in ENCODINGS}
            times = median_seconds(
                [lambda body=body: floor(body)]
                + [lambda body=body, e=e: round_trip(conn, body, e) for e in ENCODINGS],
                repeats,
            )
            floor_s, per_encoding = times[0], times[1:]
            cells = "".join(f" {t * 1e3:>7.2f}ms {t / floor_s:>4.1f}x" for t in per_encoding)
            print(
                f"{n:>4} {d:>3} {len(body) / 1e3:>7.1f}kB {len(plain) / 1e3:>7.1f}kB "
                f"{floor_s * 1e3:>6.2f}ms{cells}"
            )
            print(
                "          sent: "
                + ", ".join(f"{e} → {got} {size / 1e3:.0f} kB" for e, (got, size) in sent.items())
            )
            decoding = {e: decoding_seconds(conn, body, e) for e in ENCODINGS[1:]}
            print(
                "          the client's decoder alone: "
                + ", ".join(f"{e} {t * 1e3:.1f} ms {t / floor_s:.1f}x" for e, t in decoding.items())
            )
        conn.close()
        print(f"load average after: {', '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main({int(arg) for arg in sys.argv[1:]})
