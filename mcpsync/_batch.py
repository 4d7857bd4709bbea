"""One tool over many arguments: a bounded pool of threads, results in input order.

:func:`imap` is the machinery of ``Client.map_tool``/``imap_tool`` and ``Manager.map_tool``/
``imap_tool``: it is handed ``call(arguments, cancel)`` (one call, already bound to its tool,
timeout and retry policy) and knows nothing of MCP. Its threads are its own: all of them have
ended when it returns, raises or is closed.
"""

from __future__ import annotations

import collections
import math
from typing import TYPE_CHECKING, Any, Callable, Deque, Iterable, Sized, Iterator, Mapping, Optional, Tuple, TypeVar, Union

from .cancel import CancelToken

if TYPE_CHECKING:
    import concurrent.futures as cf

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
    import concurrent.futures as cf  # noqa: PLC0415 (only a batch needs it: keeps `import mcpsync` light)
    import queue  # noqa: PLC0415

    update, close_bar = progress_callback(progress, description)
    total = len(arguments) if isinstance(arguments, Sized) else None
    source = iter(arguments)
    window = math.inf if read_ahead is None else read_ahead
    # One token for the batch: firing it abandons every call still in flight (each tells its server).
    batch_cancel = CancelToken()
    pending: Deque["cf.Future[T]"] = collections.deque()  # read, not yet yielded, in input order
    in_flight = 0  # submitted, completion not yet taken from `finished`
    finished: "queue.SimpleQueue[cf.Future[T]]" = queue.SimpleQueue()  # completions, as they happen
    pool = cf.ThreadPoolExecutor(max_workers=max_concurrency, thread_name_prefix="mcpsync-map")
    exhausted = False
    done_count = 0
    try:
        while True:
            while not exhausted and in_flight < max_concurrency and len(pending) < window:
                try:
                    item = next(source)
                except StopIteration:
                    exhausted = True
                    break
                future = pool.submit(call, item, batch_cancel)
                future.add_done_callback(finished.put)
                pending.append(future)
                in_flight += 1
            if not pending:
                return
            # Take the completions there are (waiting for one unless the head is done): they free
            # slots, and a failure among them is the batch's first failure.
            block = not pending[0].done()
            while True:
                try:
                    completed = finished.get(block=block)
                except queue.Empty:
                    break
                block = False
                in_flight -= 1
                if not return_exceptions and completed.exception() is not None:
                    error = completed.exception()
                    assert error is not None
                    raise error
            while pending and pending[0].done():
                future = pending.popleft()
                error = future.exception()
                done_count += 1
                if update is not None:
                    update(float(done_count), None if total is None else float(total), None)
                if error is not None:
                    if not return_exceptions:
                        raise error
                    yield error
                else:
                    yield future.result()
    finally:
        if any(not future.done() for future in pending):
            batch_cancel.cancel("another call of the batch failed, or the batch was abandoned")
            for future in pending:
                future.cancel()  # those not started yet are never sent
        pool.shutdown(wait=True)
        if close_bar is not None:
            close_bar()
