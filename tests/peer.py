"""A scriptable in-memory peer for engine and client tests (no process, no socket)."""

from __future__ import annotations

import queue
import threading
from typing import Any, Callable, Dict, List, Optional

from mcpsync import MemoryTransport

Responder = Callable[["ScriptedPeer", Dict[str, Any]], None]


class ScriptedPeer:
    """Receives what the client writes; answers from its own thread via ``respond``.

    ``responders`` maps a method to ``fn(peer, message)``; without one a
    request is answered ``{"echo": params}``. ``hold(method)`` makes requests
    of that method wait until the test answers them itself.
    """

    def __init__(self, responders: Optional[Dict[str, Responder]] = None, **transport_options: Any) -> None:
        self.responders = dict(responders or {})
        self.received: "queue.Queue[Dict[str, Any]]" = queue.Queue()
        self.log: List[Dict[str, Any]] = []
        self.held: "queue.Queue[Dict[str, Any]]" = queue.Queue()
        self._held_methods: set = set()
        self._inbox: "queue.Queue[Optional[Dict[str, Any]]]" = queue.Queue()
        self.transport = MemoryTransport(self._on_write, **transport_options)
        self._thread = threading.Thread(target=self._run, name="test-peer", daemon=True)
        self._thread.start()

    def hold(self, method: str) -> None:
        self._held_methods.add(method)

    def _on_write(self, transport: MemoryTransport, message: Dict[str, Any]) -> None:
        self.log.append(message)
        self.received.put(message)
        self._inbox.put(message)

    def _run(self) -> None:
        while True:
            message = self._inbox.get()
            if message is None:
                return
            method = message.get("method")
            if "id" not in message or method is None:
                continue  # notifications and our own answers' replies
            if method in self._held_methods:
                self.held.put(message)
                continue
            responder = self.responders.get(method)
            try:
                if responder is not None:
                    responder(self, message)
                else:
                    self.result(message, {"echo": message.get("params")})
            except Exception:
                pass  # the transport may be closed under us

    def result(self, message: Dict[str, Any], result: Any) -> None:
        self.transport.feed({"jsonrpc": "2.0", "id": message["id"], "result": result})

    def error(self, message: Dict[str, Any], code: int, text: str, data: Any = None) -> None:
        error: Dict[str, Any] = {"code": code, "message": text}
        if data is not None:
            error["data"] = data
        self.transport.feed({"jsonrpc": "2.0", "id": message["id"], "error": error})

    def notify(self, method: str, params: Optional[Dict[str, Any]] = None) -> None:
        message: Dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self.transport.feed(message)

    def wait_for(self, predicate: Callable[[Dict[str, Any]], bool], timeout: float = 5.0) -> Dict[str, Any]:
        """The next written message matching ``predicate`` (others are skipped)."""
        import time

        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError("the peer did not receive the expected message")
            message = self.received.get(timeout=remaining)
            if predicate(message):
                return message

    def close(self) -> None:
        self.transport.close()
        self._inbox.put(None)
        self._thread.join(5)

    def __enter__(self) -> "ScriptedPeer":
        self.transport.open()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
