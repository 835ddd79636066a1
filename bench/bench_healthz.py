"""/healthz while the server is pushed: by the heaviest legal requests, and by slow clients.

Against one `python -m app` worker on 127.0.0.1 (defaults as deployed), a probe asks
GET /healthz every 50 ms on a fresh connection, as a load balancer does, while:

1. heavy: four clients loop, each on its own keep-alive connection, over the heaviest
   requests the limits allow (POST /api/heads with h = 16, n = 256, d = 64; POST
   /api/attention at n = 256, d = 64 asking gzip; GET /lab.csv at n = 256; a 0.99 MB body of
   NaNs) for `--seconds`. The server's RSS is read before, at its peak and 5 s after;
2. slow: `--slow` connections (10,000 by default) each send half a request head and then
   nothing, all opened at once and held for `--hold` seconds.

Printed: the probe's p50 / p99 / max milliseconds and failures for each phase, the heavy
clients' answers (status counts), RSS, and how many slow connections the server closed.
Goals: /healthz p99 ≤ 50 ms under the heavy load and RSS back within 50 MB of its start;
every probe answered within 1 s during the slow clients.

    .venv/bin/python bench/bench_healthz.py [--seconds 30] [--slow 10000] [--hold 15]
"""

import argparse
import asyncio
import http.client
import os
import resource
import statistics
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from urllib.parse import urlencode

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))

from server import Server

N, D = 256, 64


def heavy_requests() -> list[tuple[str, str, bytes | None, dict[str, str]]]:
    tokens = [f"t{i}" for i in range(N)]
    json = {"Content-Type": "application/json"}
    heads = orjson.dumps({"tokens": tokens, "d_model": D, "heads": 16, "kv_heads": 16, "d_head": D})
    attention = orjson.dumps({"tokens": tokens, "d_model": D, "d_k": D, "d_v": D})
    nan_row = "[" + ",".join(["NaN"] * 255) + "]"
    nans = ('{"tokens":["a"],"x":[' + ",".join([nan_row] * 256) + "]}").encode()[:990_000]
    nans = nans[: nans.rfind(b"]")] + b"]]}"
    csv = "/lab.csv?" + urlencode({"tokens": " ".join(tokens), "d_model": "8"})
    return [
        ("POST", "/api/heads", heads, json),
        ("POST", "/api/attention", attention, {**json, "Accept-Encoding": "gzip"}),
        ("GET", csv, None, {}),
        ("POST", "/api/attention", nans, json),
    ]


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


class Probe:
    """GET /healthz every `every` seconds on a new connection; milliseconds and failures."""

    def __init__(self, port: int, every: float = 0.05, timeout: float = 5.0) -> None:
        self.port, self.every, self.timeout = port, every, timeout
        self.millis: list[float] = []
        self.failures = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            start = time.perf_counter()
            try:
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.timeout)
                conn.request("GET", "/healthz")
                response = conn.getresponse()
                response.read()
                conn.close()
                if response.status == 200:
                    self.millis.append((time.perf_counter() - start) * 1000)
                else:
                    self.failures += 1
            except OSError:
                self.failures += 1
            self._stop.wait(max(0.0, self.every - (time.perf_counter() - start)))

    def __enter__(self) -> "Probe":
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def summary(self) -> str:
        ms = sorted(self.millis)
        if len(ms) < 2:
            return f"{len(ms)} answers, {self.failures} failed"
        p50 = statistics.median(ms)
        p99 = statistics.quantiles(ms, n=100, method="inclusive")[98]
        return (
            f"{len(ms)} answers: p50 {p50:.1f} ms, p99 {p99:.1f} ms, max {ms[-1]:.1f} ms; "
            f"{self.failures} failed"
        )


def heavy_client(port: int, requests: list, offset: int, until: float, statuses: Counter) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    i = offset
    while time.perf_counter() < until:
        method, path, body, headers = requests[i % len(requests)]
        i += 1
        try:
            conn.request(method, path, body, headers)
            response = conn.getresponse()
            response.read()
            statuses[f"{path.split('?')[0]} {response.status}"] += 1
        except OSError as error:
            statuses[f"{path.split('?')[0]} {type(error).__name__}"] += 1
            conn.close()
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    conn.close()


def heavy_phase(server: Server, seconds: float) -> None:
    pid = server.process.pid
    start_rss = rss_mb(pid)
    statuses: Counter = Counter()
    until = time.perf_counter() + seconds
    requests = heavy_requests()
    clients = [
        threading.Thread(target=heavy_client, args=(server.port, requests, k, until, statuses))
        for k in range(4)
    ]
    peak = start_rss
    with Probe(server.port) as probe:
        for c in clients:
            c.start()
        while any(c.is_alive() for c in clients):
            peak = max(peak, rss_mb(pid))
            time.sleep(0.2)
    time.sleep(5)
    after = rss_mb(pid)
    print(f"heavy: four clients, {seconds:.0f} s: /healthz {probe.summary()}")
    print("  answers: " + ", ".join(f"{k}: {v}" for k, v in sorted(statuses.items())))
    print(
        f"  RSS: {start_rss:.0f} MB before, {peak:.0f} MB at most, {after:.0f} MB 5 s after "
        f"(+{after - start_rss:.0f} MB)"
    )
    p99 = statistics.quantiles(probe.millis, n=100, method="inclusive")[98] if probe.millis else 0
    print(
        f"  goals: p99 ≤ 50 ms: {'yes' if p99 <= 50 and not probe.failures else 'NO'}; "
        f"RSS back within 50 MB: {'yes' if after - start_rss <= 50 else 'NO'}"
    )


async def hold_slow(port: int, count: int, hold: float) -> tuple[int, int]:
    """`count` connections with half a head each, held `hold` s: (opened, closed by server)."""
    writers: list[asyncio.StreamWriter] = []
    readers: list[asyncio.StreamReader] = []
    failed = 0
    for batch in range(0, count, 500):
        results = await asyncio.gather(
            *(asyncio.open_connection("127.0.0.1", port) for _ in range(min(500, count - batch))),
            return_exceptions=True,
        )
        for result in results:
            if isinstance(result, BaseException):
                failed += 1
                continue
            reader, writer = result
            writer.write(b"GET / HTTP/1.1\r\nHost: lab\r\nX-Slow: ")
            readers.append(reader)
            writers.append(writer)
    await asyncio.sleep(hold)
    closed = sum(1 for r in readers if r.at_eof())
    for w in writers:
        w.close()
    return len(writers), closed + failed


def slow_phase(server: Server, count: int, hold: float) -> None:
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    with Probe(server.port, timeout=10) as probe:
        opened, closed = asyncio.run(hold_slow(server.port, count, hold))
    ok = probe.millis and max(probe.millis) <= 1000 and not probe.failures
    print(
        f"slow: {opened} half-open connections held {hold:.0f} s (the server closed {closed}): "
        f"/healthz {probe.summary()}"
    )
    print(f"  goal: every probe within 1 s: {'yes' if ok else 'NO'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--slow", type=int, default=10_000)
    parser.add_argument("--hold", type=float, default=15)
    args = parser.parse_args()
    server = Server()
    try:
        print(f"one uvicorn worker on 127.0.0.1:{server.port}; {os.cpu_count()} cores")
        with Probe(server.port) as idle:
            time.sleep(3)
        print(f"idle: /healthz {idle.summary()}")
        heavy_phase(server, args.seconds)
        slow_phase(server, args.slow, args.hold)
        print(f"load average at the end: {os.getloadavg()[0]:.1f}")
    finally:
        server.stop()


if __name__ == "__main__":
    main()
