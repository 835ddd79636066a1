"""Servers on 127.0.0.1 and raw sockets to talk to them, for the server's tests."""

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parents[2]
Address = tuple[str, int]
PROBE = [
    "-m",
    "uvicorn",
    "tests.server.probe_app:app",
    "--http",
    "app.server.protocol:BoundedHttpToolsProtocol",
    "--ws",
    "none",
    "--loop",
    "asyncio",
    "--no-access-log",
]
APP = ["-m", "app"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Server:
    process: subprocess.Popen[bytes]
    address: Address
    log: Path

    def lines(self) -> list[dict]:
        """The JSON lines it has written on stdout so far."""
        text = self.log.read_text(errors="replace")
        return [orjson.loads(line) for line in text.splitlines() if line.startswith("{")]

    def line_of(self, request_id: str, seconds: float = 5) -> dict:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            found = [line for line in self.lines() if line.get("request_id") == request_id]
            if found:
                return found[-1]
            time.sleep(0.05)
        raise AssertionError(f"no log line for {request_id}")


@contextlib.contextmanager
def serve(
    command: list[str], env: dict[str, str], log: Path, *, start_seconds: float = 90
) -> Iterator[Server]:
    """`python <command>` on a free port until the block ends (SIGTERM, then SIGKILL)."""
    port = free_port()
    environment = {**os.environ, **env, "HOST": "127.0.0.1", "PORT": str(port)}
    environment["PYTHONPATH"] = str(ROOT)
    if command == PROBE:
        command = [*PROBE, "--host", "127.0.0.1", "--port", str(port)]
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, *command],
            cwd=ROOT,
            env=environment,
            stdout=out,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
    try:
        wait_until_serving(("127.0.0.1", port), process, start_seconds)
        yield Server(process, ("127.0.0.1", port), log)
    finally:
        stop(process)


def wait_until_serving(address: Address, process: subprocess.Popen[bytes], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while True:
        try:
            with urllib.request.urlopen(f"http://{address[0]}:{address[1]}/healthz", timeout=5):
                return
        except OSError:
            if time.monotonic() > deadline or process.poll() is not None:
                raise
            time.sleep(0.1)


def stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def connect(address: Address, timeout: float = 15.0) -> socket.socket:
    s = socket.create_connection(address)
    s.settimeout(timeout)
    return s


def read_until_closed(s: socket.socket) -> bytes:
    out = b""
    while True:
        try:
            chunk = s.recv(1 << 20)
        except ConnectionResetError:
            break
        if not chunk:
            break
        out += chunk
    return out


def answer(raw: bytes) -> tuple[int, dict[bytes, bytes], bytes]:
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    headers = dict(line.lower().split(b": ", 1) for line in lines[1:])
    return int(lines[0].split()[1]), headers, body


def ask(
    address: Address, request: bytes, timeout: float = 15.0
) -> tuple[int, dict[bytes, bytes], bytes]:
    """Send `request` on a new connection and read the answer until the server closes it."""
    with connect(address, timeout) as s:
        # Refused before it was all sent: the answer is waiting anyway.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            s.sendall(request)
        return answer(read_until_closed(s))


def get(path: str, *headers: str, close: bool = True) -> bytes:
    lines = [
        f"GET {path} HTTP/1.1",
        "Host: lab",
        *(["Connection: close"] if close else []),
        *headers,
    ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def post(path: str, body: bytes, length: int | None = None, *, close: bool = True) -> bytes:
    head = (
        f"POST {path} HTTP/1.1\r\nHost: lab\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body) if length is None else length}\r\n"
        + ("Connection: close\r\n" if close else "")
        + "\r\n"
    )
    return head.encode() + body
