"""The stand-in transport of a replay: the recording answers, no process, no socket."""

from __future__ import annotations

import threading
from typing import Any, Dict, Optional

from .._rpc.jsonrpc import JSONObject, decode, encode
from ..exceptions import HTTPStatusError, RequestTimeout, SessionExpired, TransportError
from ..transports.base import Transport
from ._errors import CassetteError, CassetteMismatch
from ._replayer import Action, Replayer

__all__ = ["CassetteTransport"]


def rebuild_error(spec: Dict[str, Any]) -> BaseException:
    """The error a recorded ``fail`` event stands for (an HTTP status keeps its status)."""
    message = str(spec.get("message", "request failed"))
    if spec.get("error") == "CassetteError":
        return CassetteError(message)
    status = spec.get("status")
    if isinstance(status, int):
        cls = SessionExpired if spec.get("error") == "SessionExpired" else HTTPStatusError
        return cls(message, status_code=status, body=str(spec.get("body", "")))
    return TransportError(message)


class CassetteTransport(Transport):
    """Plays one recorded connection back to the client.

    Each message the client writes is matched by the :class:`Replayer`; the recorded messages
    that followed it are fed to the engine on the writer's thread, as a
    :class:`~mcpsync.transports.MemoryTransport` does. The transport's ``url``, ``command`` and ``args`` are kept, so what the client reports about
    its connection is unchanged; the era is found as it was found while recording.
    """

    _close_when_collected = False  # it holds no OS resource

    def __init__(self, replayer: Replayer, *, kind: str, name: str, timeout: Optional[float],
                 detection: str, attributes: Dict[str, Any]) -> None:
        super().__init__(name=name, timeout=timeout)
        #: Always "cassette" (so no era is cached for a replay); ``recorded_kind`` is the real one's.
        self.kind = "cassette"
        self.recorded_kind = kind
        self.era_detection = detection
        self.replayer = replayer
        self._feed_lock = threading.RLock()
        self._waiting: Dict[Any, str] = {}  # live id -> method of our requests not yet answered
        self._attributes = dict(attributes)
        for key, value in attributes.items():
            setattr(self, key, value)

    def _open(self) -> None:
        pass

    def _write(self, message: JSONObject) -> None:
        if self._engine.closed:
            raise self._engine.closed_error()
        wire = decode(encode(message))  # what passes here is what would pass on the wire
        with self._feed_lock:
            if isinstance(wire, dict) and "method" in wire and "id" in wire:
                self._waiting[wire["id"]] = str(wire["method"])
            try:
                actions = self.replayer.client_message(wire)
            except CassetteMismatch as exc:
                self._unmatched(wire, exc)
                raise
            for action in actions:
                self._act(action)

    def _unmatched(self, wire: Any, exc: CassetteMismatch) -> None:
        """A message the recording lacks: a handler's answer fails the calls waiting on it (the handler
        runs on a worker, where raising reaches nobody); a request is no longer waited on."""
        if isinstance(wire, dict) and "method" not in wire:
            for live_id in list(self._waiting):
                self._engine.fail_request(live_id, exc)
        else:
            self._waiting.pop(wire.get("id") if isinstance(wire, dict) else None, None)

    def _act(self, action: Action) -> None:
        kind, item = action
        if kind in ("fail", "timeout"):
            live_id, spec = item
            method = self._waiting.pop(live_id, "")
            if kind == "timeout":  # as the recording's caller gave up, at once
                error: BaseException = RequestTimeout.after(float(spec["seconds"]), method=method, server=self.name)
            else:
                error = rebuild_error(spec)
            self._engine.fail_request(live_id, error)
            return
        if isinstance(item, dict) and "method" not in item:
            self._waiting.pop(item.get("id"), None)
        raw = encode(item)
        self._engine.receive(decode(raw), len(raw))

    def fallback_for(self, error: BaseException) -> Optional[Transport]:
        """The recorded legacy HTTP+SSE fallback, when the recording went on over it."""
        if not isinstance(error, HTTPStatusError):
            return None
        switched = self.replayer.next_is_switch()
        if switched is None:
            return None
        alternate = CassetteTransport(self.replayer, kind=switched, name=self.name, timeout=self.timeout,
                                      detection="legacy", attributes=self._attributes)
        alternate.on_notification = self.on_notification
        alternate.on_error, self.on_error = self.on_error, None
        alternate.on_close, self.on_close = self.on_close, None
        return alternate
