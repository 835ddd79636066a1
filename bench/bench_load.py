"""Load on one uvicorn worker, measured with wrk: `make bench-load`.

For POST /api/attention with {} and for GET /, wrk keeps 100 connections busy for 20 s
against Attention Lab served as in production (`python -m app`, 1 worker, on 127.0.0.1), and
then against a bare FastAPI app whose same routes return a fixed body of the same size, in
the same run. Printed: throughput, p50 / p99 latency and errors, and the ratio to the bare
app. Goals (one worker): no errors, API throughput at least half the bare endpoint's,
p99 ≤ 150 ms. The figures are printed, not asserted.
"""

import argparse
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import HTMLResponse, Response

ROOT = Path(__file__).resolve().parent.parent
POST_EMPTY = """wrk.method = "POST"
wrk.body = "{}"
wrk.headers["Content-Type"] = "application/json"
"""
TARGETS = [("POST", "/api/attention"), ("GET", "/")]


def bare_app() -> FastAPI:
    """The baseline: the same routes, each returning fixed bytes of the real body's size."""
    api_body = b"x" * int(os.environ["BENCH_API_BYTES"])
    page_body = b"x" * int(os.environ["BENCH_PAGE_BYTES"])
    app = FastAPI()

    @app.post("/api/attention")
    async def attention() -> Response:
        return Response(api_body, media_type="application/json")

    @app.get("/", response_class=HTMLResponse)
    async def page() -> Response:
        return HTMLResponse(page_body)

    return app


@dataclass
class Result:
    requests_per_s: float
    p50_ms: float
    p99_ms: float
    errors: int
    requests: int
    error_kinds: str


def millis(text: str) -> float:
    value, unit = re.fullmatch(r"([\d.]+)(us|ms|s|m)", text).groups()
    return float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60000.0}[unit]


def parse_wrk(out: str) -> Result:
    percentiles = dict(re.findall(r"^\s+(\d+)%\s+(\S+)\s*$", out, re.M))
    socket_errors = re.search(
        r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out
    )
    non_2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    kinds = (
        dict(zip(("connect", "read", "write", "timeout"), socket_errors.groups(), strict=True))
        if socket_errors
        else {}
    )
    if non_2xx:
        kinds["non-2xx"] = non_2xx.group(1)
    errors = sum(int(v) for v in kinds.values())
    return Result(
        requests_per_s=float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)),
        p50_ms=millis(percentiles["50"]),
        p99_ms=millis(percentiles["99"]),
        errors=errors,
        requests=int(re.search(r"(\d+) requests in", out).group(1)),
        error_kinds=", ".join(f"{k} {v}" for k, v in kinds.items() if int(v)),
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """A uvicorn process on 127.0.0.1 with one worker, started and stopped by the bench.
    The port is chosen here: passed as PORT and in place of "{port}" in the command."""

    def __init__(self, command: list[str], env: dict[str, str]) -> None:
        self.port = free_port()
        full_env = {**os.environ, **env, "HOST": "127.0.0.1", "PORT": str(self.port)}
        full_env["WORKERS"] = "1"
        self.url = f"http://127.0.0.1:{self.port}"
        self.process = subprocess.Popen(
            [sys.executable, *(arg.format(port=self.port) for arg in command)],
            cwd=ROOT,
            env=full_env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(f"{self.url}/", timeout=1).read()
                return
            except OSError:
                time.sleep(0.2)
        self.stop()
        raise RuntimeError("the server did not start")

    def body_size(self, method: str, path: str) -> int:
        data = b"{}" if method == "POST" else None
        headers = {"content-type": "application/json"}
        request = urllib.request.Request(self.url + path, data=data, headers=headers)
        return len(urllib.request.urlopen(request, timeout=5).read())

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=15)


def wrk(url: str, method: str, connections: int, seconds: int, threads: int) -> Result:
    with tempfile.NamedTemporaryFile("w", suffix=".lua") as script:
        script.write(POST_EMPTY if method == "POST" else "")
        script.flush()
        out = subprocess.run(
            ["wrk", f"-t{threads}", f"-c{connections}", f"-d{seconds}s", "--latency",
             "-s", script.name, url],
            check=True, capture_output=True, text=True,
        ).stdout  # fmt: skip
    return parse_wrk(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--connections", type=int, default=100)
    parser.add_argument("--seconds", type=int, default=20)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        sys.exit("wrk is missing: `make bench-load` installs it from Debian's packages")

    # Both servers run for the whole bench (the idle one costs nothing), and each endpoint is
    # measured on the lab and then at once on the bare app, so that a change in the
    # machine's other load between the two runs is as small as it can be.
    lab = Server(["-m", "app"], {})
    try:
        sizes = {path: lab.body_size(method, path) for method, path in TARGETS}
        bare = Server(
            ["-m", "uvicorn", "bench.bench_load:bare_app", "--factory", "--no-access-log",
             "--host", "127.0.0.1", "--port", "{port}"],
            {"BENCH_API_BYTES": str(sizes["/api/attention"]), "BENCH_PAGE_BYTES": str(sizes["/"])},
        )  # fmt: skip
        try:
            results = {
                (name, path): wrk(
                    server.url + path, method, args.connections, args.seconds, args.threads
                )
                for method, path in TARGETS
                for name, server in (("lab", lab), ("bare", bare))
            }
        finally:
            bare.stop()
    finally:
        lab.stop()

    print(
        f"wrk: {args.connections} connections, {args.seconds} s, {args.threads} threads; "
        "uvicorn with 1 worker on 127.0.0.1"
    )
    print(f"{'endpoint':22} {'app':6} {'bytes':>7} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8}"
          f" {'errors':>7} {'vs bare':>8}")  # fmt: skip
    for method, path in TARGETS:
        base = results[("bare", path)]
        for app in ("lab", "bare"):
            r = results[(app, path)]
            ratio = r.requests_per_s / base.requests_per_s
            print(
                f"{method + ' ' + path:22} {app:6} {sizes[path]:7d} {r.requests_per_s:8.0f} "
                f"{r.p50_ms:8.1f} {r.p99_ms:8.1f} {r.errors:7d} {ratio:8.2f}  {r.error_kinds}"
            )
    api, api_bare = results[("lab", "/api/attention")], results[("bare", "/api/attention")]
    print(
        "goals: errors 0: {}; API ≥ 0.5 × bare: {} ({:.2f}); p99 ≤ 150 ms: {} ({:.1f} ms)".format(
            "yes" if all(r.errors == 0 for r in results.values()) else "NO",
            "yes" if api.requests_per_s >= 0.5 * api_bare.requests_per_s else "NO",
            api.requests_per_s / api_bare.requests_per_s,
            "yes" if api.p99_ms <= 150 else "NO",
            api.p99_ms,
        )
    )


if __name__ == "__main__":
    main()
