"""The base of both HTTP transports: every message goes out on a pool thread, exchanges are abortable.

:class:`HTTPTransportBase` is the engine's wire for Streamable HTTP and legacy
HTTP+SSE: it hands each request, notification and answer to a small pool of
exchange threads, tracks the exchanges in flight so a timed-out or cancelled
request's exchange can be aborted, and closes them all at close. The requests
session comes from :mod:`._http_session`, the meaning of HTTP answers from
:mod:`._http_io`; the subclasses say how a message is POSTed and where answers arrive.
"""

from __future__ import annotations

import math
import threading
import time
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Mapping, Optional, Tuple, Union
from urllib.parse import urlsplit

from .._log import getLogger
from .._rpc import delivery
from .._rpc import jsonrpc as rpc
from .._rpc.engine import DEFAULT_TIMEOUT
from .._rpc.jsonrpc import JSONObject
from .._rpc.options import Deadline
from .._rpc.wire import SendCancelled
from .._rpc.workers import JobQueue
from ..cancel import CancelToken
from ..exceptions import EgressRefused, MCPSyncError, ProtocolError, RequestTimeout, ServerUnreachable, TransportError
from ._egress import OriginGate
from ._http_io import DEFAULT_MAX_MESSAGE_SIZE, iter_chunks, translate
from ._http_session import Exchange, check_verify, drop_inherited, new_session
from ._sse import SSEEvent, SSEParser, message_data
from ._urls import default_name
from .base import Transport

if TYPE_CHECKING:  # pragma: no cover
    import requests

__all__ = ["DEFAULT_MAX_MESSAGE_SIZE", "HTTPTransportBase", "new_session"]

log = getLogger("mcpsync.transport.http")


class HTTPTransportBase(Transport):
    """What the Streamable HTTP and legacy HTTP+SSE transports share.

    Threads: the calling thread never does HTTP I/O. Every request, and every
    notification or reply, is POSTed by a thread of a small pool (started
    lazily, stopped at close); the caller parks on its Event. A timed-out or
    cancelled request's exchange is aborted (its socket shut down) and the
    server is told with ``notifications/cancelled``, sent in the background:
    on legacy HTTP a dropped stream is not a cancellation.
    """

    kind = "http"
    #: The keys of a server config dict it takes (the factory reads them; ``timeout`` aside).
    config_keys: Tuple[str, ...] = ("headers", "name", "token", "verify")

    def __init__(
        self,
        url: str,
        *,
        headers: Optional[Mapping[str, str]] = None,
        token: Optional[str] = None,
        auth: Any = None,
        verify: Any = True,
        cert: Any = None,
        proxies: Optional[Mapping[str, str]] = None,
        trust_env: bool = True,
        name: Optional[str] = None,
        timeout: Optional[float] = DEFAULT_TIMEOUT,
        connect_timeout: float = 10.0,
        max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
        shutdown_timeout: float = 2.0,
        max_workers: int = 4,
        pool_size: int = 64,  # as many kept-alive connections as exchange threads: none discarded under load
    ) -> None:
        if not isinstance(url, str) or urlsplit(url).scheme.lower() not in ("http", "https") \
                or not urlsplit(url).hostname:
            raise ValueError(f"An HTTP transport needs an http:// or https:// URL, not {url!r}")
        check_verify(verify)
        super().__init__(name=name or default_name(url), timeout=timeout, max_workers=max_workers)
        self.url = url
        self.headers: Dict[str, str] = dict(headers or {})
        if token is not None:
            self.headers["Authorization"] = f"Bearer {token}"
        self.auth = auth
        self.verify = verify
        self.cert = cert
        self.proxies = dict(proxies or {})
        self.trust_env = trust_env
        self.connect_timeout = connect_timeout
        self.max_message_size = max_message_size
        self.shutdown_timeout = shutdown_timeout
        self.pool_size = pool_size
        self._options: Dict[str, Any] = {
            "headers": dict(self.headers), "auth": auth, "verify": verify, "cert": cert, "proxies": self.proxies,
            "trust_env": trust_env, "name": name, "timeout": timeout, "connect_timeout": connect_timeout,
            "max_message_size": max_message_size, "shutdown_timeout": shutdown_timeout,
            "max_workers": max_workers, "pool_size": pool_size,
        }
        self._session: Optional["requests.Session"] = None
        #: The egress gate of this connection's session: every request stays on the URL's origin.
        self._gate = OriginGate(self.url)
        self._jobs: Optional[JobQueue] = None
        self._lock = threading.Lock()
        self._exchanges: Dict[int, Exchange] = {}
        self._requests: Dict[Any, Exchange] = {}
        self._stop = threading.Event()
        self._modern = False  # a 2026-07-28 version is in use (see set_protocol_version)
        self._open_deadline = Deadline.after(None)  # the connect's deadline, for what opening waits for (see open)

    # -- lifecycle -------------------------------------------------------------------------

    def open(self, deadline: Optional[Deadline] = None) -> None:
        """Open the connection; an auth object with ``prepare(url)`` (mcpsync.OAuth) may first
        run its login here, on the caller's thread, so a person's login is not bounded by
        the first request's timeout, nor by ``deadline``: the login has its own limit
        (``login_timeout``), and the time it took is in :attr:`login_seconds` (a connect
        moves its deadline on by that much).

        Raises:
            AuthError: the login failed.
            ConnectError, TransportClosed: as for every transport.
            RequestTimeout: ``deadline`` passed while opening waited (see :class:`SSETransport`).
        """
        prepare = getattr(self.auth, "prepare", None)
        self.login_seconds = 0.0
        if callable(prepare) and not self._started and not self._closing:
            started = time.monotonic()
            prepare(self.url)  # outside the state lock: close() must stay possible meanwhile
            self.login_seconds = time.monotonic() - started
        self._open_deadline = Deadline.after(None) if deadline is None else Deadline(deadline.at + self.login_seconds)
        super().open(deadline)

    def _open(self) -> None:
        self._session = new_session(gate=self._gate, url=self.url, auth=self.auth, verify=self.verify, cert=self.cert,
                                    proxies=self.proxies, trust_env=self.trust_env, pool_size=self.pool_size)
        self._jobs = JobQueue(f"mcpsync-http[{self.name}]", 64, 100_000)

    def _release(self, cause: Optional[BaseException]) -> None:
        self._stop.set()
        try:
            self._before_shutdown(cause)
        except Exception as exc:  # best effort: closing must finish
            log.debug("[%s] Polite shutdown step failed: %s", self.name, exc)
        self._release_resources()

    def _release_resources(self) -> None:
        """Abort every exchange, stop and join the threads, close the session. Idempotent."""
        self._stop.set()
        with self._lock:
            exchanges = list(self._exchanges.values())
        for exchange in exchanges:
            exchange.abort()
        self._join_threads()
        if self._jobs is not None:
            self._jobs.stop(self.shutdown_timeout)
        if self._session is not None:
            self._session.close()

    def settings(self) -> Dict[str, Any]:
        """The URL, headers, auth object, TLS and proxy settings and timeouts (see :meth:`Transport.settings`).

        A ``token=`` given when it was built is among the headers (``Authorization``); an auth
        object is included as it is, so it pickles the way its own class allows.
        """
        return {**self._options, "url": self.url, "headers": dict(self.headers), "timeout": self.timeout}

    def __reduce__(self) -> Any:
        """Pickles as its :meth:`settings`; an auth object that cannot be pickled is named in the TypeError."""
        if self.auth is not None:
            import pickle  # only while pickling: keeps `import mcpsync` light

            try:
                pickle.dumps(self.auth)
            except Exception as exc:
                raise TypeError(
                    f"Cannot pickle {type(self).__name__} {self.name!r}: its auth object {type(self.auth).__name__} "
                    f"cannot be pickled ({exc}). Build the client in the worker process instead") from exc
        return super().__reduce__()

    def _release_inherited(self) -> None:
        """In a forked child: the pooled connections and the HTTP session are the parent's. Close
        this process's copies of the idle pooled sockets (never shutting them down, which would cut
        the parent's), drop the pool and the dead threads' objects, and send nothing (no DELETE)."""
        session, self._session = self._session, None
        if session is not None:
            drop_inherited(session)
        self._jobs = None
        self._lock = threading.Lock()
        self._exchanges = {}
        self._requests = {}

    def _before_shutdown(self, cause: Optional[BaseException]) -> None:
        """Subclass hook, before in-flight exchanges are aborted (e.g. send DELETE)."""

    def _join_threads(self) -> None:
        """Subclass hook: stop and join the transport's own threads."""

    # -- writing (the engine's wire) ------------------------------------------------------------

    def _write(self, message: JSONObject) -> None:
        self._write_by(message, math.inf, None)

    def _write_by(self, message: JSONObject, deadline: float, cancel: Optional[CancelToken]) -> None:
        """Hand ``message`` to a pool thread. A request returns at once (its answer reaches the
        engine from that thread); a notification waits until POSTed, at most until ``deadline``."""
        if self._stop.is_set() or self._engine.closed:
            if "method" in message and "id" in message:
                self._engine.ledger.record(message["id"], delivery.NEVER_LEFT)
            raise self._engine.closed_error()
        if "method" in message:
            if "id" in message:
                exchange = self._track(Exchange(message["id"]), request=True)
                try:
                    self._submit(self._run_request, message, exchange)
                except MCPSyncError:
                    self._engine.ledger.record(message["id"], delivery.NEVER_LEFT)  # never queued
                    raise
            else:
                self._notify(message, deadline)
        else:  # our answer to a server request (the engine decides whether to answer): POST it
            self._submit(self._post_quietly, message)

    def _submit(self, fn: Any, *args: Any) -> None:
        jobs = self._jobs
        if jobs is None or not jobs.submit(fn, *args):
            for arg in args:
                if isinstance(arg, Exchange):
                    self._untrack(arg)
            raise self._engine.closed_error() if self._stop.is_set() or jobs is None else \
                TransportError("Too many HTTP exchanges queued")

    def _notify(self, message: JSONObject, deadline: float) -> None:
        exchange = self._track(Exchange())
        done = threading.Event()
        failure: List[BaseException] = []
        self._submit(self._run_notification, message, exchange, done, failure)
        limit = None if math.isinf(deadline) else max(deadline - time.monotonic(), 0.0)
        if not done.wait(limit):
            exchange.abort()  # the engine words the timeout (see Engine.notify)
            raise RequestTimeout("Write timeout: the server did not take the notification in time")
        if failure:
            raise failure[0]

    def _run_notification(self, message: JSONObject, exchange: Exchange, done: threading.Event,
                          failure: List[BaseException]) -> None:
        try:
            self._post_message(message, exchange)
        except BaseException as exc:
            failure.append(self._translated(exc))
        finally:
            self._untrack(exchange)
            done.set()

    def _post_quietly(self, message: JSONObject) -> None:
        exchange = self._track(Exchange())
        try:
            self._post_message(message, exchange)
        except BaseException as exc:
            if not self._stop.is_set():
                log.warning("[%s] Could not deliver our answer to server request %r: %s",
                            self.name, message.get("id"), self._translated(exc))
        finally:
            self._untrack(exchange)

    def _run_request(self, message: JSONObject, exchange: Exchange) -> None:
        request_id = message["id"]
        try:
            self._request_exchange(message, exchange)
        except BaseException as exc:
            if exchange.aborted.is_set() or self._stop.is_set():
                log.debug("[%s] Exchange for request %r ended after it was abandoned: %r",
                          self.name, request_id, exc)
                return
            error = self._translated(exc)
            self._exchange_failed(error)
            self._engine.fail_request(request_id, error)
        finally:
            self._untrack(exchange)

    def _post_failed(self, request_id: Any, exc: BaseException) -> None:
        """The POST of request ``request_id`` raised ``exc``: a connection never made sent no byte of it
        (the ledger is told; see :mod:`mcpsync._rpc.delivery`)."""
        error = self._translated(exc)
        if (isinstance(error, ServerUnreachable) and not error.may_have_reached_server) or self._session is None \
                or isinstance(error, EgressRefused):  # the gate refuses before any byte is sent
            self._engine.ledger.record(request_id, delivery.NEVER_LEFT)  # refused, or closed before the POST

    def _exchange_failed(self, error: BaseException) -> None:
        """Subclass hook, on the pool thread, before a request is failed with ``error``."""

    def _lose(self, cause: BaseException) -> None:
        """Close as a lost connection (pending calls fail, ``on_close`` runs), from a thread of its own
        (the close joins the pool threads, and this may run on one); at once marked not connected."""
        with self._state_lock:
            if self._closing or not self._started:
                return
            self._closing = True
        threading.Thread(target=self._shut_lost, args=(cause,), name=f"mcpsync-http-lost[{self.name}]",
                         daemon=True).start()

    def _shut_lost(self, cause: BaseException) -> None:
        if self.on_error is not None:
            self._engine.call_soon(self.on_error, cause)
        self._shutdown(cause)

    def _translated(self, exc: BaseException) -> BaseException:
        if isinstance(exc, MCPSyncError):
            return exc
        if not isinstance(exc, Exception):
            return exc  # KeyboardInterrupt, SystemExit
        error = translate(exc, self.url)
        error.__cause__ = exc
        return error

    def _request_exchange(self, message: JSONObject, exchange: Exchange) -> None:
        """Subclass: POST ``message`` and see its response reach the engine (or raise)."""
        raise NotImplementedError

    def _post_message(self, message: JSONObject, exchange: Exchange) -> None:
        """Subclass: POST a notification or reply; return on any 2xx, raise otherwise."""
        raise NotImplementedError

    # -- exchanges in flight ------------------------------------------------------------------

    def _track(self, exchange: Exchange, request: bool = False) -> Exchange:
        with self._lock:
            self._exchanges[id(exchange)] = exchange
            if request:
                self._requests[exchange.key] = exchange
        if self._stop.is_set():
            exchange.abort()
        return exchange

    def _untrack(self, exchange: Exchange) -> None:
        exchange.release()
        with self._lock:
            self._exchanges.pop(id(exchange), None)
            if self._requests.get(exchange.key) is exchange:
                del self._requests[exchange.key]

    def _abandon(self, request_id: Any, reason: Any, send_cancelled: SendCancelled) -> None:
        """The wire's abandon: the caller stopped waiting (timeout or cancel); stop its exchange."""
        with self._lock:
            exchange = self._requests.get(request_id)
        if exchange is not None:
            exchange.abort()
        if self._modern:
            return  # 2026-07-28: closing the request's stream is the cancellation
        # Legacy HTTP: closing a stream is not a cancellation, so tell the server, off the caller's thread.
        try:
            self._submit(self._send_cancelled, send_cancelled, request_id, reason)
        except MCPSyncError:
            pass

    def _send_cancelled(self, send_cancelled: SendCancelled, request_id: Any, reason: Any) -> None:
        try:
            send_cancelled(request_id, reason, timeout=self.timeout)  # off the caller's thread: no hurry
        except Exception as exc:
            log.debug("[%s] Could not send the cancellation of request %r: %s", self.name, request_id, exc)

    def _report(self, error: BaseException) -> None:
        """Hand a background failure to ``on_error`` (on the dispatcher thread) and the log."""
        log.warning("[%s] %s", self.name, error)
        callback = self.on_error
        if callback is not None and not self._stop.is_set():
            self._engine.call_soon(callback, error)

    def _feed_stream(self, response: "requests.Response", parser: SSEParser, what: str, *,
                     stop: Optional[Callable[[Any], bool]] = None,
                     on_other: Optional[Callable[[SSEEvent], None]] = None, strict: bool = False) -> bool:
        """Feed the JSON-RPC message of every ``message`` event of an SSE response to the engine.

        Runs on the thread reading ``response`` and blocks while the stream is quiet.
        Events of other types go to ``on_other`` (else they are logged and skipped). A
        malformed message is raised with ``strict``, else reported (see :meth:`_report`)
        and skipped. Returns True as soon as ``stop(message)`` is true, False when the
        stream ends.

        Raises:
            ProtocolError: with ``strict``, a malformed message; always, an oversized event.
            Whatever reading the response raises (a dropped connection).
        """
        if on_other is None:
            on_other = self._skip_event
        for data in message_data(iter_chunks(response), parser, on_other):
            try:
                message = self._feed_checked(data, what)
            except ProtocolError as exc:
                if strict:
                    raise
                self._report(exc)
                continue
            if stop is not None and stop(message):
                return True
        return False

    def _skip_event(self, event: SSEEvent) -> None:
        log.debug("[%s] Ignoring SSE event %r", self.name, event.event)

    def _feed_checked(self, payload: Union[bytes, str], what: str) -> Any:
        """Decode one JSON-RPC message from ``payload`` and hand it to the engine; return it.

        Raises:
            ProtocolError: ``payload`` is not JSON (naming ``what``).
        """
        try:
            message = rpc.decode(payload)
        except ProtocolError as exc:
            raise ProtocolError(f"Malformed {what}: {exc}; data: {rpc.preview(payload)}") from exc
        try:
            self._engine.receive(message)
        except ProtocolError as exc:
            log.warning("[%s] Skipping a message in %s: %s", self.name, what, exc)
        return message
