"""Resource subscriptions with one API over both eras, and the modern ``subscriptions/listen`` streams.

Part of the resources room (:mod:`.resources` holds the requests; this, the long-lived streams and
handles they open). The public path of :class:`Subscription` is :mod:`mcpsync.subscriptions`.

``client.subscribe(uri, callback)`` returns a :class:`Subscription`;
``callback(updated_uri)`` runs (on the client's dispatcher thread) for every
``notifications/resources/updated`` about ``uri`` or a resource below it,
until ``subscription.close()``.

* Legacy servers: ``resources/subscribe`` and ``resources/unsubscribe``; the
  updates arrive on the connection's own stream (stdio, or HTTP's GET stream)
  and are matched by URI.
* Modern servers: each subscription is a ``subscriptions/listen`` request
  whose response is the stream; every notification on it names the request's
  id in ``_meta["io.modelcontextprotocol/subscriptionId"]``, which routes it
  here. Closing the subscription ends the request (HTTP: the stream is
  closed; stdio: ``notifications/cancelled``). A stream that breaks is opened
  again, with a new id, after a short backoff.

:class:`Subscriptions` works over the narrow
:class:`~mcpsync._session.session.SessionHandle` (requests, era, name), never over the
:class:`~mcpsync.Client` itself. A ``timeout`` here is in seconds and bounds one step:
the subscribe request (legacy), or the wait for the listen stream's acknowledgement (modern).

Thread safety: any thread may subscribe and close; callbacks run one at a
time, in arrival order, on the dispatcher thread. Each modern stream runs on a
thread of its own, which ``close()`` joins.
"""

from __future__ import annotations

import math
import threading
from typing import Any, Callable, Dict, List, Optional, Set

from .._log import getLogger
from .._protocol.methods import (
    NOTIFY_PROMPTS_LIST_CHANGED, NOTIFY_RESOURCES_LIST_CHANGED, NOTIFY_RESOURCES_UPDATED,
    NOTIFY_SUBSCRIPTIONS_ACKNOWLEDGED, NOTIFY_TOOLS_LIST_CHANGED, RESOURCES_SUBSCRIBE, RESOURCES_UNSUBSCRIBE,
    SUBSCRIPTIONS_LISTEN,
)
from .._rpc.jsonrpc import JSONObject, RequestId
from .._rpc.options import DEFAULT_OPTIONS, CallOptions
from .._session import meta as _meta
from .._session.callbacks import check_callback
from .._session.session import SessionHandle
from ..cancel import CancelToken
from ..exceptions import (
    CapabilityError, ConnectionLost, MCPSyncError, RequestCancelled, RequestTimeout, TransportClosed,
)

__all__ = ["ACKNOWLEDGED", "LIST_CHANGED_FLAGS", "UPDATED", "Subscription", "Subscriptions", "UpdateCallback",
           "covers"]

log = getLogger("mcpsync.subscriptions")

UpdateCallback = Callable[[str], None]
ACKNOWLEDGED = NOTIFY_SUBSCRIPTIONS_ACKNOWLEDGED
UPDATED = NOTIFY_RESOURCES_UPDATED
#: list_changed notification -> the listen filter flag that asks for it.
LIST_CHANGED_FLAGS = {
    NOTIFY_TOOLS_LIST_CHANGED: "toolsListChanged",
    NOTIFY_RESOURCES_LIST_CHANGED: "resourcesListChanged",
    NOTIFY_PROMPTS_LIST_CHANGED: "promptsListChanged",
}
_BACKOFF = (0.5, 30.0)


def covers(subscribed: str, updated: str) -> bool:
    """Whether an update about ``updated`` concerns a subscription to ``subscribed`` (itself or below it)."""
    if updated == subscribed:
        return True
    if not updated.startswith(subscribed):
        return False
    return subscribed.endswith(("/", ":")) or updated[len(subscribed)] in "/?#"


class Subscription:
    """Updates about one resource, until :meth:`close`. Usable as a context manager."""

    def __init__(self, owner: "Subscriptions", uri: str, callback: Optional[UpdateCallback]) -> None:
        self._owner = owner
        self.uri = uri
        self.callback = callback
        self._listen: Optional[_Listen] = None
        self._closed = False

    def __repr__(self) -> str:
        return f"<Subscription {self.uri!r} {'active' if self.active else 'closed'}>"

    def __enter__(self) -> "Subscription":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    @property
    def active(self) -> bool:
        """True until closed (or, on a modern server, until the server ended the stream)."""
        listen = self._listen
        return not self._closed and (listen is None or not listen.ended)

    def close(self, *, timeout: Optional[float] = None) -> None:
        """Stop the updates (idempotent). Never raises for a connection that is already gone."""
        if self._closed:
            return
        self._closed = True
        self._owner.closed(self, timeout)

    def _deliver(self, updated: str) -> None:
        """Dispatcher thread: run the callback for one update (a callback that raises is logged)."""
        callback = self.callback
        if callback is not None and not self._closed:
            try:
                callback(updated)
            except Exception:
                log.exception("Subscription callback for %s raised", self.uri)


class _Listen:
    """One ``subscriptions/listen`` stream, kept open on its own thread."""

    def __init__(self, owner: "Subscriptions", notifications: JSONObject, name: str) -> None:
        self.owner = owner
        self.notifications = notifications
        self.acknowledged: Optional[JSONObject] = None
        self.failure: Optional[BaseException] = None
        self.ended = False
        self._ready = threading.Event()
        self._stop = threading.Event()
        self._token: Optional[CancelToken] = None
        self._lock = threading.Lock()
        self.ids: Set[RequestId] = set()
        self.subscription: Optional[Subscription] = None
        self.thread = threading.Thread(target=self._run, name=f"mcpsync-listen[{name}]", daemon=True)

    def start(self, timeout: Optional[float]) -> None:
        """Open the stream and wait for the server's acknowledgement.

        Raises:
            RequestTimeout: no acknowledgement in time. And what the listen request raised.
        """
        self.thread.start()
        if not self._ready.wait(None if timeout is None or math.isinf(timeout) else timeout):
            self.stop()
            raise RequestTimeout(f"subscriptions/listen: no acknowledgement within {round((timeout or 0) * 1000)}ms",
                                 method=SUBSCRIPTIONS_LISTEN, timeout=timeout or 0.0)
        if self.failure is not None:
            raise self.failure

    def stop(self) -> None:
        self._stop.set()
        with self._lock:
            token = self._token
        if token is not None:
            token.cancel("subscription closed")

    def _registered(self, request_id: RequestId) -> None:
        """The engine allocated the listen request's id: route its notifications here from now on."""
        self.ids.add(request_id)
        self.owner.route(request_id, self)

    def on_notification(self, method: str, params: JSONObject) -> None:
        if method == ACKNOWLEDGED:
            honoured = params.get("notifications")
            self.acknowledged = honoured if isinstance(honoured, dict) else {}
            self._ready.set()
        elif method == UPDATED and self.subscription is not None and isinstance(params.get("uri"), str):
            self.subscription._deliver(params["uri"])  # noqa: SLF001 same module: the stream feeds its subscription

    def _run(self) -> None:
        delay = _BACKOFF[0]
        session = self.owner.session
        while not self._stop.is_set():
            token = CancelToken()
            with self._lock:
                self._token = token
            if self._stop.is_set():
                break
            try:
                session.call(SUBSCRIPTIONS_LISTEN, {"notifications": self.notifications},
                             CallOptions(timeout=math.inf, cancel=token, on_request_id=self._registered))
                log.info("[%s] The server ended the subscription stream", session.name)
                break
            except (RequestCancelled, TransportClosed) as exc:
                if isinstance(exc, ConnectionLost) and session.connected and self._ready.is_set() \
                        and not self._stop.is_set():
                    # Only this stream broke (a StreamBroken, say), not the connection: listen again.
                    log.warning("[%s] Subscription stream broke (%s); listening again in %gs", session.name, exc,
                                delay)
                    if self._stop.wait(delay):
                        break
                    delay = min(delay * 2, _BACKOFF[1])
                    continue
                if not self._ready.is_set():
                    self.failure = exc
                break
            except MCPSyncError as exc:
                if self._stop.is_set():
                    break
                if not self._ready.is_set():
                    self.failure = exc  # refused outright: the subscriber hears why
                    break
                log.warning("[%s] Subscription stream broke (%s); listening again in %gs", session.name, exc, delay)
                if self._stop.wait(delay):
                    break
                delay = min(delay * 2, _BACKOFF[1])
            finally:
                self.owner.unroute(self.ids)
                self.ids.clear()
        self.ended = True
        self._ready.set()


class Subscriptions:
    """The client's subscriptions (both eras) and its modern list_changed stream."""

    def __init__(self, session: SessionHandle) -> None:
        self.session = session
        self._lock = threading.Lock()
        self._legacy: Dict[str, List[Subscription]] = {}
        self._routes: Dict[RequestId, _Listen] = {}
        self._listens: List[_Listen] = []
        self._list_changed: Optional[_Listen] = None
        self._list_changed_flags: Set[str] = set()
        self._held: Dict[str, Subscription] = {}  # modern subscribe_resource() streams, by URI
        self._held_lock = threading.Lock()  # held while one is opened: one stream per URI

    # -- subscribing -------------------------------------------------------------------------------

    def subscribe(self, uri: str, callback: Optional[UpdateCallback], timeout: Optional[float]) -> Subscription:
        check_callback(callback, "the subscription callback", "(uri)", called="callback")  # TypeError now, not on each update
        subscription = Subscription(self, uri, callback)
        session = self.session
        if not session.modern:
            with self._lock:
                first = uri not in self._legacy
                self._legacy.setdefault(uri, []).append(subscription)
            if first:
                try:
                    session.call(RESOURCES_SUBSCRIBE, {"uri": uri}, _options(timeout))
                except BaseException:
                    with self._lock:
                        self._legacy.pop(uri, None)
                    raise
            return subscription
        listen = _Listen(self, {"resourceSubscriptions": [uri]}, session.name)
        listen.subscription = subscription
        subscription._listen = listen  # noqa: SLF001 same module: the owner wires a subscription to its stream
        with self._lock:
            self._listens.append(listen)
        try:
            listen.start(timeout if timeout is not None else session.default_timeout)
            honoured = (listen.acknowledged or {}).get("resourceSubscriptions")
            if not isinstance(honoured, list) or uri not in honoured:
                raise CapabilityError(f"Server {session.name!r} did not accept a subscription to {uri!r}")
        except BaseException:
            subscription._closed = True  # noqa: SLF001 same module: a failed subscribe leaves it closed
            self._stop(listen)
            raise
        return subscription

    def hold(self, uri: str, timeout: Optional[float]) -> None:
        """A modern ``subscribe_resource(uri)``: one stream for ``uri``, kept until :meth:`release`.

        Calling it again for the same URI opens nothing more. Raises like :meth:`subscribe`.
        """
        with self._held_lock:
            if uri not in self._held:
                self._held[uri] = self.subscribe(uri, None, timeout)

    def release(self, uri: str) -> None:
        """End the stream :meth:`hold` opened for ``uri`` (nothing if there is none)."""
        with self._held_lock:
            subscription = self._held.pop(uri, None)
        if subscription is not None:
            subscription.close()

    def closed(self, subscription: Subscription, timeout: Optional[float]) -> None:
        """``subscription`` was closed: end its stream, or unsubscribe once no one else needs the URI."""
        listen = subscription._listen  # noqa: SLF001 same module: the owner ends the stream it wired
        if listen is not None:
            self._stop(listen)
            return
        with self._lock:
            remaining = [s for s in self._legacy.get(subscription.uri, []) if s is not subscription]
            if remaining:
                self._legacy[subscription.uri] = remaining
                return
            self._legacy.pop(subscription.uri, None)
        session = self.session
        if session.connected and not session.modern:
            try:
                session.call(RESOURCES_UNSUBSCRIBE, {"uri": subscription.uri}, _options(timeout))
            except MCPSyncError as exc:
                log.debug("[%s] resources/unsubscribe %s failed: %s", session.name, subscription.uri, exc)

    def legacy_uris(self) -> List[str]:
        """The URIs subscribed with ``resources/subscribe`` (restored after an HTTP session is renewed)."""
        with self._lock:
            return sorted(self._legacy)

    def listen_for_list_changes(self, methods: Set[str], timeout: Optional[float]) -> None:
        """Modern: keep one listen stream open for the list_changed notifications named in ``methods``."""
        flags = {LIST_CHANGED_FLAGS[m] for m in methods if m in LIST_CHANGED_FLAGS}
        with self._lock:
            if flags <= self._list_changed_flags:
                return
            flags |= self._list_changed_flags
            self._list_changed_flags = flags
            old = self._list_changed
            listen = _Listen(self, {flag: True for flag in sorted(flags)}, self.session.name)
            self._list_changed = listen
            self._listens.append(listen)
        try:
            listen.start(timeout)
        except MCPSyncError as exc:
            log.warning("[%s] Could not listen for list changes: %s", self.session.name, exc)
            self._stop(listen)
        if old is not None:
            self._stop(old)  # only once the new stream is acknowledged: no gap

    # -- delivery --------------------------------------------------------------------------------------

    def acknowledge(self, method: str, params: Optional[JSONObject]) -> None:
        """Reader thread: note an acknowledgement at once (quick, never blocks).

        Done before any later message is read, so a stream acknowledged and then
        broken counts as a broken stream (listened to again), not as a refusal.
        """
        if method == ACKNOWLEDGED and params is not None:
            with self._lock:
                listen = self._routes.get(_meta.subscription_id(params))
            if listen is not None:
                listen.on_notification(method, params)

    def deliver(self, method: str, params: Optional[JSONObject]) -> None:
        """Dispatcher thread: hand an update to its subscription's callback."""
        if params is None or method == ACKNOWLEDGED:
            return
        sid = _meta.subscription_id(params)
        if sid is not None:
            with self._lock:
                listen = self._routes.get(sid)
            if listen is not None:
                listen.on_notification(method, params)
            return
        if method == UPDATED and isinstance(params.get("uri"), str):
            updated = params["uri"]
            with self._lock:
                targets = [s for uri, subs in self._legacy.items() if covers(uri, updated) for s in subs]
            for subscription in targets:
                subscription._deliver(updated)  # noqa: SLF001 same module: the owner routes legacy updates

    def route(self, request_id: RequestId, listen: _Listen) -> None:
        """Send the notifications naming ``request_id`` (a listen request) to ``listen``."""
        with self._lock:
            self._routes[request_id] = listen

    def unroute(self, ids: Set[RequestId]) -> None:
        with self._lock:
            for request_id in ids:
                self._routes.pop(request_id, None)

    # -- closing -------------------------------------------------------------------------------------

    def _stop(self, listen: _Listen) -> None:
        listen.stop()
        if listen.thread is not threading.current_thread() and listen.thread.ident is not None:
            listen.thread.join(5.0)
        with self._lock:
            if listen in self._listens:
                self._listens.remove(listen)

    def close(self) -> None:
        """Stop every stream (the connection is closing: nothing is sent for legacy subscriptions)."""
        with self._lock:
            listens, self._listens = list(self._listens), []
            self._legacy.clear()
            self._list_changed = None
            self._list_changed_flags = set()
        for listen in listens:
            listen.stop()
        for listen in listens:
            if listen.thread is not threading.current_thread() and listen.thread.ident is not None:
                listen.thread.join(5.0)


def _options(timeout: Optional[float]) -> CallOptions:
    return DEFAULT_OPTIONS if timeout is None else CallOptions(timeout=timeout)
