"""`python -m app`: gunicorn's arbiter runs WORKERS uvicorn workers (the uvicorn-worker
package), each serving app.main:app with app/server/protocol.py's bounded protocol.

Why gunicorn's arbiter rather than `uvicorn.run(workers=N)`: on SIGTERM the arbiter closes its
listening socket at once and each worker closes its own as soon as it starts to drain, so a
new connection is refused instead of waiting in a backlog that nobody reads; requests in
progress get `shutdown_grace_seconds` to finish. A worker that dies is replaced at once, and
the app is imported before the workers are forked (`preload_app`), so the new one serves
within a second. Both are gunicorn's documented API: a custom application
(`gunicorn.app.base.BaseApplication`) and, for the worker, uvicorn-worker's `CONFIG_KWARGS`.
"""

import ctypes
import ctypes.util
import math
import resource
from pathlib import Path
from typing import Any

from gunicorn.app.base import BaseApplication
from uvicorn_worker import UvicornWorker

from app.server.protocol import BoundedHttpToolsProtocol
from app.settings import Settings, environment_settings

SHARED_MEMORY = Path("/dev/shm")  # tmpfs: writable under a read-only root
# gunicorn kills a worker whose event loop has not ticked for this long (a hung worker).
HUNG_WORKER_SECONDS = 30
M_MMAP_THRESHOLD = -3  # mallopt's parameter (glibc's malloc.h)
LARGE_BLOCK_BYTES = 2**20


def raise_open_file_limit() -> int:
    """Lift this process's soft limit on open files to its hard limit (each connection is one
    file; the workers inherit it); the limit now in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        target = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 20)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError):
            pass
    return soft


def map_large_blocks() -> bool:
    """glibc only: memory blocks of LARGE_BLOCK_BYTES or more are mapped on their own, and
    unmapped as soon as they are freed (the workers, forked from here, inherit it); whether
    it took effect.

    The protocol drops the answers of clients that stopped reading, but on Python 3.11
    asyncio keeps an unsent answer in a bytearray that, when cleared, keeps a few bytes: the
    hole left in the heap is that much short of the next answer of the same size, so under
    glibc's sliding threshold the heap grew by one answer for each one dropped. A mapped
    block costs page faults when it is first used (a few ms per 6 MB answer)."""
    name = ctypes.util.find_library("c")
    try:
        return (
            name is not None and ctypes.CDLL(name).mallopt(M_MMAP_THRESHOLD, LARGE_BLOCK_BYTES) == 1
        )
    except (OSError, AttributeError):  # no C library found, or not glibc's
        return False


def uvicorn_config(settings: Settings) -> dict[str, Any]:
    """What each worker's uvicorn is configured with."""
    return {
        "http": BoundedHttpToolsProtocol,
        "loop": settings.event_loop,
        "ws": "none",  # no WebSocket routes: an Upgrade header is served as plain HTTP
        "lifespan": "on",
        "timeout_keep_alive": settings.keep_alive_seconds,
        "timeout_graceful_shutdown": settings.shutdown_grace_seconds,
        "proxy_headers": False,
        "server_header": False,
        "access_log": False,  # the app writes one JSON line per request
    }


def worker_class(settings: Settings) -> type[UvicornWorker]:
    return type("AttentionLabWorker", (UvicornWorker,), {"CONFIG_KWARGS": uvicorn_config(settings)})


def bind_address(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def gunicorn_options(settings: Settings) -> dict[str, Any]:
    return {
        "bind": [bind_address(settings.host, settings.port)],
        "workers": settings.workers,
        "worker_class": worker_class(settings),
        "preload_app": True,
        # The arbiter's own wait: a little longer than uvicorn's, which ends the requests left.
        "graceful_timeout": math.ceil(settings.shutdown_grace_seconds) + 1,
        "timeout": HUNG_WORKER_SECONDS,
        "keepalive": settings.keep_alive_seconds,
        "loglevel": settings.log_level,
        "errorlog": "-",  # gunicorn's and uvicorn's own lines, on stderr
        "accesslog": None,
        "proc_name": "attention-lab",
        "control_socket_disable": True,  # no gunicornc socket in the user's home
        # The workers' heartbeat files: where a read-only container can still write them.
        "worker_tmp_dir": str(SHARED_MEMORY) if SHARED_MEMORY.is_dir() else None,
    }


class AttentionLab(BaseApplication):  # type: ignore[misc]  (gunicorn has no type hints)
    """gunicorn's custom-application interface: its settings from ours, app.main's app."""

    def __init__(self, settings: Settings) -> None:
        self.options = gunicorn_options(settings)
        super().__init__()

    def load_config(self) -> None:
        for name, value in self.options.items():
            self.cfg.set(name, value)

    def load(self) -> Any:
        from app.main import app  # in the arbiter, before the workers are forked

        return app


def main() -> None:
    raise_open_file_limit()
    map_large_blocks()
    AttentionLab(environment_settings()).run()
