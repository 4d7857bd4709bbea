"""Scheduler: the manager's bounded set of daemon threads, running jobs now or after a delay.

A job waiting for its time holds no thread, so a reconnect backing off for a
minute costs nothing. Threads start lazily, up to ``max_threads``, and all of
them are joined by :meth:`Scheduler.stop`.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from typing import Any, Callable, List, Tuple

log = logging.getLogger("mcpsync.manager")

_Job = Tuple[float, int, Callable[..., Any], Tuple[Any, ...]]


class Scheduler:
    """Runs ``fn(*args)`` on up to ``max_threads`` daemon threads, each at or after its due time.

    Thread safety: :meth:`submit` and :meth:`stop` may be called from any thread,
    including from a job. A job that raises is logged; it never kills its thread.
    """

    def __init__(self, name: str, max_threads: int) -> None:
        if max_threads < 1:
            raise ValueError("max_threads must be at least 1")
        self._name = name
        self._max_threads = max_threads
        self._cond = threading.Condition(threading.Lock())
        self._jobs: List[_Job] = []
        self._order = itertools.count()
        self._threads: List[threading.Thread] = []
        self._idle = 0
        self._stopping = False

    def submit(self, fn: Callable[..., Any], *args: Any, delay: float = 0.0) -> bool:
        """Run ``fn(*args)`` after ``delay`` seconds; False (nothing queued) once stopping."""
        with self._cond:
            if self._stopping:
                return False
            heapq.heappush(self._jobs, (time.monotonic() + max(0.0, delay), next(self._order), fn, args))
            if self._idle == 0 and len(self._threads) < self._max_threads:
                thread = threading.Thread(target=self._run, name=f"{self._name}-{len(self._threads)}", daemon=True)
                self._threads.append(thread)
                thread.start()
            else:
                self._cond.notify()
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

    def stop(self, timeout: float) -> List[str]:
        """Drop jobs not yet started, let running ones finish, join the threads.

        Returns the names of threads still running after ``timeout`` seconds (normally none).
        """
        with self._cond:
            self._stopping = True
            self._jobs.clear()
            self._cond.notify_all()
            threads = list(self._threads)
        deadline = time.monotonic() + timeout
        current = threading.current_thread()
        for thread in threads:
            if thread is not current:
                thread.join(max(0.0, deadline - time.monotonic()))
        return [t.name for t in threads if t.is_alive() and t is not current]
