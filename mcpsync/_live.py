"""A set of live objects that any thread may add to, drop from and list: held weakly, under a lock.

``weakref.WeakSet`` is written in Python and was safe to share between threads only because the
GIL made each of its steps atomic; on free-threaded Python (PEP 703) two threads adding while a
third lists it (an exit hook, a fork hook) can lose an entry. :class:`LiveSet` keeps one lock
around every step. Its callbacks (an object collected) may run on any thread.

This is a leaf module: it imports nothing of mcpsync.
"""

from __future__ import annotations

import threading
import weakref
from typing import Generic, List, TypeVar

__all__ = ["LiveSet"]

T = TypeVar("T")


class LiveSet(Generic[T]):
    """Weakly held objects; ``add``, ``discard`` and ``snapshot`` are safe from any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: "weakref.WeakSet[T]" = weakref.WeakSet()

    def add(self, item: T) -> None:
        with self._lock:
            self._items.add(item)

    def discard(self, item: T) -> None:
        with self._lock:
            self._items.discard(item)

    def snapshot(self) -> List[T]:
        """The live objects now, as a list the caller may iterate while others change the set."""
        with self._lock:
            return list(self._items)

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def reset_after_fork(self) -> None:
        """A new lock: the parent's may have been held by a thread that does not exist here."""
        self._lock = threading.Lock()
