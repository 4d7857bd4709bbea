"""One client's connection to a FakeServer: routing, eras, and the threads that serve it.

Whatever carries the messages (an in-memory transport, or stdin and stdout)
hands each one to :meth:`Connection.receive`, which only queues it. One
dispatcher thread per connection takes messages in arrival order, records
requests, decides the protocol era of each, answers protocol requests itself
and starts one worker thread per request that runs user code (``tools/call``,
``resources/read``, ``prompts/get``), so a slow tool never holds up pings,
cancellations or the answers to the server's own requests.

Eras, as a dual-era server picks them: a request whose ``_meta`` carries
``io.modelcontextprotocol/protocolVersion`` is served under 2026-07-28 with no
handshake; ``initialize`` starts a legacy session and later requests without
that ``_meta`` belong to it. The server's own notifications reach a legacy
session as they are; under 2026-07-28 they reach the ``subscriptions/listen``
streams that asked for them (:mod:`mcpsync.testing._listen`).

A connection works from the :class:`~mcpsync.testing._side.ServerSide` it is
given (settings, declarations, recorder), never from the ``FakeServer``.

Blocking: :meth:`Connection.receive` never blocks; the server's own requests
(:meth:`Connection.request_client`, :meth:`Connection.ask_for_input`) block
the worker thread that asks, until the client answers, the run is cancelled or
the timeout passes (the legacy ones are :mod:`mcpsync.testing._outgoing`'s);
:meth:`Connection.catch_up` waits for the dispatcher to serve what is queued;
:meth:`Connection.close` joins the connection's threads (at most
``JOIN_TIMEOUT`` seconds each, as the catch-up waits at most).
"""

from __future__ import annotations

import logging
import queue
import secrets
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Set, Tuple

from .._protocol.methods import INITIALIZE, NOTIFY_CANCELLED, NOTIFY_INITIALIZED, PING, RESOURCES_READ, TOOLS_CALL
from .._rpc import jsonrpc as rpc
from .._rpc.jsonrpc import JSONObject, RequestId
from ..exceptions import MCPError, RequestCancelled
from ._context import Context, Invocation, LegacySession, NoAnswer, abandoned
from ._listen import Listeners, read_filter
from ._outgoing import ClientRequests
from ._methods import finish_result, handle, run_user_code
from ._protocol import (
    CLIENT_CAPABILITIES_KEY, LEGACY_METHODS, LISTEN, LOG_LEVEL_KEY, LOG_LEVELS, MODERN_METHODS,
    PROTOCOL_VERSION_KEY, RUNS_USER_CODE, UNSUPPORTED_PROTOCOL_VERSION,
)
from ._recorder import Fault, RecordedRequest
from ._side import ServerSide

__all__ = ["Connection", "Drop", "Send"]

log = logging.getLogger("mcpsync.testing")

#: How long a close waits for each of the connection's threads.
JOIN_TIMEOUT = 5.0

#: Delivers one message to the client.
Send = Callable[[JSONObject], None]
#: Fails the connection as if the server died: ``drop(reason, exit_code)``.
Drop = Callable[[str, int], None]


class Connection:
    """One client's conversation with a :class:`~mcpsync.testing.FakeServer`.

    ``send(message)`` delivers a message to the client; ``drop(reason,
    exit_code)`` makes the connection fail as if the server died;
    ``on_close(connection)`` is called once, from the closing thread, when it
    closes. It serves ``side``, never the ``FakeServer`` itself.

    Thread safety: :meth:`receive`, :meth:`notify` and :meth:`close` may be
    called from any thread.
    """

    def __init__(self, side: ServerSide, send: Send, drop: Drop, *, index: int,
                 on_close: Callable[["Connection"], None]) -> None:
        self.side = side
        self.index = index
        self._send = send
        self._drop = drop
        self._on_close = on_close
        self._inbox: "queue.SimpleQueue[Any]" = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._send_lock = threading.Lock()
        self._closed = False
        self._active: Dict[RequestId, Invocation] = {}
        self._parked: Dict[str, Invocation] = {}
        self._requests = ClientRequests(side.name, self.send)  # legacy: the server's requests to the client
        self._workers: Set[threading.Thread] = set()
        self.session = LegacySession()  # set up by initialize, changed by logging/setLevel and subscriptions
        self.listeners = Listeners(self.send)  # 2026-07-28 subscriptions/listen streams
        self._stopping = False  # the stop mark is queued: no catch-up mark would ever be served
        self._thread = threading.Thread(target=self._run, name=f"mcpsync-fake[{side.name}]-{index}", daemon=True)

    def __repr__(self) -> str:
        return f"<Connection {self.side.name!r}#{self.index} {'closed' if self._closed else 'open'}>"

    @property
    def closed(self) -> bool:
        return self._closed

    def start(self) -> None:
        self._thread.start()

    def receive(self, message: Any) -> None:
        """Queue one decoded message from the client (any thread; never blocks)."""
        if not self._closed:
            self._inbox.put(message)

    # -- sending -------------------------------------------------------------------------------

    def send(self, message: JSONObject) -> bool:
        """Deliver ``message`` to the client; False if the connection is closed."""
        with self._send_lock:  # one message at a time, in order
            if self._closed:
                return False
            try:
                self._send(message)
            except Exception as exc:  # the client closed its end under us
                log.debug("[%s] Could not send to the client: %s", self.side.name, exc)
                return False
        return True

    def notify(self, method: str, params: Optional[JSONObject] = None) -> bool:
        return self.send(rpc.make_notification(method, params))

    def tell(self, method: str, params: Optional[JSONObject], *, legacy: bool) -> bool:
        """The server's own notification: to the legacy session (if ``legacy`` and there is one) and to the
        listen streams that asked for it. True if the client got it at least once.

        Call :meth:`catch_up` first, so that a stream the client opened or ended counts as it does for the client.
        """
        told = legacy and self.session.version is not None and self.notify(method, params)
        return self.listeners.publish(method, params) or told

    def catch_up(self, timeout: float = JOIN_TIMEOUT) -> None:
        """Block until the dispatcher has served every message received so far (at most ``timeout`` s).

        Returns at once on the dispatcher thread itself and on a closed connection.
        """
        if threading.current_thread() is self._thread:
            return
        mark = threading.Event()
        with self._lock:
            if self._closed or self._stopping or self._thread.ident is None:
                return
            self._inbox.put(mark)
        mark.wait(timeout)

    def reply(self, request_id: RequestId, result: JSONObject) -> bool:
        return self.send(rpc.make_result(request_id, result))

    def error(self, request_id: Optional[RequestId], code: int, message: str, data: Any = None) -> bool:
        return self.send(rpc.make_error(request_id, code, message, data))

    # -- lifecycle -------------------------------------------------------------------------------

    def drop(self, reason: str, exit_code: int = 1) -> None:
        """Fail the connection as if the server crashed (the transport decides what that means)."""
        log.info("[%s] %s", self.side.name, reason)
        self._drop(reason, exit_code)

    def drain(self, grace: float = 2.0) -> None:
        """Serve every message already received and give running requests ``grace`` seconds to finish.

        For the end of stdin: a client that wrote its last request and closed
        its end still gets the answer, unless the request takes longer.
        """
        with self._lock:
            self._stopping = True
            self._inbox.put(None)
        if self._thread.ident is not None and self._thread is not threading.current_thread():
            self._thread.join(JOIN_TIMEOUT)
        deadline = time.monotonic() + grace
        for worker in self._snapshot_workers():
            worker.join(max(0.0, deadline - time.monotonic()))

    def close(self, reason: str = "connection closed") -> None:
        """Stop serving: cancel every run, fail the server's own pending requests, join the threads.

        Idempotent; safe from any thread, including this connection's own.
        """
        with self._lock:
            already = self._closed
            self._closed = True
            self._stopping = True
            runs = list(self._active.values()) + list(self._parked.values())
            self._active.clear()
            self._parked.clear()
        if not already:
            self._inbox.put(None)
            self.listeners.clear()
            for run in runs:
                run.cancel(reason)
            self._requests.close()
            self._on_close(self)
        current = threading.current_thread()
        for thread in [self._thread, *self._snapshot_workers()]:
            if thread is not current and thread.ident is not None:
                thread.join(JOIN_TIMEOUT)
                if thread.is_alive():
                    log.warning("[%s] %s did not finish within %ss of the close (a fake that ignores "
                                "ctx.cancelled?)", self.side.name, thread.name, JOIN_TIMEOUT)

    def _snapshot_workers(self) -> List[threading.Thread]:
        with self._lock:
            return list(self._workers)

    # -- the dispatcher thread -------------------------------------------------------------------

    def _run(self) -> None:
        while True:
            message = self._inbox.get()
            if message is None:
                return
            if isinstance(message, threading.Event):  # a catch_up() mark: everything before it is served
                message.set()
                continue
            if self._closed:
                # Closed: drain the queue up to the stop mark. Requests are not served, but the
                # notifications the client wrote before it closed are recorded, as a real server
                # reads its input to the end: a cancellation written just before the close is not lost.
                if _is_notification(message):
                    self._serve_late(message)
                continue
            try:
                self._dispatch(message)
            except Exception:
                log.exception("[%s] Failed to handle %r", self.side.name, message)

    def _serve_late(self, message: JSONObject) -> None:
        try:
            self._dispatch(message)
        except Exception:
            log.exception("[%s] Failed to handle %r", self.side.name, message)

    def _dispatch(self, message: Any) -> None:
        if isinstance(message, list):  # a 2025-03-26 batch: serve each member
            for item in message:
                self._dispatch(item)
            return
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            self.error(None, rpc.INVALID_REQUEST, "Invalid Request: not a JSON-RPC 2.0 message")
            return
        self._route(message)

    def _route(self, message: JSONObject) -> None:
        """One JSON-RPC 2.0 message, by its kind: a request, a notification, or an answer to our request."""
        method = message.get("method")
        if isinstance(method, str) and "id" in message:
            self._on_request(message["id"], method, message.get("params"))
        elif isinstance(method, str):
            params = message.get("params")
            self._on_notification(method, params if isinstance(params, dict) else {})
        elif "id" in message and ("result" in message or "error" in message):
            self._requests.resolve(message)
        else:
            self.error(message.get("id"), rpc.INVALID_REQUEST, "Invalid Request: no method, result or error")

    def _on_notification(self, method: str, params: JSONObject) -> None:
        self.side.recorder.record_notification(self.index, method, params)
        if method == NOTIFY_INITIALIZED:
            self.session.initialized = True
        elif method == NOTIFY_CANCELLED:
            target: Any = params.get("requestId")
            known = rpc.valid_id(target)
            with self._lock:
                run = self._active.get(target) if known else None
            if run is not None:
                run.cancel(str(params.get("reason") or "cancelled by the client"))
            else:
                self.listeners.end(target)  # ending a listen stream; it is never answered

    def _on_request(self, request_id: Any, method: str, raw_params: Any) -> None:
        if not rpc.valid_id(request_id):
            self.error(None, rpc.INVALID_REQUEST, "Invalid Request: id must be a string or an integer")
            return
        params, meta = _params_and_meta(raw_params)
        requested = meta.get(PROTOCOL_VERSION_KEY)
        era = self._era(method, requested)
        retry = era == "modern" and "requestState" in params
        record, fault = self.side.recorder.record_request(self.index, request_id, method, params, era,
                                                          self._version(era, method, params, requested), retry)
        if fault is not None:
            self._fire(fault, request_id, method, record)
        elif raw_params is not None and not isinstance(raw_params, dict):
            self.error(request_id, rpc.INVALID_PARAMS, "Invalid params: expected an object")
        elif era == "modern":
            self._serve_modern(request_id, method, params, meta, str(requested), record)
        elif era == "legacy" and method in LEGACY_METHODS:
            self._serve(request_id, method, params, "legacy", self.session.version, record)
        else:
            self._refuse(request_id, method)

    def _era(self, method: str, requested: Any) -> Optional[str]:
        """The era a request belongs to: "modern" if its ``_meta`` names a version (and the server speaks
        2026-07-28), "legacy" for the handshake's methods or once a session is up, else None."""
        if requested is not None and self.side.settings.modern_versions:
            return "modern"
        if method in (INITIALIZE, PING) or self.session.version is not None:
            return "legacy"
        return None

    def _version(self, era: Optional[str], method: str, params: JSONObject, requested: Any) -> Any:
        """The protocol version a request is recorded under: its ``_meta``'s, the one ``initialize`` asks
        for, or the legacy session's."""
        if era == "modern":
            return requested
        if method == INITIALIZE and era == "legacy" and isinstance(params.get("protocolVersion"), str):
            return params["protocolVersion"]
        return self.session.version

    def _fire(self, fault: Fault, request_id: RequestId, method: str, record: RecordedRequest) -> None:
        """A planned fault in place of serving the request: a crash, an error answer, or a hang (nothing)."""
        if fault.action == "crash":
            self.drop(f"FakeServer {self.side.name!r} crashed at request #{record.index} ({method})",
                      fault.exit_code)
        elif fault.action == "error":
            self.error(request_id, fault.code, fault.message, fault.data)

    def _refuse(self, request_id: RequestId, method: str) -> None:
        """A request that belongs to no era: no ``_meta`` version, and no handshake (or not a legacy method)."""
        if self.side.settings.modern_versions and method in MODERN_METHODS:
            self.error(request_id, rpc.INVALID_PARAMS,
                       f"Missing required _meta field {PROTOCOL_VERSION_KEY!r} (or send initialize first)")
        elif method not in LEGACY_METHODS:
            self.error(request_id, rpc.METHOD_NOT_FOUND, f"Method not found: {method}")
        else:
            self.error(request_id, rpc.INVALID_REQUEST, "Server not initialized: send initialize first")

    def _serve_modern(self, request_id: RequestId, method: str, params: JSONObject, meta: JSONObject,
                      requested: str, record: RecordedRequest) -> None:
        settings = self.side.settings
        level = meta.get(LOG_LEVEL_KEY, LOG_LEVELS[0])
        if requested not in settings.modern_versions:
            self._reject(record, request_id, UNSUPPORTED_PROTOCOL_VERSION, "Unsupported protocol version",
                         {"supported": list(settings.modern_versions) + list(settings.legacy_versions),
                          "requested": requested})
        elif not isinstance(meta.get(CLIENT_CAPABILITIES_KEY), dict):
            self._reject(record, request_id, rpc.INVALID_PARAMS,
                         f"Missing required _meta field {CLIENT_CAPABILITIES_KEY!r}")
        elif level not in LOG_LEVELS:
            self._reject(record, request_id, rpc.INVALID_PARAMS, f"Invalid params: unknown log level {level!r} in "
                         f"_meta[{LOG_LEVEL_KEY!r}]; expected one of {', '.join(LOG_LEVELS)}")
        elif method not in MODERN_METHODS:
            self.error(request_id, rpc.METHOD_NOT_FOUND, f"Method not found: {method}")
        elif method == LISTEN:
            self._listen(request_id, params)
        elif "requestState" in params and method in RUNS_USER_CODE:
            self._resume(request_id, method, params)
        else:
            self._serve(request_id, method, params, "modern", requested, record)

    def _reject(self, record: RecordedRequest, request_id: RequestId, code: int, message: str,
                data: Any = None) -> None:
        """Answer an error before anything ran: a ``tools/call`` so answered is not a call of its tool."""
        if record.method == TOOLS_CALL:
            self.side.recorder.refuse(record, message)
        self.error(request_id, code, message, data)

    def _listen(self, request_id: RequestId, params: JSONObject) -> None:
        """``subscriptions/listen``: acknowledge the honoured filter and keep the stream open (never answered)."""
        try:
            stream = read_filter(request_id, params, self.side.capabilities("modern"))
        except MCPError as exc:
            self.error(request_id, exc.code, exc.message, exc.data)
            return
        self.listeners.open(stream)

    def _serve(self, request_id: RequestId, method: str, params: JSONObject, era: str,
               version: Optional[str], record: RecordedRequest) -> None:
        run = Invocation(self, request_id, method, params, era, version, record)
        if method not in RUNS_USER_CODE:
            self._answer(run, lambda: handle(self.side, self.session, run))
            return
        with self._lock:
            if self._closed:
                return
            self._active[request_id] = run
            worker = threading.Thread(target=self._work, args=(run,), daemon=True,
                                      name=f"mcpsync-fake[{self.side.name}]-{method}-{request_id}")
            self._workers.add(worker)
        worker.start()

    def _work(self, run: Invocation) -> None:
        try:
            self._answer(run, lambda: run_user_code(self.side, run, (self.side.context or Context)(run)))
        finally:
            with self._lock:
                self._workers.discard(threading.current_thread())

    def _answer(self, run: Invocation, produce: Callable[[], JSONObject]) -> None:
        """Run ``produce`` and answer the run's current request with its result or error."""
        outcome, failure = _outcome(run, produce, self.side.name)
        with self._lock:
            request_id = run.request_id
            run.request_id = None
            if request_id is not None:
                self._active.pop(request_id, None)
        if request_id is None or run.cancelled.is_set() or (outcome is None and failure is None):
            return
        if failure is not None:
            self.error(request_id, failure.code, failure.message, failure.data)
        else:
            self.reply(request_id, finish_result(self.side, run, outcome or {}))

    # -- the server's requests to the client -------------------------------------------------

    def request_client(self, run: Invocation, method: str, params: JSONObject,
                       timeout: Optional[float]) -> Any:
        """Legacy: send ``method`` to the client and block for its result (cancelled with ``run``)."""
        return self._requests.ask(run, method, params, self.side.settings.request_timeout if timeout is None
                                  else timeout)

    def ask_for_input(self, run: Invocation, method: str, params: JSONObject,
                      timeout: Optional[float]) -> Any:
        """2026-07-28: answer the current request ``input_required`` and wait for the retry with the input."""
        run.inputs_asked += 1
        key = f"{method.split('/')[0]}-{run.inputs_asked}"
        token = secrets.token_urlsafe(18)
        with self._lock:
            request_id = run.request_id
            if self._closed or request_id is None or run.cancelled.is_set():
                raise abandoned()
            self._active.pop(request_id, None)
            run.request_id = None
            run.waiting = {key: {"method": method, "params": params}}
            run.state_token = token
            run.input_ready = False
            ready = run.resumed = threading.Event()
            self._parked[token] = run
        self.reply(request_id, self._input_required(run))
        run.add_waker(ready)
        try:
            ready.wait(self.side.settings.input_timeout if timeout is None else timeout)
        finally:
            run.remove_waker(ready)
        with self._lock:
            if not run.input_ready:
                self._parked.pop(token, None)
                run.cancel("the client did not retry with the input")
                raise abandoned()
            response = run.input_response
            run.waiting = None
        return response

    def _input_required(self, run: Invocation) -> JSONObject:
        result: JSONObject = {"resultType": "input_required", "inputRequests": dict(run.waiting or {}),
                              "requestState": run.state_token}
        return finish_result(self.side, run, result)

    def _resume(self, request_id: RequestId, method: str, params: JSONObject) -> None:
        token = params.get("requestState")
        with self._lock:
            run = self._parked.get(token) if isinstance(token, str) else None
        if run is None:
            self.error(request_id, rpc.INVALID_PARAMS, "Invalid params: unknown or expired requestState")
            return
        target = params.get("uri") if method == RESOURCES_READ else params.get("name")
        if run.method != method or run.target != target:
            self.error(request_id, rpc.INVALID_PARAMS, "Invalid params: requestState belongs to another request")
            return
        responses = params.get("inputResponses")
        key = next(iter(run.waiting or {}), None)
        if not isinstance(responses, dict) or key not in responses:
            # The input is missing: ask for it again, on this request.
            run.switch_to(request_id, params)
            self.reply(request_id, self._input_required(run))
            run.request_id = None
            return
        with self._lock:
            if self._parked.pop(str(token), None) is None:
                self.error(request_id, rpc.INVALID_PARAMS, "Invalid params: requestState already used")
                return
            run.switch_to(request_id, params)
            run.input_response = responses[key]
            run.input_ready = True
            self._active[request_id] = run
            ready = run.resumed
        ready.set()


def _is_notification(message: Any) -> bool:
    """A JSON-RPC notification (a method, no id): what a connection closed under it still records."""
    return isinstance(message, dict) and isinstance(message.get("method"), str) and "id" not in message


def _params_and_meta(raw_params: Any) -> Tuple[JSONObject, JSONObject]:
    """A request's params and their ``_meta`` (each ``{}`` when not an object)."""
    params: JSONObject = raw_params if isinstance(raw_params, dict) else {}
    raw_meta = params.get("_meta")
    return params, (raw_meta if isinstance(raw_meta, dict) else {})


def _outcome(run: Invocation, produce: Callable[[], JSONObject],
             server: str) -> Tuple[Optional[JSONObject], Optional[MCPError]]:
    """``(result, error)`` of running ``produce`` for ``run``: one of them, or neither when no answer is due."""
    try:
        return produce(), None
    except NoAnswer:
        return None, None
    except RequestCancelled as exc:
        if run.cancelled.is_set() or run.request_id is None:
            return None, None  # cancelled by the client, or abandoned: no answer is expected
        return None, MCPError(rpc.INTERNAL_ERROR, f"Request cancelled: {exc.reason}")
    except MCPError as exc:
        return None, exc
    except Exception as exc:
        log.exception("[%s] %s failed", server, run.method)
        return None, MCPError(rpc.INTERNAL_ERROR, f"Internal error: {type(exc).__name__}: {exc}")
