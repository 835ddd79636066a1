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
import subprocess
import sys
import tempfile
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from server import Server

ROOT = Path(__file__).resolve().parent.parent
POST_EMPTY = """wrk.method = "POST"
wrk.body = "{}"
wrk.headers["Content-Type"] = "application/json"
"""
TARGETS = [("POST", "/api/attention"), ("GET", "/")]
JSON = {"content-type": "application/json"}


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


def body_size(url: str, method: str, path: str) -> int:
    data = b"{}" if method == "POST" else None
    request = urllib.request.Request(url + path, data=data, headers=JSON)
    with urllib.request.urlopen(request, timeout=5) as r:
        return len(r.read())


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

    # The servers run for the whole bench (an idle one costs nothing), and each endpoint is
    # measured on each server in turn, so that a change in the machine's other load between
    # the runs is as small as it can be. "lab" is the app as deployed (the worked example is
    # answered from its response cache after the first time); "lab-nc" has the cache off,
    # so every request is validated, computed and serialized.
    servers = {"lab": Server(), "lab-nc": Server(env={"RESPONSE_CACHE_BYTES": "0"})}
    try:
        sizes = {path: body_size(servers["lab"].url, method, path) for method, path in TARGETS}
        servers["bare"] = Server(
            ["-m", "uvicorn", "bench.bare_app:bare_app", "--factory", "--no-access-log",
             "--host", "127.0.0.1", "--port", "{port}"],
            {"BENCH_API_BYTES": str(sizes["/api/attention"]), "BENCH_PAGE_BYTES": str(sizes["/"])},
            ready_path="/",
        )  # fmt: skip
        results = {
            (name, path): wrk(
                server.url + path, method, args.connections, args.seconds, args.threads
            )
            for method, path in TARGETS
            for name, server in servers.items()
            if not (name == "lab-nc" and method == "GET")  # pages are not cached
        }
    finally:
        for server in servers.values():
            server.stop()

    print(
        f"wrk: {args.connections} connections, {args.seconds} s, {args.threads} threads; "
        "uvicorn with 1 worker on 127.0.0.1"
    )
    print(f"{'endpoint':22} {'app':6} {'bytes':>7} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8}"
          f" {'errors':>7} {'vs bare':>8}")  # fmt: skip
    for method, path in TARGETS:
        base = results[("bare", path)]
        for app in ("lab", "lab-nc", "bare"):
            if (app, path) not in results:
                continue
            r = results[(app, path)]
            ratio = r.requests_per_s / base.requests_per_s
            print(
                f"{method + ' ' + path:22} {app:6} {sizes[path]:7d} {r.requests_per_s:8.0f} "
                f"{r.p50_ms:8.1f} {r.p99_ms:8.1f} {r.errors:7d} {ratio:8.2f}  {r.error_kinds}"
            )
    api_bare = results[("bare", "/api/attention")]
    for name in ("lab", "lab-nc"):
        api = results[(name, "/api/attention")]
        ratio = api.requests_per_s / api_bare.requests_per_s
        print(
            f"goals ({name}): API errors 0: {'yes' if api.errors == 0 else 'NO'}; "
            f"API ≥ 0.5 × bare: {'yes' if ratio >= 0.5 else 'NO'} ({ratio:.2f}); "
            f"p99 ≤ 150 ms: {'yes' if api.p99_ms <= 150 else 'NO'} ({api.p99_ms:.1f} ms)"
        )
    print(f"load average during the run: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
