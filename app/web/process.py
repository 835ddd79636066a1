"""Process-wide tuning, applied once in each worker process at start-up (app/main.py).

- The GIL switch interval (`switch_interval_ms`). The heavy work of requests runs in work
  threads (app/web/work.py) while the event loop answers everyone else. A thread that wants
  the GIL asks for it and waits up to the switch interval (CPython's default: 5 ms) for the
  running thread to hand it over, and the event-loop thread asks again after every wait on
  its sockets: a /healthz answer, which needs the GIL a handful of times, could wait tens of
  milliseconds behind one thread computing. A shorter interval lets the loop in sooner.
- glibc's malloc (Linux with glibc only; elsewhere nothing is set). Freed blocks of a few MB
  (the numpy arrays and the bytes of a 6 MB answer) are given back to the system only when
  they were mapped on their own, and glibc raises its threshold for that to the size of the
  largest block freed so far, up to 32 MB: after a few large answers, every later one comes
  from the heap and stays in the process when freed. A fixed threshold
  (`malloc_mmap_threshold_bytes`) keeps large blocks mapped on their own, so they go back to
  the system when freed; a cap on malloc's arenas (`malloc_arena_max`; glibc makes up to
  eight per core, one per thread that allocates at once) keeps each thread from holding
  freed memory of its own.

Measured with bench/bench_healthz.py (four clients looping the heaviest requests, 15 s, on a
shared 2-core machine): /healthz p50 33-37 ms at 5 ms, 6-16 ms at 0.5 ms; the server's RSS
+86 to +111 MB five seconds after the load with glibc's defaults, +12 to +20 MB with a 1 MB
or 128 kB threshold and two arenas.
"""

import ctypes
import ctypes.util
import sys
from functools import lru_cache

from app.settings import Settings

# mallopt's parameters (glibc's malloc.h).
M_MMAP_THRESHOLD = -3
M_ARENA_MAX = -8


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
