"""Heavy work in arrival order, off the event loop.

Work done in the event loop itself holds up everything else: a cheap request such as
/healthz waits behind every step of every other request, and a 30 ms head behind it. (The
p99 of over a second that small requests had under load was uvloop's unfairness, not this:
see Settings.event_loop.) So the heavy work of a request,
`run_work`, is done by `work_threads` threads (one by default: a process holds one core's
worth of Python; WORKERS gives more processes), handed out first come, first served, and
the loop only reads, routes and writes: large request bodies validated, long heads computed
and serialized, large answers compressed.

The work has a thread limit of its own, apart from anyio's default pool, where FastAPI runs
sync routes and Starlette reads static files: a stylesheet never queues behind a 6 MB answer.
"""

from collections.abc import Callable
from typing import TypeVar, TypeVarTuple

from anyio import CapacityLimiter, to_thread
from anyio.lowlevel import RunVar

from app.settings import Settings
from app.web.process import trim_when_idle

T = TypeVar("T")
Ts = TypeVarTuple("Ts")

_limiter: RunVar[CapacityLimiter] = RunVar("attention_lab_work_limiter")


def use_work_threads(count: int) -> None:
    """Let at most `count` threads do work at once (called in the running event loop)."""
    _limiter.set(CapacityLimiter(count))


def work_limiter() -> CapacityLimiter:
    """This event loop's limiter: as `use_work_threads` set it, else the setting's default."""
    try:
        return _limiter.get()
    except LookupError:
        use_work_threads(Settings.model_fields["work_threads"].default)
        return _limiter.get()


async def run_work(function: Callable[[*Ts], T], *args: *Ts) -> T:
    """function(*args) in a work thread, after the work that arrived before it."""
    try:
        return await to_thread.run_sync(function, *args, limiter=work_limiter())
    finally:
        trim_when_idle()  # what it freed goes back to the system once the work stops
