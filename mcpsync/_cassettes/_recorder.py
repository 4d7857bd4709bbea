"""Recording: a tap on each real transport, every message kept in conversation order.

The tap runs on whichever thread moves a message (the caller writing a request, the reader
receiving): it only snapshots the message as JSON text under a lock. Filtering secrets and
normalising ids happen once, when the cassette is written.
"""

from __future__ import annotations

import json
import os
import threading
from typing import Any, Dict, List, Optional, Tuple

from .._protocol.methods import NOTIFY_CANCELLED
from .._session import era as _era

from ..exceptions import HTTPStatusError
from ..transports.base import Transport
from ._format import Connection, Event, Recording
from ._normalise import IdMap, strip_meta, timestamps
from ._secrets import Filter

__all__ = ["Recorder", "describe", "detection_of"]

_DETECTION = {"stdio": "probe", "streamable-http": "http", "sse": "legacy"}


def describe(transport: Transport, secrets: Filter) -> Dict[str, Any]:
    """The target of ``transport`` as a cassette names it (secrets filtered): what replay matches on.

    A stdio target is the program's file name (not its folder: ``sys.executable`` differs from
    machine to machine) and its arguments, those that are paths under the working directory made
    relative to it; so a cassette recorded in one checkout replays in another.
    """
    if transport.kind == "stdio":
        command = str(getattr(transport, "command", ""))
        return {"command": os.path.basename(command) or command,
                "args": secrets.args([_portable(str(arg)) for arg in getattr(transport, "args", [])])}
    return {"url": secrets.url(str(getattr(transport, "url", "")))}


def _portable(arg: str) -> str:
    if not os.path.isabs(arg):
        return arg
    try:
        relative = os.path.relpath(arg)
    except ValueError:  # another drive (Windows)
        return arg
    return arg if relative.startswith(os.pardir) else relative.replace(os.sep, "/")


def detection_of(transport: Transport) -> str:
    return _era.detection_for(transport)  # the session's decision, read from the transport's kind


class Recorder:
    """Collects the conversations of every transport it taps, in the order their messages moved."""

    def __init__(self, secrets: Filter) -> None:
        self._secrets = secrets
        self._lock = threading.Lock()
        self._connections: List[Tuple[str, Dict[str, Any], str]] = []
        self._events: List[Tuple[int, str, Any]] = []

    @property
    def connections(self) -> int:
        with self._lock:
            return len(self._connections)

    def tap(self, transport: Transport) -> Transport:
        """Start recording ``transport`` (unopened) as a new connection; returns it."""
        if transport.kind not in _DETECTION:
            return transport  # a ready in-memory transport: nothing to record
        with self._lock:
            index = len(self._connections)
            self._connections.append((transport.kind, describe(transport, self._secrets), detection_of(transport)))

        def tap(direction: str, item: Any) -> None:
            if direction == "timeout":
                request_id, seconds = item
                item = {"id": request_id, "seconds": round(seconds, 3)}
            elif direction == "fail":
                request_id, error = item
                item = {"id": request_id, "error": type(error).__name__, "message": str(error)}
                if isinstance(error, HTTPStatusError):
                    item["status"] = error.status_code
                    item["body"] = error.body[:4096]
            elif direction != "switch":
                item = json.dumps(item)  # a snapshot: the dict may be reused after this returns
            with self._lock:
                self._events.append((index, direction, item))

        transport.set_message_tap(tap)
        return transport

    def recording(self) -> Tuple[Recording, List[Tuple[int, int]]]:
        """What was recorded, secrets filtered and ids normalised, with its conversation order."""
        with self._lock:
            connections = list(self._connections)
            events = list(self._events)
        recording = Recording([Connection(kind, target, detection) for kind, target, detection in connections])
        ids = [IdMap() for _ in connections]
        order: List[Tuple[int, int]] = []
        for index, direction, item in events:
            data = self._normalised(direction, item, ids[index])
            if data is None:
                continue
            events_of = recording.connections[index].events
            order.append((index, len(events_of)))
            events_of.append(Event(direction, data))
        return recording, order

    def _normalised(self, direction: str, item: Any, ids: IdMap) -> Optional[Any]:
        if direction == "switch":
            return item
        if direction in ("fail", "timeout"):
            number = ids.get(item["id"])
            if number is None:
                return None
            return self._secrets.json({**item, "id": number})
        message = json.loads(item)
        if direction == "send":
            message = _client_message(message, ids)
        elif isinstance(message, list):
            message = [_server_message(m, ids) for m in message]
        else:
            message = _server_message(message, ids)
        return self._secrets.json(message)


def _client_message(message: Any, ids: IdMap) -> Any:
    if not isinstance(message, dict):
        return message
    message = dict(message)
    if "method" not in message:
        return message
    params = strip_meta(message.get("params"))
    if "id" in message:
        live = message["id"]
        message["id"] = ids.new(live)
        params = _renumbered_progress(params, live, message["id"])
    elif message["method"] == NOTIFY_CANCELLED and isinstance(params, dict):
        params = _renumbered_cancel(params, ids)
    if params is not None:
        message["params"] = params
    elif "params" in message:
        del message["params"]
    return message


def _renumbered_progress(params: Any, live: Any, number: Any) -> Any:
    """A request's params with its progress token renumbered, when the token is the request's live id."""
    meta = params.get("_meta") if isinstance(params, dict) else None
    if not isinstance(meta, dict) or meta.get("progressToken") != live:
        return params
    return {**params, "_meta": {**meta, "progressToken": number}}


def _renumbered_cancel(params: Dict[str, Any], ids: IdMap) -> Dict[str, Any]:
    """A cancellation's params naming the request by its recorded number (as they were, for one unknown)."""
    number = ids.get(params.get("requestId"))
    return params if number is None else {**params, "requestId": number}


def _server_message(message: Any, ids: IdMap) -> Any:
    if not isinstance(message, dict):
        return message
    message = dict(message)
    if "method" not in message:  # a response: to our request, renumbered like it
        number = ids.get(message.get("id"))
        if number is not None:
            message["id"] = number
        return message
    params = message.get("params")
    if "id" not in message and isinstance(params, dict):
        params = dict(params)
        for key in ("progressToken", "requestId"):
            number = ids.get(params.get(key))
            if number is not None:
                params[key] = number
        message["params"] = timestamps(params)
    return message
