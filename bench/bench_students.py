"""A class at once: 200 virtual students against `python -m app` (one worker, or as many as
`--workers` says; 0: the app's default, one per core) for 60 s.

As a class works: the teacher hands out one lesson link (the lab's "Encoder and decoder
masks", app/core/lessons.py). Each student joins within the first 5 s and opens it (the
page, then every stylesheet, script and image it links, on two keep-alive connections as a
browser would, once: later pages find them cached), makes the change the lesson asks for
(the mask to causal), and then every 2 to 5 s does what a student does: mostly an edit of
its own state (a word, a W_Q number, the query, the mask), sent as the lab's script sends it
(`GET /?…&fragment=1`, gzip); now and then it opens the multi-head page (8 %) or the trained
model's page (4 %) on its sentence. The answer cache stays on, as deployed. With
`--own-states` each student opens a page of its own sentence instead of the link (the mix
of the issue's reference figures, measured before the page pattern).

The baseline, in the same run and on the same server before the class comes: one student
alone, asking each kind of request in turn (its own states, so nothing is cached).

Printed per kind of request: how many, p50 / p99 / max milliseconds (from sending the
request to the last byte of the answer), p99 over the lone student's p50, the server's CPU
time for one (the lone student's mean), and failures (an answer other than 200, a broken
connection or no answer within 10 s). Then the cores the class's requests take at that cost
beside the cores the server used: a class that asks for as much CPU as the workers have
saturates them, and its edits wait whatever the order they are served in. Issue 25's reference,
one worker, measured on another day: lab page p99 411 ms, lab edit p99 335 ms. The load
generator is this Python process, on the same machine: it takes some CPU from the server.

    .venv/bin/python bench/bench_students.py [--students 200] [--seconds 60] [--workers 1]
        [--own-states]
"""

import argparse
import asyncio
import gzip
import os
import random
import re
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlencode

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from server import Server

from app.core.lessons import lesson_by_slug

# The teacher's link: a lesson of the lab, and the change its text asks the class to make.
LESSON = lesson_by_slug("encoder-decoder")
ASKED_MASK = "causal"

WORDS = [
    "the",
    "a",
    "cat",
    "dog",
    "sat",
    "on",
    "mat",
    "quick",
    "brown",
    "fox",
    "jumps",
    "over",
    "lazy",
    "river",
    "bank",
    "near",
    "our",
    "quiet",
    "today",
    "sleeps",
    "runs",
    "small",
    "bird",
    "sings",
    "loud",
    "morning",
    "light",
    "falls",
    "softly",
    "every",
    "child",
    "reads",
]
ASSET = re.compile(rb'(?:src|href)="(/(?:static|assets)/[^"]+)"')
TIMEOUT_S = 10.0


@dataclass
class Tally:
    millis: dict[str, list[float]] = field(default_factory=dict)
    failures: dict[str, int] = field(default_factory=dict)
    examples: list[str] = field(default_factory=list)
    cpu_ms: dict[str, list[float]] = field(default_factory=dict)  # the server's, alone only

    def record(self, kind: str, ms: float | None, problem: str = "") -> None:
        self.millis.setdefault(kind, [])
        self.failures.setdefault(kind, 0)
        if ms is None:
            self.failures[kind] += 1
            if len(self.examples) < 5:
                self.examples.append(f"{kind}: {problem}")
        else:
            self.millis[kind].append(ms)


class Connection:
    """One keep-alive HTTP/1.1 connection, one request at a time."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def get(self, path: str) -> tuple[int, bytes, bool]:
        """The status, the body as sent and whether it is gzipped. Like a browser, a request
        on a kept-alive connection that the server closed meanwhile (its keep-alive timeout)
        is sent again on a new connection, once."""
        reused = self.writer is not None
        try:
            return await self._get(path)
        except (ConnectionError, asyncio.IncompleteReadError):
            if not reused:
                raise
            self.close()
            return await self._get(path)

    async def _get(self, path: str) -> tuple[int, bytes, bool]:
        if self.writer is None or self.writer.is_closing():
            self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
        head = (
            f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\n"
            "Accept: text/html,*/*\r\nAccept-Encoding: gzip\r\nUser-Agent: student\r\n\r\n"
        )
        self.writer.write(head.encode())
        assert self.reader is not None
        status_line = await self.reader.readline()
        if not status_line:
            raise ConnectionError("closed by the server")
        status = int(status_line.split()[1])
        length, chunked, close, gzipped = 0, False, False, False
        while (line := await self.reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.decode("latin-1").partition(":")
            name, value = name.strip().lower(), value.strip().lower()
            if name == "content-length":
                length = int(value)
            elif name == "transfer-encoding" and "chunked" in value:
                chunked = True
            elif name == "connection" and value == "close":
                close = True
            elif name == "content-encoding" and value == "gzip":
                gzipped = True
        if chunked:
            body = b""
            while (size := int((await self.reader.readline()).strip(), 16)) > 0:
                body += await self.reader.readexactly(size + 2)
            await self.reader.readline()
        else:
            body = await self.reader.readexactly(length)
        if close:
            self.close()
        return status, body, gzipped

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None


# Issue 25's reference: one worker, before the page pattern, measured on another day.
REFERENCE_P99_MS = {"lab page": 411, "lab edit": 335}
KINDS = ("lab page", "asset", "lab edit", "heads page", "model page")


@dataclass
class Student:
    rng: random.Random
    tokens: list[str]
    query: int = 0
    mask: str = "causal"
    w_q: list[list[float]] | None = None
    lesson: str | None = None  # the lesson the student came from, carried by the lab's form

    @classmethod
    def from_link(cls, rng: random.Random) -> "Student":
        """A student who opened the teacher's link, in its state."""
        start = LESSON.start
        return cls(
            rng, start["tokens"].split(), int(start["query"]), start["mask"], None, LESSON.slug
        )

    @classmethod
    def on_its_own(cls, rng: random.Random) -> "Student":
        """A student with a sentence of its own."""
        tokens = [rng.choice(WORDS) for _ in range(rng.randint(3, 8))]
        return cls(rng, tokens, len(tokens) - 1)

    def lab_path(self, fragment: bool) -> str:
        params = {
            "d_model": "4",
            "d_k": "4",
            "d_v": "4",
            "tokens": " ".join(self.tokens),
            "mask": self.mask,
            "query": str(self.query),
        }
        if self.w_q is not None:
            params["w_q"] = ";".join(",".join(f"{v:g}" for v in row) for row in self.w_q)
        if self.lesson:
            params["lesson"] = self.lesson
        if fragment:
            params["fragment"] = "1"
        return "/?" + urlencode(params)

    def edit(self) -> None:
        choice = self.rng.random()
        if choice < 0.4:
            self.tokens[self.rng.randrange(len(self.tokens))] = self.rng.choice(WORDS)
        elif choice < 0.55 and len(self.tokens) < 12:
            self.tokens.append(self.rng.choice(WORDS))
        elif choice < 0.8:
            if self.w_q is None:
                self.w_q = [[round(self.rng.uniform(-1, 1), 1) for _ in range(4)] for _ in range(4)]
            self.w_q[self.rng.randrange(4)][self.rng.randrange(4)] = round(
                self.rng.uniform(-2, 2), 1
            )
        elif choice < 0.9:
            self.query = self.rng.randrange(len(self.tokens))
        else:
            self.mask = "bidirectional" if self.mask == "causal" else "causal"
        self.query = min(self.query, len(self.tokens) - 1)

    def heads_path(self) -> str:
        return "/heads?" + urlencode({"text": " ".join(self.tokens), "heads": "4", "kv_heads": "2"})

    def model_path(self) -> str:
        return "/model?" + urlencode({"text": " ".join(self.tokens)})


async def timed(
    tally: Tally, kind: str, conn: Connection, path: str, cpu: Callable[[], float] | None = None
) -> bytes:
    """The answer's body (decompressed for a page), its time recorded; with `cpu` (the
    server's CPU seconds so far), also the CPU the server spent on it, for requests sent one
    at a time."""
    if cpu is not None:
        used = cpu()
        body = await timed(tally, kind, conn, path)
        tally.cpu_ms.setdefault(kind, []).append((cpu() - used) * 1000)
        return body
    start = time.perf_counter()
    try:
        status, body, gzipped = await asyncio.wait_for(conn.get(path), TIMEOUT_S)
    except (TimeoutError, OSError, asyncio.IncompleteReadError, ValueError) as error:
        conn.close()
        tally.record(kind, None, f"{path[:60]}: {type(error).__name__} {error}")
        return b""
    if status != 200:
        tally.record(kind, None, f"{path[:60]}: {status}")
        return b""
    tally.record(kind, (time.perf_counter() - start) * 1000)
    return gzip.decompress(body) if gzipped and kind.endswith("page") else body


async def load_assets(
    tally: Tally,
    conns: list[Connection],
    html: bytes,
    cached: set[str],
    cpu: Callable[[], float] | None = None,
) -> None:
    """Every asset the page links that this student's browser does not hold yet (one at a
    time when the server's CPU is measured)."""
    wanted = [a.decode() for a in dict.fromkeys(ASSET.findall(html)) if a.decode() not in cached]
    cached.update(wanted)
    if cpu is not None:
        for path in wanted:
            await timed(tally, "asset", conns[0], path, cpu)
        return

    async def fetch(conn: Connection, paths: list[str]) -> None:
        for path in paths:
            await timed(tally, "asset", conn, path)

    await asyncio.gather(*(fetch(c, wanted[i :: len(conns)]) for i, c in enumerate(conns)))


async def student(
    number: int, port: int, start_by: float, end: float, tally: Tally, own_states: bool
) -> None:
    rng = random.Random(number)
    me = Student.on_its_own(rng) if own_states else Student.from_link(rng)
    await asyncio.sleep(rng.uniform(0, start_by))
    conns = [Connection(port), Connection(port)]
    cached: set[str] = set()
    html = await timed(tally, "lab page", conns[0], me.lab_path(fragment=False))
    await load_assets(tally, conns, html, cached)
    if not own_states:  # what the lesson asks, a few seconds after opening it
        await asyncio.sleep(rng.uniform(2, 5))
        me.mask = ASKED_MASK
        await timed(tally, "lab edit", conns[0], me.lab_path(fragment=True))
    while time.perf_counter() + 2 < end:
        await asyncio.sleep(rng.uniform(2, 5))
        action = rng.random()
        if action < 0.08:
            html = await timed(tally, "heads page", conns[0], me.heads_path())
            await load_assets(tally, conns, html, cached)
        elif action < 0.12:
            html = await timed(tally, "model page", conns[0], me.model_path())
            await load_assets(tally, conns, html, cached)
        else:
            me.edit()
            await timed(tally, "lab edit", conns[0], me.lab_path(fragment=True))
    for conn in conns:
        conn.close()


async def alone(port: int, rounds: int, cpu: Callable[[], float]) -> Tally:
    """The baseline: one student, each kind of request in turn, its own states (after one
    round unmeasured, which loads what the pages first need), with the server's CPU time for
    each request."""
    tally, warm = Tally(), Tally()
    me = Student.on_its_own(random.Random(-1))
    conns = [Connection(port), Connection(port)]
    for round_ in range(rounds + 1):
        into = tally if round_ else warm
        me.edit()
        html = await timed(into, "lab page", conns[0], me.lab_path(fragment=False), cpu)
        await load_assets(into, conns, html, set(), cpu)
        me.edit()
        await timed(into, "lab edit", conns[0], me.lab_path(fragment=True), cpu)
        await timed(into, "heads page", conns[0], me.heads_path(), cpu)
        await timed(into, "model page", conns[0], me.model_path(), cpu)
    for conn in conns:
        conn.close()
    return tally


async def run(port: int, students: int, seconds: float, own_states: bool) -> Tally:
    tally = Tally()
    end = time.perf_counter() + seconds
    await asyncio.gather(*(student(i, port, 5.0, end, tally, own_states) for i in range(students)))
    return tally


def percentile(values: list[float], q: float) -> float:
    return (
        statistics.quantiles(values, n=100, method="inclusive")[q - 1]
        if len(values) > 1
        else (values[0] if values else float("nan"))
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--workers", type=int, default=1, help="0: the app's default")
    parser.add_argument(
        "--own-states", action="store_true", help="each student opens its own page, not the link"
    )
    parser.add_argument("--rounds", type=int, default=10, help="of the lone student's baseline")
    args = parser.parse_args()
    server = Server(workers=args.workers or None)
    try:
        solo = asyncio.run(alone(server.port, args.rounds, server.cpu_seconds))
        load_before = os.getloadavg()[0]
        started, cpu_before, wait_before = (
            time.perf_counter(),
            server.cpu_seconds(),
            server.waited_seconds(),
        )
        tally = asyncio.run(run(server.port, args.students, args.seconds, args.own_states))
        spent, cpu_spent = time.perf_counter() - started, server.cpu_seconds() - cpu_before
        waited = server.waited_seconds() - wait_before
    finally:
        server.stop()
    total = sum(len(v) for v in tally.millis.values()) + sum(tally.failures.values())
    mix = "own states" if args.own_states else f"the link {LESSON.path}?…lesson={LESSON.slug}"
    print(
        f"{args.students} students ({mix}), {spent:.0f} s, {args.workers or 'default'} "
        f"worker(s) on 127.0.0.1: {total} requests ({total / spent:.0f}/s); load average "
        f"{load_before:.1f} before the class, {os.getloadavg()[0]:.1f} after, on "
        f"{os.cpu_count()} cores (a shared machine)"
    )
    print(
        f"{'request':12} {'count':>6} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} {'failed':>7}"
        f" {'alone p50':>10} {'p99/alone':>10} {'CPU ms':>7}"
    )
    asked = 0.0  # seconds of server CPU the class's requests take, at the lone student's cost
    for kind in KINDS:
        ms = tally.millis.get(kind, [])
        base = percentile(solo.millis.get(kind, []), 50)
        cpu = statistics.fmean(solo.cpu_ms.get(kind, [])) if solo.cpu_ms.get(kind) else 0.0
        asked += len(ms) * cpu / 1000
        p99 = percentile(ms, 99)
        print(
            f"{kind:12} {len(ms):6d} {percentile(ms, 50):8.1f} {p99:8.1f} "
            f"{max(ms, default=float('nan')):8.1f} {tally.failures.get(kind, 0):7d} "
            f"{base:10.1f} {p99 / base:10.1f} {cpu:7.1f}"
        )
    # Whether the class asks more CPU than the workers have (saturation: queues grow whatever
    # the order of service), or less (then a long p99 is waiting: queueing or unfairness).
    print(
        f"server CPU: the class's requests take {asked / spent:.2f} cores (count × CPU ms "
        f"alone); the server used {cpu_spent / spent:.2f} cores and waited for a core "
        f"{waited / spent:.2f} core-seconds a second; {args.workers or 'default'} worker(s) on "
        f"{os.cpu_count()} shared cores"
    )
    reference = ", ".join(f"{kind} p99 {ms} ms" for kind, ms in REFERENCE_P99_MS.items())
    print(f"issue 25's reference (one worker, own states, another day): {reference}")
    print(f"failed: {sum(tally.failures.values())}")
    for example in tally.examples:
        print("  failure:", example)


if __name__ == "__main__":
    main()
