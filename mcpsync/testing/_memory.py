"""FakeTransport: the in-memory transport between an mcpsync Client and a FakeServer.

Opening the transport opens a connection on the server's
:class:`~mcpsync.testing._hub.Hub`; what the client writes is queued for that
connection's threads (it never blocks the writer), and the server's answers
are fed back as the client's input. Closing either end closes the other:
closing the transport closes the connection and joins its threads; a
connection that drops (a scripted crash) disconnects the transport.

A client finds the era over it as over stdio: the ``server/discover`` probe first.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from .._rpc.engine import DEFAULT_TIMEOUT
from .._rpc.jsonrpc import JSONObject
from ..transports.memory import MemoryTransport
from ._connection import Connection
from ._hub import hub_of

if TYPE_CHECKING:  # for the public annotation of the constructor only; never imported at run time
    from ._server import FakeServer

__all__ = ["FakeTransport"]


class FakeTransport(MemoryTransport):
    """A :class:`~mcpsync.MemoryTransport` whose peer is a :class:`~mcpsync.testing.FakeServer`.

    Opening it opens a connection on the server; what the client writes is
    queued for the server's threads, and the server's answers are fed back as
    the client's input. Closing either end closes the other.
    """

    kind = "fake"
    # A FakeServer is a real dual-era server, not a scripted peer: connect to it as to a stdio server
    # (the server/discover probe, then the handshake if refused), so that client() and run_stdio()
    # settle the same version. No era cache: the cache keys only stdio and HTTP servers.

    def __init__(self, server: "FakeServer", *, name: str, timeout: Optional[float] = DEFAULT_TIMEOUT) -> None:
        super().__init__(self._to_server, name=name, timeout=timeout)
        self.server = server
        self._hub = hub_of(server)
        self._connection: Optional[Connection] = None

    def _open(self) -> None:
        self._connection = self._hub.open(self.feed, self._dropped)

    def _to_server(self, _transport: MemoryTransport, message: JSONObject) -> None:
        connection = self._connection
        if connection is not None:
            connection.receive(message)

    def _dropped(self, reason: str, _exit_code: int) -> None:
        self.disconnect(reason)

    def _shutdown(self, cause: Optional[BaseException]) -> None:
        connection = self._connection
        super()._shutdown(cause)
        if connection is not None:
            connection.close("the client closed the connection" if cause is None else f"connection lost: {cause}")
