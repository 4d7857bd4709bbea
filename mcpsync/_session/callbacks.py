"""The user's callbacks, checked when they are given: a wrong signature fails at the call site.

A callback mcpsync calls later, on its dispatcher thread (a progress callback, a
notification handler, a subscription's callback, a client's handlers), would
otherwise raise its ``TypeError`` there, where only a configured logger sees it.
:func:`check_callback` asks :func:`inspect.signature` whether the callable takes the
arguments it will be given and raises a ``TypeError`` at once, naming the signature
expected. What it cannot inspect (some builtins and C callables) is accepted; ``*args``,
defaults, ``functools.partial`` objects, bound methods and objects with ``__call__``
are judged as Python calls them.

Runs only when a callback is given, never per message; a plain call that passes no
callback costs nothing here, and a function (or a bound method of one) found fit once is
remembered (weakly), so a call that passes the same callback again does not inspect it
again. Thread-safe; no I/O.
"""

from __future__ import annotations

import threading
import types
import weakref
from typing import Any, Optional

__all__ = ["PROGRESS_SIGNATURE", "check_callback"]

#: How every progress callback is called (``total`` and ``message`` may be None).
PROGRESS_SIGNATURE = "(progress, total, message)"


def check_callback(callback: Any, role: str, params: str, *, optional: bool = True, called: str = "") -> None:
    """Raise ``TypeError`` unless ``callback`` can be called with the positional ``params``.

    ``role`` names the callback in the message (``"on_progress"``), ``params`` is its
    signature as documented, e.g. ``"(progress, total, message)"``: the callback will be
    called with that many positional arguments. ``called`` is the name the message shows
    it called by (default ``role``). ``None`` passes when ``optional``.

    Raises:
        TypeError: ``callback`` is not callable, or cannot take those arguments (the text
            names the callback, what it takes and what it must take).
    """
    if callback is None and optional:
        return
    if not callable(callback):
        raise TypeError(f"{role} must be a callable taking {params}, not {type(callback).__name__}")
    count = len([name for name in params.strip("()").split(",") if name.strip()])
    function = getattr(callback, "__func__", callback)
    key = None
    if isinstance(function, types.FunctionType):
        key = count + (1 if function is not callback else 0)  # what the function itself must take
        with _lock:
            if key in _fit.get(function, ()):
                return
    import inspect  # here, not at import: it costs `import mcpsync` about 5 ms

    try:
        signature = inspect.signature(callback)
    except (TypeError, ValueError):  # a builtin or C callable without a signature: trust it
        return
    try:
        signature.bind(*range(count))
    except TypeError as exc:
        raise TypeError(f"{role} is called as {called or role}{params}, but {_name(callback)} takes "
                        f"{signature}: {exc}; give it {count} positional parameter{'s' if count != 1 else ''} "
                        f"(or *args)") from None
    if key is not None:
        with _lock:
            _fit[function] = _fit.get(function, frozenset()) | {key}


_lock = threading.Lock()
#: function -> the positional argument counts it was found to take (its signature rarely changes).
_fit: "weakref.WeakKeyDictionary[types.FunctionType, frozenset[int]]" = weakref.WeakKeyDictionary()


def _name(callback: Any) -> str:
    name: Optional[str] = getattr(callback, "__qualname__", None) or getattr(callback, "__name__", None)
    if name is None:
        name = type(callback).__name__
    return name
