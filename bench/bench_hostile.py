"""A hostile class against `python -m app` with two workers on 127.0.0.1 (issue 27's attacks),
printing the figure each goal names, and the load average at the time.

1. Slow bodies: 1,200 connections each send POST /api/attention with Content-Length 100000,
   then one byte every 2 s (reconnecting when the server closes them), for 40 s; meanwhile
   four clients ask GET / and POST /api/attention in turn. Goal: at least 95 % of those
   answered 200. Also: /healthz and /readyz polled each second, and how long the server
   held a slow upload before cutting it.
2. Fuzzed inputs: a few thousand requests over every route: fuzzed query strings, fuzzed
   JSON bodies and every method. Goal: no 5xx (a 503 "busy" counted apart).
3. Unread answers: 150 connections send POST /api/heads (n = 256, h = 2, d_head = 64) and
   never read the ~12 MB answers, for 45 s. Goal: each worker's RSS grows by at most
   200 MB. Also: a normal request every 2 s meanwhile.
4. A killed worker (SIGKILL): how soon a new one is running, and serving.
6. Abandoned rankings: thirty clients each ask POST /api/model to rank the heads of two
   sentences of their own (144 forward passes each) and hang up after 0.2 s; then one
   normal POST /api/model. Goal: it is answered at most 2 s later than the same kind of
   request on an idle server.
5. SIGTERM on a fresh server with twelve heavy requests in progress: how soon new
   connections are refused, what a poll made during the drain gets, whether the twelve
   finish, and when the process exits.

    .venv/bin/python bench/bench_hostile.py             # this checkout ("after")
    .venv/bin/python bench/bench_hostile.py --ref main  # git archive of a ref ("before")
    .venv/bin/python bench/bench_hostile.py --phases 35 # some of the attacks only

Bounded in count and time (about five minutes), loopback only; it stops by itself.
"""

import argparse
import asyncio
import contextlib
import os
import random
import resource
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import orjson

ROOT = Path(__file__).resolve().parent.parent
HOST = "127.0.0.1"
JSON = "application/json"
TOKENS = [f"t{i}" for i in range(256)]
HEADS_BODY = orjson.dumps({"tokens": TOKENS, "heads": 2, "d_head": 64, "d_model": 64})
IN_PROGRESS = 12  # requests under way when SIGTERM comes


def load_average() -> str:
    return " / ".join(f"{x:.2f}" for x in os.getloadavg()) + " (1 / 5 / 15 min)"


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def children(pid: int) -> set[int]:
    found = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        found |= {int(p) for p in (task / "children").read_text().split()}
    return found


def workers(pid: int) -> list[int]:
    """The serving processes under `pid` (not multiprocessing's resource tracker)."""
    return sorted(
        p
        for p in children(pid)
        if b"resource_tracker" not in Path(f"/proc/{p}/cmdline").read_bytes()
    )


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


# -- HTTP over raw sockets


def request_bytes(
    method: str, target: str, body: bytes = b"", content_type: str | None = JSON, **extra: str
) -> bytes:
    lines = [f"{method} {target} HTTP/1.1", "Host: lab", "Connection: close"]
    if body or method in ("POST", "PUT", "PATCH"):
        lines.append(f"Content-Length: {len(body)}")
        if content_type:
            lines.append(f"Content-Type: {content_type}")
    lines += [f"{k.replace('_', '-')}: {v}" for k, v in extra.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


async def exchange(port: int, raw: bytes, timeout: float = 30.0) -> int | str:
    """The status of the answer to `raw` on a new connection, or what went wrong."""
    try:
        async with asyncio.timeout(timeout):
            reader, writer = await asyncio.open_connection(HOST, port)
            try:
                writer.write(raw)
                await writer.drain()
                line = await reader.readline()
                while await reader.read(1 << 20):  # the rest, until the server closes
                    pass
            finally:
                writer.close()
    except TimeoutError:
        return "timeout"
    except ConnectionRefusedError:
        return "refused"
    except OSError:
        return "reset"
    parts = line.split()
    return int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else "no answer"


# -- the server


class Server:
    """`python -m app` from `source`, two workers, on a free port; stderr kept for its
    "startup complete" lines."""

    def __init__(self, source: Path, log: Path) -> None:
        self.port = free_port()
        self.log = log
        env = {**os.environ, "HOST": HOST, "PORT": str(self.port), "WORKERS": "2"}
        env["PYTHONPATH"] = str(source)
        with log.open("wb") as err:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "app"],
                cwd=source,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=err,
                start_new_session=True,
            )
        deadline = time.monotonic() + 120
        while self.started() < 2:
            if time.monotonic() > deadline or self.process.poll() is not None:
                self.stop()
                raise RuntimeError("the server did not start")
            time.sleep(0.1)

    def started(self) -> int:
        """How many workers have said their startup is complete."""
        return self.log.read_bytes().count(b"Application startup complete")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=40)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()


@contextlib.contextmanager
def running(source: Path) -> Iterator[Server]:
    with tempfile.TemporaryDirectory() as tmp:
        server = Server(source, Path(tmp) / "stderr.log")
        try:
            yield server
        finally:
            server.stop()


async def warm(port: int) -> None:
    """A few requests of each kind, on both workers, before anything is measured."""
    for _ in range(4):
        await exchange(port, request_bytes("GET", "/"))
        await exchange(port, request_bytes("POST", "/api/attention", b"{}"))
        await exchange(port, request_bytes("POST", "/api/heads", HEADS_BODY), 120)


# -- 1. slow bodies


async def normal_clients(port: int, stop: asyncio.Event, results: list) -> None:
    async def client(i: int) -> None:
        kinds = [request_bytes("GET", "/"), request_bytes("POST", "/api/attention", b"{}")]
        n = i
        while not stop.is_set():
            start = time.monotonic()
            status = await exchange(port, kinds[n % 2], timeout=15)
            results.append((status, time.monotonic() - start))
            n += 1
            await asyncio.sleep(0.25)

    await asyncio.gather(*(client(i) for i in range(4)))


async def poll(port: int, path: str, stop: asyncio.Event, results: Counter) -> None:
    while not stop.is_set():
        results[await exchange(port, request_bytes("GET", path), timeout=5)] += 1
        await asyncio.sleep(1)


async def dribbler(port: int, stop: asyncio.Event, held: list[float], answers: Counter) -> None:
    head = request_bytes("POST", "/api/attention", b"", content_type=JSON)
    head = head.replace(b"Content-Length: 0", b"Content-Length: 100000")
    while not stop.is_set():
        try:
            reader, writer = await asyncio.open_connection(HOST, port)
        except OSError:
            answers["connect failed"] += 1
            await asyncio.sleep(1)
            continue
        opened = time.monotonic()
        try:
            writer.write(head + b"{")
            while not stop.is_set():
                try:
                    got = await asyncio.wait_for(reader.read(4096), timeout=2)
                except TimeoutError:
                    writer.write(b" ")
                    continue
                parts = got.split()
                answers[int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else "closed"] += 1
                held.append(time.monotonic() - opened)
                break
        except OSError:
            answers["reset"] += 1
            held.append(time.monotonic() - opened)
        finally:
            writer.close()


async def slow_bodies(port: int, connections: int, seconds: float) -> None:
    stop = asyncio.Event()
    normal: list = []
    health, ready, answers = Counter(), Counter(), Counter()
    held: list[float] = []
    tasks = [asyncio.create_task(dribbler(port, stop, held, answers)) for _ in range(connections)]
    await asyncio.sleep(3)  # the slow uploads open first
    watchers = [
        asyncio.create_task(normal_clients(port, stop, normal)),
        asyncio.create_task(poll(port, "/healthz", stop, health)),
        asyncio.create_task(poll(port, "/readyz", stop, ready)),
    ]
    await asyncio.sleep(seconds)
    stop.set()
    await asyncio.gather(*watchers)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    statuses = Counter(status for status, _ in normal)
    ok = statuses[200]
    times = sorted(t * 1000 for status, t in normal if status == 200)
    print(f"1. slow bodies: {connections:,} connections dribbling (Content-Length 100000, a byte")
    print(f"   every 2 s) for {seconds:.0f} s")
    print(
        f"   normal requests (GET /, POST /api/attention): {ok} of {len(normal)} answered 200"
        f" ({100 * ok / max(1, len(normal)):.1f} %; goal ≥ 95 %); all: {dict(statuses)}"
    )
    if times:
        p99 = times[min(len(times) - 1, int(len(times) * 0.99))]
        print(f"   their time: p50 {statistics.median(times):.0f} ms, p99 {p99:.0f} ms")
    print(f"   /healthz: {dict(health)}; /readyz: {dict(ready)}")
    if held:
        print(
            f"   slow uploads cut by the server: {len(held):,}, after a median "
            f"{statistics.median(held):.1f} s (max {max(held):.1f} s); answers {dict(answers)}"
        )
    else:
        print(f"   slow uploads cut by the server: none in {seconds:.0f} s")


# -- 2. fuzzed inputs

GET_ROUTES = {
    "/": ["tokens", "d_model", "d_k", "d_v", "mask", "positional", "query", "scale", "seed",
          "x", "w_q", "allowed", "window", "cell", "action", "pad"],
    "/walkthrough": ["tokens", "step", "guess", "key", "predict", "query", "mask", "seed"],
    "/heads": ["text", "heads", "kv_heads", "d_head", "d_model", "head", "mask", "preset",
               "positional", "seed", "scale"],
    "/heads/fragment": ["text", "heads", "kv_heads", "d_head", "head"],
    "/kernel": ["tokens", "block_q", "block_k", "order", "step", "sram_elements", "cache",
                "cache_window", "sinks", "decode_step", "prompt", "mask"],
    "/cost": ["seq_len", "heads", "kv_heads", "head_dim", "layers", "batch", "dtype",
              "preset", "window", "gpu_memory_gib", "kv_lora_rank"],
    "/api/cost": ["seq_len", "heads", "kv_heads", "head_dim", "layers", "batch",
                  "bytes_per_element", "dtype", "window", "window_layers", "kv_dtype"],
    "/model": ["text", "layer", "head", "query", "compare", "role", "start", "off", "lines",
               "hide_special"],
    "/lab.json": ["tokens", "d_model", "mask", "seed"],
    "/lab.csv": ["tokens", "d_model", "mask", "seed"],
    "/lessons": [], "/embed": [], "/docs": [], "/api/cost/models": [], "/healthz": [],
    "/readyz": [], "/static/app.css": [], "/favicon.ico": [], "/openapi.json": [],
    "/no-such-page": [],
}  # fmt: skip
CLASSROOM = ["lang", "present", "embed", "lesson", "lesson_title", "lesson_text"]
POST_ROUTES = {
    "/api/attention": ["tokens", "d_model", "d_k", "d_v", "mask", "positional", "query",
                       "scale", "seed", "x", "w_q", "w_k", "w_v"],
    "/api/heads": ["tokens", "heads", "kv_heads", "d_head", "d_model", "mask", "seed", "x",
                   "w_q", "w_o"],
    "/api/kernel/tiled": ["tokens", "block_q", "block_k", "order", "sram_elements",
                          "long_sequence", "mask", "seed"],
    "/api/kernel/decode": ["tokens", "prompt", "cache", "mask", "seed", "long_sequence"],
    "/api/model": ["text", "layer", "head", "query", "compare_text", "include_weights",
                   "rank_heads", "ablate"],
}  # fmt: skip
QUERY_VALUES = [
    "", "0", "-1", "1e309", "NaN", "inf", "-0.0", "²", "١٢", "٣.٥", "9" * 5000, "0x10",
    "1_000", " 3 ", "%00", "%C0%AF", "%FF%FE", "%E2%80%AE", "<script>alert(1)</script>",
    "\"'><svg onload=1>", "a" * 3000, "🐈" * 50, "[1,2]", "{\"a\":1}", "true", "null",
    "causal", "custom", "../../etc/passwd", "=cmd|' /C calc'!A0", "\\u0000", "%", "%%",
]  # fmt: skip
JSON_VALUES: list[object] = [
    None, True, False, 0, -1, 1e308, -1e308, 2**63 - 1, "", "²", "x" * 5000, [], {}, [[]],
    [[1, 2], [3]], [None], ["a"] * 300, [[1e308] * 64] * 64, {"policy": "nope"},
    [float(i) for i in range(70)], "causal", 3.5, -0.0, [["NaN"]], {"a": {"b": {"c": []}}},
]  # fmt: skip
RAW_BODIES = [
    b"", b"{", b"[]", b"1", b'"x"', b"null", b"{}}", b'{"tokens": NaN}', b'{"seed": 1e999}',
    b'{"seed": ' + b"9" * 5000 + b"}", b'{"tokens": ["a"], "tokens": ["b"]}', b"\xef\xbb\xbf{}",
    b"\xff\xfe{\x00}\x00", b"{" * 5000 + b"}" * 5000, b'{"text": "\xc3\x28"}',
    b"[" * 100_000, b'{"tokens": ["' + b"a" * 900_000 + b'"]}',
]  # fmt: skip
METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "BREW"]


def fuzzed_requests(count_queries: int, count_bodies: int, seed: int = 27) -> list[bytes]:
    rng = random.Random(seed)
    out = []
    routes = list(GET_ROUTES)
    for _ in range(count_queries):
        path = rng.choice(routes)
        names = GET_ROUTES[path] + CLASSROOM
        pairs = [(rng.choice(names), rng.choice(QUERY_VALUES)) for _ in range(rng.randint(1, 4))]
        query = "&".join(f"{quote(k)}={v if v.startswith('%') else quote(v)}" for k, v in pairs)
        out.append(request_bytes(rng.choice(["GET", "GET", "HEAD"]), f"{path}?{query}"))
    posts = list(POST_ROUTES)
    model_bodies = 0
    while count_bodies > 0:
        path = rng.choice(posts)
        if path == "/api/model":
            if model_bodies >= 40:  # the model's ranking takes seconds: a few are enough
                continue
            model_bodies += 1
        if rng.random() < 0.2:
            body = rng.choice(RAW_BODIES)
        else:
            fields = {
                name: rng.choice(JSON_VALUES)
                for name in rng.sample(POST_ROUTES[path], rng.randint(1, 3))
            }
            if rng.random() < 0.1:
                fields["unknown_" + "k" * rng.choice([1, 500])] = 1
            body = orjson.dumps(fields)
        out.append(request_bytes("POST", path, body))
        count_bodies -= 1
    for path in [*GET_ROUTES, *POST_ROUTES]:
        for method in METHODS:
            out.append(request_bytes(method, path, b"{}" if method != "GET" else b""))
    rng.shuffle(out)
    return out


async def fuzz(port: int, queries: int, bodies: int, seconds: float) -> None:
    todo = fuzzed_requests(queries, bodies)
    statuses: Counter = Counter()
    failures: list[tuple[object, bytes]] = []
    deadline = time.monotonic() + seconds

    async def client() -> None:
        while todo and time.monotonic() < deadline:
            raw = todo.pop()
            status = await exchange(port, raw, timeout=60)
            line = raw.split(b"\r\n", 1)[0]
            if status == 503 and line.split()[1].startswith(b"/readyz"):
                status = "503 /readyz"  # its answer while every compute slot is taken
            statuses[status] += 1
            if not isinstance(status, int) or status >= 500:
                failures.append((status, line[:120]))

    start = time.monotonic()
    await asyncio.gather(*(client() for _ in range(6)))
    sent = sum(statuses.values())
    server_errors = sum(n for s, n in statuses.items() if isinstance(s, int) and s >= 500)
    busy = statuses[503]
    ready_busy = statuses["503 /readyz"]
    print(
        f"2. fuzzed inputs: {sent:,} requests in {time.monotonic() - start:.0f} s "
        f"({queries:,} query strings, {bodies:,} JSON bodies, {len(METHODS)} methods on every "
        f"route{'; stopped at the time limit' if todo else ''})"
    )
    print(
        f"   5xx: {server_errors} ({busy} of them 503 busy; goal: none but busy); /readyz said "
        f"busy {ready_busy} times"
    )
    print(f"   statuses: {dict(sorted(statuses.items(), key=str))}")
    for status, line in failures[:8]:
        print(f"   {status}: {line.decode('latin-1')}")


# -- 3. unread answers


async def unread_answers(server: Server, connections: int, seconds: float) -> None:
    port = server.port
    size = len(await heads_answer(port))
    pids = workers(server.process.pid)
    before = {pid: rss_mb(pid) for pid in pids}
    peak = dict(before)
    held = []
    for _ in range(connections):  # plain sockets, never read
        s = socket.create_connection((HOST, port))
        s.sendall(request_bytes("POST", "/api/heads", HEADS_BODY))
        held.append(s)
    normal: Counter = Counter()
    end = time.monotonic() + seconds
    next_normal = time.monotonic()
    while time.monotonic() < end:
        for pid in pids:
            with contextlib.suppress(FileNotFoundError):
                peak[pid] = max(peak[pid], rss_mb(pid))
        if time.monotonic() >= next_normal:
            normal[await exchange(port, request_bytes("POST", "/api/attention", b"{}"), 10)] += 1
            next_normal = time.monotonic() + 2
        await asyncio.sleep(0.5)
    for s in held:
        s.close()
    print(
        f"3. unread answers: {connections} connections sent POST /api/heads (n = 256, h = 2, "
        f"d_head = 64: {size / 1e6:.1f} MB answers) and read nothing, for {seconds:.0f} s"
    )
    for pid in pids:
        print(
            f"   worker {pid}: RSS {before[pid]:,.0f} → peak {peak[pid]:,.0f} MB "
            f"(+{peak[pid] - before[pid]:,.0f} MB; goal ≤ +200 MB)"
        )
    print(f"   a normal POST /api/attention every 2 s meanwhile: {dict(normal)}")


async def heads_answer(port: int) -> bytes:
    """The body of one POST /api/heads answer, read whole."""
    reader, writer = await asyncio.open_connection(HOST, port)
    writer.write(request_bytes("POST", "/api/heads", HEADS_BODY))
    raw = await reader.read()
    writer.close()
    return raw.partition(b"\r\n\r\n")[2]


async def settle(server: Server, seconds: float = 90) -> None:
    """Until the workers have stopped working (what abandoned requests left them to do)."""
    deadline = time.monotonic() + seconds
    last = None
    while time.monotonic() < deadline:
        now = sum(cpu_seconds(p) for p in workers(server.process.pid))
        if last is not None and now - last < 0.05:
            return
        last = now
        await asyncio.sleep(1)


def cpu_seconds(pid: int) -> float:
    stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(stat[11]) + int(stat[12])) / os.sysconf("SC_CLK_TCK")


# -- 6. abandoned rankings


def model_body(text: str, rank: bool) -> bytes:
    fields = {"text": text}
    if rank:
        fields |= {"compare_text": text + " again", "rank_heads": True}
    return orjson.dumps(fields)


async def timed(port: int, raw: bytes) -> tuple[int | str, float]:
    start = time.monotonic()
    status = await exchange(port, raw, timeout=120)
    return status, time.monotonic() - start


async def abandoned_rankings(port: int, count: int) -> None:
    idle = [
        await timed(port, request_bytes("POST", "/api/model", model_body(f"idle {i}", False)))
        for i in range(3)
    ]
    abandoned = []
    for i in range(count):  # each a new text: none is answered from the cache
        s = socket.create_connection((HOST, port))
        s.sendall(request_bytes("POST", "/api/model", model_body(f"sentence number {i}", True)))
        await asyncio.sleep(0.2 / count)
        abandoned.append(s)
    await asyncio.sleep(0.2)
    for s in abandoned:
        s.close()
    after = await timed(port, request_bytes("POST", "/api/model", model_body("after", False)))
    baseline = statistics.median(t for _, t in idle)
    print(
        f"6. abandoned rankings: {count} clients asked for a head ranking and hung up after "
        f"0.2 s; then a normal POST /api/model: {after[0]} in {after[1]:.2f} s against "
        f"{baseline:.2f} s idle (delay {after[1] - baseline:+.2f} s; goal ≤ 2 s)"
    )


# -- 4. a killed worker


async def killed_worker(server: Server) -> None:
    before = workers(server.process.pid)
    started = server.started()
    victim = before[0]
    os.kill(victim, signal.SIGKILL)
    killed = time.monotonic()
    replaced = serving = None
    while time.monotonic() - killed < 60 and serving is None:
        now = set(workers(server.process.pid))
        if replaced is None and len(now - set(before)) >= 1:
            replaced = time.monotonic() - killed
        if server.started() > started:
            serving = time.monotonic() - killed
        await asyncio.sleep(0.02)
    print(
        f"4. a killed worker (SIGKILL): a new process after "
        f"{replaced if replaced is None else f'{replaced:.2f} s'}, serving after "
        f"{serving if serving is None else f'{serving:.2f} s'} (goal ≤ 1 s)"
    )


# -- 5. SIGTERM


async def can_connect(port: int) -> bool:
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(HOST, port), 1)
    except (OSError, TimeoutError):
        return False
    writer.close()
    return True


async def sigterm(source: Path) -> None:
    with running(source) as server:
        port = server.port
        await warm(port)
        in_progress = [
            asyncio.create_task(exchange(port, request_bytes("POST", "/api/heads", HEADS_BODY), 60))
            for _ in range(IN_PROGRESS)
        ]
        await asyncio.sleep(0.3)
        server.process.send_signal(signal.SIGTERM)
        signalled = time.monotonic()

        async def refused() -> float | None:
            while time.monotonic() - signalled < 30:
                if not await can_connect(port):
                    return time.monotonic() - signalled
                await asyncio.sleep(0.005)
            return None

        refusal = asyncio.create_task(refused())
        await asyncio.sleep(0.2)
        probe_start = time.monotonic()
        probe = asyncio.create_task(exchange(port, request_bytes("GET", "/healthz"), 30))
        refused_after = await refusal
        probe_status = await probe
        probe_seconds = time.monotonic() - probe_start
        finished = await asyncio.gather(*in_progress)
        while server.process.poll() is None and time.monotonic() - signalled < 60:
            await asyncio.sleep(0.05)
        exited = time.monotonic() - signalled if server.process.poll() is not None else None
    print(f"5. SIGTERM with {IN_PROGRESS} POST /api/heads in progress (seconds of work):")
    print(
        "   new connections refused after "
        + (f"{refused_after * 1000:.0f} ms" if refused_after is not None else "never (30 s)")
    )
    print(f"   a GET /healthz made 0.2 s after: {probe_status} after {probe_seconds:.2f} s")
    print(f"   the {IN_PROGRESS} in progress: {dict(Counter(finished))}")
    print(
        "   the process exited after "
        + (f"{exited:.2f} s" if exited is not None else "more than 60 s")
        + f" (code {server.process.returncode})"
    )


@contextlib.contextmanager
def source_of(ref: str | None) -> Iterator[Path]:
    """This checkout, or `git archive` of `ref` in a temporary folder."""
    if ref is None:
        yield ROOT
        return
    with tempfile.TemporaryDirectory() as tmp:
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", ref], check=True, capture_output=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
        yield Path(tmp)


async def run(args: argparse.Namespace, source: Path) -> None:
    phases = set(args.phases)
    print(f"load average at the start: {load_average()}")
    with running(source) as server:
        await warm(server.port)
        steps = [
            ("1", slow_bodies(server.port, args.slow, args.seconds)),
            ("2", fuzz(server.port, args.queries, args.bodies, args.fuzz_seconds)),
            ("3", unread_answers(server, args.unread, args.unread_seconds)),
            ("6", abandoned_rankings(server.port, args.rankings)),
        ]
        for phase, step in steps:
            if phase not in phases:
                step.close()
                continue
            await step
            print(f"   load average: {load_average()}")
            await settle(server)
        if "4" in phases:
            await killed_worker(server)
    if "5" in phases:
        await sigterm(source)
    print(f"load average at the end: {load_average()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ref", help="run a git ref's code (git archive) instead of this one")
    parser.add_argument("--slow", type=int, default=1200, help="dribbling connections")
    parser.add_argument("--seconds", type=float, default=40, help="length of the slow bodies")
    parser.add_argument("--queries", type=int, default=2500, help="fuzzed query strings")
    parser.add_argument("--bodies", type=int, default=1200, help="fuzzed JSON bodies")
    parser.add_argument("--fuzz-seconds", type=float, default=150, help="fuzzing time limit")
    parser.add_argument("--unread", type=int, default=150, help="connections not reading")
    parser.add_argument("--unread-seconds", type=float, default=45, help="watched for")
    parser.add_argument("--rankings", type=int, default=30, help="abandoned head rankings")
    parser.add_argument("--phases", default="123456", help="which attacks to run, e.g. 35")
    args = parser.parse_args()
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    with source_of(args.ref) as source:
        label = f"git {args.ref}" if args.ref else "this checkout"
        print(f"python -m app from {label}, 2 workers, on {HOST}; {os.cpu_count()} CPUs")
        asyncio.run(run(args, source))


if __name__ == "__main__":
    main()
