"""The 2026-07-28 ``subscriptions/listen`` streams one connection has open, and what each asked for.

Under 2026-07-28 a server has no session to send notifications on: a client
that wants ``list_changed`` or ``notifications/resources/updated`` opens a
``subscriptions/listen`` request whose response is the stream. The server
first sends ``notifications/subscriptions/acknowledged`` with the part of the
filter it honours, then every notification the filter asks for, each naming
the listen request's id in ``_meta["io.modelcontextprotocol/subscriptionId"]``.
The client ends a stream with ``notifications/cancelled`` (in memory and on
stdio); the request is never answered then.

:func:`read_filter` checks a listen request's filter and works out what is
honoured; :class:`Listeners` keeps one connection's open streams and sends to
them. The connection gives it the function that sends a message to its client.

Thread safety: every :class:`Listeners` method may be called from any thread.
Opening a stream (registering it and sending its acknowledgement) and sending
a notification to the streams take one lock, so no stream ever gets a
notification before its acknowledgement, and a notification sent after
:meth:`Listeners.open` returned reaches the new stream. Sending blocks only as
long as the connection's own send does.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Callable, Dict, FrozenSet, List, Optional

from .._rpc import jsonrpc as rpc
from .._rpc.jsonrpc import JSONObject, RequestId
from ..exceptions import MCPError
from ._protocol import ACKNOWLEDGED, LIST_CHANGED_FLAGS, RESOURCE_UPDATED, SUBSCRIPTION_ID_KEY

__all__ = ["Listeners", "Stream", "read_filter"]

#: The filter key for resource updates (a list of URIs).
RESOURCES = "resourceSubscriptions"
#: list_changed notification -> the capability whose ``listChanged`` promises it.
_KINDS = {method: method.split("/")[1] for method in LIST_CHANGED_FLAGS}


@dataclass(frozen=True)
class Stream:
    """One open listen stream: the notifications its acknowledged filter lets through."""

    request_id: RequestId
    methods: FrozenSet[str]
    """The ``list_changed`` notifications it honours."""
    uris: FrozenSet[str]
    """The resources whose ``notifications/resources/updated`` it honours (exact URIs)."""
    honoured: JSONObject
    """The filter as acknowledged (the subset of the one asked for)."""

    def wants(self, method: str, params: Optional[JSONObject]) -> bool:
        if method == RESOURCE_UPDATED:
            return params is not None and params.get("uri") in self.uris
        return method in self.methods


def read_filter(request_id: RequestId, params: JSONObject, capabilities: JSONObject) -> Stream:
    """The stream a listen request with ``params`` opens, honouring what ``capabilities`` promise.

    A ``list_changed`` flag is honoured when the capability of its kind has
    ``listChanged``, resource URIs when ``resources`` has ``subscribe``; other
    keys (``taskIds``: this server runs no tasks) are left out of the acknowledgement.

    Raises:
        MCPError: ``-32602``, the filter is not an object or its URIs are not a list of strings.
    """
    asked = params.get("notifications")
    if not isinstance(asked, dict):
        raise MCPError(rpc.INVALID_PARAMS, "Invalid params: subscriptions/listen needs a 'notifications' object")
    honoured: JSONObject = {}
    methods = set()
    for method, flag in LIST_CHANGED_FLAGS.items():
        if asked.get(flag) is True and _offers(capabilities, _KINDS[method], "listChanged"):
            honoured[flag] = True
            methods.add(method)
    uris = _uris(asked)
    if uris and _offers(capabilities, "resources", "subscribe"):
        honoured[RESOURCES] = list(dict.fromkeys(uris))
    return Stream(request_id, frozenset(methods), frozenset(honoured.get(RESOURCES, ())), honoured)


def _uris(asked: JSONObject) -> Optional[List[str]]:
    """The resource URIs a listen filter asks for (None: it asks for none).

    Raises:
        MCPError: ``-32602``, they are not a list of strings.
    """
    uris = asked.get(RESOURCES)
    if uris is not None and (not isinstance(uris, list) or not all(isinstance(uri, str) for uri in uris)):
        raise MCPError(rpc.INVALID_PARAMS, f"Invalid params: {RESOURCES!r} must be a list of URIs")
    return uris


def _offers(capabilities: JSONObject, kind: str, feature: str) -> bool:
    offered = capabilities.get(kind)
    return isinstance(offered, dict) and bool(offered.get(feature))


def stamped(params: Optional[JSONObject], request_id: RequestId) -> JSONObject:
    """``params`` with the stream's id in its ``_meta`` (their own ``_meta`` keys kept)."""
    stamped_params: Dict[str, Any] = dict(params or {})
    own = stamped_params.get("_meta")
    stamped_params["_meta"] = {**(own if isinstance(own, dict) else {}), SUBSCRIPTION_ID_KEY: request_id}
    return stamped_params


class Listeners:
    """The listen streams of one connection; ``send(message)`` delivers a message to its client (False: closed)."""

    def __init__(self, send: Callable[[JSONObject], bool]) -> None:
        self._send = send
        self._lock = threading.Lock()
        self._streams: Dict[RequestId, Stream] = {}

    def open(self, stream: Stream) -> None:
        """Register ``stream`` and send its acknowledgement (a stream of the same id is replaced)."""
        with self._lock:
            self._streams[stream.request_id] = stream
            self._send(rpc.make_notification(ACKNOWLEDGED, stamped({"notifications": dict(stream.honoured)},
                                                                   stream.request_id)))

    def end(self, request_id: Any) -> bool:
        """Forget the stream ``request_id`` (the client cancelled it); False if there was none."""
        with self._lock:
            return self._streams.pop(request_id, None) is not None if rpc.valid_id(request_id) else False

    def clear(self) -> None:
        with self._lock:
            self._streams.clear()

    def publish(self, method: str, params: Optional[JSONObject]) -> bool:
        """Send ``method`` on every stream whose filter asks for it; True if one got it."""
        sent = False
        with self._lock:
            for stream in self._streams.values():
                if stream.wants(method, params) and self._send(
                        rpc.make_notification(method, stamped(params, stream.request_id))):
                    sent = True
        return sent
