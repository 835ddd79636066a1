"""Load on one uvicorn worker, measured with wrk: `make bench-load`.

wrk keeps 100 connections busy for 20 s against Attention Lab served as in production
(`python -m app`, 1 worker, on 127.0.0.1), and against a bare FastAPI app whose same routes
return a fixed body of the same size, in the same run. Workloads:

- `POST /api/attention {}`: the worked example, every request after the first answered from
  the response cache;
- distinct states: every body different (wrk's script below): a sentence of 3 to 8 words
  from a small vocabulary, the last a word no request has used before, a causal or
  bidirectional mask and a query position drawn at random: what a class of students editing
  their own states sends, which no cache can answer;
- `GET /`: the lab page.

With `--floor`, the distinct states also go to bench/floor_app.py: the app with every layer
and the validation, but /api/attention answering fixed bytes instead of computing: what the
app costs before any attention is computed, the bound of its ratio to the bare endpoint.

Printed: throughput, p50 / p99 latency and errors, the ratio to the bare app, and the
server's CPU time per request (user + system, from /proc: on a machine shared with other
work, the CPU a request costs moves less than the requests per second do). Issue 25's
goals (one worker, distinct states): no errors, throughput at least 0.2 × the bare
endpoint's, p99 ≤ 150 ms. The figures are printed beside them, not asserted.
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
# Every body different: each wrk thread draws its own sentences and numbers its new words.
DISTINCT_STATES = """
local words = {"the", "a", "cat", "dog", "sat", "on", "mat", "quick", "brown", "fox",
  "jumps", "over", "lazy", "river", "bank", "near", "our", "quiet", "today", "sleeps"}
local threads, counter = 0, 0  -- id: set in each thread by setup()
function setup(thread)
  thread:set("id", threads)
  threads = threads + 1
end
function init(args)
  math.randomseed(1000 + id)
end
function request()
  counter = counter + 1
  local n = math.random(3, 8)
  local tokens = {}
  for i = 1, n - 1 do tokens[i] = '"' .. words[math.random(#words)] .. '"' end
  tokens[n] = '"w' .. id .. "x" .. counter .. '"'
  local causal = (math.random(2) == 1) and "true" or "false"
  local body = '{"tokens":[' .. table.concat(tokens, ",") .. '],"mask":{"causal":' ..
    causal .. '},"query":' .. (math.random(n) - 1) .. "}"
  return wrk.format("POST", nil, {["Content-Type"] = "application/json"}, body)
end
"""
SAMPLE_DISTINCT = b'{"tokens":["the","quick","fox","sat","w0x1"],"mask":{"causal":true},"query":2}'
# (name, method, path, wrk script); --workload picks them by their first word
WORKLOADS = [
    ("cached {}", "POST", "/api/attention", POST_EMPTY),
    ("distinct states", "POST", "/api/attention", DISTINCT_STATES),
    ("page", "GET", "/", ""),
]
CHOICES = {name.split()[0]: name for name, *_ in WORKLOADS}
JSON = {"content-type": "application/json"}


@dataclass
class Result:
    requests_per_s: float
    p50_ms: float
    p99_ms: float
    errors: int
    requests: int
    error_kinds: str
    cpu_us: float = 0.0  # the server's CPU time (user + system) per request


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


def body_size(url: str, path: str, body: bytes | None) -> int:
    request = urllib.request.Request(url + path, data=body, headers=JSON)
    with urllib.request.urlopen(request, timeout=5) as r:
        return len(r.read())


def wrk(url: str, lua: str, connections: int, seconds: int, threads: int) -> Result:
    with tempfile.NamedTemporaryFile("w", suffix=".lua") as script:
        script.write(lua)
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
    parser.add_argument(
        "--workload",
        action="append",
        choices=CHOICES,
        help="measure only this workload (repeatable); default all three",
    )
    parser.add_argument(
        "--floor",
        action="store_true",
        help="also measure the distinct states on bench/floor_app.py (the app without the work)",
    )
    args = parser.parse_args()
    chosen = [CHOICES[c] for c in args.workload] if args.workload else list(CHOICES.values())
    workloads = [w for w in WORKLOADS if w[0] in chosen]
    if shutil.which("wrk") is None:
        sys.exit("wrk is missing: `make bench-load` installs it from Debian's packages")

    # The servers run for the whole bench (an idle one costs nothing), and each workload is
    # measured on each server in turn, so that a change in the machine's other load between
    # the runs is as small as it can be. The bare app answers every POST with a body of the
    # size of a distinct-state answer (theirs differ by a few bytes; the worked example's is
    # smaller) and GET / with a body of the page's size.
    servers = {"lab": Server()}
    try:
        url = servers["lab"].url
        sizes = {
            "cached {}": body_size(url, "/api/attention", b"{}"),
            "distinct states": body_size(url, "/api/attention", SAMPLE_DISTINCT),
            "page": body_size(url, "/", None),
        }
        servers["bare"] = Server(
            ["-m", "uvicorn", "bench.bare_app:bare_app", "--factory", "--no-access-log",
             "--host", "127.0.0.1", "--port", "{port}"],
            {"BENCH_API_BYTES": str(sizes["distinct states"]),
             "BENCH_PAGE_BYTES": str(sizes["page"])},
            ready_path="/",
        )  # fmt: skip
        if args.floor and "distinct states" in chosen:
            servers["floor"] = Server(
                ["-m", "bench.floor_app"], {"BENCH_API_BYTES": str(sizes["distinct states"])}
            )
        results: dict[tuple[str, str], Result] = {}
        bare_post: Result | None = None  # the bare POST is the same for both API workloads
        for name, method, path, lua in workloads:
            for app, server in servers.items():
                if app == "floor" and name != "distinct states":
                    continue
                if app == "bare" and method == "POST" and bare_post is not None:
                    results[(app, name)] = bare_post
                    continue
                before = server.cpu_seconds()
                result = wrk(server.url + path, lua, args.connections, args.seconds, args.threads)
                used = server.cpu_seconds() - before
                result.cpu_us = used / max(result.requests, 1) * 1e6
                results[(app, name)] = result
                if app == "bare" and method == "POST":
                    bare_post = result
    finally:
        for server in servers.values():
            server.stop()

    print(
        f"wrk: {args.connections} connections, {args.seconds} s, {args.threads} threads; "
        "uvicorn with 1 worker on 127.0.0.1"
    )
    print(f"{'workload':26} {'app':5} {'bytes':>7} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8}"
          f" {'errors':>7} {'vs bare':>8} {'CPU µs/req':>11}")  # fmt: skip
    for name, method, path, _ in workloads:
        base = results[("bare", name)]
        for app in ("lab", "floor", "bare"):
            if (app, name) not in results:
                continue
            r = results[(app, name)]
            ratio = r.requests_per_s / base.requests_per_s
            size = sizes["distinct states" if app != "lab" and method == "POST" else name]
            print(
                f"{method + ' ' + path + ' ' + name:26.26} {app:5} {size:7d} "
                f"{r.requests_per_s:8.0f} {r.p50_ms:8.1f} {r.p99_ms:8.1f} {r.errors:7d} "
                f"{ratio:8.2f} {r.cpu_us:11.0f}  {r.error_kinds}"
            )
    if "distinct states" in chosen:
        distinct, bare = results[("lab", "distinct states")], results[("bare", "distinct states")]
        ratio = distinct.requests_per_s / bare.requests_per_s
        print(
            f"distinct states: {distinct.errors} errors, {ratio:.2f} × bare, p99 "
            f"{distinct.p99_ms:.1f} ms (issue 25's goals: 0 errors, ≥ 0.2 × bare, p99 ≤ 150 ms)"
        )
    print(
        f"load average during the run: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores "
        "(a shared machine)"
    )


if __name__ == "__main__":
    main()
