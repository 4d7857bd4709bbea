"""The JSON-RPC engine shared by every transport: ids, waiters, timeouts, cancel, dispatch.

The engine does no I/O and knows no MCP method. A transport builds it with one
:class:`~mcpsync._rpc.wire.Wire` (write, timed write, abandon) and feeds every
decoded incoming message to :meth:`Engine.receive` from its reader thread; the
peer's requests are served by :mod:`mcpsync._rpc.incoming`. Threads that call :meth:`Engine.request` park on their own lock (see
:class:`_Waiter`) until the reader resolves the request, the timeout passes, the
caller's cancel token fires, or the connection closes.

Ownership rule: the calling thread registers its waiter and removes it in
``finally`` on every path; the reader only looks waiters up and resolves them.
"""

from __future__ import annotations

import _thread
import functools
import math
import threading
import time
from _thread import LockType
from typing import Any, Callable, Dict, List, Optional, Tuple

from .._log import getLogger
from . import jsonrpc as rpc
from .incoming import IncomingRequests, InlineHandler, RequestHandler
from .jsonrpc import JSONObject, RequestId
from .options import DEFAULT_OPTIONS, CallOptions, Deadline, ProgressCallback
from .wire import Wire
from .workers import DropReport, Outbox, SerialDispatcher, WorkerPool
from ..cancel import CancelToken
from ..exceptions import MCPError, ProtocolError, RequestCancelled, RequestTimeout, TransportClosed, TransportError
from . import delivery

__all__ = ["CANCEL_WRITE_TIMEOUT", "DEFAULT_TIMEOUT", "Engine", "InlineHandler", "MessageTap", "NotificationSink",
           "RequestHandler"]

log = getLogger("mcpsync.engine")

DEFAULT_TIMEOUT = 30.0

NotificationSink = Callable[[str, Optional[JSONObject]], None]
#: ``tap(direction, item)``: sees every message in conversation order (see :attr:`Engine.tap`).
MessageTap = Callable[[str, Any], None]
ClosedFactory = Callable[[], TransportClosed]

#: How long the courtesy ``notifications/cancelled`` may take to write (a full pipe must not hold the caller).
CANCEL_WRITE_TIMEOUT = 1.0


class _Waiter:
    """One pending request: the caller's wake-up lock plus the outcome slot the reader fills.

    ``wake`` is a bare lock, held while the caller has nothing to wake for: the caller
    parks by acquiring it, and whoever wakes it (the reader with the answer, a cancel
    callback, a progress update, the close) releases it (see :func:`_wake`). That is one
    release and one acquire per call, where an Event costs a Condition, a fresh lock per
    wait and a waiter list. The lock is the calling thread's own (see :func:`_take_lock`):
    a thread waits for one request at a time, so it parks on the same lock call after call.
    """

    __slots__ = ("wake", "method", "done", "ready", "result", "error", "on_progress", "progressed",
                 "wake_on_progress", "timeout_label")

    def __init__(self, method: str, on_progress: Optional[ProgressCallback], reset_timeout_on_progress: bool,
                 wake: LockType) -> None:
        self.wake = wake
        self.method = method
        self.done = False  # an outcome is set (first one wins); guarded by the engine lock
        self.ready = False  # the caller may take the outcome (set just before the wake-up)
        self.result: Any = None
        self.error: Optional[BaseException] = None
        self.on_progress = on_progress
        self.progressed = False
        self.wake_on_progress = reset_timeout_on_progress and on_progress is not None  # progress restarts the wait
        self.timeout_label = "Request"


def _outcome(waiter: _Waiter) -> Any:
    """A ready waiter's result, or its error raised."""
    error = waiter.error
    if error is None:
        return waiter.result
    # The error's traceback holds this frame and every caller's, and those hold ``waiter``: left
    # in the slot it would make a cycle keeping the caller's whole stack (and its locals: pools,
    # files, sockets) alive until the cyclic collector ran, which the free-threaded build does
    # far less often (a test's fork pool kept 12 pipes open there).
    waiter.error = None
    try:
        raise error
    finally:
        del error


class Engine:
    """Pairs responses with requests and routes everything else the peer sends.

    Args:
        wire: where every outgoing message goes (see :class:`~mcpsync._rpc.wire.Wire`).
        name: a label for logs and thread names.
        default_timeout: seconds for a request whose options give none (``None``: no limit).
        max_workers: threads serving the peer's requests at once.
        on_notification: ``sink(method, params)`` for every notification, on the dispatcher thread.
        hint: ``hint()`` returns a sentence that may explain why the peer is silent (what the
            transport saw instead of answers), or "". Called only when a timeout error is built,
            on the timed-out caller's thread; what it raises is ignored.

    Thread safety: :meth:`request` and :meth:`notify` may be called from any
    number of threads at once; :meth:`receive` is called by one reader thread.
    Progress callbacks and notification sinks run, in arrival order, on one
    dispatcher thread; the peer's requests run on a small worker pool (see
    :attr:`incoming`); neither ever runs on the reader thread, except inline
    handlers (meant for ``ping``), which must not block. :meth:`receive` never
    blocks and never writes: answers made on the reader thread are written by the
    outbox thread (see :mod:`mcpsync._rpc.incoming`).
    """

    def __init__(self, wire: Wire, *, name: str = "mcp", default_timeout: Optional[float] = DEFAULT_TIMEOUT,
                 max_workers: int = 4, on_notification: Optional[NotificationSink] = None,
                 hint: Optional[Callable[[], str]] = None) -> None:
        # The wire's methods are bound once here and called directly on every send.
        self._write = wire.write
        self._timed_write = wire.timed_write
        #: ``abandon(request_id, reason)``: the wire's abandon with this engine's cancellation
        #: bound in. Set only here; a test may wrap it to watch abandons.
        self.abandon_hook: Callable[[RequestId, Any], None] = functools.partial(
            wire.abandon, send_cancelled=self.send_cancelled)
        self.name = name
        self._hint = hint
        self.default_timeout = default_timeout
        self._lock = threading.Lock()
        self._next_id = 1
        self._waiters: Dict[RequestId, _Waiter] = {}
        self._closed: Optional[ClosedFactory] = None
        self._stopped = False
        self._dispatcher = SerialDispatcher(name)
        self._pool = WorkerPool(name, max_workers)
        self._notification_sink = on_notification
        self._notification_hook: Optional[NotificationSink] = None
        self.unknown_responses = 0
        #: The peer's requests: set their handlers and whether they are answered here.
        self.incoming = IncomingRequests(name, self._pool, self._write_reply, Outbox(name))
        self._drops = DropReport()
        #: What transports saw of each failed request's delivery (see :mod:`mcpsync._rpc.delivery`):
        #: the verdict is stamped on the error the request's caller gets.
        self.ledger = delivery.Ledger()
        #: ``tap(direction, item)``, or None (the default, and then it costs one None check per
        #: message): told of every message, in conversation order, on the thread that moves it.
        #: ``"send"`` with each outgoing message (requests, notifications, answers to the peer's
        #: requests) just before it is written; ``"recv"`` with each decoded incoming message
        #: before it is routed; ``"fail"`` with ``(request_id, error)`` when a transport fails
        #: one request on its own (an HTTP status); ``"timeout"`` with ``(request_id, seconds)`` when
        #: the caller stops waiting for an answer. It must be quick, must not block and must
        #: not raise (a cassette recorder is the one user).
        self.tap: Optional[MessageTap] = None

    # -- outgoing ---------------------------------------------------------------

    @property
    def closed(self) -> bool:
        return self._closed is not None

    def closed_error(self) -> TransportClosed:
        factory = self._closed
        return factory() if factory is not None else TransportClosed()

    def request(self, method: str, params: Optional[JSONObject] = None,
                options: CallOptions = DEFAULT_OPTIONS) -> Any:
        """Send a request and block until its result arrives.

        ``options.timeout`` is float seconds; ``None`` means the engine default and
        ``math.inf`` means no limit. It covers writing the request (a server that
        stops reading cannot hold the call) and waiting; ``options.deadline`` cuts it
        shorter when the operation it belongs to ends first. Returns the ``result`` member.
        ``options.on_request_id(id)`` is told the request's id before it is sent (for
        a long-lived request whose notifications name it). Blocks the calling thread
        only; the answer is delivered by the reader thread. When the caller stops
        waiting after the request was sent (timeout, cancel, Ctrl-C), the wire's
        ``abandon`` runs (it tells the peer) unless ``options.notify_cancel`` is False.

        Raises:
            MCPError: the peer answered with an error object.
            RequestTimeout: no answer in time (the peer is told it was cancelled).
            RequestCancelled: ``cancel`` fired (the peer is told), before or while waiting.
            KeyboardInterrupt: as raised while waiting (the peer is told).
            TransportClosed: the connection is, or became, closed.
        """
        timeout, cancel, on_progress, reset_timeout_on_progress, max_total_timeout, deadline, on_request_id, \
            notify_cancel, _max_output = options  # the cap on a result is the session layer's
        if cancel is not None:
            cancel.raise_if_cancelled()
        if timeout is None:
            timeout = self.default_timeout
        if deadline is not None:  # the operation's end caps this request: fold it into the hard stop
            max_total_timeout = _capped(max_total_timeout, deadline)
        start = time.monotonic()  # one deadline spans the write and the wait
        wake = _take_lock()
        waiter = _Waiter(method, on_progress, reset_timeout_on_progress, wake)
        with self._lock:
            if self._closed is not None:
                _return_lock(wake)
                raise delivery.stamp(self._closed(), delivery.NEVER_LEFT)
            request_id = self._next_id
            self._next_id += 1
            self._waiters[request_id] = waiter
        unregister: Optional[Callable[[], None]] = None
        tell_peer = False  # whether a Ctrl-C tells the server: once the request may have left
        try:
            if on_request_id is not None:
                on_request_id(request_id)
            if on_progress is not None:
                params = _with_progress_token(params, request_id)
            if cancel is not None:
                unregister = cancel.add_callback(lambda _reason: _wake(wake))
            message = rpc.make_request(request_id, method, params)
            # Count it as sent before writing: a Ctrl-C landing inside or just after the write
            # must still tell the server (a cancel for an id it never saw is harmless).
            tell_peer = notify_cancel
            self._send_request(request_id, message, _budget(timeout, max_total_timeout), start, cancel)
            return self._wait(request_id, waiter, timeout, cancel, max_total_timeout, start, notify_cancel)
        except KeyboardInterrupt:
            self._interrupted(request_id, waiter, tell_peer)
            raise
        finally:
            # Remove the waiter on every path so a late response is dropped, not misrouted.
            with self._lock:
                self._waiters.pop(request_id, None)
            self.ledger.forget(request_id)
            if unregister is not None:
                unregister()
            _return_lock(wake)

    def _send_request(self, request_id: int, message: JSONObject, budget: float, start: float,
                      cancel: Optional[CancelToken]) -> None:
        """Write a request by ``start + budget``; a failure stamped with what reached the server."""
        try:
            self._send_by(message, start + budget, cancel)
        except TransportError as exc:
            if isinstance(exc, TransportClosed) and not exc.may_have_reached_server:
                self.ledger.record(request_id, delivery.NEVER_LEFT)  # the writer saw no byte leave
            raise delivery.stamp(exc, self.ledger.take(request_id))
        except RequestTimeout:
            # The server stopped reading: it has at most part of it, which the next write completes (no cancel).
            raise self._timeout(budget, message["method"], "Request", unread=True) from None

    def _interrupted(self, request_id: int, waiter: _Waiter, tell_peer: bool) -> None:
        """A Ctrl-C ended the call: the server is told, if the request may have left and is unanswered."""
        if tell_peer and not waiter.done:
            self._abandon(request_id, "KeyboardInterrupt")

    def _wait(self, request_id: int, waiter: _Waiter, timeout: Optional[float],
              cancel: Optional[CancelToken], max_total: Optional[float], start: float, notify_cancel: bool) -> Any:
        limit = math.inf if timeout is None else timeout
        hard_stop = math.inf if max_total is None else start + max_total
        deadline = min(start + limit, hard_stop)
        while True:
            if waiter.ready:
                return _outcome(waiter)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise self._expired(request_id, waiter, _spent(deadline, hard_stop, max_total, limit), notify_cancel)
            # Park until someone releases the lock (see _Waiter); either way it is held again after.
            waiter.wake.acquire(True, -1 if remaining > _MAX_PARK else remaining)
            if waiter.ready:
                return _outcome(waiter)
            if cancel is not None:
                self._stop_if_cancelled(request_id, cancel, notify_cancel)
            if waiter.progressed:
                waiter.progressed = False
                deadline = min(time.monotonic() + limit, hard_stop)
            # Otherwise a late wake-up meant for this thread's previous request (its answer or its
            # cancel raced its end): ``ready`` is checked again before the next park, and _deliver
            # sets ``ready`` before it releases the lock, so no real wake-up is lost.

    def _expired(self, request_id: int, waiter: _Waiter, budget: float, notify_cancel: bool) -> RequestTimeout:
        """A request's time ran out: tell the tap (and the peer, unless told not to); the error to raise."""
        tap = self.tap
        if tap is not None:
            tap("timeout", (request_id, budget))
        if notify_cancel:
            self._abandon(request_id, "Request timed out")
        return self._timeout(budget, waiter.method, waiter.timeout_label)

    def _stop_if_cancelled(self, request_id: int, cancel: CancelToken, notify_cancel: bool) -> None:
        """Raise RequestCancelled if ``cancel`` fired while the request waited (the peer told, unless not to)."""
        if cancel.cancelled:
            if notify_cancel:
                self._abandon(request_id, cancel.reason)
            raise RequestCancelled(cancel.reason)

    def _timeout(self, budget: float, method: str, label: str, unread: bool = False) -> RequestTimeout:
        """The timeout error, naming this connection and ``method``, with the transport's hint."""
        hint = ""
        if self._hint is not None:
            try:
                hint = self._hint()
            except Exception:  # the hint is decoration: the timeout is the error
                hint = ""
        return RequestTimeout.after(budget, method=method, server=self.name, hint=hint, label=label, unread=unread)

    def _abandon(self, request_id: int, reason: Any) -> None:
        """Hand a request the caller stopped waiting for to the wire's abandon; never raises."""
        if self._closed is not None:
            return
        try:
            self.abandon_hook(request_id, reason)
        except Exception as exc:  # the connection may be dying; the caller's error matters more
            log.debug("Could not send cancellation for request %s: %s", request_id, exc)

    def send_cancelled(self, request_id: RequestId, reason: Any,
                       timeout: Optional[float] = CANCEL_WRITE_TIMEOUT) -> None:
        """Tell the peer we stopped waiting for ``request_id``: ``notifications/cancelled``.

        The write is bounded by ``timeout`` seconds (None: no limit of its own), by default
        :data:`CANCEL_WRITE_TIMEOUT`, so a peer that stopped reading cannot hold the caller.
        This is what a wire's ``abandon`` is handed. Blocks the calling thread only.

        Raises:
            TransportClosed, RequestTimeout: as a write does.
        """
        params: JSONObject = {"requestId": request_id}
        if reason is not None:
            params["reason"] = str(reason)
        self._send_by(rpc.make_notification(rpc.CANCELLED, params), time.monotonic() + _budget(timeout, None), None)

    def _send_by(self, message: JSONObject, deadline: float, cancel: Optional[CancelToken]) -> None:
        """Write ``message``, giving up at ``deadline`` on wires whose writes can block."""
        tap = self.tap
        if tap is not None:
            tap("send", message)
        if deadline == math.inf and cancel is None:
            self._write(message)
        else:
            self._timed_write(message, deadline, cancel)

    def _write_reply(self, reply: JSONObject) -> None:
        """Write an answer to one of the peer's requests, bounded by the default timeout."""
        self._send_by(reply, time.monotonic() + _budget(self.default_timeout, None), None)

    def call_soon(self, fn: Callable[..., Any], *args: Any) -> bool:
        """Run ``fn(*args)`` on the dispatcher thread, after every notification already queued.

        Never blocks; False when the queue is full or stopped (``fn`` then never runs).
        """
        return self._dispatcher.submit(fn, *args)

    def set_notification_hook(self, hook: Optional[NotificationSink]) -> None:
        """Run ``hook(method, params)`` on the reader thread for each notification, before it is
        dispatched; it must be quick and must not block (what it raises is logged)."""
        self._notification_hook = hook

    def notify(self, method: str, params: Optional[JSONObject] = None) -> None:
        """Send a notification (no answer is expected), bounded by the default timeout.

        This is the one place a notification's time limit is set: the wire's timed write
        gets the deadline, and its RequestTimeout is reported here as "Notify timeout".
        Blocks the calling thread until the wire has taken the message.

        Raises:
            TransportClosed: the connection is closed.
            RequestTimeout: the server did not take it in time.
        """
        if self._closed is not None:
            raise self._closed()
        budget = _budget(self.default_timeout, None)
        try:
            self._send_by(rpc.make_notification(method, params), time.monotonic() + budget, None)
        except RequestTimeout:
            raise self._timeout(budget, method, "Notify", unread=True) from None

    # -- per-request I/O (transports whose every request is its own exchange, e.g. HTTP) --

    def fail_request(self, request_id: RequestId, error: BaseException) -> bool:
        """Resolve one pending request with ``error`` (first outcome wins); False if none was pending.

        For transports that do each request's I/O separately (an HTTP POST and
        its response): a failure of that I/O fails only that request.
        """
        with self._lock:
            waiter = self._waiters.get(request_id)
            if waiter is None or waiter.done:
                return False
            waiter.error = delivery.stamp(error, self.ledger.take(request_id))
            tap = self.tap
            if tap is not None:
                tap("fail", (request_id, error))
            waiter.done = True
        _deliver(waiter)  # sets .ready before the wake-up: callers only trust .ready
        return True

    def set_timeout_label(self, request_id: RequestId, label: str) -> None:
        """Name what a pending request waits for in its timeout text ("<label> timeout after <ms>ms")."""
        with self._lock:
            waiter = self._waiters.get(request_id)
            if waiter is not None:
                waiter.timeout_label = label

    # -- incoming (reader thread) ------------------------------------------------

    def receive(self, message: Any, size: int = 0) -> None:
        """Route one decoded message from the peer. Called only by the reader thread; never blocks.

        ``size`` is the bytes the message arrived as (its line or body, which the reader
        knows): what the notification and request queues count against their byte budgets
        (see :mod:`mcpsync._rpc.workers`). 0 means unknown: then a cheap estimate is used.

        A response too malformed to deliver (both ``result`` and ``error``, a bad
        error object) still fails the pending call it names, with ProtocolError,
        so that call does not wait out its timeout.

        Raises:
            ProtocolError: ``message`` is not a JSON-RPC message (the caller logs and skips it).
        """
        tap = self.tap
        if tap is not None:
            tap("recv", message)
        if type(message) is dict and "result" in message and "id" in message and "method" not in message \
                and "error" not in message and message.get("jsonrpc") == "2.0":
            self._resolve(message)  # the common case, a plain response: what classify() would conclude
            return
        if isinstance(message, list):  # a 2025-03-26 batch
            _receive_batch(message, size, self._receive_one, self.name)
        else:
            self._receive_one(message, size)

    def refuse(self, message: Any, error: ProtocolError) -> None:
        """Reader thread: the transport decoded ``message`` but will not deliver it (``error`` says
        why, e.g. :class:`~mcpsync._rpc.jsonrpc.NestedTooDeeply`). If it is a response to a pending
        request, that request fails now with a ProtocolError naming ``error`` instead of waiting out
        its timeout; anything else is left to the caller to log. Never blocks, never raises."""
        if isinstance(message, dict):
            self._fail_malformed_response(message, error)

    def _receive_one(self, message: Any, size: int) -> None:
        try:
            self._route(message, size)
        except ProtocolError as exc:
            self._fail_malformed_response(message, exc)
            raise
        except Exception as exc:  # a bug of ours must not kill the reader thread: report it, skip the message
            log.exception("[%s] Could not handle a message from the server", self.name)
            raise ProtocolError(f"Could not handle the message: {type(exc).__name__}: {exc}") from exc

    def _fail_malformed_response(self, message: Any, error: ProtocolError) -> None:
        if isinstance(message, dict) and "method" not in message and type(message.get("id")) is int \
                and ("result" in message or "error" in message):
            request_id = message["id"]
            self.fail_request(request_id, ProtocolError(f"Malformed response to request {request_id}: {error}"))

    def _route(self, message: Any, size: int) -> None:
        kind = rpc.classify(message)
        if kind == rpc.RESPONSE:
            self._resolve(message)
        elif kind == rpc.NOTIFICATION:
            self._on_notification(message["method"], message.get("params"), size)
        else:
            self.incoming.receive(message, size)

    def _resolve(self, message: JSONObject) -> None:
        request_id = message["id"]
        waiter = None
        if type(request_id) is int:  # our ids are ints; "1" or 1.0 or true never match
            with self._lock:
                waiter = self._waiters.get(request_id)
                if waiter is not None and waiter.done:
                    waiter = None
                if waiter is not None:
                    if "error" in message:
                        waiter.error = MCPError.from_wire(message["error"])
                    else:
                        waiter.result = message["result"]
                    waiter.done = True
        if waiter is None:
            self.unknown_responses += 1
            log.debug("[%s] Dropping response for unknown or finished request id %r", self.name, request_id)
            return
        # With a progress callback, wake the caller through the dispatcher, so every
        # progress callback that arrived before the response has run when the call returns.
        if waiter.on_progress is None or not self._dispatcher.submit(_deliver, waiter):
            _deliver(waiter)

    def _on_notification(self, method: str, params: Any, size: int) -> None:
        if not isinstance(params, dict):
            params = None
        if not size:
            size = rpc.rough_size(params)
        _run_hook(self.name, self._notification_hook, method, params)
        if method == rpc.PROGRESS and params is not None:
            self._route_progress(params, size)
        elif method == rpc.CANCELLED and params is not None:
            self.incoming.cancel(params.get("requestId"), params.get("reason"))
        sink = self._notification_sink
        if sink is not None:
            refused = self._dispatcher.offer(size, sink, method, params)
            if refused is not None:
                self._report_drop(method, refused, size)

    def _route_progress(self, params: JSONObject, size: int) -> None:
        token = params.get("progressToken")
        waiter = None
        if type(token) is int:
            with self._lock:
                waiter = self._waiters.get(token)
        if waiter is None or waiter.on_progress is None or waiter.done:
            log.debug("[%s] Progress for unknown or finished token %r", self.name, token)
            return
        progress, total, text = params.get("progress"), params.get("total"), params.get("message")
        if not isinstance(progress, (int, float)):
            log.debug("[%s] Progress without a number: %r", self.name, params)
            return
        refused = self._dispatcher.offer(size, _call_progress, waiter, progress, total, text)
        if refused is not None:
            self._report_drop(rpc.PROGRESS, refused, size)
        if waiter.wake_on_progress:
            waiter.progressed = True
            _wake(waiter.wake)

    def _report_drop(self, what: str, why: str, size: int) -> None:
        if self._closed is not None or why == "stopped":
            return
        if not self._drops.note():
            return
        if why == "full":
            log.warning("[%s] Notification queue full: dropped %s (%d dropped so far)", self.name, what,
                        self._drops.count)
        else:
            log.warning("[%s] Notification queue over its byte budget (%s): dropped %s of %d bytes "
                        "(%d dropped so far, %d of them for bytes)", self.name,
                        _mib(self._dispatcher.max_bytes), what, size, self._drops.count,
                        self._dispatcher.dropped_for_bytes)

    # -- lifecycle ----------------------------------------------------------------

    def fail_pending(self, error: ClosedFactory) -> None:
        """Mark the engine closed and wake every waiter with ``error()``. Idempotent.

        Later requests fail at once with ``error()``; handlers of server requests
        see their cancel tokens fire.
        """
        with self._lock:
            if self._closed is not None:
                return
            self._closed = error
            waiters = [(i, w) for i, w in self._waiters.items() if not w.done]
            for request_id, waiter in waiters:
                waiter.error = delivery.stamp(error(), self.ledger.take(request_id))
                waiter.done = True
        for _request_id, waiter in waiters:
            _deliver(waiter)
        self.incoming.cancel_all("connection closed")

    def close(self, error: ClosedFactory, final: Optional[Callable[[], None]] = None,
              join_timeout: float = 2.0) -> None:
        """Fail pending calls (see :meth:`fail_pending`), run ``final``, stop the threads.

        Only the first call has an effect. ``final`` runs on the dispatcher
        thread after every queued notification (or here, if that thread is gone).
        """
        self.fail_pending(error)
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
        if final is not None and not self._dispatcher.submit(final):
            final()
        self._pool.stop(join_timeout)
        self.incoming.stop(join_timeout)
        self._dispatcher.stop(join_timeout)


def _mib(count: Optional[int]) -> str:
    return "none" if count is None else f"{count / (1024 * 1024):g} MiB"


def _receive_batch(batch: List[Any], size: int, receive_one: Callable[[Any, int], None], name: str) -> None:
    """Route each message of a batch (``size`` bytes in all) with ``receive_one``; a stray non-object
    costs only itself. Raises ProtocolError if no member is an object."""
    if not any(isinstance(item, dict) for item in batch):
        raise ProtocolError("Not a JSON-RPC message: an array that is not a batch of message objects")
    share = size // len(batch)
    for item in batch:
        try:
            if not isinstance(item, dict):  # never a nested batch
                raise ProtocolError(f"Not a JSON-RPC message: expected an object, got {type(item).__name__}")
            receive_one(item, share)
        except ProtocolError as exc:
            log.warning("[%s] Skipping batch item: %s", name, exc)


def _capped(max_total: Optional[float], deadline: Deadline) -> float:
    """A request's hard stop (seconds) once the operation's ``deadline`` is folded in."""
    left = max(deadline.remaining(), 0.0)
    return left if max_total is None or left < max_total else max_total


def _run_hook(name: str, hook: Optional[NotificationSink], method: str, params: Optional[JSONObject]) -> None:
    """The engine's notification hook (if it has one) told of a notification; it may not stop the reader."""
    if hook is None:
        return
    try:
        hook(method, params)
    except Exception:  # internal bookkeeping; must never stop the reader
        log.exception("[%s] Notification hook raised", name)


def _with_progress_token(params: Optional[JSONObject], request_id: int) -> JSONObject:
    """A copy of ``params`` whose ``_meta`` names ``request_id`` as the progress token (the caller's
    dict is left alone)."""
    params = dict(params or {})
    meta = dict(params.get("_meta") or {})
    meta["progressToken"] = request_id
    params["_meta"] = meta
    return params


def _spent(deadline: float, hard_stop: float, max_total: Optional[float], limit: float) -> float:
    """The budget a request that timed out at ``deadline`` had: the hard stop's, if that came first."""
    return max_total if deadline >= hard_stop and max_total is not None else limit


def _budget(timeout: Optional[float], max_total: Optional[float]) -> float:
    """Seconds a call may take in all (``math.inf`` for no limit)."""
    limit = math.inf if timeout is None else timeout
    return limit if max_total is None else min(limit, max_total)


_parked = threading.local()

#: Longer parks than this (seconds) wait without a limit; the loop in _wait still ends at the deadline.
_MAX_PARK = min(threading.TIMEOUT_MAX, 86400.0 * 365)


def _take_lock() -> LockType:
    """The calling thread's wake-up lock, held (a new one if it is in use: a nested request)."""
    lock: Optional[LockType] = getattr(_parked, "lock", None)
    if lock is None:
        lock = _thread.allocate_lock()
        lock.acquire()
        return lock
    _parked.lock = None
    lock.acquire(False)  # held again, whether or not a late wake-up released it
    return lock


def _return_lock(lock: LockType) -> None:
    _parked.lock = lock


def _wake(lock: LockType) -> None:
    """Wake the thread parked on ``lock`` (or make its next park return at once); idempotent."""
    try:
        lock.release()
    except RuntimeError:  # already released: that wake-up has not been taken yet
        pass


def _deliver(waiter: _Waiter) -> None:
    waiter.ready = True
    try:
        waiter.wake.release()
    except RuntimeError:  # a cancel or progress wake-up got there first; the caller sees ``ready``
        pass


def _call_progress(waiter: _Waiter, progress: float, total: Any, message: Any) -> None:
    callback = waiter.on_progress
    if callback is not None:
        callback(progress, total if isinstance(total, (int, float)) else None,
                 message if isinstance(message, str) else None)
