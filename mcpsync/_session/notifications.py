"""Routing the server's notifications: log messages, the user's handlers, and which ones need a stream.

:class:`NotificationRouter` keeps the user's handlers (``Client.on_notification``) and
delivers each notification, in arrival order, on the transport's dispatcher thread:

1. ``notifications/message`` goes to the ``logging_handler``, or else to the logger
   ``mcpsync.server.<name>`` at the matching level;
2. then to the client's own consumers (subscriptions);
3. then to every handler for its method, and every ``"*"`` handler.

A handler that raises is logged; it never stops the others or the dispatcher.

The router also keeps the ``Client.on_session_renewed`` callbacks: they are the
user's, kept with the handlers in a forked child, and called by :meth:`NotificationRouter.renewed`
(wired to the handshake's renewal by :mod:`mcpsync._lifecycle`).

Threads: handlers may be added and removed from any thread at once, including from
a handler; delivery works on a snapshot, so a change applies from the next
notification on. :meth:`NotificationRouter.add` and :meth:`NotificationRouter.go_live`
are ordered by one lock, so a handler added while the client connects is either seen
by the connect or told it must start its own stream: never neither.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Dict, List, Optional, Set, Tuple

from .._log import CRITICAL, DEBUG, ERROR, INFO, WARNING, Logger, getLogger
from .._protocol.methods import (
    NOTIFY_MESSAGE, NOTIFY_PROMPTS_LIST_CHANGED, NOTIFY_RESOURCES_LIST_CHANGED, NOTIFY_TOOLS_LIST_CHANGED,
)
from .._rpc.jsonrpc import JSONObject
from ..handlers import LogMessage
from .callbacks import check_callback

__all__ = ["LIST_CHANGED", "LOG_LEVELS", "NotificationHandler", "NotificationRouter"]

log = getLogger("mcpsync.client")

NotificationHandler = Callable[[Optional[JSONObject]], None]

#: RFC 5424 levels used by notifications/message, mapped onto Python logging.
LOG_LEVELS = {
    "debug": DEBUG, "info": INFO, "notice": INFO, "warning": WARNING,
    "error": ERROR, "critical": CRITICAL, "alert": CRITICAL,
    "emergency": CRITICAL,
}

#: list_changed notification -> the cached list it makes stale.
LIST_CHANGED = {
    NOTIFY_TOOLS_LIST_CHANGED: "tools",
    NOTIFY_RESOURCES_LIST_CHANGED: "resources",
    NOTIFY_PROMPTS_LIST_CHANGED: "prompts",
}


class NotificationRouter:
    """One client's notification handlers and their delivery. Thread-safe."""

    def __init__(self, name: str, server_log: Logger,
                 handlers: Optional[Dict[str, List[NotificationHandler]]] = None,
                 renewal: Optional[List[Callable[[], None]]] = None) -> None:
        self._name = name
        self._server_log = server_log
        self._lock = threading.Lock()
        self._handlers: Dict[str, List[NotificationHandler]] = handlers or {}
        self._renewal: List[Callable[[], None]] = renewal or []  # on_session_renewed(), copied on write
        self._live = False

    def inherited(self) -> "NotificationRouter":
        """In a forked child: a new router with this one's handlers (its lock may be held by a
        thread that does not exist there, so it is not taken; nothing else runs during the fork hook)."""
        return NotificationRouter(self._name, self._server_log, dict(self._handlers), list(self._renewal))

    def __bool__(self) -> bool:
        with self._lock:
            return any(self._handlers.values())

    def add(self, method: str, handler: NotificationHandler) -> Tuple[Callable[[], None], bool]:
        """Register ``handler`` for ``method``; returns its remover and whether the client is live.

        Live (after :meth:`go_live`) means the connect has already looked at the
        handlers: the caller must open whatever stream the new handler needs.

        Raises:
            TypeError: ``handler`` cannot be called as ``handler(params)``.
        """
        check_callback(handler, f"the handler for {method!r}", "(params)", optional=False, called="handler")
        with self._lock:
            # Copy on write: delivery iterates over the list it took, never over one being changed.
            self._handlers[method] = [*self._handlers.get(method, ()), handler]
            live = self._live

        def remove() -> None:
            with self._lock:
                current = self._handlers.get(method, [])
                if handler in current:
                    kept = list(current)
                    kept.remove(handler)
                    self._handlers[method] = kept

        return remove, live

    def add_renewal(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Register ``callback()`` for each renewed session; returns its remover.

        Raises:
            TypeError: ``callback`` cannot be called without arguments.
        """
        check_callback(callback, "the on_session_renewed callback", "()", optional=False, called="callback")
        with self._lock:
            self._renewal = [*self._renewal, callback]

        def remove() -> None:
            with self._lock:
                self._renewal = [known for known in self._renewal if known is not callback]

        return remove

    def renewed(self) -> None:
        """The session was renewed: call every ``on_session_renewed`` callback (one that raises is logged)."""
        for callback in self._renewal:  # a snapshot: the list is replaced, never changed
            try:
                callback()
            except Exception:
                log.exception("[%s] An on_session_renewed callback raised", self._name)

    def go_live(self) -> Set[str]:
        """The connect is done: returns the methods that have handlers now (later ones are told by add())."""
        with self._lock:
            self._live = True
            return {method for method, handlers in self._handlers.items() if handlers}

    def deliver(self, method: str, params: Optional[JSONObject],
                logging_handler: Optional[Callable[[LogMessage], None]],
                consumer: Callable[[str, Optional[JSONObject]], None]) -> None:
        """Dispatcher thread: one notification to the log, to ``consumer``, then to the handlers."""
        if method == NOTIFY_MESSAGE and params is not None:
            self._log(params, logging_handler)
        try:
            consumer(method, params)
        except Exception:
            log.exception("[%s] Delivering %s to its subscription failed", self._name, method)
        with self._lock:
            handlers = self._handlers.get(method, ()), self._handlers.get("*", ())
        for group in handlers:
            for handler in group:
                try:
                    handler(params)
                except Exception:
                    log.exception("[%s] Handler for %s raised", self._name, method)

    def _log(self, params: JSONObject, logging_handler: Optional[Callable[[LogMessage], None]]) -> None:
        if logging_handler is not None:
            try:
                logging_handler(LogMessage(params))
            except Exception:
                log.exception("[%s] logging_handler raised", self._name)
            return
        level = LOG_LEVELS.get(str(params.get("level")), INFO)
        source: Any = params.get("logger")
        self._server_log.log(level, "%s%s", f"[{source}] " if source else "", params.get("data"))
