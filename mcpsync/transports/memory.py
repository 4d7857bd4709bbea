"""MemoryTransport: an in-process transport whose peer is a Python function.

For tests of everything above the transport (the engine, the client) with no
process and no socket. The peer receives every message the client writes and
answers through :meth:`MemoryTransport.feed`.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, List, Optional

from .._rpc.engine import DEFAULT_TIMEOUT
from .._rpc.jsonrpc import JSONObject, NestedTooDeeply, decode, encode
from ..exceptions import ProtocolError, TransportClosed
from .base import Transport

Peer = Callable[["MemoryTransport", JSONObject], None]


class MemoryTransport(Transport):
    """Delivers written messages to ``peer(transport, message)`` on the writer's thread.

    The peer answers by calling :meth:`feed` (from any thread), which plays the
    role of the reader thread. Messages are round-tripped through JSON in both
    directions, so what passes here is what would pass on the wire.
    """

    kind = "memory"
    _close_when_collected = False  # it holds no OS resource, and tests drop open ones freely

    def __init__(self, peer: Peer, *, name: str = "memory", timeout: Optional[float] = DEFAULT_TIMEOUT) -> None:
        super().__init__(name=name, timeout=timeout)
        self._peer = peer
        self._feed_lock = threading.Lock()
        self.sent: List[JSONObject] = []

    def _open(self) -> None:
        pass

    def _write(self, message: JSONObject) -> None:
        if self._engine.closed:
            raise self._engine.closed_error()
        wire = decode(encode(message))
        self.sent.append(wire)
        self._peer(self, wire)

    def feed(self, message: Any) -> None:
        """Deliver ``message`` (a dict, or raw JSON text) to the client as the server's output.

        Raises:
            TransportClosed: the transport is closed.
        """
        if self._engine.closed:
            raise TransportClosed()
        with self._feed_lock:  # one "reader" at a time, as on a real wire
            try:
                raw = message if isinstance(message, (str, bytes)) else encode(message)
                self._engine.receive(decode(raw), len(raw))
            except ProtocolError as exc:
                if isinstance(exc, NestedTooDeeply):
                    self._engine.refuse(exc.value, exc)  # as the stdio reader does
                if isinstance(message, (str, bytes)):
                    return  # a real reader skips undecodable lines
                raise

    def disconnect(self, reason: str = "peer went away") -> None:
        """Simulate the peer dropping the connection."""
        self._lost(ConnectionResetError(reason))

