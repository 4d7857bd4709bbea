"""Scheduler: the manager's bounded set of daemon threads, running jobs now or after a delay.

A job waiting for its time holds no thread, so a reconnect backing off for a
minute costs nothing. Threads start lazily, up to ``max_threads``, and all of
them are joined by :meth:`Scheduler.stop`.
"""

from __future__ import annotations

import heapq
import itertools
import time
from typing import Any, Callable, List, Tuple

from .._log import getLogger
from .._rpc.workers import LazyThreads

log = getLogger("mcpsync.manager")

_Job = Tuple[float, int, Callable[..., Any], Tuple[Any, ...]]


class Scheduler(LazyThreads):
    """Runs ``fn(*args)`` on up to ``max_threads`` daemon threads, each at or after its due time.

    Thread safety: :meth:`submit` and :meth:`stop` may be called from any thread,
    including from a job. A job that raises is logged; it never kills its thread.
    """

    def __init__(self, name: str, max_threads: int) -> None:
        super().__init__(name, max_threads)
        self._jobs: List[_Job] = []
        self._order = itertools.count()

    def submit(self, fn: Callable[..., Any], *args: Any, delay: float = 0.0) -> bool:
        """Run ``fn(*args)`` after ``delay`` seconds; False (nothing queued) once stopping."""
        with self._cond:
            if self._stopping:
                return False
            heapq.heappush(self._jobs, (time.monotonic() + max(0.0, delay), next(self._order), fn, args))
            self._wake_or_start()
            return True

    def _run(self) -> None:
        while True:
            with self._cond:
                while True:
                    if self._stopping:
                        return
                    wait = None
                    if self._jobs:
                        wait = self._jobs[0][0] - time.monotonic()
                        if wait <= 0:
                            _, _, fn, args = heapq.heappop(self._jobs)
                            break
                    self._idle += 1
                    self._cond.wait(wait)
                    self._idle -= 1
                if self._jobs:
                    self._cond.notify()  # another due job may be waiting for a thread
            try:
                fn(*args)
            except Exception:  # contained: a job must never kill its thread
                log.exception("Manager job %r raised", fn)

    def _on_stop(self) -> None:
        self._jobs.clear()  # jobs not yet started are dropped

    def stop(self, timeout: float) -> List[str]:
        """Drop jobs not yet started, let running ones finish, join the threads.

        Returns the names of threads still running after ``timeout`` seconds (normally none).
        """
        return self._stop_threads(timeout)
