"""What one call carries besides its method and params: the call-options value and its deadline.

:class:`CallOptions` is built once where a call enters the library (a ``Client`` or
``Manager`` method) and travels whole, through the session and the transport, to the
engine. Nothing in between restates its fields as keywords.

Time is float seconds. ``timeout`` always bounds one request (its write and its wait);
``deadline`` bounds the whole operation a request is part of (a connect, a task-backed
call, a manager call that first waits for its server), so several requests can share it.
"""

from __future__ import annotations

import math
import time
from typing import Callable, NamedTuple, Optional

from ..cancel import CancelToken
from .jsonrpc import RequestId

__all__ = ["CallOptions", "DEFAULT_OPTIONS", "Deadline", "ProgressCallback"]

#: ``on_progress(progress, total, message)``: a request's progress notifications, on the dispatcher thread.
ProgressCallback = Callable[[float, Optional[float], Optional[str]], None]


class Deadline:
    """A point in monotonic time by which an operation must be done (``math.inf``: never).

    Immutable; safe to share between threads and between the requests of one operation.
    """

    __slots__ = ("at",)

    def __init__(self, at: float) -> None:
        self.at = at

    @classmethod
    def after(cls, seconds: Optional[float]) -> "Deadline":
        """The deadline ``seconds`` from now; ``None`` or ``math.inf`` for none."""
        if seconds is None or math.isinf(seconds):
            return NEVER
        return cls(time.monotonic() + seconds)

    def remaining(self) -> float:
        """Seconds left (may be negative once passed; ``math.inf`` for no deadline)."""
        return self.at - time.monotonic() if not math.isinf(self.at) else math.inf

    @property
    def expired(self) -> bool:
        return self.remaining() <= 0

    def __repr__(self) -> str:
        return "Deadline(never)" if math.isinf(self.at) else f"Deadline(in {self.remaining():.3f}s)"


NEVER = Deadline(math.inf)


class CallOptions(NamedTuple):
    """How one request is sent and waited for. Immutable: change a copy with ``_replace``.

    * ``timeout``: seconds for this request, its write and its wait together; ``None``
      takes the connection's default, ``math.inf`` waits for ever.
    * ``cancel``: a token whose firing abandons the request (the peer is told).
    * ``on_progress``: receives the request's progress notifications.
    * ``reset_timeout_on_progress``: each progress notification restarts ``timeout``
      (never past ``max_total_timeout`` or ``deadline``).
    * ``max_total_timeout``: a hard cap on this request, progress or not.
    * ``deadline``: the end of the whole operation this request belongs to.
    * ``on_request_id``: told the request's id before it is sent.
    * ``notify_cancel``: tell the peer when the request is abandoned (False for requests
      that must never be cancelled; the caller, which knows the protocol, decides).
    * ``max_output``: a cap in bytes on the result the caller is handed (the engine ignores it;
      the layer that builds the result applies it).
    """

    timeout: Optional[float] = None
    cancel: Optional[CancelToken] = None
    on_progress: Optional[ProgressCallback] = None
    reset_timeout_on_progress: bool = False
    max_total_timeout: Optional[float] = None
    deadline: Optional[Deadline] = None
    on_request_id: Optional[Callable[[RequestId], None]] = None
    notify_cancel: bool = True
    max_output: Optional[int] = None


#: The options of a call that sets none; shared, so a plain call builds nothing.
DEFAULT_OPTIONS = CallOptions()
