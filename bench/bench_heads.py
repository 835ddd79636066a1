"""POST /api/heads round trip against its numpy floor, at h = 8, g = 2, n = 128.

As bench/bench_api.py does for one head (and with its server and timing helpers): the floor
parses the same request JSON with orjson, computes every head's stages, the concatenation
and W_O with plain numpy (no FastAPI, no pydantic) and serializes the same fields with
orjson; the round trip asks `python -m app` on 127.0.0.1 over one keep-alive connection,
one request at a time. Prints medians and their ratio; not a pass/fail test.

    .venv/bin/python bench/bench_heads.py
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # the floor runs numpy as the app does

import http.client

import numpy as np
import orjson
from bench_api import median_seconds, post, running_app

N, HEADS, KV_HEADS, D_MODEL, D_HEAD, REPEATS = 128, 8, 2, 64, 8, 30


def request_body() -> bytes:
    rng = np.random.default_rng(0)

    def tensor(*shape: int) -> list:
        return np.round(rng.standard_normal(shape) / 4, 3).tolist()

    return orjson.dumps(
        {
            "tokens": [f"t{i % 40}" for i in range(N)],
            "x": tensor(N, D_MODEL),
            "heads": HEADS,
            "kv_heads": KV_HEADS,
            "d_head": D_HEAD,
            "w_q": tensor(HEADS, D_MODEL, D_HEAD),
            "w_k": tensor(KV_HEADS, D_MODEL, D_HEAD),
            "w_v": tensor(KV_HEADS, D_MODEL, D_HEAD),
            "w_o": tensor(HEADS * D_HEAD, D_MODEL),
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
    """The same request answered with nothing but orjson and plain numpy."""
    req = orjson.loads(body)
    x, w_q, w_k, w_v, w_o = (np.array(req[f]) for f in ("x", "w_q", "w_k", "w_v", "w_o"))
    n, h, g = len(x), len(w_q), len(w_k)
    allowed = np.tril(np.ones((n, n), dtype=bool))
    k = [rope(x @ w) for w in w_k]
    v = [x @ w for w in w_v]
    heads = []
    for i in range(h):
        j = i // (h // g)
        q = rope(x @ w_q[i])
        scores = q @ k[j].T
        scaled = scores / np.sqrt(q.shape[1])
        masked = np.where(allowed, scaled, -np.inf)
        exp = np.exp(masked - masked.max(axis=1, keepdims=True))
        weights = exp / exp.sum(axis=1, keepdims=True)
        heads.append(
            {"q": q, "k": k[j], "v": v[j], "scores": scores, "scaled": scaled,
             "allowed": allowed, "masked": masked, "weights": weights,
             "output": weights @ v[j], "empty_rows": [], "kv_head": j}
        )  # fmt: skip
    concat = np.concatenate([head["output"] for head in heads], axis=1)
    result = {"tokens": req["tokens"], "x": x, "w_q": w_q, "w_k": w_k, "w_v": w_v, "w_o": w_o,
              "heads": heads, "concat": concat, "output": concat @ w_o}  # fmt: skip
    return orjson.dumps(result, option=orjson.OPT_SERIALIZE_NUMPY)


def main() -> None:
    body = request_body()
    with running_app() as port:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
        answer = post(conn, body, "/api/heads")
        floor_s, http_s = median_seconds(
            [lambda: floor(body), lambda: post(conn, body, "/api/heads")], REPEATS
        )
        conn.close()
    print(f"POST /api/heads, n={N} h={HEADS} g={KV_HEADS} d_model={D_MODEL} d_head={D_HEAD},")
    print(f"causal, rope; median of {REPEATS} single requests (uvicorn on :{port})")
    print(f"load average before: {load} on {os.cpu_count()} CPUs")
    print(f"request {len(body) / 1e3:.1f} kB, response {len(answer) / 1e6:.2f} MB")
    print(f"floor (orjson + numpy + orjson) {floor_s * 1e3:7.2f} ms")
    print(f"HTTP round trip                 {http_s * 1e3:7.2f} ms")
    print(f"HTTP / floor                    {http_s / floor_s:7.2f}x")


if __name__ == "__main__":
    main()
