"""One result per process, computed once in a thread of its own and awaited by every caller.

For work too slow to do inside a request and worth doing once (a timing run): the first caller
starts it, every caller (the first too) awaits the same run without holding a worker thread, so
a class pressing the button together leaves the threads to the other pages. A caller that has
waited `wait_s` gets BusyError (503 with Retry-After); a failed run hands its exception to every
waiter and is started again by the next caller.
"""

import asyncio
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Generic, TypeVar

from app.core.errors import BusyError

T = TypeVar("T")


class OnceInBackground(Generic[T]):
    def __init__(self, compute: Callable[[], T], wait_s: float, busy: str) -> None:
        self.compute, self.wait_s, self.busy = compute, wait_s, busy
        self._lock = threading.Lock()  # held only to start a run, never while it runs
        self._run: Future[T] | None = None

    @property
    def result(self) -> T | None:
        """The finished result, or None when none has finished yet."""
        run = self._run
        if run is None or not run.done() or run.exception() is not None:
            return None
        return run.result()

    def start(self) -> None:
        """Start the run if none is under way or finished (a page shows it when it ends)."""
        self._started()

    def _started(self) -> Future[T]:
        with self._lock:
            run = self._run
            if run is None or (run.done() and run.exception() is not None):
                run = self._run = Future()
                run.set_running_or_notify_cancel()  # a waiter giving up cannot cancel it
                threading.Thread(target=self._work, args=(run,), daemon=True).start()
            return run

    def _work(self, run: Future[T]) -> None:
        try:
            run.set_result(self.compute())
        except Exception as exc:  # handed to every waiter
            run.set_exception(exc)

    async def get(self) -> T:
        """The result, started if need be; BusyError after wait_s of waiting."""
        try:
            return await asyncio.wait_for(asyncio.wrap_future(self._started()), self.wait_s)
        except TimeoutError:
            raise BusyError(self.busy) from None
