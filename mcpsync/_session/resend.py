"""A 2026-07-28 request whose HTTP response stream broke is sent again, once, as a new request.

The 2026-07-28 revision removed SSE resumption: a broken response stream loses the
request in flight, and the client must issue it again as a new request with a new
id (changelog, major change 9). The transport raises :class:`~mcpsync.StreamBroken`
for such a stream; :func:`send_again` sends the same params once more
(the engine gives every request a new id, so the id is new by construction) and
raises :class:`~mcpsync.StreamBroken` if that stream breaks too.

The second request gets only what is left of the first one's time: a call's
``timeout`` bounds the call, not each of its attempts. ``subscriptions/listen`` is
not sent again here: its subscription listens again itself, with a backoff.
Legacy sessions never get here (their streams are resumed with ``Last-Event-ID``).

Pure control flow; blocks only inside ``send``.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Optional

from .._log import getLogger
from .._protocol.methods import SUBSCRIPTIONS_LISTEN
from .._rpc import delivery
from .._rpc.options import CallOptions, Deadline
from ..exceptions import StreamBroken, TransportError

__all__ = ["NOT_SENT_AGAIN", "send_again"]

log = getLogger("mcpsync.client")

#: Methods whose broken stream is the caller's to handle (the subscription listens again itself).
NOT_SENT_AGAIN = frozenset({SUBSCRIPTIONS_LISTEN})


def send_again(send: Callable[[CallOptions], Any], method: str, options: CallOptions, started: float,
               default_timeout: Optional[float], broken: StreamBroken, name: str = "") -> Any:
    """After the stream of a request first sent at ``started`` broke: ``send`` it once more, with the time left.

    Raises:
        StreamBroken: ``broken`` itself for a method not sent again; a new one (chained to the
            second break) when the second stream broke too.
        and what ``send`` raises.
    """
    if method in NOT_SENT_AGAIN:
        raise broken
    log.info("[%s] The response stream of %s broke (%s); sending the request again with a new id",
             name, method, broken)
    try:
        return send(_remaining(options, started, default_timeout))
    except StreamBroken as exc:
        raise delivery.stamp(StreamBroken(f"{method}: the response stream broke twice; the request was sent "
                                          f"twice, with two ids, and not answered ({exc})"),
                             delivery.MAY_HAVE_RUN) from exc
    except TransportError as exc:
        # Whatever became of the second request, the first one may have run: never send it a third time.
        raise delivery.stamp(exc, delivery.MAY_HAVE_RUN)


def _remaining(options: CallOptions, started: float, default_timeout: Optional[float]) -> CallOptions:
    """``options`` with a deadline at the end of the first attempt's timeout (the earlier, with its own)."""
    limit = options.timeout if options.timeout is not None else default_timeout
    if limit is None or math.isinf(limit) or options.reset_timeout_on_progress:
        return options  # no fixed end to keep (a progress-reset timeout is bounded by max_total_timeout)
    end = started + limit
    if options.deadline is not None and options.deadline.at < end:
        return options
    return options._replace(deadline=Deadline(end))
