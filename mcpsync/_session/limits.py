"""Per-server limits on tool calls: a rate (a token bucket) and a number in flight.

A call beyond a limit waits for its turn, within its own timeout (or its deadline); it never
fails for the limit alone. Waiting past the timeout raises the usual RequestTimeout, whose text
says the call was still waiting for the limit. One :class:`Limits` is shared by every thread
that calls through its owner (a client, or a manager's server across its reconnects).
"""

from __future__ import annotations

import math
import threading
import time
from typing import Any, Optional

from .._protocol.methods import TOOLS_CALL
from .._rpc.options import CallOptions, Deadline
from ..cancel import CancelToken
from ..exceptions import RequestCancelled, RequestTimeout

__all__ = ["Limits", "check_limits"]


def check_limits(rate_limit: Optional[float], max_concurrency: Optional[int]) -> None:
    """Raise ValueError for a limit that is not a positive number (``max_concurrency``: whole)."""
    if rate_limit is not None and (isinstance(rate_limit, bool) or not isinstance(rate_limit, (int, float))
                                   or not rate_limit > 0 or math.isinf(rate_limit)):
        raise ValueError(f"rate_limit must be a positive number of calls per second, not {rate_limit!r}")
    if max_concurrency is not None and (isinstance(max_concurrency, bool) or not isinstance(max_concurrency, int)
                                        or max_concurrency < 1):
        raise ValueError(f"max_concurrency must be a whole number of at least 1, not {max_concurrency!r}")


class Limits:
    """At most ``rate`` calls a second (one token every ``1/rate`` s, no burst) and ``concurrency`` at once.

    The spacing holds between the calls that leave, not only between the turns reserved: callers
    woken late after a stall go one token apart, never all at once.

    Thread safety: every method may be called from any thread. Turns are taken in order of
    arrival for the rate (each caller reserves the next free instant) and in any order for a
    free slot.
    """

    def __init__(self, server: str, rate: Optional[float], concurrency: Optional[int]) -> None:
        check_limits(rate, concurrency)
        self.server = server
        self.rate = rate
        self.concurrency = concurrency
        lock = threading.Lock()
        self._slots = threading.Condition(lock)  # waiters for a free slot (max_concurrency)
        self._tokens = threading.Condition(lock)  # waiters for their reserved instant (rate_limit)
        self._in_flight = 0
        self._next = 0.0  # the monotonic instant the next token is free
        self._last = -math.inf  # the monotonic instant the last caller left with a token

    def enter(self, options: CallOptions, default_timeout: Optional[float]) -> CallOptions:
        """Wait for a slot and a token; return ``options`` with a deadline that counts the wait.

        Each successful ``enter`` must be paired with one :meth:`leave`.

        Raises:
            RequestTimeout: no turn came within the call's timeout (or deadline).
            RequestCancelled: the call's cancel token fired while it waited.
        """
        budget = options.timeout if options.timeout is not None else default_timeout
        if budget is None:
            budget = math.inf
        deadline = options.deadline if options.deadline is not None else Deadline.after(budget)
        unregister = _wake_on(options.cancel, self._slots, self._tokens)
        try:
            if self.concurrency is not None:
                self._take_slot(deadline, options.cancel, budget)
            try:
                if self.rate is not None:
                    self._take_token(deadline, options.cancel, budget)
            except BaseException:
                self.leave()
                raise
        finally:
            unregister()
        if options.deadline is None and not math.isinf(deadline.at):
            options = options._replace(deadline=deadline)  # the request gets what the wait left
        return options

    def leave(self) -> None:
        """Give back the slot taken by :meth:`enter`."""
        if self.concurrency is None:
            return
        with self._slots:
            self._in_flight -= 1
            self._slots.notify()

    def _take_slot(self, deadline: Deadline, cancel: Optional[CancelToken], budget: float) -> None:
        assert self.concurrency is not None
        with self._slots:
            while self._in_flight >= self.concurrency:
                self._wait_for_slot_locked(deadline, cancel, budget, f"max_concurrency={self.concurrency}")
            self._in_flight += 1

    def _take_token(self, deadline: Deadline, cancel: Optional[CancelToken], budget: float) -> None:
        assert self.rate is not None
        with self._tokens:
            now = time.monotonic()
            start = max(now, self._next)
            if start > deadline.at:  # the turn would come too late: do not take it from others
                raise self._timeout(budget, f"rate_limit={self.rate:g}/s")
            gap = 1.0 / self.rate
            self._next = start + gap
            while True:
                # A turn is its instant and one token after the last caller left: callers that
                # woke late (a loaded machine did not schedule them) leave one by one, not in a
                # burst that would break the rate.
                now = time.monotonic()
                due = max(start, self._last + gap)
                if now >= due:
                    break
                if due > deadline.at:
                    raise self._timeout(budget, f"rate_limit={self.rate:g}/s")
                if cancel is not None and cancel.cancelled:
                    raise RequestCancelled(cancel.reason)
                self._tokens.wait(due - now)
            self._last = now
            self._next = max(self._next, now + gap)  # callers arriving now queue behind the late ones

    def _wait_for_slot_locked(self, deadline: Deadline, cancel: Optional[CancelToken], budget: float, which: str) -> None:
        if cancel is not None and cancel.cancelled:
            raise RequestCancelled(cancel.reason)
        remaining = deadline.remaining()
        if remaining <= 0:
            raise self._timeout(budget, which)
        self._slots.wait(None if math.isinf(remaining) else remaining)

    def _timeout(self, budget: float, which: str) -> RequestTimeout:
        return RequestTimeout.after(
            budget, method=TOOLS_CALL, server=self.server,
            hint=f"The call was still waiting for its turn under the server's {which}: give it a longer timeout, "
                 "or raise the limit")


def _wake_on(cancel: Optional[CancelToken], slots: threading.Condition, tokens: threading.Condition) -> Any:
    """Wake every waiter when ``cancel`` fires (the conditions share one lock); returns the unregister function."""
    if cancel is None:
        return lambda: None

    def wake(_reason: Any) -> None:
        with slots:
            slots.notify_all()
            tokens.notify_all()

    return cancel.add_callback(wake)
