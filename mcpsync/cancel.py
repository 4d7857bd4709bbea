"""CancelToken: a thread-safe, one-shot cancellation signal (the AbortSignal of mcpsync)."""

from __future__ import annotations

from ._log import getLogger
import threading
from typing import Any, Callable, List, Optional

__all__ = ["CancelToken"]

log = getLogger(__name__)

CancelCallback = Callable[[Any], None]


class CancelToken:
    """A signal that one or more blocking calls should stop waiting.

    Create one, pass it as ``cancel=`` to any number of calls, and call
    :meth:`cancel` from any thread. Every call parked on it wakes at once with
    :class:`~mcpsync.RequestCancelled`; a call started with an already
    cancelled token raises before sending anything.

    Thread safety: every method may be called from any thread. Callbacks run
    on the thread that cancels (or at once, on the registering thread, if the
    token is already cancelled); a callback that raises is logged and ignored.
    """

    __slots__ = ("_lock", "_cancelled", "_reason", "_callbacks", "_event", "__weakref__")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cancelled = False
        self._reason: Any = None
        self._callbacks: List[CancelCallback] = []
        self._event = threading.Event()

    def __repr__(self) -> str:
        state = f"cancelled, reason={self._reason!r}" if self._cancelled else "active"
        return f"<CancelToken {state}>"

    @property
    def cancelled(self) -> bool:
        """Whether :meth:`cancel` has been called."""
        return self._cancelled

    @property
    def reason(self) -> Any:
        """The reason given to :meth:`cancel` (``None`` until then, or if none was given)."""
        return self._reason

    def cancel(self, reason: Any = None) -> None:
        """Fire the token. Only the first call has an effect; it never blocks."""
        with self._lock:
            if self._cancelled:
                return
            self._cancelled = True
            self._reason = reason
            callbacks, self._callbacks = self._callbacks, []
        self._event.set()
        for callback in callbacks:
            _run_callback(callback, reason)

    def wait(self, timeout: Optional[float] = None) -> bool:
        """Block until the token fires or ``timeout`` seconds pass; return :attr:`cancelled`."""
        return self._event.wait(timeout)

    def add_callback(self, callback: CancelCallback) -> Callable[[], None]:
        """Call ``callback(reason)`` when the token fires.

        Returns a function that unregisters the callback (harmless to call twice).
        """
        with self._lock:
            if not self._cancelled:
                self._callbacks.append(callback)
                return lambda: self._remove(callback)
        _run_callback(callback, self._reason)
        return lambda: None

    def _remove(self, callback: CancelCallback) -> None:
        with self._lock:
            try:
                self._callbacks.remove(callback)
            except ValueError:
                pass

    def raise_if_cancelled(self) -> None:
        """Raise :class:`~mcpsync.RequestCancelled` if the token has fired."""
        if self._cancelled:
            from .exceptions import RequestCancelled

            raise RequestCancelled(self._reason)

    @classmethod
    def any(cls, *tokens: "CancelToken") -> "CancelToken":
        """A token that fires as soon as any of ``tokens`` fires, with its reason."""
        combined = cls()
        for token in tokens:
            token.add_callback(combined.cancel)
            if combined.cancelled:
                break
        return combined


def _run_callback(callback: CancelCallback, reason: Any) -> None:
    try:
        callback(reason)
    except Exception:  # a user callback must never break cancel()
        log.exception("CancelToken callback %r raised", callback)
