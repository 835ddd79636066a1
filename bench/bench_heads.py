"""POST /api/heads round trip against its numpy floor, at h = 8, g = 2, n = 128.

Floor: in one process, parse the same request JSON with orjson, compute every head's stages,
the concatenation and W_O with plain numpy (no FastAPI, no pydantic), serialize the same
fields with orjson. Round trip: the same request over HTTP to uvicorn on 127.0.0.1
(stdlib http.client, keep-alive, one request at a time). Prints medians and their ratio;
not a pass/fail test.

    .venv/bin/python bench/bench_heads.py [--repeat 20]
"""

import argparse
import http.client
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import orjson

ROOT = Path(__file__).resolve().parents[1]
N, HEADS, KV_HEADS, D_MODEL, D_HEAD = 128, 8, 2, 64, 8


def request_body() -> bytes:
    rng = np.random.default_rng(0)
    r = lambda *shape: np.round(rng.standard_normal(shape) / 4, 3).tolist()  # noqa: E731
    return orjson.dumps(
        {
            "tokens": [f"t{i % 40}" for i in range(N)],
            "x": r(N, D_MODEL),
            "heads": HEADS,
            "kv_heads": KV_HEADS,
            "d_head": D_HEAD,
            "w_q": r(HEADS, D_MODEL, D_HEAD),
            "w_k": r(KV_HEADS, D_MODEL, D_HEAD),
            "w_v": r(KV_HEADS, D_MODEL, D_HEAD),
            "w_o": r(HEADS * D_HEAD, D_MODEL),
            "mask": {"causal": True},
            "positional": "rope",
        }
    )


def rope(m: np.ndarray) -> np.ndarray:
    n, d = m.shape
    theta = np.arange(n)[:, None] * 10000.0 ** (-np.arange(0, d, 2) / d)
    cos, sin = np.cos(theta), np.sin(theta)
    out = np.empty_like(m)
    out[:, 0::2] = m[:, 0::2] * cos - m[:, 1::2] * sin
    out[:, 1::2] = m[:, 0::2] * sin + m[:, 1::2] * cos
    return out


def floor(body: bytes) -> bytes:
    """The least any server must do: parse, compute with numpy, serialize."""
    req = orjson.loads(body)
    x = np.array(req["x"])
    w_q, w_k, w_v = (np.array(req[w]) for w in ("w_q", "w_k", "w_v"))
    w_o = np.array(req["w_o"])
    n = len(x)
    allowed = np.tril(np.ones((n, n), dtype=bool))
    ks = [rope(x @ w) for w in w_k]
    vs = [x @ w for w in w_v]
    heads = []
    for i in range(len(w_q)):
        j = i // (len(w_q) // len(w_k))
        q = rope(x @ w_q[i])
        scores = q @ ks[j].T
        scaled = scores / np.sqrt(q.shape[1])
        masked = np.where(allowed, scaled, -np.inf)
        e = np.exp(masked - masked.max(axis=1, keepdims=True))
        weights = e / e.sum(axis=1, keepdims=True)
        output = weights @ vs[j]
        heads.append(
            {"q": q, "k": ks[j], "v": vs[j], "scores": scores, "scaled": scaled,
             "allowed": allowed, "masked": masked, "weights": weights, "output": output,
             "empty_rows": [], "kv_head": j}
        )  # fmt: skip
    concat = np.concatenate([h["output"] for h in heads], axis=1)
    result = {"x": x, "w_q": w_q, "w_k": w_k, "w_v": w_v, "w_o": w_o, "heads": heads,
              "concat": concat, "output": concat @ w_o}  # fmt: skip
    return orjson.dumps(result, option=orjson.OPT_SERIALIZE_NUMPY)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def median_ms(fn, repeat: int) -> float:  # type: ignore[no-untyped-def]
    fn()  # warm up
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    body = request_body()
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "app.main:app", "--host", "127.0.0.1",
         "--port", str(port), "--log-level", "warning"],
        cwd=ROOT,
    )  # fmt: skip
    try:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        headers = {"content-type": "application/json"}

        def round_trip() -> bytes:
            connection.request("POST", "/api/heads", body=body, headers=headers)
            response = connection.getresponse()
            data = response.read()
            if response.status != 200:
                raise RuntimeError(f"/api/heads answered {response.status}: {data[:200]!r}")
            return data

        for _ in range(100):
            try:
                size = len(round_trip())
                break
            except ConnectionError:
                connection.close()
                time.sleep(0.1)
        floor_ms = median_ms(lambda: floor(body), args.repeat)
        http_ms = median_ms(round_trip, args.repeat)
    finally:
        server.terminate()
        server.wait(timeout=10)
    print(f"/api/heads  n={N} h={HEADS} g={KV_HEADS} d_model={D_MODEL} d_head={D_HEAD} rope causal")
    print(
        f"request {len(body) / 1e3:.0f} kB, response {size / 1e6:.1f} MB; median of {args.repeat}"
    )
    print(f"numpy floor (orjson parse + numpy + orjson dump): {floor_ms:8.1f} ms")
    print(f"HTTP round trip to uvicorn on 127.0.0.1:          {http_ms:8.1f} ms")
    print(f"ratio round trip / floor:                         {http_ms / floor_ms:8.2f}×")


if __name__ == "__main__":
    main()
