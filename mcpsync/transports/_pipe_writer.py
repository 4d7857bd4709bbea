"""Writing one JSON-RPC message per line to a child's stdin: whole lines, in order, never past a deadline.

Any number of threads write; one at a time holds the pipe (``_lock``). On POSIX
the parent's end of the pipe is non-blocking, so no writer can be stuck behind a
server that stopped reading: each waits on the pipe only until its own deadline.

Under load, short lines are written together: a thread that finds the pipe busy
queues its line and goes on to wait for its answer, and the thread writing sends
every queued line with its own in one ``write``. That saves each of those threads
a sleep on the lock and a system call, which is most of the cost of a call when
eight threads share one connection. Whoever lets go of the pipe looks at the queue
once more, so a line queued at that moment is not stranded; and if the server
stops reading while other threads' lines are still queued, a flusher thread
(started then, gone when the queue is empty) keeps sending them, so nobody's
request depends on another thread's deadline.

The writer is the stdio transport's :class:`~mcpsync._rpc.wire.Wire`: the engine calls
:meth:`PipeWriter.write` (as ``write`` and ``timed_write``) and :meth:`PipeWriter.abandon`
directly, with nothing in between.
"""

from __future__ import annotations

import collections
import math
import os
import threading
import time
from typing import IO, Any, Callable, Deque, List, Optional, Protocol, Tuple

from .._log import getLogger
from .._rpc import jsonrpc as rpc
from .._rpc.jsonrpc import JSONObject, RequestId
from .._rpc.wire import SendCancelled
from ..cancel import CancelToken
from ..exceptions import ConnectionLost, RequestCancelled, RequestTimeout, TransportClosed
from . import _process

if not _process.IS_WINDOWS:
    import select

log = getLogger("mcpsync.transport.stdio")

#: Lines up to this size may be handed to the thread already writing (POSIX keeps
#: pipe writes this small in one piece); longer ones wait for the pipe themselves.
SHARE_LIMIT = 4096
#: At most this many lines wait in the queue for the thread writing now (about 4 MiB of short
#: lines). A writer that finds the queue this long waits for the pipe itself, by its deadline,
#: so a server that stops reading cannot make threads that do not wait (notifications, answers)
#: pile up lines without end.
QUEUE_LIMIT = 1024
#: How often a writer waiting on a full pipe looks at its deadline, its cancel token and close().
SLICE_SECONDS = 0.05


def _end_of(mine: _Line, batch: List[_Line]) -> Optional[int]:
    """Bytes of ``batch``'s lines up to the end of ``mine`` (None: ``mine`` is not among them)."""
    size = 0
    for line in batch:
        size += len(line.data)
        if line is mine:
            return size
    return None


class _Line:
    """A queued line; compared by identity, so finding one in the queue never runs user code."""

    __slots__ = ("data", "request_id", "taken")

    def __init__(self, data: bytes, request_id: Optional[RequestId]) -> None:
        self.data = data
        self.request_id = request_id
        self.taken = False  # moved into the tail by a writer: it goes out, whoever sends it


class ConnectionState(Protocol):
    """What the writer needs to know of the connection it writes for (the engine is one)."""

    @property
    def closed(self) -> bool: ...

    def closed_error(self) -> TransportClosed: ...


class _NotOpen:
    """The connection state before :meth:`PipeWriter.attach`: open, with nothing to write to."""

    closed = False

    @staticmethod
    def closed_error() -> TransportClosed:
        return TransportClosed("Transport closed: not connected (call open() first)")


class _PipeGone(Exception):
    """The pipe broke or was detached (raised with the lock held; each caller says it its own way)."""

    def __init__(self, cause: BaseException) -> None:
        super().__init__(cause)
        self.cause = cause


class PipeWriter:
    """Writes messages as lines to ``stream`` (attached once the process runs).

    ``explain_break(exc)`` turns a failed write into the error that says why (exit
    code, stderr tail), or returns None for the plain "cannot write" error.

    Thread safety: :meth:`write`, :meth:`withdraw` and :meth:`abandon` may be called
    from any thread at once; :meth:`attach` once, before any write; :meth:`detach`
    from any thread, once.
    """

    def __init__(self, name: str,
                 explain_break: Optional[Callable[[BaseException], Optional[TransportClosed]]] = None) -> None:
        self.stream: Optional[IO[bytes]] = None
        self._fd: Optional[int] = None
        self._poll: Any = None
        self._connection: ConnectionState = _NotOpen()
        self._name = name
        self._lock = threading.Lock()  # held by the one thread writing to the pipe
        self._io_lock = threading.Lock()  # around each os.write: detach() never closes the fd under it
        self._queue: Deque[_Line] = collections.deque()  # lines not begun, oldest first
        self._tail = b""  # the unsent end of lines already begun: always sent first, so no line is torn
        self._tail_shared = False  # the tail holds lines of threads that did not wait for them
        self._handover = threading.Lock()  # guards starting and ending the flusher
        self._flusher: Optional[threading.Thread] = None
        self._explain_break = explain_break

    def attach(self, stream: Optional[IO[bytes]], connection: ConnectionState) -> None:
        """Start writing to ``stream`` for ``connection``, whose close stops every write and wait."""
        self._connection = connection
        self.stream = stream
        if stream is not None and not _process.IS_WINDOWS:
            fd = stream.fileno()
            os.set_blocking(fd, False)  # the parent's end only: the server's stdin stays blocking
            self._poll = select.poll()
            self._poll.register(fd, select.POLLOUT)
            self._fd = fd

    def detach(self) -> None:
        """Stop using the pipe before it is closed (a write in progress never blocks, so this is quick)."""
        with self._io_lock:
            self._fd = None
        self._queue.clear()

    def join(self, timeout: float) -> None:
        """Wait for the flusher, if one runs (call after :meth:`detach`)."""
        flusher = self._flusher
        if flusher is not None and flusher is not threading.current_thread():
            flusher.join(timeout)

    def write(self, message: JSONObject, deadline: float = math.inf, cancel: Optional[CancelToken] = None) -> None:
        """Send ``message`` as one line by the monotonic ``deadline``.

        Returns once the line is written, or queued for the thread writing now (a short line,
        while fewer than :data:`QUEUE_LIMIT` wait; otherwise it waits for the pipe itself).

        Raises:
            RequestTimeout: the server did not take it in time (nothing more of it will be sent
                unless part of it already was, which the next write finishes first).
            RequestCancelled: ``cancel`` fired first (likewise).
            TransportClosed: the connection is closed or the pipe broke.
            ProtocolError: ``message`` is not JSON-serialisable.
        """
        data = rpc.encode(message) + b"\n"
        stream = self.stream
        if stream is None or self._connection.closed:
            raise self._connection.closed_error()
        if self._poll is None:  # Windows: pipes cannot be non-blocking, so a write waits for the server
            self._write_blocking(stream, data)
            return
        if not self._queue and not self._tail and self._lock.acquire(False):
            # The pipe is free and nothing waits for it: write the line straight away. Only when
            # the pipe does not take all of it is the general path (queue, tail, deadline) needed.
            if not (self._queue or self._tail):
                self._write_direct(message, data, deadline, cancel)
                return
            self._lock.release()  # another writer queued a line just before we took the lock
        self._write_shared(message, data, deadline, cancel)

    #: The wire's timed write is the same method: every write here is bounded by its deadline.
    timed_write = write

    def abandon(self, request_id: RequestId, reason: Any, send_cancelled: SendCancelled) -> None:
        """The wire's abandon: a request still queued is taken back (the server never sees it);
        one already on its way is cancelled with ``send_cancelled``."""
        if not self.withdraw(request_id):
            send_cancelled(request_id, reason)

    def withdraw(self, request_id: RequestId) -> bool:
        """Take back a request whose line is still queued; True if it never reached the pipe."""
        for line in list(self._queue):
            if line.request_id == request_id and type(line.request_id) is type(request_id):
                try:
                    self._queue.remove(line)
                except ValueError:  # the writer took it meanwhile: it is on its way
                    return False
                return True
        return False

    def _write_blocking(self, stream: IO[bytes], data: bytes) -> None:
        """Windows: one write that waits for the server (pipes there cannot be non-blocking)."""
        with self._lock:
            try:
                stream.write(data)
                stream.flush()
            except (OSError, ValueError) as exc:  # broken pipe, or stdin already closed
                raise self._broken(exc) from exc

    def _write_shared(self, message: JSONObject, data: bytes, deadline: float,
                      cancel: Optional[CancelToken]) -> None:
        """The general path: a short line joins the queue (sent by whoever holds the pipe); a long one,
        or one that finds the queue full, waits for the pipe by ``deadline`` itself."""
        line = _Line(data, message.get("id") if "method" in message else None)
        lock = self._lock
        if len(data) <= SHARE_LIMIT and len(self._queue) < QUEUE_LIMIT:
            self._queue.append(line)
            if not lock.acquire(False):
                return  # the thread writing now sends it (it looks at the queue again before it leaves)
        else:
            if not lock.acquire(False):
                self._wait_for_pipe(deadline, cancel)
            self._queue.append(line)
        self._finish(line, deadline, cancel)

    # -- with the lock held --------------------------------------------------------------

    def _write_direct(self, message: JSONObject, data: bytes, deadline: float,
                      cancel: Optional[CancelToken]) -> None:
        """The pipe was free and nothing queued: write the line now; what the pipe does not take
        goes the general way (tail or queue, by ``deadline``). Lets go of the pipe."""
        try:
            written = self._write_now(data)
        except BaseException:
            self._lock.release()
            raise
        if written == len(data):
            self._lock.release()
            if self._queue or self._tail_shared:
                self._after_release()
            return
        line = _Line(data, message.get("id") if "method" in message else None)
        if written:  # part of it is out: the rest must follow before any other line
            line.taken = True
            self._tail = data[written:]
        else:  # none of it is out: queued first (it held the pipe before any line queued
            self._queue.appendleft(line)  # meanwhile), so it may still be withdrawn or dropped
        self._finish(line, deadline, cancel)

    def _write_now(self, data: bytes) -> int:
        """One write of ``data`` to the pipe; the bytes it took (0 when the pipe is full)."""
        with self._io_lock:
            fd = self._fd
            if fd is None:
                failure: BaseException = ValueError("write to closed file")
            else:
                try:
                    return os.write(fd, data)
                except BlockingIOError:
                    return 0
                except OSError as exc:  # broken pipe: the server is gone
                    failure = exc
        raise self._broken(failure, unsent=True) from failure  # nothing of this line was written

    def _finish(self, line: _Line, deadline: float, cancel: Optional[CancelToken]) -> None:
        """Send ``line`` (queued, or begun in the tail) by ``deadline``, then let go of the pipe."""
        try:
            out = self._pump(line, deadline, cancel)
        except _PipeGone as gone:
            raise self._broken(gone.cause, unsent=not line.taken) from gone.cause
        finally:
            self._lock.release()
            # Even when this writer is leaving with an error (a Ctrl-C while it waited on the
            # pipe, say), lines others left to it must still go out.
            if self._queue or self._tail_shared:
                self._after_release()
        if not out:
            raise _gave_up(cancel)

    def _wait_for_pipe(self, deadline: float, cancel: Optional[CancelToken]) -> None:
        """Take the lock by ``deadline``, in slices, so a cancel or a close is noticed while waiting."""
        while True:
            if self._connection.closed:
                raise self._connection.closed_error()
            if cancel is not None and cancel.cancelled:
                raise RequestCancelled(cancel.reason)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise _gave_up(cancel)
            if self._lock.acquire(True, min(remaining, SLICE_SECONDS)):
                return

    def _pump(self, mine: _Line, deadline: float, cancel: Optional[CancelToken]) -> bool:
        """Send the tail and the queue, ``mine`` among them; True once ``mine`` is out.

        Waits on a full pipe only while ``mine`` is not out (and the deadline and
        ``cancel`` allow); after that it sends only what the pipe takes at once.
        """
        # ``left``: bytes of the tail up to the end of ``mine``, once it is in the tail; ``exact``:
        # ``left`` ends exactly at ``mine`` (not just somewhere past it).
        left, out, exact = self._begun(mine)
        while True:
            if not self._tail:
                batch = self._take_queue()
                if not batch:
                    return out
                left = self._load(batch, mine, left, out)
            # Wait on the pipe only for the bytes up to the end of ``mine``; past them, take what fits.
            if out:
                self._push(-math.inf, None)
            else:
                left, out = self._push_mine(deadline, cancel, left)
            if self._tail:  # the pipe is full: stop (for good, if ``mine`` is out or we gave up)
                if not out:
                    self._drop_unsent(mine, left if exact else None)
                return out

    def _begun(self, mine: _Line) -> Tuple[Optional[int], bool, bool]:
        """``(left, out, exact)`` of :meth:`_pump` as it starts: ``mine`` is still queued, or another
        writer took it before this one got the pipe, and it is out or somewhere in the tail."""
        if not mine.taken:
            return None, False, True
        if not self._tail:
            return None, True, False
        return len(self._tail), False, False

    def _load(self, batch: List[_Line], mine: _Line, left: Optional[int], out: bool) -> Optional[int]:
        """Make ``batch`` the tail (shared, unless it is ``mine`` alone); ``left`` as it is after:
        found in the batch if ``mine`` is there and was not placed before."""
        if left is None and not out:
            left = _end_of(mine, batch)
        self._tail = batch[0].data if len(batch) == 1 else b"".join(line.data for line in batch)
        self._tail_shared = left is None or len(batch) > 1
        return left

    def _push_mine(self, deadline: float, cancel: Optional[CancelToken],
                   left: Optional[int]) -> Tuple[Optional[int], bool]:
        """Push the tail, waiting on the pipe for the ``left`` bytes up to the end of a writer's
        line; ``(left, out)`` after (``left`` None once the line is out, or when not yet known)."""
        sent = self._push(deadline, cancel, left)
        if left is None:
            return None, False
        left -= sent
        return (None, True) if left <= 0 else (left, False)

    def _drop_unsent(self, mine: _Line, left: Optional[int]) -> None:
        """A writer gave up: if no byte of its line went out, the line is never sent."""
        if not mine.taken:
            try:
                self._queue.remove(mine)
            except ValueError:
                pass
            return
        if left is None:
            return
        begin = left - len(mine.data)  # where the line starts in the tail; < 0 once part of it went out
        if begin >= 0:
            self._tail = self._tail[:begin] + self._tail[left:]
            if not self._tail:
                self._tail_shared = False

    def _take_queue(self) -> List[_Line]:
        queue = self._queue
        batch = []
        while queue:
            try:
                line = queue.popleft()
            except IndexError:  # withdrawn meanwhile
                break
            line.taken = True
            batch.append(line)
        return batch

    def _push(self, deadline: float, cancel: Optional[CancelToken], wait_for: Optional[int] = None) -> int:
        """Write from ``_tail`` until it is empty or the pipe is full past ``deadline``; bytes sent.

        With ``wait_for``, the pipe is waited on only until that many bytes are out.
        """
        view = memoryview(self._tail)
        total = 0
        try:
            while view:
                written = self._write_some(view)
                total += written
                view = view[written:]
                if not view or self._stop_waiting(total, wait_for, deadline, cancel):
                    break
                # Short slices, so a cancel or a close is noticed while the server does not read.
                self._poll.poll(SLICE_SECONDS * 1000)
        finally:
            self._tail = bytes(view) if view else b""
            if not self._tail:
                self._tail_shared = False
        return total

    def _write_some(self, view: memoryview) -> int:
        """One write from ``view`` to the pipe; the bytes it took (0 when the pipe is full).

        Raises:
            _PipeGone: the pipe broke or was detached.
        """
        with self._io_lock:
            fd = self._fd
            if fd is None:
                failure: BaseException = ValueError("write to closed file")
            else:
                try:
                    return os.write(fd, view)
                except BlockingIOError:
                    return 0
                except OSError as exc:  # broken pipe: the server is gone
                    failure = exc
        raise _PipeGone(failure)

    def _stop_waiting(self, total: int, wait_for: Optional[int], deadline: float,
                      cancel: Optional[CancelToken]) -> bool:
        """A full pipe is no longer waited on: the bytes waited for are out, the deadline passed, or
        ``cancel`` fired.

        Raises:
            TransportClosed: the connection closed meanwhile.
        """
        if self._connection.closed:
            raise self._connection.closed_error()
        return (wait_for is not None and total >= wait_for) or time.monotonic() >= deadline \
            or (cancel is not None and cancel.cancelled)

    # -- after letting go ----------------------------------------------------------------

    def _after_release(self) -> None:
        """Lines queued by threads that found the pipe busy are sent, or handed to the flusher."""
        while self._queue or self._tail_shared:
            if self._connection.closed or not self._lock.acquire(False):
                return  # closed, or whoever holds the pipe now does this when it lets go
            try:
                self._push_all(-math.inf)
                stuck = bool(self._tail)
            except (TransportClosed, _PipeGone):
                return  # the connection is going: its waiters are told by the reader
            finally:
                self._lock.release()
            if stuck:
                if self._tail_shared or self._queue:
                    self._start_flusher()
                return

    def _push_all(self, deadline: float) -> None:
        while True:
            if not self._tail:
                batch = self._take_queue()
                if not batch:
                    return
                self._tail = b"".join(line.data for line in batch)
                self._tail_shared = True
            self._push(deadline, None)
            if self._tail:
                return

    def _start_flusher(self) -> None:
        with self._handover:
            if self._flusher is None and not self._connection.closed:
                self._flusher = threading.Thread(target=self._flush, name=f"mcpsync-stdio-flush[{self._name}]",
                                                 daemon=True)
                self._flusher.start()

    def _flush(self) -> None:
        """Flusher thread: send what others queued while the server is slow to read, then end."""
        try:
            while not self._connection.closed:
                if not self._lock.acquire(True, SLICE_SECONDS):
                    continue
                try:
                    self._push_all(math.inf)
                finally:
                    self._lock.release()
                with self._handover:
                    if not (self._queue or self._tail_shared):
                        self._flusher = None
                        return
        except (TransportClosed, _PipeGone) as exc:
            log.debug("[%s] Flusher stopped: %s", self._name, exc)
        with self._handover:
            self._flusher = None

    def _broken(self, exc: BaseException, unsent: bool = False) -> TransportClosed:
        """The error for a write that failed with ``exc``; ``unsent``: no byte of the line reached the pipe."""
        explain = self._explain_break
        error = explain(exc) if explain is not None else None
        if error is None:
            error = ConnectionLost(f"Transport closed: cannot write to the server: {_os_reason(exc)}")
        error.unsent = unsent  # a new error for each write (the explanation is built anew each time)
        return error


def _os_reason(exc: BaseException) -> str:
    """An OS error in words ("Broken pipe"), not its repr."""
    return exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc) or type(exc).__name__


def _gave_up(cancel: Optional[CancelToken]) -> Exception:
    if cancel is not None and cancel.cancelled:
        return RequestCancelled(cancel.reason)
    return RequestTimeout("Write timeout: the server is not reading its input")
