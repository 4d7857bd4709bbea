"""The server's own JSON-RPC requests to a legacy client (``sampling/createMessage`` and friends).

Under the ``initialize`` handshake, ``ctx.sample``, ``ctx.elicit`` and
``ctx.list_roots`` are requests from server to client. :class:`ClientRequests`
numbers them, sends them through the connection, matches the client's answers
by id and wakes the run waiting for each.

Thread safety: :meth:`ClientRequests.ask` blocks the worker thread that asks
until the client answers, the run is cancelled, the connection closes or the
timeout passes; :meth:`ClientRequests.resolve` (the dispatcher) and
:meth:`ClientRequests.close` (any thread) never block.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Callable, Dict, Optional

from .._protocol.methods import NOTIFY_CANCELLED
from .._rpc import jsonrpc as rpc
from .._rpc.jsonrpc import JSONObject
from ..exceptions import MCPError, RequestTimeout
from ._context import Invocation, abandoned

__all__ = ["ClientRequests"]

log = logging.getLogger("mcpsync.testing")


class _Pending:
    """A request the server sent the client, waiting for its answer."""

    __slots__ = ("event", "done", "result", "error")

    def __init__(self) -> None:
        self.event = threading.Event()
        self.done = False
        self.result: Any = None
        self.error: Optional[JSONObject] = None


class ClientRequests:
    """One connection's requests to its client; ``send(message)`` delivers a message (False: closed)."""

    def __init__(self, name: str, send: Callable[[JSONObject], bool]) -> None:
        self._name = name
        self._send = send
        self._lock = threading.Lock()
        self._pending: Dict[int, _Pending] = {}
        self._next_id = 0
        self._closed = False

    def ask(self, run: Invocation, method: str, params: JSONObject, limit: float) -> Any:
        """Send ``method`` to the client and block for its result (cancelled with ``run``).

        Raises:
            MCPError: the client answered with an error.
            RequestTimeout: no answer within ``limit`` seconds (the client is told the server stopped waiting).
            RequestCancelled: the run was cancelled or the connection closed.
        """
        pending = _Pending()
        with self._lock:
            if self._closed:
                raise abandoned()
            self._next_id += 1
            request_id = self._next_id
            self._pending[request_id] = pending
        run.add_waker(pending.event)
        try:
            if not self._send(rpc.make_request(request_id, method, params)):
                raise abandoned()
            pending.event.wait(limit)
            if pending.done:
                if pending.error is not None:
                    raise MCPError.from_wire(pending.error)
                return pending.result
            # Cancelled, closed or timed out: tell the client we stopped waiting.
            reason = run.cancel_reason or "the server stopped waiting"
            self._send(rpc.make_notification(NOTIFY_CANCELLED, {"requestId": request_id, "reason": reason}))
            if run.cancelled.is_set() or self._closed:
                raise abandoned()
            raise RequestTimeout(f"The client did not answer {method} within {limit}s", method=method,
                                 timeout=limit)
        finally:
            run.remove_waker(pending.event)
            with self._lock:
                self._pending.pop(request_id, None)

    def resolve(self, message: JSONObject) -> None:
        """Dispatcher thread: the client's answer ``message`` (a response) wakes the request it answers."""
        with self._lock:
            pending = self._pending.get(message["id"]) if type(message["id"]) is int else None
        if pending is None:
            log.debug("[%s] Dropping a response for unknown id %r", self._name, message["id"])
            return
        error = message.get("error")
        pending.error = error if isinstance(error, dict) else None
        pending.result = message.get("result")
        pending.done = True
        pending.event.set()

    def close(self) -> None:
        """The connection closed: wake every waiting request (it raises ``RequestCancelled``), refuse new ones."""
        with self._lock:
            self._closed = True
            pending = list(self._pending.values())
        for waiting in pending:
            waiting.event.set()
