"""Background threads that run code the reader thread must never run.

``SerialDispatcher`` runs callbacks one at a time in arrival order (for
notifications and progress). ``WorkerPool`` runs server-to-client requests on
a few threads, since a handler may block for minutes or call the client back.
``Outbox`` writes, on its own thread, what the reader thread must send but must
never write itself (answers to the peer's requests refused or answered on the
reader, such as ``ping``): a write can block on a peer that stops reading, and a
reader blocked there stops reading too. All three start their threads lazily,
bound their queues, and say what they drop (see :class:`DropReport`).
"""

from __future__ import annotations

import collections
import logging
import math
import threading
import time
from typing import Any, Callable, Deque, List, Optional, Tuple

log = logging.getLogger("mcpsync")

Job = Tuple[Callable[..., Any], Tuple[Any, ...]]


class LazyThreads:
    """Up to ``max_threads`` daemon threads running :meth:`_run`, each started only when
    work is queued and no thread is idle. Subclasses own the queue, guarded by ``_cond``."""

    def __init__(self, thread_name: str, max_threads: int) -> None:
        if max_threads < 1:
            raise ValueError("max_threads must be at least 1")
        self._thread_name = thread_name
        self._max_threads = max_threads
        self._cond = threading.Condition(threading.Lock())
        self._threads: List[threading.Thread] = []
        self._idle = 0  # threads waiting on _cond for work
        self._stopping = False

    def _run(self) -> None:  # pragma: no cover - every subclass has its own
        raise NotImplementedError

    def _wake_or_start(self) -> None:
        """Work was queued (call with ``_cond`` held): wake an idle thread, or start one."""
        if self._idle == 0 and len(self._threads) < self._max_threads:
            thread = threading.Thread(target=self._run, name=f"{self._thread_name}-{len(self._threads)}",
                                      daemon=True)
            self._threads.append(thread)
            thread.start()
        else:
            self._cond.notify()

    def _on_stop(self) -> None:
        """Called with ``_cond`` held as stopping begins (e.g. to drop queued work)."""

    def _stop_threads(self, timeout: float) -> List[str]:
        """Stop taking work, wake every thread, join them all within ``timeout`` seconds.

        Returns the names of threads still running (the calling thread is never joined).
        """
        with self._cond:
            self._stopping = True
            self._on_stop()
            self._cond.notify_all()
            threads = list(self._threads)
        deadline = time.monotonic() + timeout
        current = threading.current_thread()
        for thread in threads:
            if thread is not current:
                thread.join(max(0.0, deadline - time.monotonic()))
        return [t.name for t in threads if t.is_alive() and t is not current]


class JobQueue(LazyThreads):
    """A bounded FIFO of jobs served by up to ``max_threads`` daemon threads."""

    def __init__(self, thread_name: str, max_threads: int, limit: int) -> None:
        super().__init__(thread_name, max_threads)
        self._limit = limit
        self._jobs: Deque[Job] = collections.deque()
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
            self._wake_or_start()
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
        """Let queued jobs finish, then end the threads (bounded by ``timeout`` in all)."""
        for name in self._stop_threads(timeout):
            log.warning("Thread %s still busy after %.1fs; leaving it", name, timeout)


class Outbox(JobQueue):
    """Runs the reader thread's writes, one at a time in order, on one thread of its own.

    Its queue is bounded by count (``limit``); what does not fit is refused
    (``submit`` returns False) and the caller drops it and says so.
    """

    def __init__(self, name: str, limit: int = 1024) -> None:
        super().__init__(f"mcpsync-reply[{name}]", 1, limit)


class DropReport:
    """Says, without flooding the log, that something was dropped: a WARNING for the first drop,
    then for every thousandth, and for the first after ``quiet`` seconds without a report.

    :meth:`note` returns whether to log this drop now; it is cheap and thread-safe enough
    for counting (a lost update only moves when the next line is logged).
    """

    __slots__ = ("count", "_quiet", "_last")

    def __init__(self, quiet: float = 10.0) -> None:
        self.count = 0
        self._quiet = quiet
        self._last = -math.inf

    def note(self) -> bool:
        self.count += 1
        now = time.monotonic()
        if self.count == 1 or self.count % 1000 == 0 or now - self._last >= self._quiet:
            self._last = now
            return True
        return False


class SerialDispatcher(JobQueue):
    """Runs jobs one at a time, in the order submitted, on one thread."""

    def __init__(self, name: str, limit: int = 10_000) -> None:
        super().__init__(f"mcpsync-dispatch[{name}]", 1, limit)


class WorkerPool(JobQueue):
    """Runs jobs on up to ``max_workers`` threads."""

    def __init__(self, name: str, max_workers: int = 4, limit: int = 256) -> None:
        super().__init__(f"mcpsync-worker[{name}]", max_workers, limit)


def join_quietly(thread: Optional[threading.Thread], timeout: float) -> None:
    """Join ``thread`` unless it is the current one."""
    if thread is not None and thread is not threading.current_thread() and thread.is_alive():
        thread.join(timeout)
