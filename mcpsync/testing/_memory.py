"""FakeTransport: the in-memory transport between an mcpsync Client and a FakeServer."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from .._rpc.engine import DEFAULT_TIMEOUT
from .._rpc.jsonrpc import JSONObject
from ..transports.memory import MemoryTransport
from ._connection import Connection

if TYPE_CHECKING:
    from ._server import FakeServer

__all__ = ["FakeTransport"]


class FakeTransport(MemoryTransport):
    """A :class:`~mcpsync.MemoryTransport` whose peer is a :class:`~mcpsync.testing.FakeServer`.

    Opening it opens a connection on the server; what the client writes is
    queued for the server's threads, and the server's answers are fed back as
    the client's input. Closing either end closes the other.
    """

    kind = "fake"

    def __init__(self, server: "FakeServer", *, name: str, timeout: Optional[float] = DEFAULT_TIMEOUT) -> None:
        super().__init__(self._to_server, name=name, timeout=timeout)
        self.server = server
        self._connection: Optional[Connection] = None

    def _open(self) -> None:
        self._connection = self.server._connect(self.feed, self._dropped)

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
