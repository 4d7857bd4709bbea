"""One tool over many arguments: a bounded pool of threads, results in input order.

:func:`imap` is the machinery of ``Client.map_tool``/``imap_tool`` and ``Manager.map_tool``/
``imap_tool``: it is handed ``call(arguments, cancel)`` (one call, already bound to its tool,
timeout and retry policy) and knows nothing of MCP. Its threads are its own: all of them have
ended when it returns, raises or is closed.
"""

from __future__ import annotations

import collections
import math
from typing import TYPE_CHECKING, Any, Callable, Deque, Generic, Iterable, Sized, Iterator, Mapping, Optional, Tuple, TypeVar, Union

from .cancel import CancelToken

if TYPE_CHECKING:
    import concurrent.futures as cf
    import queue

__all__ = ["imap", "check_concurrency", "progress_callback", "ProgressArg"]

T = TypeVar("T")
A = TypeVar("A")

#: ``progress=``: True for a bar (tqdm's, in a terminal or a notebook, when the ``progress`` extra is
#: installed; else a text line on stderr), or any ``on_progress(done, total, message)`` callable.
ProgressArg = Union[bool, Callable[[float, Optional[float], Optional[str]], None], None]


def check_concurrency(max_concurrency: Any) -> int:
    """``max_concurrency`` as a whole number of at least 1 (ValueError otherwise)."""
    if isinstance(max_concurrency, bool) or not isinstance(max_concurrency, int) or max_concurrency < 1:
        raise ValueError(f"max_concurrency must be a whole number of at least 1, not {max_concurrency!r}")
    return max_concurrency


def progress_callback(progress: ProgressArg, description: str) -> Tuple[Optional[Callable[..., None]],
                                                                         Optional[Callable[[], None]]]:
    """The ``(update, close)`` pair for ``progress=``: both None when it is off."""
    if progress is None or progress is False:
        return None, None
    if progress is True:
        from .progress import ProgressBar  # noqa: PLC0415 (only a batch with a bar needs it)

        bar = ProgressBar(description)
        return bar, bar.close
    if not callable(progress):
        raise TypeError(f"progress must be True, False or an on_progress(done, total, message) callable, "
                        f"not {type(progress).__name__}")
    return progress, None


def imap(call: Callable[[A, CancelToken], T], arguments: Iterable[A], *,
         max_concurrency: int, return_exceptions: bool, read_ahead: Optional[int],
         progress: ProgressArg = False, description: str = "") -> Iterator[Union[T, BaseException]]:
    """Yield ``call(item, cancel)`` for each item of ``arguments``, in their order.

    At most ``max_concurrency`` calls run at once, each on one of as many threads. ``read_ahead``
    bounds the items taken from ``arguments`` and not yet yielded (None: no bound, so a slow first
    item does not hold back the others; ``imap_tool`` passes ``max_concurrency``).

    Every call is handed the batch's one cancel token. With ``return_exceptions`` a failed call yields
    its exception. Otherwise the first failure (in completion order) fires that token, so every call
    still running is abandoned (each tells its server),
    waits for them to end, and is raised; the items after it are never read. Closing the generator
    early (or an exception thrown into it, say KeyboardInterrupt) does the same. Every thread has
    ended when the generator is done.
    """
    update, close_bar = progress_callback(progress, description)
    batch = _Batch(call, arguments, max_concurrency, return_exceptions, read_ahead, update)
    try:
        while True:
            batch.submit()
            if not batch.pending:
                return
            batch.take_completions()
            yield from batch.done_in_order()
    finally:
        batch.close()
        if close_bar is not None:
            close_bar()


class _Batch(Generic[A, T]):
    """One :func:`imap` run: the items read and not yet yielded (in input order), the completions not
    yet taken, the pool, and the batch's one cancel token."""

    def __init__(self, call: Callable[[A, CancelToken], T], arguments: Iterable[A], max_concurrency: int,
                 return_exceptions: bool, read_ahead: Optional[int], update: Optional[Callable[..., None]]) -> None:
        import concurrent.futures as cf  # noqa: PLC0415 (only a batch needs it: keeps `import mcpsync` light)
        import queue  # noqa: PLC0415

        self.call = call
        self.total = len(arguments) if isinstance(arguments, Sized) else None
        self.source = iter(arguments)
        self.window = math.inf if read_ahead is None else read_ahead
        self.max_concurrency = max_concurrency
        self.return_exceptions = return_exceptions
        self.update = update
        # One token for the batch: firing it abandons every call still in flight (each tells its server).
        self.cancel = CancelToken()
        self.pending: Deque["cf.Future[T]"] = collections.deque()  # read, not yet yielded, in input order
        self.in_flight = 0  # submitted, completion not yet taken from `finished`
        self.finished: "queue.SimpleQueue[cf.Future[T]]" = queue.SimpleQueue()  # completions, as they happen
        self.pool = cf.ThreadPoolExecutor(max_workers=max_concurrency, thread_name_prefix="mcpsync-map")
        self.exhausted = False
        self.done_count = 0

    def submit(self) -> None:
        """Read and submit items while a thread is free and the read-ahead window allows."""
        while not self.exhausted and self.in_flight < self.max_concurrency and len(self.pending) < self.window:
            try:
                item = next(self.source)
            except StopIteration:
                self.exhausted = True
                return
            future = self.pool.submit(self.call, item, self.cancel)
            future.add_done_callback(self.finished.put)
            self.pending.append(future)
            self.in_flight += 1

    def take_completions(self) -> None:
        """Take the completions there are (waiting for one unless the head is done): they free slots,
        and a failure among them is the batch's first failure (raised, unless ``return_exceptions``)."""
        import queue  # noqa: PLC0415

        block = not self.pending[0].done()
        while True:
            try:
                completed = self.finished.get(block=block)
            except queue.Empty:
                return
            block = False
            self.in_flight -= 1
            error = None if self.return_exceptions else completed.exception()
            if error is not None:
                raise error

    def done_in_order(self) -> Iterator[Union[T, BaseException]]:
        """The results at the head of the input order that are done, in order, each counted as progress;
        a failure is raised (yielded with ``return_exceptions``)."""
        while self.pending and self.pending[0].done():
            future = self.pending.popleft()
            error = future.exception()
            self.done_count += 1
            if self.update is not None:
                self.update(float(self.done_count), None if self.total is None else float(self.total), None)
            if error is None:
                yield future.result()
            elif self.return_exceptions:
                yield error
            else:
                raise error

    def close(self) -> None:
        """Abandon the calls still running or not yet started (each tells its server); wait for every thread."""
        if any(not future.done() for future in self.pending):
            self.cancel.cancel("another call of the batch failed, or the batch was abandoned")
            for future in self.pending:
                future.cancel()  # those not started yet are never sent
        self.pool.shutdown(wait=True)
