"""A uvicorn server on 127.0.0.1 for a benchmark: started on a free port, stopped after."""

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def process_stat(pid: int) -> list[str]:
    """The fields of /proc/<pid>/stat after the command's name (Linux): state, parent pid, …
    (field k of proc(5) is item k − 3)."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def cpu_seconds(pid: int) -> float:
    """A process's CPU time so far (user + system)."""
    stat = process_stat(pid)
    return (int(stat[11]) + int(stat[12])) / os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """`python <command>` with HOST=127.0.0.1, a free PORT and WORKERS (None: the app's
    default) plus `env`, ready once `ready_path` answers. "{port}" in the command is replaced
    by the port."""

    def __init__(
        self,
        command: list[str] | None = None,
        env: dict[str, str] | None = None,
        ready_path: str = "/healthz",
        workers: int | None = 1,
    ) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        full_env = {**os.environ, **(env or {})}
        full_env.update(HOST="127.0.0.1", PORT=str(self.port))
        if workers is not None:
            full_env["WORKERS"] = str(workers)
        args = [arg.format(port=self.port) for arg in (command or ["-m", "app"])]
        self.process = subprocess.Popen(
            [sys.executable, *args],
            cwd=ROOT,
            env=full_env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(self.url + ready_path, timeout=2) as r:
                    r.read()
                return
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"the server did not answer {ready_path} within 120 s")

    def cpu_seconds(self) -> float:
        """CPU time so far of the server and its workers (gunicorn's arbiter forks them)."""
        pid = self.process.pid
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        total = cpu_seconds(pid)
        for child in children:
            try:
                total += cpu_seconds(int(child))
            except OSError:  # a worker that has just been replaced
                continue
        return total

    def waited_seconds(self) -> float:
        """Time the server's threads so far spent ready to run but waiting for a core (Linux's
        schedstat run delay): CPU the server wanted and the machine did not give it."""
        pids = [self.process.pid]
        pids += Path(f"/proc/{pids[0]}/task/{pids[0]}/children").read_text().split()
        total = 0
        for pid in pids:
            for task in Path(f"/proc/{pid}/task").glob("*/schedstat"):
                try:
                    total += int(task.read_text().split()[1])
                except (OSError, IndexError):  # a thread or worker that has just ended
                    continue
        return total / 1e9

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
