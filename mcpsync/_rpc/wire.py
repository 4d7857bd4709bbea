"""The wire and the receiver: the engine's only way out (:class:`Wire`) and only way in (:class:`Receiver`).

The engine does no I/O. Everything it sends (requests, notifications, answers to
the peer's requests) goes through the one :class:`Wire` it was built with, and
when a caller stops waiting for a request the engine asks the wire to abandon it.
Nothing else of the transport is known to the engine, and nothing of the engine
is reached into by the transport: what a wire may need from the engine (sending
the standard cancellation) is passed to it as an argument.
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Protocol

from ..cancel import CancelToken
from ..exceptions import ProtocolError
from .jsonrpc import JSONObject, RequestId

__all__ = ["CallWire", "Receiver", "SendCancelled", "Wire", "tell_peer"]

class SendCancelled(Protocol):
    """``send_cancelled(request_id, reason, timeout=1.0)``: the engine's standard way to abandon a
    request, a write of ``notifications/cancelled`` bounded by ``timeout`` seconds (None: the
    wire's own limits; a wire that sends it off the caller's thread may allow longer).
    Raises what a write raises."""

    def __call__(self, request_id: RequestId, reason: Any, timeout: Optional[float] = ...) -> None: ...


class Wire(Protocol):
    """The three ways out of the engine. Called on the engine's callers' threads, concurrently.

    * ``write(message)``: send a message that has no deadline of its own; may block as
      long as the transport's own limits allow.
    * ``timed_write(message, deadline, cancel)``: send it by the monotonic ``deadline``.
      It raises RequestTimeout at the deadline (RequestCancelled once ``cancel`` fires)
      having left the stream whole. A wire whose writes never block may ignore both.
    * ``abandon(request_id, reason, send_cancelled)``: the caller stopped waiting for a
      request it sent (timeout, cancel, Ctrl-C). The wire may take back a request not yet
      written, stop its exchange, and/or call ``send_cancelled`` to tell the peer. It is
      never called for a request whose options say ``notify_cancel=False``, nor once
      the engine is closed. What it raises is logged and dropped.

    Both writes raise TransportClosed when the connection is gone, and ProtocolError
    when ``message`` cannot be encoded. The engine binds these three methods once,
    when it is built, and calls them directly.
    """

    def write(self, message: JSONObject) -> None: ...

    def timed_write(self, message: JSONObject, deadline: float, cancel: Optional[CancelToken]) -> None: ...

    def abandon(self, request_id: RequestId, reason: Any, send_cancelled: SendCancelled) -> None: ...


class Receiver(Protocol):
    """The one way into the engine: what a transport's reader hands each decoded message to.

    Called on the transport's reader thread only, one message at a time; neither method
    blocks. The transport is given its receiver when it is built (the engine, which the
    session's client owns), so a reader can be followed from the pipe to the caller by type.

    * ``receive(message, size)``: route one decoded message (``size``: the bytes it arrived
      as, 0 if unknown). Raises ProtocolError for a message that is not JSON-RPC; the reader
      logs and skips it.
    * ``refuse(message, error)``: the transport decoded ``message`` but will not deliver it
      (``error`` says why); a response among them fails its request now. Never raises.
    """

    def receive(self, message: Any, size: int = 0) -> None: ...

    def refuse(self, message: Any, error: ProtocolError) -> None: ...


def tell_peer(request_id: RequestId, reason: Any, send_cancelled: SendCancelled) -> None:
    """The usual abandon: tell the peer with the engine's ``notifications/cancelled``."""
    send_cancelled(request_id, reason)


class CallWire:
    """A :class:`Wire` made of plain callables (a transport's own methods, or a test's function).

    Only ``write`` is required: ``timed_write`` defaults to ``write`` with the deadline
    ignored (for writes that never block), ``abandon`` to :func:`tell_peer`.
    """

    __slots__ = ("write", "timed_write", "abandon")

    def __init__(self, write: Callable[[JSONObject], None],
                 timed_write: Optional[Callable[[JSONObject, float, Optional[CancelToken]], None]] = None,
                 abandon: Optional[Callable[[RequestId, Any, SendCancelled], None]] = None) -> None:
        self.write = write
        self.timed_write = timed_write if timed_write is not None else _untimed(write)
        self.abandon = abandon if abandon is not None else tell_peer


def _untimed(write: Callable[[JSONObject], None]) -> Callable[[JSONObject, float, Optional[CancelToken]], None]:
    def timed_write(message: JSONObject, deadline: float, cancel: Optional[CancelToken]) -> None:
        write(message)

    return timed_write
