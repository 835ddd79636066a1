"""Process-wide tuning, applied once in each worker process at start-up (app/main.py).

- The GIL switch interval (`switch_interval_ms`). The heavy work of requests runs in work
  threads (app/web/work.py) while the event loop answers everyone else. A thread that wants
  the GIL asks for it and waits up to the switch interval (CPython's default: 5 ms) for the
  running thread to hand it over, and the event-loop thread asks again after every wait on
  its sockets: a /healthz answer, which needs the GIL a handful of times, could wait tens of
  milliseconds behind one thread computing. A shorter interval lets the loop in sooner.
- glibc's malloc (Linux with glibc only; elsewhere nothing is set). Freed memory stays in
  the process: glibc raises its threshold for mapping a block on its own (a mapped block
  goes back to the system when freed) to the largest block freed so far, so after a few
  6 MB answers they all come from the heap; and each arena (glibc makes up to eight per
  core, one per thread that allocates at once) keeps what its threads freed. So the arenas
  are capped (`malloc_arena_max`), and once heavy work has stopped for
  `malloc_trim_idle_seconds`, `malloc_trim` gives the free memory of every arena back
  (`trim_when_idle`, called after each piece of work, app/web/work.py). A fixed threshold
  (`malloc_mmap_threshold_bytes`, 1 MiB by default) gives large blocks back at once, at the
  price of page faults on every large block (a few ms per 6 MB answer): without it, the
  write buffers of answers dropped for clients that stopped reading (app/server/protocol.py)
  left holes the same size as the next one less a few bytes, so the heap grew by one buffer
  for each.

Measured with bench/bench_healthz.py (four clients looping the heaviest requests, 15 s, on a
shared 2-core machine): /healthz p50 33-44 ms at 5 ms, 5-16 ms at 0.5 ms; the server's RSS
five seconds after the load +86 to +122 MB with glibc's defaults, +8 to +13 MB with two
arenas and the idle trim (+21 MB without the trim).
"""

import asyncio
import ctypes
import ctypes.util
import sys
from functools import lru_cache

from app.settings import Settings

# mallopt's parameters (glibc's malloc.h).
M_MMAP_THRESHOLD = -3
M_ARENA_MAX = -8


class IdleTrim:
    """The process's wait before malloc_trim (0: never) and the timer counting it down."""

    seconds = 0.0
    timer: asyncio.TimerHandle | None = None


@lru_cache
def glibc() -> ctypes.CDLL | None:
    """The C library when it is glibc (it has mallopt and malloc_trim), else None."""
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        libc = ctypes.CDLL(name)
        libc.gnu_get_libc_version  # noqa: B018  (present in glibc only)
    except (OSError, AttributeError):
        return None
    return libc


def tune_process(settings: Settings) -> dict[str, bool]:
    """Apply the switch interval and malloc settings; which malloc settings took effect."""
    sys.setswitchinterval(settings.switch_interval_ms / 1000)
    libc = glibc()
    IdleTrim.seconds = settings.malloc_trim_idle_seconds if libc is not None else 0.0
    applied = {"mmap_threshold": False, "arena_max": False}
    if libc is None:
        return applied
    if settings.malloc_mmap_threshold_bytes:
        applied["mmap_threshold"] = (
            libc.mallopt(M_MMAP_THRESHOLD, settings.malloc_mmap_threshold_bytes) == 1
        )
    if settings.malloc_arena_max:
        applied["arena_max"] = libc.mallopt(M_ARENA_MAX, settings.malloc_arena_max) == 1
    return applied


def trim_when_idle() -> None:
    """On the event loop, after a piece of heavy work: (re)start the wait before malloc_trim,
    so that it runs once, when the work has stopped, and never between two pieces."""
    if not IdleTrim.seconds:
        return
    if IdleTrim.timer is not None:
        IdleTrim.timer.cancel()
    loop = asyncio.get_running_loop()
    IdleTrim.timer = loop.call_later(IdleTrim.seconds, give_back_free_memory, loop)


def give_back_free_memory(loop: asyncio.AbstractEventLoop) -> None:
    """malloc_trim(0) in a thread of the loop's default pool (it takes up to ~0.2 s on a
    fragmented heap, the GIL let go)."""
    IdleTrim.timer = None
    libc = glibc()
    if libc is not None:
        loop.run_in_executor(None, libc.malloc_trim, 0)
