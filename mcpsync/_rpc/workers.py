"""Background threads that run code the reader thread must never run.

``SerialDispatcher`` runs callbacks one at a time in arrival order (for
notifications and progress). ``WorkerPool`` runs server-to-client requests on
a few threads, since a handler may block for minutes or call the client back.
``Outbox`` writes, on its own thread, what the reader thread must send but must
never write itself (answers to the peer's requests refused or answered on the
reader, such as ``ping``): a write can block on a peer that stops reading, and a
reader blocked there stops reading too. All three start their threads lazily,
bound their queues, and say what they drop (see :class:`DropReport`).

The dispatcher's and the pool's queues are bounded twice: by count, and by the
bytes the queued messages arrived as (:data:`NOTIFICATION_QUEUE_BYTES`,
:data:`REQUEST_QUEUE_BYTES`), since one message may be as large as the
transport's message limit (64 MiB on stdio). A job that would take a queue over
its byte budget is refused, unless the queue is empty: one message of any size
is always taken, so a large message alone is never refused for its size. Held
memory therefore stays near the budget plus the messages being handled.
"""

from __future__ import annotations

import collections
from .._log import getLogger
import math
import threading
import time
from typing import Any, Callable, Deque, List, Optional, Tuple

log = getLogger("mcpsync")

Job = Tuple[Callable[..., Any], Tuple[Any, ...], int]

#: Bytes of notifications (and progress) the dispatcher holds queued at most: 16 MiB.
NOTIFICATION_QUEUE_BYTES = 16 * 1024 * 1024
#: Bytes of the peer's requests the worker pool holds queued at most: 16 MiB.
REQUEST_QUEUE_BYTES = 16 * 1024 * 1024


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
    """A FIFO of jobs served by up to ``max_threads`` daemon threads, bounded by count (``limit``)
    and, when ``max_bytes`` is given, by the sizes its jobs were offered with (see the module docs).

    Thread safety: :meth:`submit` and :meth:`offer` from any thread; they never block.
    """

    def __init__(self, thread_name: str, max_threads: int, limit: int, max_bytes: Optional[int] = None) -> None:
        super().__init__(thread_name, max_threads)
        self._limit = limit
        self._max_bytes = max_bytes
        self._jobs: Deque[Job] = collections.deque()
        self.queued_bytes = 0
        self.dropped = 0
        #: Of :attr:`dropped`, those refused for the byte budget (the rest for the count limit).
        self.dropped_for_bytes = 0

    def submit(self, fn: Callable[..., Any], *args: Any) -> bool:
        """Queue ``fn(*args)``, a job of no size; False (and nothing queued) when full or stopped."""
        return self.offer(0, fn, *args) is None

    def offer(self, size: int, fn: Callable[..., Any], *args: Any) -> Optional[str]:
        """Queue ``fn(*args)``, a job holding ``size`` bytes. Returns None once queued, else why not:
        "stopped", "full" (the count limit) or "over budget" (the byte budget)."""
        with self._cond:
            if self._stopping:
                return "stopped"
            jobs = self._jobs
            if len(jobs) >= self._limit:
                self.dropped += 1
                return "full"
            budget = self._max_bytes
            if budget is not None and size and jobs and self.queued_bytes + size > budget:
                self.dropped += 1
                self.dropped_for_bytes += 1
                return "over budget"
            jobs.append((fn, args, size))
            self.queued_bytes += size
            self._wake_or_start()
            return None

    @property
    def max_bytes(self) -> Optional[int]:
        """The byte budget (None: bounded by count only)."""
        return self._max_bytes

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._jobs and not self._stopping:
                    self._idle += 1
                    self._cond.wait()
                    self._idle -= 1
                if not self._jobs:  # stopping and drained
                    return
                fn, args, size = self._jobs.popleft()
                self.queued_bytes -= size
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
    """Says, without flooding the log, that something was dropped: a WARNING for the first
    ``first`` drops, then for every thousandth, and for the first after ``quiet`` seconds
    without a report.

    :meth:`note` returns whether to log this drop now; it is cheap and thread-safe enough
    for counting (a lost update only moves when the next line is logged).
    """

    __slots__ = ("count", "first", "_quiet", "_last")

    def __init__(self, quiet: float = 10.0, first: int = 1) -> None:
        self.count = 0
        self.first = first
        self._quiet = quiet
        self._last = -math.inf

    def note(self) -> bool:
        self.count += 1
        now = time.monotonic()
        if self.count <= self.first or self.count % 1000 == 0 or now - self._last >= self._quiet:
            self._last = now
            return True
        return False


class SerialDispatcher(JobQueue):
    """Runs jobs one at a time, in the order submitted, on one thread."""

    def __init__(self, name: str, limit: int = 10_000, max_bytes: Optional[int] = NOTIFICATION_QUEUE_BYTES) -> None:
        super().__init__(f"mcpsync-dispatch[{name}]", 1, limit, max_bytes)


class WorkerPool(JobQueue):
    """Runs jobs on up to ``max_workers`` threads."""

    def __init__(self, name: str, max_workers: int = 4, limit: int = 256,
                 max_bytes: Optional[int] = REQUEST_QUEUE_BYTES) -> None:
        super().__init__(f"mcpsync-worker[{name}]", max_workers, limit, max_bytes)


def join_quietly(thread: Optional[threading.Thread], timeout: float) -> None:
    """Join ``thread`` unless it is the current one."""
    if thread is not None and thread is not threading.current_thread() and thread.is_alive():
        thread.join(timeout)
