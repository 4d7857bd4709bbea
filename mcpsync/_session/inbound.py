"""Where one client's server-to-client traffic goes: requests for input, notifications, early hooks.

:class:`Inbound` is wired into each transport the client uses (the first one, and the
one a fallback moves to). It sends the server's requests to the client's handlers
(through the session's responder), notifications to the log, the subscriptions and the
registered handlers, and, on the reader thread itself, drops a cached list the moment its
``list_changed`` arrives, before any later response can be read.

Threads: requests run on the engine's worker threads, notifications on its dispatcher
thread, :meth:`Inbound.on_arrival` on the reader thread (it only drops cache entries and
notes acknowledgements: it never blocks). The client is held weakly: a client nobody
holds stays collectable, and after it is gone its handlers are simply not called.
"""

from __future__ import annotations

import weakref
from typing import Any, Callable, Dict, Optional, Protocol

from .._protocol.methods import PING
from .._rpc.jsonrpc import JSONObject
from ..cancel import CancelToken
from ..handlers import LogMessage
from ..transports.base import Transport
from .notifications import LIST_CHANGED, NotificationRouter
from .session import Session

__all__ = ["Inbound"]


class Consumer(Protocol):
    """What the subscriptions take from the notification stream."""

    def deliver(self, method: str, params: Optional[JSONObject]) -> None: ...

    def acknowledge(self, method: str, params: Optional[JSONObject]) -> None: ...


class ListCache(Protocol):
    """The client's list cache (:class:`mcpsync._features.lists.ListCache`), as far as a list_changed needs it."""

    def invalidate(self, kind: Optional[str] = None) -> None: ...


class Owner(Protocol):
    """The client's handler attributes, read at each use (so a handler set later is honoured)."""

    @property
    def logging_handler(self) -> Optional[Callable[[LogMessage], None]]: ...

    @property
    def sampling_handler(self) -> Optional[Callable[..., Any]]: ...

    @property
    def elicitation_handler(self) -> Optional[Callable[..., Any]]: ...

    @property
    def roots(self) -> Any: ...


class Inbound:
    """The routes of one client's incoming traffic (see the module docs)."""

    def __init__(self, owner: Owner, session: Session, router: NotificationRouter, consumer: Consumer,
                 cache: ListCache) -> None:
        self._owner: "weakref.ref[Owner]" = weakref.ref(owner)
        self._session = session
        self._router = router
        self._consumer = consumer
        self._cache = cache

    def attach(self, transport: Transport) -> None:
        """Route ``transport``'s server-to-client traffic here; ``ping`` is answered on the reader thread.

        The requests and the notification hook are set on the session's engine (the one attached
        to ``transport``); the notifications ``transport`` delivers reach :meth:`deliver`.
        """
        engine = self._session.engine
        engine.incoming.set_inline_handler(PING, lambda _params: {})
        engine.incoming.set_handler(self.answer)
        transport.add_notification_listener(self.deliver)
        engine.set_notification_hook(self.on_arrival)

    def answer(self, method: str, params: Optional[JSONObject], cancel: CancelToken) -> Any:
        """Worker thread: one request for input, answered by the client's handlers."""
        return self._session.answer(method, params)

    def deliver(self, method: str, params: Optional[JSONObject]) -> None:
        """Dispatcher thread: one notification to the log, the subscriptions and the handlers."""
        owner = self._owner()
        self._router.deliver(method, params, owner.logging_handler if owner is not None else None,
                             self._consumer.deliver)

    def on_arrival(self, method: str, params: Optional[JSONObject]) -> None:
        """Reader thread: drop a cached list the moment its list_changed arrives; note acknowledgements."""
        kind = LIST_CHANGED.get(method)
        if kind is not None:
            self._cache.invalidate(kind)
        self._consumer.acknowledge(method, params)

    def wanted(self, transport: Transport, capabilities: Dict[str, Any]) -> bool:
        """Whether server-initiated messages have anywhere to go (then HTTP opens its GET stream)."""
        owner = self._owner()
        if self._router or transport.on_notification or (owner is not None and (
                owner.sampling_handler or owner.elicitation_handler or owner.roots is not None
                or owner.logging_handler)):
            return True
        # Cached lists rely on list_changed notifications to stay fresh.
        return any(isinstance(capabilities.get(kind), dict) and capabilities[kind].get("listChanged")
                   for kind in ("tools", "resources", "prompts"))
