"""Serving the peer's requests: handlers on a bounded worker pool, their cancellation, the answers.

The engine's reader thread hands every request the peer sends to
:meth:`IncomingRequests.receive`. Ordinary requests run on the engine's worker
pool, never on the reader thread, so a handler may itself call the peer; an
*inline* handler (meant for ``ping``) runs on the reader thread and must not
block. Each running handler gets a :class:`~mcpsync.CancelToken`, fired when the
peer cancels the request or the connection closes; a cancelled request gets no
answer.

The reader thread never writes: an answer it produces (an inline handler's, a
refusal because the pool is full, "method not found") goes to the engine's
:class:`~mcpsync._rpc.workers.Outbox`, whose thread writes it, and so does the
firing of a cancelled handler's token (its callbacks are the handler's code). A
peer that floods us with requests while not reading its input therefore fills
the outbox, not the reader: what the outbox cannot take is dropped with a
WARNING, and the reader goes on reading (the answers the peer is waiting for
included).

Whether requests are answered at all is a setting (:meth:`IncomingRequests.set_answering`):
the layer that knows the protocol version decides it; this module names no method.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Dict, Optional

from .._log import getLogger
from . import jsonrpc as rpc
from .jsonrpc import JSONObject, RequestId
from .workers import DropReport, Outbox, WorkerPool
from ..cancel import CancelToken
from ..exceptions import MCPError, ProtocolError

__all__ = ["IncomingRequests", "InlineHandler", "RequestHandler"]

log = getLogger("mcpsync.engine")

#: ``handler(method, params, cancel_token)``: returns the result object, or raises MCPError.
RequestHandler = Callable[[str, Optional[JSONObject], CancelToken], Any]
#: ``handler(params)``: answered on the reader thread; must not block.
InlineHandler = Callable[[Optional[JSONObject]], Any]


class IncomingRequests:
    """The peer's requests to us: dispatch, cancellation and answers.

    Thread safety: :meth:`receive` and :meth:`cancel` are called by the one reader
    thread; the setters and :meth:`cancel_all` from any thread. Answers are written
    with ``reply(message)``, which may block, from the handler's worker thread, or
    from the ``outbox`` thread for answers made on the reader thread.
    """

    def __init__(self, name: str, pool: WorkerPool, reply: Callable[[JSONObject], None],
                 outbox: Optional[Outbox] = None) -> None:
        self.name = name
        self._pool = pool
        self._write_reply = reply
        self._outbox = outbox if outbox is not None else Outbox(name)
        self._refusals = DropReport()
        self._unsent = DropReport()
        self._unanswered = DropReport()
        self._lock = threading.Lock()
        self._running: Dict[RequestId, CancelToken] = {}
        self._handler: Optional[RequestHandler] = None
        self._inline: Dict[str, InlineHandler] = {}
        self._answering = True

    # -- settings -----------------------------------------------------------------------

    def set_handler(self, handler: Optional[RequestHandler]) -> None:
        """Serve requests with ``handler`` (None: every request is answered "method not found")."""
        self._handler = handler

    def set_inline_handler(self, method: str, handler: InlineHandler) -> None:
        """Answer ``method`` on the reader thread with ``handler``, which must not block."""
        self._inline[method] = handler

    def set_answering(self, answering: bool) -> None:
        """False: requests are logged and ignored and no answer is ever written (some protocol
        versions let the peer send none, and forbid us to write responses)."""
        self._answering = answering

    # -- the reader thread ----------------------------------------------------------------

    def receive(self, message: JSONObject, size: int = 0) -> None:
        """Dispatch one request (already classified as one) from the reader thread; never blocks.

        ``size`` is the bytes it arrived as (0: unknown, then estimated), counted against the
        pool's byte budget; a request refused for the budget or the count gets ``-32603``."""
        request_id, method, params = message["id"], message["method"], message.get("params")
        if not self._answering:
            if self._unanswered.note():
                log.warning("[%s] Ignoring a %r request from the server: this protocol version has "
                            "no server-to-client requests (%d ignored so far)", self.name, method,
                            self._unanswered.count)
            return
        inline = self._inline.get(method)
        if inline is not None:
            self._answer(request_id, inline, params, send=self._send_later)
        elif self._handler is None:
            self._send_later(rpc.make_error(request_id, rpc.METHOD_NOT_FOUND, f"Method not found: {method}"))
        else:
            token = CancelToken()
            with self._lock:
                self._running[request_id] = token
            refused = self._pool.offer(size or rpc.rough_size(params), self._serve, request_id, method, params,
                                       token)
            if refused is not None:
                with self._lock:
                    self._running.pop(request_id, None)
                if refused == "stopped":
                    return  # the connection is closing: nobody reads an answer
                if self._refusals.note():  # say it, without letting a flood flood the log
                    if refused == "full":
                        log.warning("[%s] Too many server requests in flight; refusing %s (%d refused so far)",
                                    self.name, method, self._refusals.count)
                    else:
                        log.warning("[%s] Server requests queued hold more than their byte budget (%d MiB); "
                                    "refusing %s (%d refused so far, %d of them for bytes)", self.name,
                                    (self._pool.max_bytes or 0) // (1024 * 1024), method, self._refusals.count,
                                    self._pool.dropped_for_bytes)
                self._send_later(rpc.make_error(request_id, rpc.INTERNAL_ERROR, "Client overloaded; try again later"))

    def cancel(self, request_id: Any, reason: Any) -> None:
        """Reader thread: the peer cancelled ``request_id``; its handler's token is fired on the
        outbox thread, since the token's callbacks are the handler's code (unknown ids are ignored).
        Never blocks."""
        if not rpc.valid_id(request_id):  # anything else (a list, an object) names no request
            return
        with self._lock:
            token = self._running.get(request_id)
        if token is not None and not self._outbox.submit(token.cancel, reason):
            log.warning("[%s] Reply queue full: the server's cancellation of request %r is dropped",
                        self.name, request_id)

    def stop(self, timeout: float) -> None:
        """Let the outbox send what it holds (writes fail fast once the connection is closed),
        then end its thread, within ``timeout`` seconds."""
        self._outbox.stop(timeout)

    def cancel_all(self, reason: str) -> None:
        """Fire the token of every handler still running (the connection closed)."""
        with self._lock:
            tokens = list(self._running.values())
        for token in tokens:
            token.cancel(reason)

    # -- worker threads -------------------------------------------------------------------

    def _serve(self, request_id: RequestId, method: str, params: Any, token: CancelToken) -> None:
        handler = self._handler
        try:
            if handler is None:
                raise MCPError(rpc.METHOD_NOT_FOUND, f"Method not found: {method}")
            self._answer(request_id, lambda p: handler(method, p, token), params, token)
        finally:
            with self._lock:
                self._running.pop(request_id, None)

    def _answer(self, request_id: RequestId, fn: Callable[[Any], Any], params: Any,
                token: Optional[CancelToken] = None, send: Optional[Callable[[JSONObject], None]] = None) -> None:
        try:
            result = fn(params if isinstance(params, dict) else None)
            reply = rpc.make_result(request_id, {} if result is None else result)
        except MCPError as exc:
            reply = rpc.make_error(request_id, exc.code, exc.message, exc.data)
        except Exception as exc:
            log.exception("[%s] Handler for server request %r raised", self.name, request_id)
            reply = rpc.make_error(request_id, rpc.INTERNAL_ERROR, f"Client handler failed: {type(exc).__name__}")
        if token is not None and token.cancelled:
            return  # the server cancelled it: it expects no answer
        (send or self._reply)(reply)

    def _send_later(self, reply: JSONObject) -> None:
        """Reader thread: have the outbox thread write ``reply``; drop it (and say so) if the outbox is
        full, which happens only while the peer is not reading what we write. Never blocks."""
        if not self._outbox.submit(self._reply, reply):
            if self._unsent.note():
                log.warning("[%s] Reply queue full (the server is not reading): dropped the answer to "
                            "request %r (%d dropped so far)", self.name, reply.get("id"), self._unsent.count)

    def _reply(self, reply: JSONObject) -> None:
        if not self._answering:  # the setting changed while the handler ran
            log.warning("[%s] Not answering request %r: this protocol version has no server-to-client requests",
                        self.name, reply.get("id"))
            return
        try:
            self._write_reply(reply)
        except ProtocolError:  # a handler returned something that is not JSON
            log.error("[%s] Handler result is not JSON-serialisable; answering with an error", self.name)
            self._reply(rpc.make_error(reply["id"], rpc.INTERNAL_ERROR, "Client handler returned non-JSON"))
        except Exception as exc:
            log.debug("[%s] Could not answer server request: %s", self.name, exc)
