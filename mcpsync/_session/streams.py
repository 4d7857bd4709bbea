"""The channels server-initiated messages arrive on: opened after connect, restored after a renewal.

* Legacy: over Streamable HTTP, requests and notifications the server sends on its
  own come on a GET stream, opened once anything would receive them (a handler, a
  subscription, a cached list waiting for ``list_changed``). Other transports need
  no extra channel (``Transport.start_listener`` is a no-op there).
* Modern (2026-07-28): there is no GET stream; ``list_changed`` notifications come
  on a ``subscriptions/listen`` stream, opened for the kinds that have a handler and
  that the server announces.

After an HTTP session was renewed, :meth:`Streams.restore` opens the GET stream
again, subscribes again to every resource and sets the log level again. These
requests, sent on the transport directly, carry the calling thread's trace context
and are spans like every other (:mod:`mcpsync._session.telemetry`).

Threads: any thread may call these; each blocks for the requests it sends
(bounded by the options or timeout it is given).
"""

from __future__ import annotations

import threading
from typing import List, Optional, Protocol, Set

from .._log import getLogger
from .._protocol.methods import LOGGING_SET_LEVEL, RESOURCES_SUBSCRIBE
from .._rpc.options import CallOptions, Deadline
from ..exceptions import MCPSyncError
from .notifications import LIST_CHANGED
from .session import Session
from . import telemetry

__all__ = ["ListenStreams", "Streams"]

log = getLogger("mcpsync.client")

# The list_changed notifications a modern listen stream can carry (see mcpsync.subscriptions).
_LISTENABLE = frozenset(LIST_CHANGED)


class ListenStreams(Protocol):
    """The client's subscriptions, as far as opening and restoring streams needs them."""

    def listen_for_list_changes(self, methods: Set[str], timeout: Optional[float]) -> None: ...

    def legacy_uris(self) -> List[str]: ...


class Streams:
    """Which server-to-client channels are open, and what a renewed session must get back."""

    def __init__(self, session: Session, subscriptions: ListenStreams) -> None:
        self._session = session
        self._subscriptions = subscriptions
        self.listening = False  # the legacy GET stream was asked for
        self._lock = threading.Lock()
        self._subscribed: Set[str] = set()  # subscribe_resource() URIs (legacy), restored after a renewal

    def subscribed(self, uri: str) -> None:
        """Legacy ``resources/subscribe`` of ``uri`` succeeded: restore it after a renewal."""
        with self._lock:
            self._subscribed.add(uri)

    def unsubscribed(self, uri: str) -> None:
        with self._lock:
            self._subscribed.discard(uri)

    def after_connect(self, handled: Set[str], wanted: bool, deadline: Deadline) -> None:
        """Open what the connect calls for: ``handled`` methods have handlers; ``wanted`` asks for the GET stream.

        A legacy session's log level is set here too (a failure is only logged).
        """
        session = self._session
        if session.modern:
            methods = handled & _LISTENABLE
            if methods:
                self.listen_for_list_changes(methods, deadline.remaining())
            return
        if wanted:
            self.start_listener()
        if session.log_level is not None and session.server_capabilities.logging:
            try:
                telemetry.request(session, LOGGING_SET_LEVEL, {"level": session.log_level},
                                  CallOptions(deadline=deadline))
            except MCPSyncError as exc:  # the connection is fine; only the log level did not take
                log.warning("[%s] Could not set the log level to %r: %s", session.name, session.log_level, exc)

    def handler_added(self, method: str) -> None:
        """A handler for ``method`` arrived after the connect: open the stream it needs."""
        if not self._session.modern:
            self.start_listener()
        elif method in _LISTENABLE:
            self.listen_for_list_changes({method}, None)

    def start_listener(self) -> None:
        """Legacy: open the channel for messages the server sends unprompted (HTTP's GET stream)."""
        session = self._session
        if session.modern:
            return  # 2026-07-28 has no GET stream: subscriptions/listen instead
        self.listening = True
        session.transport.start_listener()  # a no-op on transports that need no extra channel

    def listen_for_list_changes(self, methods: Set[str], timeout: Optional[float]) -> None:
        """Modern: a subscriptions/listen stream for the list_changed kinds the server can announce.

        ``timeout`` bounds the wait for its acknowledgement (None: the default per-request timeout).
        """
        session = self._session
        wanted = {m for m in methods if m in _LISTENABLE and session.announces(LIST_CHANGED[m])}
        if wanted:
            self._subscriptions.listen_for_list_changes(wanted, timeout if timeout is not None
                                                        else session.default_timeout)

    def restore(self, options: CallOptions) -> None:
        """After a renewed legacy session: the GET stream, the subscriptions and the log level again."""
        if self.listening:
            self.start_listener()
        session = self._session
        with self._lock:
            uris = sorted(self._subscribed | set(self._subscriptions.legacy_uris()))
        for uri in uris:
            telemetry.request(session, RESOURCES_SUBSCRIBE, {"uri": uri}, options)
        if session.log_level is not None:
            telemetry.request(session, LOGGING_SET_LEVEL, {"level": session.log_level}, options)
