"""The live connections of one FakeServer: opening them, telling them all, crashing and closing them.

A transport (in memory, or stdin and stdout) opens a connection with
:meth:`Hub.open`, giving how to send to its client and how to fail; the
``FakeServer`` uses the same hub to notify, crash or close every connection.
:func:`hub_of` finds the hub of a ``FakeServer`` for a
:class:`~mcpsync.testing.FakeTransport` built from one, so the transport
module needs neither ``FakeServer`` nor its private members.

Thread safety: every method may be called from any thread. :meth:`Hub.open`
starts the connection's dispatcher thread and returns at once; sending
notifications does not wait for the clients, only (briefly) for each
connection to serve what its client sent before; :meth:`Connection.close` (called
by the server's close) joins the connection's threads.
"""

from __future__ import annotations

import threading
import weakref
from typing import List, Optional

from .._rpc.jsonrpc import JSONObject
from ._connection import Connection, Drop, Send
from ._protocol import RESOURCE_UPDATED
from ._side import ServerSide

__all__ = ["Hub", "hub_of", "register"]


class Hub:
    """Opens, lists and fans out to the connections serving one :class:`ServerSide`."""

    def __init__(self, side: ServerSide) -> None:
        self.side = side
        self._lock = threading.Lock()
        self._connections: List[Connection] = []
        self._opened = 0  # connections are numbered from 1, in the order they opened
        self._closed = False

    @property
    def closed(self) -> bool:
        """True once :meth:`shut` ran: no connection opens any more."""
        return self._closed

    def open(self, send: Send, drop: Drop) -> Connection:
        """Open and start a connection that answers through ``send`` and fails through ``drop``.

        Raises:
            RuntimeError: the server is closed.
        """
        with self._lock:
            if self._closed:
                raise RuntimeError(f"FakeServer {self.side.name!r} is closed")
            self._opened += 1
            connection = Connection(self.side, send, drop, index=self._opened, on_close=self._forget)
            self._connections.append(connection)
        connection.start()
        return connection

    def _forget(self, connection: Connection) -> None:
        with self._lock:
            if connection in self._connections:
                self._connections.remove(connection)

    def live(self) -> List[Connection]:
        """The connections open now (a copy)."""
        with self._lock:
            return list(self._connections)

    def shut(self) -> List[Connection]:
        """Refuse new connections from now; return those still open, for the caller to close."""
        with self._lock:
            self._closed = True
            return list(self._connections)

    def notify(self, method: str, params: Optional[JSONObject] = None) -> int:
        """Tell every client ``method``; returns how many clients got it.

        A legacy session gets any notification; a 2026-07-28 client only on the
        ``subscriptions/listen`` streams whose filter asks for ``method``
        (``list_changed``, or ``notifications/resources/updated`` about a URI it
        subscribed to): that era has no other channel for them.
        """
        return sum(1 for connection in self._caught_up() if connection.tell(method, params, legacy=True))

    def resource_updated(self, uri: str) -> int:
        """Send ``notifications/resources/updated`` to the clients subscribed to ``uri`` (either era)."""
        return sum(1 for connection in self._caught_up()
                   if connection.tell(RESOURCE_UPDATED, {"uri": uri},
                                      legacy=uri in connection.session.subscriptions))

    def _caught_up(self) -> List[Connection]:
        """The live connections, each once it has served what its client sent so far (an unsubscribe, say)."""
        connections = self.live()
        for connection in connections:
            connection.catch_up()
        return connections

    def crash(self, reason: str) -> None:
        """Drop every live connection, as if the server died."""
        for connection in self.live():
            connection.drop(reason)


# Weak both ways: the owner holds its hub, and the hub (through ``side.owner``) its owner, so a
# strong value here would keep every FakeServer a test suite made alive.
_HUBS: "weakref.WeakKeyDictionary[object, weakref.ref[Hub]]" = weakref.WeakKeyDictionary()
_HUBS_LOCK = threading.Lock()


def register(owner: object, hub: Hub) -> None:
    """Record ``hub`` as the one serving ``owner`` (a ``FakeServer``, which must keep ``hub`` alive)."""
    with _HUBS_LOCK:
        _HUBS[owner] = weakref.ref(hub)


def hub_of(owner: object) -> Hub:
    """The hub :func:`register` recorded for ``owner``.

    Raises:
        TypeError: ``owner`` is not a ``FakeServer``.
    """
    with _HUBS_LOCK:
        found = _HUBS.get(owner)
    hub = found() if found is not None else None
    if hub is None:
        raise TypeError(f"Expected a FakeServer, got {type(owner).__name__}")
    return hub
