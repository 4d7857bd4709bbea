"""Noticing that a stdio server exited while its stdout stays open: one thread for every server.

Usually a stdio transport's reader sees end-of-file when its server exits. But a
process the server started (a launcher's helper, a forgotten grandchild) may hold
the pipe open after the server died, and then no read ever ends. Each server's
exit is watched for that case, and ``grace`` seconds after it, unless the
transport is already shutting down, ``lost()`` is called (on a short-lived thread
of its own, since closing a transport waits for its threads).

Where the platform has process file descriptors (Linux 5.3 and later), one
watcher thread polls them all, so a Manager with a hundred servers has one exit
watcher, not a hundred. The thread starts with the first watch and ends with the
last, closing its descriptors. Elsewhere each watch gets a thread that waits for
its own process, as before.

Thread safety: :func:`watch` and :meth:`Watch.cancel` may be called from any thread.
"""

from __future__ import annotations

import os
import threading
import time
from typing import TYPE_CHECKING, Callable, Dict, List, Optional, Tuple

if TYPE_CHECKING:
    import select  # annotations only: the watcher thread loads it
    import subprocess  # annotations only: it loads when a server starts

from .._log import getLogger
from .. import _fork

log = getLogger("mcpsync.transport.stdio")

__all__ = ["Watch", "watch"]

Lost = Callable[[], None]


class Watch:
    """One server's exit being watched; :meth:`cancel` it once the transport shuts down."""

    __slots__ = ("proc", "lost", "grace", "shutting_down", "fd", "due", "cancelled", "thread")

    def __init__(self, proc: "subprocess.Popen[bytes]", lost: Lost, grace: float,
                 shutting_down: threading.Event) -> None:
        self.proc = proc
        self.lost = lost
        self.grace = grace
        self.shutting_down = shutting_down
        self.fd = -1  # its process file descriptor, while the shared watcher polls it
        self.due: Optional[float] = None  # when the process exited, plus ``grace``
        self.cancelled = False
        self.thread: Optional[threading.Thread] = None  # its own waiting thread, without pidfds

    def cancel(self) -> None:
        """Stop watching (idempotent); the shared watcher closes the descriptor."""
        self.cancelled = True
        if self.fd >= 0:
            _watcher.changed()

    def join(self, timeout: float) -> None:
        """Wait for this watch's own thread, if it has one (never the shared watcher)."""
        thread = self.thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)


def watch(proc: "subprocess.Popen[bytes]", lost: Lost, grace: float, shutting_down: threading.Event) -> Watch:
    """Call ``lost()`` ``grace`` seconds after ``proc`` exits, unless ``shutting_down`` is set by then."""
    entry = Watch(proc, lost, grace, shutting_down)
    fd = _pidfd(proc.pid)
    if fd >= 0:
        entry.fd = fd
        try:
            _watcher.add(entry)
            return entry
        except OSError:  # no descriptor left for the watcher's wake-up pipe: watch this one alone
            entry.fd = -1
            os.close(fd)
    entry.thread = threading.Thread(target=_wait_one, args=(entry,), name=f"mcpsync-stdio-exit[{proc.pid}]",
                                    daemon=True)
    entry.thread.start()
    return entry


def _pidfd(pid: int) -> int:
    opener = getattr(os, "pidfd_open", None)
    if opener is None:
        return -1
    try:
        return int(opener(pid))
    except OSError:  # an old kernel, a sandbox that forbids it, or the process is already reaped
        return -1


def _wait_one(entry: Watch) -> None:
    """A watch's own thread, where there are no process file descriptors."""
    entry.proc.wait()
    if entry.shutting_down.wait(entry.grace) or entry.cancelled:
        return
    _report(entry)


def _report(entry: Watch) -> None:
    try:
        entry.lost()
    except Exception:  # lost() closes the transport: nothing here may stop the watcher
        log.debug("Closing a transport whose server exited failed", exc_info=True)


def _wait(poller: "select.poll", polled: Dict[int, Watch], wake_r: int, waits: List[float]) -> None:
    """The watcher thread's wait: until a polled server exits (its reader then has ``grace`` seconds
    to see EOF), the wake-up pipe is written, or the soonest grace in ``waits`` is over."""
    timeout = max(0.0, min(waits)) * 1000 if waits else None
    for fd, _events in poller.poll(timeout):
        if fd == wake_r:
            try:
                os.read(wake_r, 4096)
            except (BlockingIOError, OSError):
                pass
            continue
        exited = polled.pop(fd, None)
        if exited is not None:
            poller.unregister(fd)
            exited.due = time.monotonic() + exited.grace


class _SharedWatcher:
    """The one thread that polls every watched server's process file descriptor."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: Dict[int, Watch] = {}  # by descriptor
        self._thread: Optional[threading.Thread] = None
        self._wake_r = self._wake_w = -1  # a pipe that wakes the poll when the watches change

    def add(self, entry: Watch) -> None:
        with self._lock:
            if self._thread is None:
                self._wake_r, self._wake_w = os.pipe()
                os.set_blocking(self._wake_w, False)
                self._thread = threading.Thread(target=self._run, args=(self._wake_r,),
                                                name="mcpsync-stdio-exit", daemon=True)
                self._thread.start()
            else:
                self._poke()
            self._entries[entry.fd] = entry

    def changed(self) -> None:
        with self._lock:
            self._poke()

    def _poke(self) -> None:
        if self._wake_w >= 0:
            try:
                os.write(self._wake_w, b"x")
            except (BlockingIOError, OSError):  # full: a wake-up is pending anyway
                pass

    def _run(self, wake_r: int) -> None:
        import select

        poller = select.poll()
        poller.register(wake_r, select.POLLIN)
        polled: Dict[int, Watch] = {}
        try:
            while True:
                with self._lock:
                    self._sync(poller, polled)
                    if not self._entries:
                        # The last watch is gone: end, and let the next watch start a new thread.
                        self._thread = None
                        os.close(self._wake_w)
                        self._wake_r = self._wake_w = -1  # this thread closes its read end as it leaves
                        return
                    due, waits = self._take_due()
                for entry in due:  # exited ``grace`` ago and not shutting down: close it, off this thread
                    threading.Thread(target=_report, args=(entry,), name="mcpsync-stdio-lost", daemon=True).start()
                if not due:
                    _wait(poller, polled, wake_r, waits)
        finally:
            os.close(wake_r)

    def _sync(self, poller: "select.poll", polled: Dict[int, Watch]) -> None:
        """With the lock held: forget the watches cancelled, or whose server exited while shutting
        down; poll the pipe of each new one (whose exit is not yet seen)."""
        import select

        for fd, entry in list(self._entries.items()):
            if entry.cancelled or (entry.due is not None and entry.shutting_down.is_set()):
                del self._entries[fd]
                if fd in polled:
                    poller.unregister(fd)
                    del polled[fd]
                os.close(fd)
            elif entry.due is None and fd not in polled:
                poller.register(fd, select.POLLIN)
                polled[fd] = entry

    def _take_due(self) -> Tuple[List[Watch], List[float]]:
        """With the lock held: take the watches whose grace after the exit is over; and the seconds
        until each other exited one's is."""
        now = time.monotonic()
        due: List[Watch] = []
        for fd, entry in list(self._entries.items()):
            if entry.due is not None and entry.due <= now:
                del self._entries[fd]
                os.close(fd)
                due.append(entry)
        waits = [entry.due - now for entry in self._entries.values() if entry.due is not None]
        return due, waits

    def after_fork(self) -> None:
        """In a forked child: the thread is gone and the servers are the parent's. Close the copies."""
        entries, self._entries = self._entries, {}
        for fd in [*entries, self._wake_w]:
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass
        if self._thread is not None and self._wake_r >= 0:
            try:
                os.close(self._wake_r)
            except OSError:
                pass
        self._lock = threading.Lock()
        self._thread = None
        self._wake_r = self._wake_w = -1


_watcher = _SharedWatcher()
_fork.on_child(_watcher.after_fork)
