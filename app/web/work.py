"""Heavy work in arrival order, off the event loop.

On a saturated event loop, work done in the loop itself makes requests wait unfairly: a
request's steps (reading its body, routing, computing, sending) queue behind the steps of
every other request, in no order that favours the one that came first, and a cheap request
such as /healthz waits behind all of them (p99 over a second under wrk with 300 µs of work
per request). So the work is done by a small pool of threads, `work_threads` (one by
default: a process serves one core's worth of Python; WORKERS gives more processes), fed in
the order requests arrive, and the loop only reads, routes and writes:

- every sync route and sync dependency (FastAPI runs them in anyio's default thread pool,
  whose size `use_work_threads` sets when the app starts): the API computations, pages, CSV;
- `run_work` for the rest: large request bodies validated, large answers compressed.

anyio's limiter hands its places out first come, first served.
"""

from collections.abc import Callable
from typing import TypeVar, TypeVarTuple

from anyio import to_thread

T = TypeVar("T")
Ts = TypeVarTuple("Ts")


def use_work_threads(count: int) -> None:
    """Let at most `count` threads do work at once (called in the running event loop)."""
    to_thread.current_default_thread_limiter().total_tokens = count


async def run_work(function: Callable[[*Ts], T], *args: *Ts) -> T:
    """function(*args) in a work thread, after the work that arrived before it."""
    return await to_thread.run_sync(function, *args)
