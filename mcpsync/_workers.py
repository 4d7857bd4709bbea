"""Background threads that run code the reader thread must never run.

``SerialDispatcher`` runs callbacks one at a time in arrival order (for
notifications and progress). ``WorkerPool`` runs server-to-client requests on
a few threads, since a handler may block for minutes or call the client back.
Both start their threads lazily, bound their queues, and say what they drop.
"""

from __future__ import annotations

import collections
import logging
import threading
from typing import Any, Callable, Deque, List, Optional, Tuple

log = logging.getLogger("mcpsync")

Job = Tuple[Callable[..., Any], Tuple[Any, ...]]


class _JobQueue:
    """A bounded FIFO of jobs served by up to ``max_threads`` daemon threads."""

    def __init__(self, thread_name: str, max_threads: int, limit: int) -> None:
        self._thread_name = thread_name
        self._max_threads = max_threads
        self._limit = limit
        self._cond = threading.Condition(threading.Lock())
        self._jobs: Deque[Job] = collections.deque()
        self._threads: List[threading.Thread] = []
        self._idle = 0
        self._stopping = False
        self.dropped = 0

    def submit(self, fn: Callable[..., Any], *args: Any) -> bool:
        """Queue ``fn(*args)``; False (and nothing queued) when full or stopped."""
        with self._cond:
            if self._stopping:
                return False
            if len(self._jobs) >= self._limit:
                self.dropped += 1
                return False
            self._jobs.append((fn, args))
            if self._idle == 0 and len(self._threads) < self._max_threads:
                thread = threading.Thread(
                    target=self._run, name=f"{self._thread_name}-{len(self._threads)}", daemon=True
                )
                self._threads.append(thread)
                thread.start()
            else:
                self._cond.notify()
            return True

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._jobs and not self._stopping:
                    self._idle += 1
                    self._cond.wait()
                    self._idle -= 1
                if not self._jobs:  # stopping and drained
                    return
                fn, args = self._jobs.popleft()
            try:
                fn(*args)
            except Exception:  # contained: a job must never kill its thread
                log.exception("Callback %r raised", fn)

    def stop(self, timeout: float) -> None:
        """Let queued jobs finish, then end the threads (bounded by ``timeout``)."""
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
            threads = list(self._threads)
        current = threading.current_thread()
        for thread in threads:
            if thread is not current:
                thread.join(timeout)
                if thread.is_alive():
                    log.warning("Thread %s still busy after %.1fs; leaving it", thread.name, timeout)


class SerialDispatcher(_JobQueue):
    """Runs jobs one at a time, in the order submitted, on one thread."""

    def __init__(self, name: str, limit: int = 10_000) -> None:
        super().__init__(f"mcpsync-dispatch[{name}]", 1, limit)


class WorkerPool(_JobQueue):
    """Runs jobs on up to ``max_workers`` threads."""

    def __init__(self, name: str, max_workers: int = 4, limit: int = 256) -> None:
        super().__init__(f"mcpsync-worker[{name}]", max_workers, limit)


def join_quietly(thread: Optional[threading.Thread], timeout: float) -> None:
    """Join ``thread`` unless it is the current one."""
    if thread is not None and thread is not threading.current_thread() and thread.is_alive():
        thread.join(timeout)
