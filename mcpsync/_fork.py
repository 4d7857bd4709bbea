"""What a forked child does with the mcpsync objects it inherited: one hook, run once per fork.

``os.fork()`` copies every object of the parent into the child, but none of its threads.
A client's transport in the child would still point at the parent's pipes and sockets, its
reader thread would be gone, and a lock another thread held at that moment would stay held
for ever. So every transport, client and manager registers here when it is built
(:func:`watch`), and the one ``after_in_child`` hook this module installs calls each
living object's named method in the child, in the order they registered (transports
before the clients built on them). Those methods take no lock that was inherited: they
replace what they need with new objects.

:data:`generation` counts the forks this process descends from; code that cannot be reached
by the hook compares it with the value it saw (an integer comparison, no system call).

This is a leaf module: it imports nothing of mcpsync.
"""

from __future__ import annotations

import itertools
from ._log import getLogger
import os
import threading
import weakref
from typing import Any, Callable, Dict, List, Tuple

__all__ = ["AFTER_FORK_CHOICES", "check_after_fork", "generation", "on_child", "parent_pid", "watch"]

log = getLogger("mcpsync.fork")

#: The ``after_fork=`` values of ``connect()``, ``Client`` and ``Manager``.
AFTER_FORK_CHOICES = ("reconnect", "raise")

#: How many forks separate this process from the one that imported mcpsync (0 there).
generation = 0
#: The pid of the process the current objects were inherited from (this one's before any fork).
parent_pid = os.getpid()

_keys = itertools.count()
_registry_lock = threading.Lock()
_watched: Dict[int, Tuple["weakref.ref[Any]", str]] = {}
_module_hooks: List[Callable[[], None]] = []


def check_after_fork(value: str) -> str:
    """``value`` if it is an accepted ``after_fork=`` choice; else ValueError saying which are."""
    if value not in AFTER_FORK_CHOICES:
        raise ValueError(f"after_fork must be 'reconnect' or 'raise', not {value!r}")
    return value


def watch(obj: Any, method: str) -> None:
    """In every forked child, call ``obj.<method>()`` (while ``obj`` lives; held weakly)."""
    with _registry_lock:  # itertools.count is not atomic on free-threaded 3.13
        key = next(_keys)

    def forget(_ref: "weakref.ref[Any]") -> None:
        _watched.pop(key, None)

    _watched[key] = (weakref.ref(obj, forget), method)


def on_child(hook: Callable[[], None]) -> None:
    """In every forked child, call ``hook()`` first, before the objects' methods (module state: locks)."""
    _module_hooks.append(hook)


def _in_child() -> None:
    global generation, parent_pid
    generation += 1
    parent_pid = os.getppid()
    for hook in list(_module_hooks):
        _run(hook)
    for ref, method in list(_watched.values()):
        obj = ref()
        if obj is not None:
            _run(getattr(obj, method))


def _run(step: Callable[[], None]) -> None:
    try:
        step()
    except Exception:  # one object's failure must not stop the others, nor the fork
        log.exception("Resetting an inherited mcpsync object after fork failed")


if hasattr(os, "register_at_fork"):  # not on Windows, which has no fork
    os.register_at_fork(after_in_child=_in_child)
