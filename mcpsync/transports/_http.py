"""HTTP plumbing shared by the HTTP transports: sessions, aborts, errors, body reading.

``requests`` (and urllib3 under it) is imported lazily, inside the functions
here, so ``import mcpsync`` stays free of the HTTP stack. This module is the
one boundary where ``requests``/``urllib3``/``OSError`` exceptions become
mcpsync exceptions (:func:`translate`), always chained with ``from``.

Aborting a blocked exchange: a thread parked in ``recv`` on a socket is not
woken by ``close()`` from another thread, so every connection the session's
pools create is tracked: while a worker thread runs an exchange, the
connection it uses is recorded on that :class:`Exchange`, and
:meth:`Exchange.abort` shuts the socket down, which wakes the reader at once.
"""

from __future__ import annotations

import logging
import math
import re
import threading
import time
from typing import TYPE_CHECKING, Any, Dict, Iterator, List, Mapping, Optional, Tuple, Type
from urllib.parse import urlsplit

from .._rpc import jsonrpc as rpc
from .._rpc.engine import DEFAULT_TIMEOUT
from .._rpc.jsonrpc import JSONObject
from .._rpc.workers import JobQueue
from ..exceptions import (
    ConnectError, HTTPStatusError, MCPSyncError, ProtocolError, RequestTimeout, TransportClosed, TransportError,
)
from .._rpc.wire import SendCancelled
from ..cancel import CancelToken
from .base import Transport

if TYPE_CHECKING:  # pragma: no cover
    import requests

__all__ = [
    "DEFAULT_MAX_MESSAGE_SIZE", "Exchange", "HTTPTransportBase", "answers", "iter_chunks", "media_type",
    "new_session", "origin", "read_body", "status_error", "translate",
]

log = logging.getLogger("mcpsync.transport.http")

DEFAULT_MAX_MESSAGE_SIZE = 64 * 1024 * 1024
READ_CHUNK = 256 * 1024
BODY_EXCERPT = 500

_owner_lock = threading.Lock()
_local = threading.local()


class Exchange:
    """One HTTP exchange in flight, abortable from any thread.

    The worker thread enters :meth:`running`; every connection the pool hands
    it in that block is recorded here. :meth:`abort` marks the exchange
    aborted and shuts down the socket it is using, so a read blocked in
    ``recv`` returns at once. A connection is recorded with its owner, so a
    late abort never touches a connection already reused by another exchange.
    """

    __slots__ = ("key", "aborted", "_conn")

    def __init__(self, key: Any = None) -> None:
        self.key = key
        self.aborted = threading.Event()
        self._conn: Any = None

    def abort(self) -> None:
        """Stop this exchange: wake its reader (idempotent, never raises)."""
        with _owner_lock:
            self.aborted.set()
            conn = self._conn
            if conn is not None and getattr(conn, "_mcpsync_owner", None) is self:
                _shutdown_socket(getattr(conn, "sock", None))

    def running(self) -> "_Running":
        """Context manager: connections used by this thread inside it belong to this exchange."""
        return _Running(self)

    def socket(self) -> Any:
        """The socket of the connection this exchange is using, if any (for its own thread)."""
        return getattr(self._conn, "sock", None)

    def release(self) -> None:
        """Forget the connection (it may go back to the pool and serve someone else)."""
        with _owner_lock:
            conn, self._conn = self._conn, None
            if conn is not None and getattr(conn, "_mcpsync_owner", None) is self:
                conn._mcpsync_owner = None

    def _attach(self, conn: Any) -> None:
        with _owner_lock:
            conn._mcpsync_owner = self
            self._conn = conn
            if self.aborted.is_set():
                _shutdown_socket(getattr(conn, "sock", None))


class _Running:
    __slots__ = ("_exchange", "_previous")

    def __init__(self, exchange: Exchange) -> None:
        self._exchange = exchange
        self._previous: Optional[Exchange] = None

    def __enter__(self) -> Exchange:
        self._previous = getattr(_local, "exchange", None)
        _local.exchange = self._exchange
        return self._exchange

    def __exit__(self, *exc_info: Any) -> None:
        _local.exchange = self._previous


def _shutdown_socket(sock: Any) -> None:
    if sock is None:
        return
    import socket

    try:
        if isinstance(sock, socket.socket):
            socket.socket.shutdown(sock, socket.SHUT_RDWR)  # also for TLS: skip SSLSocket's own bookkeeping
        else:
            sock.shutdown(socket.SHUT_RDWR)
    except (OSError, ValueError, AttributeError):
        pass


def _note_connection(conn: Any) -> None:
    exchange = getattr(_local, "exchange", None)
    if exchange is not None:
        exchange._attach(conn)


def _disown(conn: Any) -> None:
    """A connection going back to the pool belongs to no exchange any more: a late abort of the
    exchange that used it (a timeout racing the end of its response) must not shut it down under
    the next request that takes it from the pool."""
    if conn is not None:
        with _owner_lock:
            conn._mcpsync_owner = None


# -- the requests session -------------------------------------------------------------

_classes: Dict[str, Any] = {}


def _session_classes() -> Tuple[Type[Any], Type[Any]]:
    """Build (once) the Session and HTTPAdapter subclasses; imports requests."""
    if "session" in _classes:
        return _classes["session"], _classes["adapter"]
    import requests
    from requests.adapters import HTTPAdapter
    from urllib3.connection import HTTPConnection, HTTPSConnection
    from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
    from urllib3.poolmanager import PoolManager

    def tracked(base: Type[Any]) -> Type[Any]:
        class Tracked(base):  # type: ignore[misc]
            def request(self, *args: Any, **kwargs: Any) -> Any:
                _note_connection(self)
                return super().request(*args, **kwargs)

            def connect(self) -> None:
                super().connect()
                owner = getattr(self, "_mcpsync_owner", None)
                if owner is not None and owner.aborted.is_set():
                    _shutdown_socket(getattr(self, "sock", None))

        Tracked.__name__ = f"Tracked{base.__name__}"
        return Tracked

    class TrackedHTTPPool(HTTPConnectionPool):
        ConnectionCls = tracked(HTTPConnection)

        def _put_conn(self, conn: Any) -> None:
            _disown(conn)
            super()._put_conn(conn)

    class TrackedHTTPSPool(HTTPSConnectionPool):
        ConnectionCls = tracked(HTTPSConnection)

        def _put_conn(self, conn: Any) -> None:
            _disown(conn)
            super()._put_conn(conn)

    pool_classes = {"http": TrackedHTTPPool, "https": TrackedHTTPSPool}

    class TrackingAdapter(HTTPAdapter):
        # One connection's requests all go to one URL: the pool and the request target that
        # requests works out for each of them (parsing the URL, the proxy and the pool key
        # several times over) are remembered per URL, proxies and TLS settings instead.
        _remembered_limit = 16

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            self._pools: Dict[Any, Any] = {}
            self._targets: Dict[Any, str] = {}
            super().__init__(*args, **kwargs)

        def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
            super().init_poolmanager(*args, **kwargs)
            self.poolmanager.pool_classes_by_scheme = pool_classes

        def get_connection_with_tls_context(self, request: Any, verify: Any, proxies: Any = None,
                                            cert: Any = None) -> Any:
            key = (request.url, verify, cert, _proxy_key(proxies))
            pool = self._pools.get(key)
            if pool is None or pool.pool is None:  # not yet, or closed since
                pool = super().get_connection_with_tls_context(request, verify, proxies=proxies, cert=cert)
                if len(self._pools) >= self._remembered_limit:
                    self._pools.clear()
                self._pools[key] = pool
            return pool

        def request_url(self, request: Any, proxies: Any) -> str:
            key = (request.url, _proxy_key(proxies))
            target = self._targets.get(key)
            if target is None:
                target = super().request_url(request, proxies)
                if len(self._targets) >= self._remembered_limit:
                    self._targets.clear()
                self._targets[key] = target
            return target

        def close(self) -> None:
            remembered = list(self._pools.values())
            self._pools.clear()
            for pool in remembered:  # one the pool manager has since dropped is closed here too
                pool.close()
            # urllib3 2's PoolManager.clear() drops its pools without closing them (their
            # sockets would wait for the garbage collector): close every pool first.
            for manager in [self.poolmanager, *self.proxy_manager.values()]:
                pools = manager.pools
                for key in list(pools.keys()):
                    try:
                        pool = pools[key]
                    except KeyError:
                        continue
                    pool.close()
            super().close()

        def proxy_manager_for(self, proxy: str, **proxy_kwargs: Any) -> Any:
            manager = super().proxy_manager_for(proxy, **proxy_kwargs)
            if type(manager).__module__.startswith("urllib3") and isinstance(manager, PoolManager) \
                    and not type(manager).__name__.startswith("SOCKS"):
                manager.pool_classes_by_scheme = pool_classes
            return manager

    class OriginSession(requests.Session):
        """A Session that drops credentials on any redirect that leaves the origin."""

        def should_strip_auth(self, old_url: str, new_url: str) -> bool:
            return origin(old_url) != origin(new_url)

    _classes["session"], _classes["adapter"] = OriginSession, TrackingAdapter
    return OriginSession, TrackingAdapter


def _proxy_key(proxies: Any) -> Any:
    return tuple(sorted(proxies.items())) if proxies else None


_insecure_warned: "set[Any]" = set()


def check_verify(verify: Any) -> None:
    """Refuse a ``verify`` that would turn TLS verification off without saying so.

    requests reads any false value (None, 0, "") as "do not verify": only the
    explicit ``False`` may do that here.

    Raises:
        ValueError: ``verify`` is not True, False or a CA bundle path.
    """
    import os

    if verify is True or verify is False:
        return
    if isinstance(verify, (str, os.PathLike)) and os.fspath(verify):
        return
    raise ValueError(f"verify must be True, False or the path of a CA bundle, not {verify!r}")


def _warn_insecure(url: Optional[str]) -> None:
    """Log, once per origin and process, that TLS verification was turned off."""
    key = origin(url) if url is not None else None
    with _owner_lock:
        if key in _insecure_warned:
            return
        _insecure_warned.add(key)
    where = _display(url) if url is not None else "an authorization server"
    log.warning("TLS certificate verification is off for %s (verify=False): anyone on the network path "
                "can read and change this traffic", where)


def new_session(*, url: Optional[str] = None, auth: Any = None, verify: Any = True, cert: Any = None,
                proxies: Optional[Mapping[str, str]] = None, trust_env: bool = True,
                pool_size: int = 32) -> "requests.Session":
    """One ``requests.Session`` per connection: keep-alive pooling, tracked connections.

    TLS verification follows ``verify`` (on by default), and an
    ``Authorization`` header is never carried to another origin by a redirect.
    With ``trust_env`` the environment is read the way requests reads it
    (``HTTP(S)_PROXY``/``NO_PROXY`` for ``url``, ``REQUESTS_CA_BUNDLE``/
    ``CURL_CA_BUNDLE``, ``.netrc``), but once, here, not on every request:
    scanning the environment costs more than a whole local round trip.
    Explicit ``proxies``, ``verify`` and ``auth`` win over the environment.
    """
    import os

    import requests.utils

    from .._version import __version__

    check_verify(verify)
    if verify is False:
        _warn_insecure(url)
    session_class, adapter_class = _session_classes()
    session = session_class()
    adapter = adapter_class(pool_connections=4, pool_maxsize=pool_size, max_retries=0)
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    session.trust_env = False
    if trust_env and url is not None:
        session.proxies.update(requests.utils.get_environ_proxies(url))
        if verify is True:
            verify = os.environ.get("REQUESTS_CA_BUNDLE") or os.environ.get("CURL_CA_BUNDLE") or True
        if auth is None:
            auth = requests.utils.get_netrc_auth(url)
    session.verify = verify
    session.cert = cert
    if proxies:
        session.proxies.update(proxies)
    if auth is not None:
        session.auth = auth
    session.headers["User-Agent"] = f"mcpsync/{__version__} {session.headers.get('User-Agent', '')}".strip()
    result: "requests.Session" = session
    return result


def origin(url: str) -> Tuple[str, str, Optional[int]]:
    """(scheme, host, port) with default ports filled in."""
    parts = urlsplit(url)
    scheme = (parts.scheme or "").lower()
    try:
        port = parts.port
    except ValueError:
        port = None
    if port is None:
        port = {"http": 80, "https": 443}.get(scheme)
    return scheme, (parts.hostname or "").lower(), port


# -- responses ----------------------------------------------------------------------------

def media_type(response: "requests.Response") -> str:
    """The Content-Type without parameters, lower-cased ("" when absent)."""
    return str(response.headers.get("Content-Type", "")).split(";", 1)[0].strip().lower()


def iter_chunks(response: "requests.Response", chunk_size: int = READ_CHUNK) -> Iterator[bytes]:
    """The (decoded) body as it arrives: each chunk is whatever one read returned."""
    raw = response.raw
    read1 = getattr(raw, "read1", None)
    if read1 is None:  # urllib3 1.x
        yield from raw.stream(chunk_size, decode_content=True)
        return
    while True:
        chunk = read1(chunk_size, decode_content=True)
        if not chunk:
            return
        yield chunk


def read_body(response: "requests.Response", limit: int, what: str) -> bytes:
    """The whole body, refusing one larger than ``limit`` bytes without holding it.

    Raises:
        ProtocolError: the body is larger than ``limit``.
    """
    declared = response.headers.get("Content-Length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise ProtocolError(f"{what} is larger than max_message_size ({int(declared)} > {limit} bytes)")
    parts: List[bytes] = []
    size = 0
    for chunk in iter_chunks(response):
        size += len(chunk)
        if size > limit:
            raise ProtocolError(f"{what} is larger than max_message_size ({limit} bytes)")
        parts.append(chunk)
    return parts[0] if len(parts) == 1 else b"".join(parts)


def status_error(response: "requests.Response", *, cls: Type[HTTPStatusError] = HTTPStatusError,
                 prefix: str = "", raw: Optional[bytes] = None) -> HTTPStatusError:
    """``HTTP <status>: <body excerpt>`` plus the auth hints, as an HTTPStatusError (or ``cls``).

    ``raw`` is the body when the caller has already read it.
    """
    try:
        if raw is None:
            raw = read_body(response, 64 * 1024, "error body")
        body = raw.decode("utf-8", errors="replace")
    except Exception:  # the body is only decoration: the status is the error
        body = ""
    text = " ".join(body.split())
    if len(text) > BODY_EXCERPT:
        text = text[:BODY_EXCERPT] + "..."
    message = f"{prefix}HTTP {response.status_code}: {text}" if text else f"{prefix}HTTP {response.status_code}"
    hints = [f"{name}: {response.headers[name]}" for name in ("WWW-Authenticate", "Mcp-Auth-Server")
             if response.headers.get(name)]
    if hints:
        message += " (" + "; ".join(hints) + ")"
    return cls(message, status_code=response.status_code, headers=dict(response.headers), body=body[:64 * 1024])


def translate(exc: BaseException, url: str) -> MCPSyncError:
    """Map a requests/urllib3/OS error to the most specific mcpsync exception (chain it with ``from``)."""
    if isinstance(exc, MCPSyncError):
        return exc
    import requests

    from urllib3.exceptions import ConnectTimeoutError, NewConnectionError

    where = _display(url)
    if isinstance(exc, requests.exceptions.SSLError):
        return ConnectError(f"TLS error talking to {where}: {_reason(exc)}")
    if isinstance(exc, (requests.exceptions.ConnectTimeout, requests.exceptions.ProxyError)):
        return ConnectError(f"Cannot connect to {where}: {_reason(exc)}")
    if isinstance(exc, (requests.exceptions.InvalidURL, requests.exceptions.MissingSchema,
                        requests.exceptions.InvalidSchema)):
        return ConnectError(f"Invalid URL {where}: {_reason(exc)}")
    if isinstance(exc, requests.exceptions.ReadTimeout):
        return RequestTimeout(f"HTTP read from {where} timed out")
    if isinstance(exc, requests.exceptions.ConnectionError):
        reason = exc.args[0] if exc.args else None
        cause = getattr(reason, "reason", reason)
        if isinstance(cause, (NewConnectionError, ConnectTimeoutError, ConnectionRefusedError)):
            return ConnectError(f"Cannot connect to {where}: {_reason(exc)}")
        return TransportError(f"Connection to {where} lost: {_reason(exc)}")
    if isinstance(exc, requests.exceptions.RequestException):
        return TransportError(f"HTTP request to {where} failed: {_reason(exc)}")
    import http.client

    from urllib3.exceptions import HTTPError as Urllib3Error, ReadTimeoutError

    if isinstance(exc, ReadTimeoutError):
        return RequestTimeout(f"HTTP read from {where} timed out")
    if isinstance(exc, (Urllib3Error, http.client.HTTPException)):
        return TransportError(f"Connection to {where} lost: {_reason(exc)}")
    if isinstance(exc, OSError):
        return TransportError(f"Connection to {where} failed: {exc}")
    return TransportError(f"HTTP exchange with {where} failed: {type(exc).__name__}: {exc}")


def _reason(exc: BaseException) -> str:
    # urllib3 quotes the request's path with its query ("... with url: /mcp?key=..."): a query may
    # hold a secret, and this text ends up in logs, statuses and the CLI, so it is cut out.
    text = _QUERY.sub(r"\1?...", str(exc))
    return text if len(text) <= 300 else text[:300] + "..."


_QUERY = re.compile(r"((?:https?://|\burl: )[^\s?'\"]*)\?[^\s'\")]+")


def _display(url: str) -> str:
    """The URL without userinfo or query (they may hold secrets)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return f"{parts.scheme}://{host}{parts.path}"


def display_url(url: str) -> str:
    """A loggable form of ``url`` (no credentials, no query)."""
    return _display(url)


# -- the base of both HTTP transports ---------------------------------------------------------

def default_name(url: str) -> str:
    """A label for logs and threads: the URL's host and port."""
    parts = urlsplit(url)
    return f"{parts.hostname or 'http'}{'_' + str(parts.port) if parts.port else ''}"


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
        self._jobs: Optional[JobQueue] = None
        self._lock = threading.Lock()
        self._exchanges: Dict[int, Exchange] = {}
        self._requests: Dict[Any, Exchange] = {}
        self._stop = threading.Event()
        self._modern = False  # a 2026-07-28 version is in use (see set_protocol_version)

    # -- lifecycle -------------------------------------------------------------------------

    def open(self) -> None:
        """Open the connection; an auth object with ``prepare(url)`` (mcpsync.OAuth) may first
        run its login here, on the caller's thread, so a person's login is not bounded by
        the first request's timeout.

        Raises:
            AuthError: the login failed.
            ConnectError, TransportClosed: as for every transport.
        """
        prepare = getattr(self.auth, "prepare", None)
        if callable(prepare) and not self._started and not self._closing:
            prepare(self.url)  # outside the state lock: close() must stay possible meanwhile
        super().open()

    def _open(self) -> None:
        self._session = new_session(url=self.url, auth=self.auth, verify=self.verify, cert=self.cert,
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
            raise self._engine.closed_error()
        if "method" in message:
            if "id" in message:
                exchange = self._track(Exchange(message["id"]), request=True)
                self._submit(self._run_request, message, exchange)
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
            self._engine.fail_request(request_id, self._translated(exc))
        finally:
            self._untrack(exchange)

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

    def _feed_checked(self, payload: bytes, what: str) -> Any:
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


def answers(message: Any, request_id: Any) -> bool:
    """Whether ``message`` (or a batch) holds the response to ``request_id``."""
    if isinstance(message, dict):
        return message.get("id") == request_id and type(message.get("id")) is type(request_id) and (
            "result" in message or "error" in message)
    if isinstance(message, list):
        return any(answers(item, request_id) for item in message)
    return False
