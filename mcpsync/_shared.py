"""Shared connections: one live client (or manager) per set of settings in a process, lent to handles.

A Dask or Ray task that receives a client as an argument unpickles a copy of its own; without
sharing, every copy starts its own server (or HTTP session) and ends it when the copy is
collected. Here the unpickler asks :func:`acquire` for the *core* of those settings (the pickled
settings' bytes are the key): the first copy builds it (it connects on first use, as any
unpickled client does), the next ones get the same core. Each copy holds a :class:`Lease`;
when the last lease is released the core stays open for its ``idle_timeout`` seconds (a task
that follows soon reuses it), then one reaper thread closes it.

Never across a fork: in a forked child the pool starts empty (new copies build new cores),
and a lease inherited from the parent releases the child's copy of its core (which the core's
own fork hook already cut from the parent's connection) and closes it at once when it was the
last one, never waiting and never touching the parent's pool.

This module knows no client: a core is anything with a ``close()``.
"""

from __future__ import annotations

import os
import threading
import time
import weakref
from typing import Any, Callable, Dict, List, Optional, Tuple

from ._log import getLogger
from . import _fork

__all__ = ["DEFAULT_IDLE_TIMEOUT", "ENV_OPT_OUT", "Lease", "acquire", "check_idle_timeout", "close_idle", "detach",
           "enabled", "is_handle", "key_of", "lend", "stats"]

log = getLogger("mcpsync.shared")

#: Seconds a shared connection nobody holds stays open for the next task.
DEFAULT_IDLE_TIMEOUT = 300.0
#: ``0`` (or ``false``, ``no``, ``off``) in a worker's environment: the copies unpickled there share nothing.
ENV_OPT_OUT = "MCPSYNC_SHARE_CONNECTIONS"


def check_idle_timeout(value: Optional[float]) -> float:
    """``value`` (None: the default) as seconds; ValueError for a negative or non-number one."""
    if value is None:
        return DEFAULT_IDLE_TIMEOUT
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value or value < 0:
        raise ValueError(f"idle_timeout must be a number of seconds >= 0 (or None for {DEFAULT_IDLE_TIMEOUT:g}), "
                         f"not {value!r}")
    return float(value)


def enabled() -> bool:
    """False when this process's environment opts out (:data:`ENV_OPT_OUT`)."""
    return os.environ.get(ENV_OPT_OUT, "1").strip().lower() not in ("0", "false", "no", "off")


class _Entry:
    """One core and how many leases hold it."""

    __slots__ = ("key", "core", "refs", "idle_timeout", "idle_until", "closed")

    def __init__(self, key: bytes, core: Any, idle_timeout: float) -> None:
        self.key = key
        self.core = core
        self.refs = 0
        self.idle_timeout = idle_timeout
        self.idle_until: Optional[float] = None
        self.closed = False


class Lease:
    """One handle's hold on a shared core; :meth:`release` once (later calls do nothing)."""

    __slots__ = ("_entry", "__weakref__")

    def __init__(self, entry: _Entry) -> None:
        self._entry: Optional[_Entry] = entry

    @property
    def core(self) -> Any:
        entry = self._entry
        return None if entry is None else entry.core

    def release(self) -> None:
        """Let go of the core: the last lease starts its idle time (or closes it at once when it is no longer
        the pool's: inherited across a fork, or replaced because it broke)."""
        with _pool.lock:
            entry, self._entry = self._entry, None
            if entry is None or entry.closed:
                return
            entry.refs -= 1
            if entry.refs > 0:
                return
            pooled = _pool.entries.get(entry.key) is entry  # not after a fork, nor once found broken
            if pooled and entry.idle_timeout > 0:
                entry.idle_until = time.monotonic() + entry.idle_timeout
                _pool.wake_reaper_locked()
                return
            entry.closed = True
            if pooled:
                del _pool.entries[entry.key]
        _close(entry)


class _Pool:
    # Re-entrant: a copy's finalizer (its release) may run in the middle of any allocation, inside
    # this lock too, when the garbage collector finds the copy in a reference cycle.
    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.cond = threading.Condition(self.lock)
        self.entries: Dict[bytes, _Entry] = {}
        self.reaper: Optional[threading.Thread] = None

    def wake_reaper_locked(self) -> None:
        if self.reaper is None:
            self.reaper = threading.Thread(target=self._reap, name="mcpsync-shared-idle", daemon=True)
            self.reaper.start()
        else:
            self.cond.notify_all()

    def _reap(self) -> None:
        """Close the cores whose idle time ran out; end when none is idle (a later release starts another)."""
        while True:
            expired: List[_Entry] = []
            with self.lock:
                now = time.monotonic()
                waits = []
                for entry in list(self.entries.values()):
                    if entry.refs > 0 or entry.idle_until is None:
                        continue
                    if entry.idle_until <= now:
                        entry.closed = True
                        del self.entries[entry.key]
                        expired.append(entry)
                    else:
                        waits.append(entry.idle_until - now)
                if not expired:
                    if not waits:
                        self.reaper = None
                        return
                    self.cond.wait(min(waits))
                    continue
            for entry in expired:
                _close(entry)

    def reset_after_fork(self) -> None:
        """In a forked child: an empty pool and new locks (the parent's reaper does not exist here)."""
        self.lock = threading.RLock()
        self.cond = threading.Condition(self.lock)
        self.entries = {}
        self.reaper = None


_pool = _Pool()
_fork.on_child(_pool.reset_after_fork)


def _close(entry: _Entry) -> None:
    try:
        entry.core.close()
    except Exception:  # the reaper must go on with the others
        log.exception("Closing an idle shared connection failed")


def acquire(key: bytes, build: Callable[[], Tuple[Any, float]],
            usable: Callable[[Any], bool]) -> Tuple[Any, Lease]:
    """The live core for ``key`` and a new lease on it; ``build()`` gives a new core and its idle timeout
    when there is none, or when ``usable(core)`` says the pool's is broken (its server died, say: the
    next copy must not inherit that). A broken core stays with the copies that hold it, and is closed
    when the last lets go.

    ``build`` runs outside the pool's lock (it may import and run the user's unpickling code); of
    two threads building the same key at once, one core is kept and the other closed.
    """
    with _pool.lock:
        entry, broken = _usable_locked(key, usable)
        if entry is not None:
            return entry.core, _lease_locked(entry)
    _close_all(broken)
    core, idle_timeout = build()
    with _pool.lock:
        entry, broken = _usable_locked(key, usable)
        if entry is None:
            entry = _pool.entries[key] = _Entry(key, core, idle_timeout)
            return core, _lease_locked(entry)
        lease = _lease_locked(entry)
    _close_all([*broken, _Entry(key, core, idle_timeout)])  # the other thread's core won
    return entry.core, lease


def _usable_locked(key: bytes, usable: Callable[[Any], bool]) -> Tuple[Optional[_Entry], List[_Entry]]:
    """The pool's entry for ``key`` if its core is usable; else it leaves the pool (closed at once when
    nobody holds it: the second item, for the caller to close outside the lock)."""
    entry = _pool.entries.get(key)
    if entry is None:
        return None, []
    if usable(entry.core):
        return entry, []
    del _pool.entries[key]
    if entry.refs > 0:  # its holders close it when the last lets go
        return None, []
    entry.closed = True
    return None, [entry]


def _close_all(entries: List[_Entry]) -> None:
    for entry in entries:
        _close(entry)


def _lease_locked(entry: _Entry) -> Lease:
    entry.refs += 1
    entry.idle_until = None
    return Lease(entry)


def close_idle() -> int:
    """Close now every shared core nobody holds (their idle time cut short); how many were closed.

    For a worker's teardown, and for the test suite's leak check: an idle core's server is kept on
    purpose, not leaked.
    """
    with _pool.lock:
        idle = [entry for entry in _pool.entries.values() if entry.refs == 0]
        for entry in idle:
            entry.closed = True
            del _pool.entries[entry.key]
        _pool.cond.notify_all()  # the reaper finds nothing left to wait for, and ends
    for entry in idle:
        _close(entry)
    return len(idle)


def stats() -> Dict[str, int]:
    """How many shared cores this process holds, and how many of them nobody holds now (for tests)."""
    with _pool.lock:
        return {"cores": len(_pool.entries), "idle": sum(1 for e in _pool.entries.values() if e.refs == 0)}


# -- handles: objects of the core's class whose attributes are the core's own dict ---------------------

_CORE_ID = "_shared_core_id"
_KEY = "_shared_key"


def key_of(obj: Any, args: Tuple[Any, ...]) -> bytes:
    """The sharing key of ``obj`` pickled as ``args``: a digest of ``args`` pickled by the standard
    pickler, here where everything in them can be found by name (a handler defined in a driver's
    ``__main__`` too); a core or handle keeps the key it was shared under, whatever its copies hold.

    Only the key is computed this way: ``args`` themselves are pickled by whatever pickler is at
    work (cloudpickle, under Dask and Ray, carries ``__main__`` functions by value).
    """
    kept = getattr(obj, "__dict__", {}).get(_KEY)
    if isinstance(kept, bytes):
        return kept
    import hashlib
    import pickle

    try:
        return hashlib.sha256(pickle.dumps(args, protocol=4)).digest()
    except Exception:  # not picklable by name here: this pickling's copies share only with each other
        return os.urandom(32)
_handles_lock = threading.Lock()
_handles: "weakref.WeakKeyDictionary[Any, weakref.finalize[Any, Any]]" = weakref.WeakKeyDictionary()


def _new_handles_lock() -> None:
    """In a forked child: the parent's lock may have been held by a thread that does not exist here."""
    global _handles_lock
    _handles_lock = threading.Lock()


_fork.on_child(_new_handles_lock)


def lend(core: Any, lease: Lease, key: bytes) -> Any:
    """A new handle on ``core`` (shared under ``key``): an object of its class sharing its attributes (so
    every method works on the one connection), whose collection or :func:`detach` releases ``lease``."""
    core.__dict__[_CORE_ID] = id(core)
    core.__dict__[_KEY] = key
    handle = object.__new__(type(core))
    handle.__dict__ = core.__dict__
    finalizer = weakref.finalize(handle, lease.release)
    finalizer.atexit = False  # at exit the transports' own hook closes the connections
    with _handles_lock:
        _handles[handle] = finalizer
    return handle


def is_handle(obj: Any) -> bool:
    """True for an object :func:`lend` made (also once detached); False for a core or a plain object."""
    core_id = getattr(obj, "__dict__", {}).get(_CORE_ID)
    return core_id is not None and core_id != id(obj)


def detach(obj: Any, make_closed: Callable[[], None]) -> bool:
    """For a handle: give it a copy of the shared attributes, let ``make_closed()`` (a method of ``obj``)
    turn that copy into a closed object of its own, and release its lease (once); True. False for
    anything else."""
    if not is_handle(obj):
        return False
    with _handles_lock:
        finalizer = _handles.pop(obj, None)
    if finalizer is None:  # released already: its attributes are its own, closed
        return True
    obj.__dict__ = dict(obj.__dict__)
    make_closed()
    finalizer()
    return True
