"""The requests side of the HTTP transports: one tracked ``requests.Session`` per connection.

:func:`new_session` builds a Session whose pools record, for every connection,
which :class:`Exchange` is using it. That is what makes an exchange abortable
from another thread: a thread parked in ``recv`` on a socket is not woken by
``close()``, so :meth:`Exchange.abort` shuts the socket itself down, which wakes
the reader at once. ``requests`` and urllib3 are imported when the first session
is built, never by ``import mcpsync``.
"""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING, Any, Dict, Mapping, Optional, Tuple, Type

from .._log import getLogger
from .. import _fork
from .._version import __version__
from ..exceptions import CrossOriginRedirect, EgressRefused
from ._egress import Gate
from ._urls import display_url, origin, origin_text, same_origin

if TYPE_CHECKING:  # pragma: no cover
    import requests

__all__ = ["REDIRECT_BODY_LIMIT", "Exchange", "check_verify", "current_exchange", "drop_inherited", "new_session",
           "prepared_url"]

log = getLogger("mcpsync.transport.http")

_owner_lock = threading.Lock()
_local = threading.local()


def _new_owner_lock() -> None:
    """In a forked child: the lock may have been held by a thread that does not exist there."""
    global _owner_lock
    _owner_lock = threading.Lock()


_fork.on_child(_new_owner_lock)


def drop_inherited(session: Any) -> None:
    """In a forked child: let go of an HTTP session's pooled connections without using them.

    Each adapter of ours closes this process's copies of its idle sockets (no shutdown, so the
    parent's connections stay up) and forgets its pools; no lock a parent thread may have held
    is taken. Sockets of exchanges that were in flight are left to the garbage collector.
    """
    for adapter in list(getattr(session, "adapters", {}).values()):
        drop = getattr(adapter, "drop_inherited", None)
        if callable(drop):
            drop()


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
            if conn is not None and getattr(conn, "mcpsync_owner", None) is self:
                _shutdown_socket(_socket_of(conn))

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
            if conn is not None and getattr(conn, "mcpsync_owner", None) is self:
                conn.mcpsync_owner = None

    def attach(self, conn: Any) -> None:
        """Record ``conn`` (a tracked connection) as the one this exchange uses now."""
        with _owner_lock:
            conn.mcpsync_owner = self
            self._conn = conn
            if self.aborted.is_set():
                _shutdown_socket(_socket_of(conn))


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


def _peer(sock: Any) -> Optional[str]:
    """The address ``sock`` is connected to (None when it cannot say)."""
    try:
        return str(sock.getpeername()[0])
    except (OSError, AttributeError, IndexError, TypeError):
        return None


def _socket_of(conn: Any) -> Any:
    """The socket ``conn`` uses: its own, or the one a read-until-close response took over."""
    return getattr(conn, "sock", None) or getattr(conn, "mcpsync_sock", None)


def _shutdown_socket(sock: Any) -> None:
    if sock is None:
        return
    import socket  # only on an abort: keeps `import mcpsync` light

    try:
        if isinstance(sock, socket.socket):
            socket.socket.shutdown(sock, socket.SHUT_RDWR)  # also for TLS: skip SSLSocket's own bookkeeping
        else:
            sock.shutdown(socket.SHUT_RDWR)
    except (OSError, ValueError, AttributeError):
        pass


def current_exchange() -> Optional[Exchange]:
    """The exchange this thread is running now (inside :meth:`Exchange.running`), if any.

    An auth object called from a pool thread uses it to learn, through the exchange's
    ``aborted`` Event, that the caller stopped waiting.
    """
    exchange: Optional[Exchange] = getattr(_local, "exchange", None)
    return exchange


def _note_connection(conn: Any) -> None:
    exchange = getattr(_local, "exchange", None)
    if exchange is not None:
        exchange.attach(conn)


def _disown(conn: Any) -> None:
    """A connection going back to the pool belongs to no exchange any more: a late abort of the
    exchange that used it (a timeout racing the end of its response) must not shut it down under
    the next request that takes it from the pool."""
    if conn is not None:
        with _owner_lock:
            conn.mcpsync_owner = None


_classes: Dict[str, Any] = {}


def _session_classes() -> Tuple[Type[Any], Type[Any]]:
    """Build (once) the Session and HTTPAdapter subclasses; imports requests."""
    if "session" in _classes:
        return _classes["session"], _classes["adapter"]
    # Lazy: the first HTTP connection loads the HTTP stack, ``import mcpsync`` does not.
    import requests  # noqa: PLC0415
    from requests.adapters import HTTPAdapter  # noqa: PLC0415
    from urllib3.connection import HTTPConnection, HTTPSConnection  # noqa: PLC0415
    from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool  # noqa: PLC0415
    from urllib3.poolmanager import PoolManager  # noqa: PLC0415

    def tracked(base: Type[Any], scheme: str) -> Type[Any]:
        class Tracked(base):  # type: ignore[misc]
            #: The Exchange using this connection now (set and cleared under the owner lock).
            mcpsync_owner: Optional[Exchange] = None
            mcpsync_sock: Any = None
            #: The gate of the session whose pool made this connection (see TrackedHTTPPool._new_conn).
            mcpsync_gate: Optional[Gate] = None

            def _new_conn(self) -> Any:
                sock = super()._new_conn()
                gate = self.mcpsync_gate
                if gate is not None:
                    # Connected, nothing sent yet: the gate sees the address the name led to this time.
                    try:
                        gate.check_peer(scheme, str(self.host), self.port, _peer(sock))
                    except BaseException:
                        sock.close()
                        raise
                return sock

            def request(self, *args: Any, **kwargs: Any) -> Any:
                _note_connection(self)
                return super().request(*args, **kwargs)

            def connect(self) -> None:
                super().connect()
                # Kept: a response read until the server closes takes the socket over from the
                # connection (http.client clears ``sock``), and an abort must still reach it.
                self.mcpsync_sock = self.sock
                owner = self.mcpsync_owner
                if owner is not None and owner.aborted.is_set():
                    _shutdown_socket(getattr(self, "sock", None))

        Tracked.__name__ = f"Tracked{base.__name__}"
        return Tracked

    class TrackedHTTPPool(HTTPConnectionPool):
        ConnectionCls = tracked(HTTPConnection, "http")
        #: Set by the adapter that owns the pool: its connections are checked by this gate.
        mcpsync_gate: Optional[Gate] = None

        def _new_conn(self) -> Any:
            conn: Any = super()._new_conn()
            conn.mcpsync_gate = self.mcpsync_gate
            return conn

        def _put_conn(self, conn: Any) -> None:
            _disown(conn)
            super()._put_conn(conn)

    class TrackedHTTPSPool(HTTPSConnectionPool):
        ConnectionCls = tracked(HTTPSConnection, "https")
        mcpsync_gate: Optional[Gate] = None

        def _new_conn(self) -> Any:
            conn: Any = super()._new_conn()
            conn.mcpsync_gate = self.mcpsync_gate
            return conn

        def _put_conn(self, conn: Any) -> None:
            _disown(conn)
            super()._put_conn(conn)

    pool_classes = {"http": TrackedHTTPPool, "https": TrackedHTTPSPool}

    class TrackingAdapter(HTTPAdapter):
        # One connection's requests all go to one URL: the pool and the request target that
        # requests works out for each of them (parsing the URL, the proxy and the pool key
        # several times over) are remembered per URL, proxies and TLS settings instead.
        _remembered_limit = 16

        def __init__(self, gate: Gate, *args: Any, **kwargs: Any) -> None:
            self._gate = gate
            self._pools: Dict[Any, Any] = {}
            self._targets: Dict[Any, str] = {}
            super().__init__(*args, **kwargs)

        def send(self, request: Any, *args: Any, **kwargs: Any) -> Any:
            # The one place every request passes (a redirect hop, an auth object's resend
            # included): the gate reads the URL that is about to go out, nothing else.
            self._gate.check(str(request.method), str(request.url))
            return super().send(request, *args, **kwargs)

        def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
            super().init_poolmanager(*args, **kwargs)
            self.poolmanager.pool_classes_by_scheme = pool_classes

        def get_connection_with_tls_context(self, request: Any, verify: Any, proxies: Any = None,
                                            cert: Any = None) -> Any:
            key = (request.url, verify, cert, _proxy_key(proxies))
            pool = self._pools.get(key)
            if pool is None or pool.pool is None:  # not yet, or closed since
                pool = super().get_connection_with_tls_context(request, verify, proxies=proxies, cert=cert)
                setattr(pool, "mcpsync_gate", self._gate)  # a pool the proxy manager made is ours too
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

        def drop_inherited(self) -> None:
            """See :func:`drop_inherited`: this adapter's part, reading the pools' queues directly."""
            remembered = list(self._pools.values())
            self._pools = {}
            self._targets = {}
            for pool in remembered:
                for conn in list(getattr(getattr(pool, "pool", None), "queue", None) or ()):
                    sock, conn.sock = getattr(conn, "sock", None), None
                    if sock is not None:
                        try:
                            sock.close()  # this process's descriptor only: the parent's stays open
                        except OSError:
                            pass

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
        """A Session whose redirects are held to its gate, hop by hop.

        A ``Location`` holding a control character, whitespace, a backslash or
        userinfo is refused before any hop (:class:`~mcpsync.exceptions.EgressRefused`).
        Every hop then goes through the adapter's ``send``, where the gate checks the
        URL requests is about to send; a hop to another origin is refused there and
        raised as :class:`~mcpsync.exceptions.CrossOriginRedirect`, so neither the
        request's headers and body nor an auth object's response hook ever meet that
        origin. Answers that are not redirects cost one status check, as in requests.
        """

        def __init__(self, gate: Gate) -> None:
            super().__init__()
            self.gate = gate

        def get_redirect_target(self, resp: "requests.Response") -> Optional[str]:
            location: Optional[str] = super().get_redirect_target(resp)
            if location is None:
                return None
            try:
                self.gate.check_reference(resp.url, location, f"the redirect (HTTP {resp.status_code}) to")
            except EgressRefused:
                resp.close()
                raise
            if not _drained(resp):
                log.debug("Not following a redirect from %s: its body is over %d bytes", display_url(resp.url),
                          REDIRECT_BODY_LIMIT)
                return None
            return location

        def resolve_redirects(self, resp: "requests.Response", req: "requests.PreparedRequest", *args: Any,
                              **kwargs: Any) -> Any:
            if kwargs.get("yield_requests"):
                # requests asks for this only to fill ``Response.next`` when redirects are off (the auth
                # fetcher): nothing here reads it, and building it reads the redirect's whole body unbounded.
                return iter(())
            return _hops(resp, super().resolve_redirects(resp, req, *args, **kwargs))

        def should_strip_auth(self, old_url: str, new_url: str) -> bool:
            return not same_origin(old_url, new_url)  # kept as a second line of defence

    _classes["session"], _classes["adapter"] = OriginSession, TrackingAdapter
    return OriginSession, TrackingAdapter


#: The largest body of a redirect that is followed. requests reads a redirect's whole body before
#: following it; reading it here first, within this bound, keeps a server from filling memory with one.
REDIRECT_BODY_LIMIT = 64 * 1024


def _drained(resp: "requests.Response") -> bool:
    """Read (and drop) a redirect's body; False when it is larger than REDIRECT_BODY_LIMIT."""
    declared = resp.headers.get("Content-Length")
    if declared is not None and declared.isdigit() and int(declared) > REDIRECT_BODY_LIMIT:
        return False
    try:
        data = resp.raw.read(REDIRECT_BODY_LIMIT + 1, decode_content=False)
    except Exception:  # a broken body: requests copes with it as before
        return True
    return data is None or len(data) <= REDIRECT_BODY_LIMIT


def _hops(first: "requests.Response", hops: Any) -> Any:
    """The responses requests' redirect loop yields; a hop the gate refused as another origin is
    raised as the :class:`CrossOriginRedirect` of the answer that asked for it."""
    last = first
    try:
        for last in hops:
            yield last
    except EgressRefused as exc:
        last.close()
        if exc.rule != "origin" or isinstance(exc, CrossOriginRedirect):
            raise
        raise _cross_origin(last, exc) from exc


def _cross_origin(response: "requests.Response", refused: EgressRefused) -> CrossOriginRedirect:
    """The error for ``response``, a redirect whose next hop the gate refused as another origin."""
    answered = response.url or ""
    here, there, shown = origin_text(answered), origin_text(refused.url), refused.url
    message = (f"{display_url(answered)} answered HTTP {response.status_code}, a redirect to {shown} on another "
               f"origin ({here} -> {there}). mcpsync follows redirects only within one origin, so that the "
               f"credentials, headers, session id and request body meant for {here} reach no other server. "
               f"If {there} is the server you mean to use, put {shown} in the configuration instead.")
    return CrossOriginRedirect(message, status_code=response.status_code, headers=dict(response.headers),
                               location=shown)


def prepared_url(url: str) -> str:
    """``url`` as requests will send it (its own parse and re-assembly, by urllib3's parser).

    Checking this form, not the raw text, is what makes an origin check hold:
    ``urllib.parse`` and urllib3 disagree about some raw URLs (urllib3 ends the
    authority at a backslash, ``urllib.parse`` does not).

    Raises:
        ValueError: requests refuses the URL (no host, a bad port, an unknown scheme).
    """
    import requests  # noqa: PLC0415 (lazy, as in _session_classes)

    request = requests.PreparedRequest()
    try:
        request.prepare_url(url, None)
    except requests.exceptions.RequestException as exc:
        raise ValueError(str(exc)) from exc
    return str(request.url)


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
    where = display_url(url) if url is not None else "an authorization server"
    log.warning("TLS certificate verification is off for %s (verify=False): anyone on the network path "
                "can read and change this traffic", where)


def new_session(*, gate: Gate, url: Optional[str] = None, auth: Any = None, verify: Any = True, cert: Any = None,
                proxies: Optional[Mapping[str, str]] = None, trust_env: bool = True,
                pool_size: int = 32) -> "requests.Session":
    """One ``requests.Session`` per connection: keep-alive pooling, tracked connections.

    Every request the session sends, every redirect hop included, is first checked by
    ``gate`` (see :mod:`._egress`) on the URL about to be sent.

    TLS verification follows ``verify`` (on by default), and an
    ``Authorization`` header is never carried to another origin by a redirect.
    With ``trust_env`` the environment is read the way requests reads it
    (``HTTP(S)_PROXY``/``NO_PROXY`` for ``url``, ``REQUESTS_CA_BUNDLE``/
    ``CURL_CA_BUNDLE``, ``.netrc``), but once, here, not on every request:
    scanning the environment costs more than a whole local round trip.
    Explicit ``proxies``, ``verify`` and ``auth`` win over the environment.
    """
    import requests.utils  # noqa: PLC0415 (lazy, as in _session_classes)

    check_verify(verify)
    if verify is False:
        _warn_insecure(url)
    session_class, adapter_class = _session_classes()
    session = session_class(gate)
    adapter = adapter_class(gate, pool_connections=4, pool_maxsize=pool_size, max_retries=0)
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
