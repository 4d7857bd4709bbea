"""The delivery ledger: per request, whether any byte of it may have reached the server.

A request that failed may be sent again only when that cannot run it twice. This module
is the one place that answers it, for every path that would send a request again: a
manager's resend on a new connection, a session's retry after the server dropped the
session, the 2026-07-28 resend of a broken response stream. Each asks :func:`may_resend`.

What is recorded, per request id of one engine (see :class:`Ledger`):

* nothing: the request was handed to the wire, so the server may have read it, and run it.
  This is the default: what is not known to be safe is not safe.
* :data:`NEVER_LEFT`: the transport saw that no byte of it left this process (the
  connection was refused or timed out before the request was written, the pipe broke
  before its first byte, the transport was closed before the write).
* :data:`NOT_RUN`: the server answered that it did not run it (a 404 to a stale HTTP session).
* :data:`RESEND_REQUIRED`: the protocol requires the request be sent again (a 2026-07-28
  response stream that broke: such streams cannot be resumed). Only the session's one
  resend may act on this; nothing that reconnects may.

The engine stamps the verdict on the error it fails the request with
(:attr:`~mcpsync.TransportClosed.may_have_reached_server`, and a private mark read
here), so a caller above the engine (the manager) asks the error, not the transport.

Pure bookkeeping: no I/O, no MCP.
"""

from __future__ import annotations

import threading
from typing import Any, Dict, Optional

from ..exceptions import TransportClosed, TransportError
from .jsonrpc import RequestId

__all__ = ["NEVER_LEFT", "NOT_RUN", "RESEND_REQUIRED", "MAY_HAVE_RUN", "Ledger", "may_resend", "stamp",
           "verdict_of"]

#: No byte of the request left this process.
NEVER_LEFT = "never-left"
#: The server said it did not run the request (it refused the session it named).
NOT_RUN = "not-run"
#: The request's 2026-07-28 response stream broke: the spec has it sent again, once, with a new id.
RESEND_REQUIRED = "resend-required"
#: The server may have read the request: it is never sent again.
MAY_HAVE_RUN = "may-have-run"

_MARK = "_mcpsync_delivery"


class Ledger:
    """Verdicts of the requests of one engine that failed (the others need none).

    Transports record what they saw (:meth:`record`) before they fail the request; the
    engine reads it (:meth:`take`) when it fails the request's caller. Thread-safe.
    """

    __slots__ = ("_lock", "_verdicts")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._verdicts: Dict[RequestId, str] = {}

    def record(self, request_id: RequestId, verdict: str) -> None:
        """Note what is known of ``request_id``'s delivery. A verdict that lets a resend never
        replaces :data:`MAY_HAVE_RUN` (once a byte may have left, that stays true)."""
        with self._lock:
            if self._verdicts.get(request_id) != MAY_HAVE_RUN:
                self._verdicts[request_id] = verdict

    def take(self, request_id: RequestId) -> str:
        """The verdict of ``request_id`` (:data:`MAY_HAVE_RUN` when none was recorded), forgotten."""
        with self._lock:
            return self._verdicts.pop(request_id, MAY_HAVE_RUN)

    def forget(self, request_id: RequestId) -> None:
        """Drop what is known of a finished request (cheap when nothing is recorded: the usual case)."""
        if self._verdicts:  # a racy read is fine: a verdict recorded after the request ended is unread
            with self._lock:
                self._verdicts.pop(request_id, None)

    def peek(self, request_id: RequestId) -> str:
        with self._lock:
            return self._verdicts.get(request_id, MAY_HAVE_RUN)


def stamp(error: BaseException, verdict: str) -> BaseException:
    """Mark ``error`` (the failure of one request) with ``verdict``; returns it.

    A :class:`~mcpsync.TransportClosed` also gets ``may_have_reached_server``. A verdict
    already on the error is kept unless this one is :data:`MAY_HAVE_RUN` (the safe side wins).
    """
    if not isinstance(error, TransportError):
        return error
    previous = getattr(error, _MARK, None)
    if previous is not None and verdict != MAY_HAVE_RUN:
        verdict = previous
    setattr(error, _MARK, verdict)
    if isinstance(error, TransportClosed):
        error.may_have_reached_server = verdict != NEVER_LEFT
    return error


def verdict_of(error: BaseException) -> Optional[str]:
    """The verdict stamped on ``error``, or None (not a request's failure the engine saw)."""
    value: Any = getattr(error, _MARK, None)
    return value if isinstance(value, str) else None


def may_resend(error: BaseException, *, reconnect: bool = False) -> bool:
    """Whether the request that failed with ``error`` may be sent again.

    ``reconnect``: the resend would go over a new connection (a manager's reconnect): only a
    request that never left may. Otherwise (the same session: a renewed HTTP session, the
    2026-07-28 resend of a broken stream) also one the server said it did not run, or one the
    protocol requires be sent again.
    """
    verdict = verdict_of(error)
    if verdict == NEVER_LEFT:
        return True
    if reconnect:
        return False
    return verdict in (NOT_RUN, RESEND_REQUIRED)
