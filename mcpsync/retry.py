"""Retries that cannot duplicate work: :class:`Retry` and the one policy that decides each retry.

::

    client.call_tool("fetch_page", {"url": url}, retry=mcpsync.Retry(attempts=3))

A failed call is sent again only when

* it provably never ran: the connection was refused, or closed before any byte of the request
  was written, or an HTTP server answered 429 (Too Many Requests) or 503 (Service Unavailable),
  which it does before running anything (its ``Retry-After`` is honoured); or
* the tool is declared safe to repeat: its annotations say ``idempotentHint`` or
  ``readOnlyHint``, or the caller passed ``idempotent=True``; then a timeout or a lost
  connection is retried too, since running it twice does no harm.

Any other failure of a call that may have run (a timeout, a connection lost after the request
was written) is raised at once, and the error's :attr:`~mcpsync.MCPSyncError.not_retried` says
why it was not retried. Errors the server answered (an ``MCPError``, a tool result with
``isError``) are never retried: sending the same request again gets the same answer.

Everything here is policy, not transport: :func:`never_ran` is the single place that asks what
the transport knew about a failed request (the delivery ledger's verdict, :mod:`mcpsync._rpc.delivery`,
also seen as ``TransportClosed.may_have_reached_server``).
"""

from __future__ import annotations

import math
import threading
import time
from typing import Any, Callable, Optional, Tuple, TypeVar

from ._rpc import delivery
from .cancel import CancelToken
from .exceptions import (EgressRefused, ForkedError, HTTPStatusError, MCPSyncError, RequestCancelled, RequestTimeout,
                         TransportError)

__all__ = ["Retry", "never_ran", "retry_after", "run"]

T = TypeVar("T")

#: HTTP statuses a server sends before it runs anything: the request may be sent again as it is.
_REFUSED_STATUSES = (429, 503)
#: Other HTTP statuses worth another try for a tool that is safe to repeat (a gateway's hiccup).
_TRANSIENT_STATUSES = (408, 500, 502, 504)


class Retry:
    """How often and how patiently a failed call is sent again (only when that cannot duplicate work).

    Args:
        attempts: how many times in all the call may be sent (1: never retried).
        backoff: seconds before the second attempt; each later wait doubles it.
        max_backoff: the longest wait between two attempts (a server's ``Retry-After`` may ask
            for more, up to the call's timeout).

    Which failures are retried: see :mod:`mcpsync.retry`. Immutable, picklable, shareable.
    (A plain class, not a dataclass: ``dataclasses`` loads ``inspect``, which `import mcpsync`
    must not pay for.)
    """

    __slots__ = ("attempts", "backoff", "max_backoff")

    attempts: int
    backoff: float
    max_backoff: float

    def __init__(self, attempts: int = 3, backoff: float = 0.5, max_backoff: float = 30.0) -> None:
        if isinstance(attempts, bool) or not isinstance(attempts, int) or attempts < 1:
            raise ValueError(f"Retry(attempts=) must be a whole number of at least 1, not {attempts!r}")
        for name, value in (("backoff", backoff), ("max_backoff", max_backoff)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0 \
                    or math.isinf(value):
                raise ValueError(f"Retry({name}=) must be a finite number of seconds, at least 0, not {value!r}")
        object.__setattr__(self, "attempts", attempts)
        object.__setattr__(self, "backoff", backoff)
        object.__setattr__(self, "max_backoff", max_backoff)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"Retry is immutable: make a new one instead of setting {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"Retry is immutable: {name!r} cannot be deleted")

    def __repr__(self) -> str:
        return f"Retry(attempts={self.attempts!r}, backoff={self.backoff!r}, max_backoff={self.max_backoff!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Retry):
            return NotImplemented
        return (self.attempts, self.backoff, self.max_backoff) == (other.attempts, other.backoff, other.max_backoff)

    def __hash__(self) -> int:
        return hash((Retry, self.attempts, self.backoff, self.max_backoff))

    def __reduce__(self) -> Any:
        return (Retry, (self.attempts, self.backoff, self.max_backoff))

    def delay(self, failures: int) -> float:
        """Seconds to wait after the ``failures``-th failed attempt (exponential, capped)."""
        return float(min(self.max_backoff, self.backoff * (2 ** max(failures - 1, 0))))


def never_ran(error: BaseException, requests: int) -> bool:
    """Whether a call that failed with ``error``, after ``requests`` request ids were made for it,
    provably never ran on the server.

    True when no request was made (the connection was gone before), or the (only) request never
    left this process (the delivery ledger's verdict: the connection was refused, or closed before
    any byte of it was written), or the server answered HTTP 429 or 503 (refusals made before any
    work). This is the one function that asks what the transport knew of a failed request.
    """
    if isinstance(error, HTTPStatusError) and error.status_code in _REFUSED_STATUSES:
        return requests <= 1
    if requests == 0:
        return isinstance(error, TransportError)
    return requests == 1 and delivery.may_resend(error, reconnect=True)


def retry_after(error: BaseException) -> Optional[float]:
    """The seconds a 429 or 503 answer's ``Retry-After`` asks to wait (delay-seconds or an HTTP-date), or None."""
    if not isinstance(error, HTTPStatusError) or error.status_code not in _REFUSED_STATUSES:
        return None
    value = next((v for k, v in error.headers.items() if k.lower() == "retry-after"), None)
    if not isinstance(value, str) or not value.strip():
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    import email.utils  # noqa: PLC0415 (an HTTP-date is rare: keeps `import mcpsync` light)

    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - time.time())


def _worth_repeating(error: BaseException) -> bool:
    """A failure that another attempt of a repeatable call may not meet (not an answer, not a refusal by rule)."""
    if isinstance(error, (EgressRefused, ForkedError, RequestCancelled)):
        return False
    if isinstance(error, HTTPStatusError):
        return error.status_code in _REFUSED_STATUSES + _TRANSIENT_STATUSES
    return isinstance(error, (TransportError, RequestTimeout))


def _refuse(error: MCPSyncError, why: str) -> None:
    error.not_retried = why
    add_note = getattr(error, "add_note", None)  # Python 3.11+: shown under the traceback
    if add_note is not None:
        add_note(f"mcpsync: not retried: {why}")


def run(attempt: Callable[[Callable[[Any], None]], T], policy: Optional[Retry], *,
        repeatable: Callable[[], bool], timeout: Optional[float], cancel: Optional[CancelToken] = None,
        tool: str = "") -> T:
    """``attempt(on_request_id)`` until it succeeds or ``policy`` says to stop; its last error is raised.

    ``on_request_id`` must be given every request id the attempt makes (how :func:`never_ran` knows
    whether one was sent). ``repeatable()`` says whether the tool is safe to run twice; it is asked
    only when a failed attempt may have run. ``timeout`` is one attempt's (each attempt gets it
    whole); no wait between attempts is longer (a ``Retry-After`` beyond it is not waited for).
    ``cancel`` firing during a wait raises RequestCancelled (chained to the last failure).

    An error that is not retried carries, in ``not_retried``, why (set only when a policy was given).
    """
    failures = 0
    while True:
        ids = _Count()
        try:
            return attempt(ids)
        except MCPSyncError as error:
            if policy is None:
                raise
            failures += 1
            wait = 0.0
            why = _refusal(error, policy, failures, ids.count, repeatable, tool)
            if why is None:
                wait, why = _wait(error, policy, failures, timeout)
            if why is not None:
                _refuse(error, why)
                raise
            _pause(wait, cancel, error)


def _refusal(error: MCPSyncError, policy: Retry, failures: int, requests: int, repeatable: Callable[[], bool],
             tool: str) -> Optional[str]:
    """Why ``error`` is not retried (None: it may be): nothing can change, the call may have run and is
    not safe to repeat, or the attempts are spent. ``repeatable()`` is asked only when it may have run."""
    if not _worth_repeating(error):
        return "the server answered, or the failure is not one another attempt can change"
    if not never_ran(error, requests) and not repeatable():
        what = f"tool {tool!r}" if tool else "the call"
        return (f"the call may have run on the server, and {what} is not declared safe to repeat "
                "(no idempotentHint or readOnlyHint; pass idempotent=True if it is)")
    if failures >= policy.attempts:
        return f"{policy.attempts} attempt(s) failed (Retry(attempts={policy.attempts}))"
    return None


def _wait(error: MCPSyncError, policy: Retry, failures: int, timeout: Optional[float]) -> Tuple[float, Optional[str]]:
    """The wait before the next attempt (the policy's, or the server's Retry-After when longer), and why
    not to retry: a Retry-After beyond one attempt's timeout."""
    wait = policy.delay(failures)
    asked = retry_after(error)
    if asked is None:
        return wait, None
    if timeout is not None and asked > timeout:
        return wait, (f"the server asked to wait {asked:g}s (Retry-After), longer than the call's "
                      f"timeout of {timeout:g}s")
    return max(wait, asked), None


def _pause(wait: float, cancel: Optional[CancelToken], error: MCPSyncError) -> None:
    """Wait between attempts; RequestCancelled (chained to ``error``) when ``cancel`` fires meanwhile."""
    if cancel is not None:
        if cancel.wait(wait):
            raise RequestCancelled(cancel.reason) from error
    elif wait > 0:
        threading.Event().wait(wait)


class _Count:
    """An ``on_request_id`` that counts the requests an attempt made ids for."""

    __slots__ = ("count",)

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, _request_id: Any) -> None:
        self.count += 1
