"""StreamableHTTPTransport: an MCP server behind one HTTP endpoint (protocol 2025-03-26 and later).

Every message is a POST to the endpoint. A request's answer comes back as one
JSON body or as an SSE stream (notifications and server requests first, then
the response), read by a pool thread that feeds the engine; the caller only
parks on its Event. Answers to server requests are POSTed back. An optional
GET stream (:meth:`StreamableHTTPTransport.start_listener`) carries
server-initiated messages.

Sessions: the ``Mcp-Session-Id`` a response carries is sent on every later
request; after the handshake the negotiated ``MCP-Protocol-Version`` is sent
too. A 404 on a request that carried a session id, or a 400 whose body speaks
of the session (TypeScript-SDK servers answer an unknown session with 400 "No
valid session ID provided"), raises :class:`~mcpsync.SessionExpired`: the
server refused the request without running it (the session id is dropped first,
so the client's new ``initialize`` goes out without it, and the request is sent
again). A refused connection fails only its request, with ConnectError (nothing
was sent); with :attr:`~StreamableHTTPTransport.close_when_unreachable` (set by
a Manager) it closes the transport as lost once the server had answered, so the
manager's reconnect policy takes over.

Resumability (legacy, 2025-11-25): when a POST's stream ends before its
response, the transport waits exactly the stream's ``retry`` delay and
reconnects with GET and ``Last-Event-ID`` until the response arrives or the
caller stops waiting; the request is never POSTed twice. 2026-07-28 streams
are not resumable: a broken one fails its request with
:class:`~mcpsync.StreamBroken` at once, and the session sends the request
again with a new id.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any, Dict, Optional

from .._log import getLogger
from .._rpc import delivery
from .._rpc import jsonrpc as rpc
from .._rpc.jsonrpc import JSONObject
from .._protocol.versions import is_modern
from ..exceptions import (
    ConnectError, ConnectionLost, HTTPStatusError, MCPError, MCPSyncError, ProtocolError, ServerUnreachable,
    SessionExpired, StreamBroken, TransportError,
)
from ._http import HTTPTransportBase
from .base import HeaderSource
from ._http_io import answers, body_summary, iter_chunks, media_type, read_body, read_text, status_error, usual_urls
from ._http_session import Exchange
from ._sse import MAX_RETRY, SSEParser
from ._urls import display_url

if TYPE_CHECKING:  # pragma: no cover
    import requests

__all__ = ["StreamableHTTPTransport"]

log = getLogger("mcpsync.transport.http")

_POST_ACCEPT = "application/json, text/event-stream"
_SSE = "text/event-stream"
#: The answers to the first POST that offer the legacy fallback (never 401 or 403: credentials).
FALLBACK_STATUSES = (400, 404, 405)
_LOST_STATUSES = (400, 404)
#: What a 400 says when it is about the session: the TypeScript SDK's servers answer an unknown
#: session with 400 "Bad Request: No valid session ID provided" (or "Server not initialized").
_SESSION_WORDS = (b"session", b"not initialized")
_DRAIN_TIMEOUT = 0.25


class StreamableHTTPTransport(HTTPTransportBase):
    """Speaks MCP Streamable HTTP to ``url``.

    ::

        transport = StreamableHTTPTransport("https://example.com/mcp", token="...")
        with mcpsync.Client(transport) as client:
            print(client.list_tools())

    Args:
        url: the MCP endpoint (``http://`` or ``https://``).
        headers: extra headers for every request; they may override the defaults.
        token: a bearer token, sent as ``Authorization: Bearer <token>``.
        auth: any ``requests`` auth object (``requests.auth.AuthBase``, a tuple).
        verify: TLS verification: True (the default), False, or a CA bundle path.
        cert: a client certificate (path, or (cert, key) pair).
        proxies: explicit proxies; by default they come from the environment.
        trust_env: read proxies, ``.netrc`` and CA settings from the environment.
        name: a label for logs and threads (default: the URL's host and port).
        timeout: default per-request timeout in seconds (also bounds notifications).
        connect_timeout: seconds to establish a connection.
        max_message_size: largest JSON body or SSE event accepted, in bytes.
        resume_delay: seconds to wait before resuming a broken stream when the
            server sent no ``retry`` (its ``retry`` always wins).
        listener_backoff: first and longest delay, in seconds, between GET
            listener reconnections when the server gives no ``retry``.
        legacy_fallback: offer the legacy HTTP+SSE transport when the first POST
            is answered 400, 404 or 405 (the fallback is :func:`mcpsync.transports._factory.fallback_for`).
        endpoint_timeout: for that fallback: seconds to wait for its ``endpoint`` event.

    Thread safety: see :class:`~mcpsync.transports.Transport`.
    """

    kind = "streamable-http"

    def __init__(self, url: str, *, resume_delay: float = 1.0, listener_backoff: "tuple[float, float]" = (0.5, 30.0),
                 legacy_fallback: bool = False, endpoint_timeout: float = 10.0, **options: Any) -> None:
        super().__init__(url, **options)
        self.endpoint_timeout = endpoint_timeout
        self.resume_delay = resume_delay
        self.listener_backoff = listener_backoff
        self.legacy_fallback = legacy_fallback
        self._session_id: Optional[str] = None
        self._protocol_version: Optional[str] = None
        self._first_refused = False
        self._answered = False  # the server answered with 2xx and JSON or SSE (an MCP endpoint, then)
        self._listener: Optional[threading.Thread] = None
        self._listener_exchange: Optional[Exchange] = None
        self._listener_disabled = False
        self._templates: "Optional[tuple[Any, requests.PreparedRequest]]" = None
        self._request_headers: Optional[HeaderSource] = None  # the session's (see set_request_headers)

    @property
    def session_id(self) -> Optional[str]:
        """The server's ``Mcp-Session-Id``, once it gave one."""
        return self._session_id

    @property
    def protocol_version(self) -> Optional[str]:
        """The version sent as ``MCP-Protocol-Version`` (set by the client after the handshake)."""
        return self._protocol_version

    @property
    def listening(self) -> bool:
        """True while the GET listener thread runs."""
        thread = self._listener
        return thread is not None and thread.is_alive()

    def set_protocol_version(self, version: Optional[str]) -> None:
        super().set_protocol_version(version)
        with self._lock:
            self._protocol_version = version
            self._modern = is_modern(version)

    def set_request_headers(self, source: Optional[HeaderSource]) -> None:
        with self._lock:
            self._request_headers = source

    # -- headers and session ---------------------------------------------------------------

    def _headers(self, accept: str, post: bool = False) -> Dict[str, str]:
        headers = {"Accept": accept, "Content-Type": "application/json"} if post else {"Accept": accept}
        headers.update(self.headers)
        session_id, version = self._session_id, self._protocol_version
        if session_id is not None:
            headers["Mcp-Session-Id"] = session_id
        if version is not None:
            headers["MCP-Protocol-Version"] = version
        return headers

    def _note(self, response: "requests.Response", sent: Optional[str]) -> None:
        """Remember the session id a response gives, and turn a bad status into an exception."""
        session_id = response.headers.get("Mcp-Session-Id")
        if session_id and session_id != sent:
            with self._lock:
                if self._session_id == sent:  # a late answer from an expired session changes nothing
                    self._session_id = session_id
        status = response.status_code
        if 200 <= status < 300:
            if not self._answered and (status == 202 or media_type(response) in ("application/json", _SSE)):
                self._answered = True  # an answer only an MCP endpoint gives
            return
        raw: Optional[bytes] = None
        if status in _LOST_STATUSES and sent is not None:
            raw = _error_body(response)
            if status == 404 or _names_session(raw):  # the server no longer knows our session
                with self._lock:
                    if self._session_id == sent:
                        self._session_id = None
                        self._protocol_version = None
                raise status_error(response, cls=SessionExpired, raw=raw)
        if sent is None and self._protocol_version is None and status in FALLBACK_STATUSES:
            self._first_refused = True
            if self.legacy_fallback:  # the fallback's error will tell both attempts
                raise status_error(response)
        raise status_error(response, raw=raw,
                           first="" if self._answered else getattr(response.request, "method", None) or "POST")

    def _post(self, body: bytes, headers: Dict[str, str], exchange: Exchange) -> "requests.Response":
        session = self._session
        if session is None:
            raise self._engine.closed_error()
        with exchange.running():
            if session.auth is None and not session.cookies:
                # The hot path: copy a request prepared once for these headers. Preparing one
                # per call (merging settings, cookies, headers) costs more CPU than the round trip.
                prepared = self._template(headers, session).copy()
                prepared.prepare_body(body, None)
                return session.send(prepared, stream=True, timeout=(self.connect_timeout, None),
                                    proxies=session.proxies)
            # An auth object may sign each request, and cookies may change: the full path.
            return session.post(self.url, data=body, headers=headers, stream=True,
                                timeout=(self.connect_timeout, None))

    def _template(self, headers: Dict[str, str], session: "requests.Session") -> "requests.PreparedRequest":
        key = tuple(headers.items())
        cached = self._templates
        if cached is not None and cached[0] == key:
            return cached[1]
        import requests  # noqa: PLC0415 (lazy: import mcpsync must not load the HTTP stack)

        template = session.prepare_request(requests.Request("POST", self.url, headers=headers))
        self._templates = (key, template)
        return template

    def _get(self, headers: Dict[str, str], exchange: Exchange) -> "requests.Response":
        session = self._session
        if session is None:
            raise self._engine.closed_error()
        with exchange.running():
            return session.get(self.url, headers=headers, stream=True, timeout=(self.connect_timeout, None))

    # -- requests ------------------------------------------------------------------------------

    def _request_exchange(self, message: JSONObject, exchange: Exchange) -> None:
        request_id = message["id"]
        headers = self._headers(_POST_ACCEPT, post=True)
        sent = headers.get("Mcp-Session-Id")
        modern = self._modern
        source = self._request_headers
        if source is not None:  # the session's: 2026-07-28's Mcp-Method, Mcp-Name and Mcp-Param-*, from this body
            headers.update(source(message))
        try:
            response = self._post(rpc.encode(message), headers, exchange)
        except BaseException as exc:
            self._post_failed(request_id, exc)
            raise
        parser = SSEParser(self.max_message_size)
        try:
            if modern and not 200 <= response.status_code < 300:
                self._modern_refusal(response, request_id)
            try:
                self._note(response, sent)
            except SessionExpired:
                # The server refused the session this request named: it did not run it.
                self._engine.ledger.record(request_id, delivery.NOT_RUN)
                raise
            kind = media_type(response)
            if kind == _SSE:
                self._engine.set_timeout_label(request_id, "SSE response")
                if self._read_stream(response, parser, exchange, request_id):
                    return
            elif kind == "application/json":
                text = read_text(response, self.max_message_size, f"The JSON response to request {request_id}")
                if text and not text.isspace():
                    reply = self._feed_checked(text, f"JSON in the response to request {request_id}")
                    if answers(reply, request_id):
                        return
                raise ProtocolError(f"No response received for request ID {request_id}")
            else:
                data = read_body(response, self.max_message_size, f"The response to request {request_id}")
                if not data.strip():
                    if _unframed(response):
                        raise ConnectionLost(f"No response received for request ID {request_id}: the connection "
                                             "ended in the middle of the response's headers")
                    raise ProtocolError(f"No response received for request ID {request_id}")
                raise ProtocolError(f"Unexpected Content-Type {kind!r} in the response to request {request_id}"
                                    + self._not_mcp(kind, data))
        finally:
            exchange.release()
            response.close()
        self._resume(parser, exchange, request_id, modern)

    def _exchange_failed(self, error: BaseException) -> None:
        """A managed transport (:attr:`close_when_unreachable`) whose server answered before and now
        refuses connections is lost: it closes, so its manager's reconnect policy takes over."""
        if self.close_when_unreachable and self._answered and isinstance(error, ConnectError):
            log.info("[%s] %s; closing the connection as lost", self.name, error)
            self._lose(error)

    def _not_mcp(self, kind: str, data: bytes) -> str:
        """For a first answer that is not JSON or SSE: what it was, and that this is likely no MCP endpoint."""
        if self._answered:
            return ""
        seen = body_summary(data[:64 * 1024].decode("utf-8", errors="replace"), kind)
        return (f" ({seen}): {display_url(self.url)} does not look like an MCP endpoint. {usual_urls(self.url)}"
                if seen else "")

    def _modern_refusal(self, response: "requests.Response", request_id: Any) -> None:
        """A modern server answers errors with 4xx and the JSON-RPC error in the body: raise it as MCPError.

        The error (with ``http_status`` set) fails only this request; a body
        that holds no error for it raises the usual HTTPStatusError.
        """
        if 300 <= response.status_code < 400:
            raise status_error(response)  # a redirect that was not followed: its body means nothing here
        try:
            raw = read_body(response, 64 * 1024, "error body")
        except Exception:  # the status alone is the error
            raw = b""
        try:
            reply = rpc.decode(raw) if raw.strip() else None
        except ProtocolError:
            reply = None
        error = reply.get("error") if isinstance(reply, dict) and answers(reply, request_id) else None
        if isinstance(error, dict) and type(error.get("code")) is int:
            raise MCPError.from_wire(error, http_status=response.status_code)
        raise status_error(response, raw=raw, first="" if self._answered else "POST")

    def _read_stream(self, response: "requests.Response", parser: SSEParser, exchange: Exchange,
                     request_id: Any) -> bool:
        """Feed the stream's messages to the engine until ``request_id`` is answered (True) or it ends."""
        what = f"SSE data in the response to request {request_id}"

        def done(message: Any) -> bool:
            return answers(message, request_id) or exchange.aborted.is_set()

        try:
            if self._feed_stream(response, parser, what, stop=done, strict=True):
                if not exchange.aborted.is_set():
                    self._drain(response, exchange)
                return True
        except MCPSyncError:
            raise
        except Exception as exc:  # a dropped connection: like an early end, maybe resumable
            if exchange.aborted.is_set() or self._stop.is_set():
                return True
            log.debug("[%s] Stream for request %r broke: %r", self.name, request_id, exc)
        return exchange.aborted.is_set()

    def _drain(self, response: "requests.Response", exchange: Exchange) -> None:
        """Read the few bytes that end a finished stream, so its connection can be reused."""
        sock = exchange.socket()
        if sock is None:
            return
        deadline = time.monotonic() + _DRAIN_TIMEOUT
        try:
            previous = sock.gettimeout()
            sock.settimeout(_DRAIN_TIMEOUT)
            try:
                for _ in iter_chunks(response):
                    if time.monotonic() > deadline:
                        return  # the server keeps talking: close this connection instead
            finally:
                sock.settimeout(previous)
        except Exception:  # a stream that stays open: its connection is closed instead
            pass

    def _resume(self, parser: SSEParser, exchange: Exchange, request_id: Any, modern: bool) -> None:
        """The stream ended before the response: GET with Last-Event-ID after ``retry``, until answered.

        Only in a legacy session. A 2026-07-28 stream is not resumable (the spec removed
        ``Last-Event-ID``, and such a server answers GET with 405): the request fails at once
        with :class:`~mcpsync.StreamBroken`, whatever event ids the stream carried, and the
        session sends it again as a new request.

        Raises:
            StreamBroken: a modern stream; or a legacy one that named no event to resume from.
        """
        if modern:
            self._engine.ledger.record(request_id, delivery.RESEND_REQUIRED)  # the spec's one resend
            raise StreamBroken(f"The response stream of request {request_id} ended before its response; "
                               "a 2026-07-28 stream cannot be resumed")
        while parser.last_event_id is not None:
            delay = parser.retry if parser.retry is not None else self.resume_delay
            if exchange.aborted.wait(min(max(delay, 0.0), MAX_RETRY)) or self._stop.is_set():
                return
            headers = self._headers(_SSE)
            headers["Last-Event-ID"] = parser.last_event_id
            sent = headers.get("Mcp-Session-Id")
            log.debug("[%s] Resuming the stream of request %r after event %r", self.name, request_id,
                      parser.last_event_id)
            try:
                response = self._get(headers, exchange)
                self._note(response, sent)
            except BaseException as exc:
                raise self._resume_failed(request_id, exc) from exc
            try:
                if media_type(response) != _SSE:
                    raise ProtocolError(f"Resuming the stream of request {request_id}: expected an event stream, "
                                        f"got Content-Type {media_type(response)!r}")
                parser = parser.resumed()
                if self._read_stream(response, parser, exchange, request_id):
                    return
            finally:
                exchange.release()
                response.close()
        raise StreamBroken(f"No response received for request ID {request_id}: its stream ended before the "
                           "response and named no event to resume from (the request is not sent twice)")

    def _resume_failed(self, request_id: Any, exc: BaseException) -> BaseException:
        """The error of a request whose stream broke and could not be resumed. The server took the
        request (it answered the POST), so it may have run it: it is never sent again."""
        error = self._translated(exc)
        if not isinstance(error, Exception):
            return error  # KeyboardInterrupt, SystemExit
        why = f"The response stream of request {request_id} broke and could not be resumed ({error})"
        how = "; the server may have run the request, so it is not sent again"
        if isinstance(error, ConnectError):  # refused: the server is down or restarting (a manager reconnects)
            return ServerUnreachable(why + how, may_have_reached_server=True)
        return ConnectionLost(why + how)

    # -- notifications and replies ---------------------------------------------------------------

    def _post_message(self, message: JSONObject, exchange: Exchange) -> None:
        headers = self._headers(_POST_ACCEPT, post=True)
        sent = headers.get("Mcp-Session-Id")
        response = self._post(rpc.encode(message), headers, exchange)
        try:
            self._note(response, sent)
            try:
                read_body(response, self.max_message_size, "The answer to a notification")
            except Exception:  # a body we do not need; the status said yes
                pass
        finally:
            exchange.release()
            response.close()

    # -- the GET listener -------------------------------------------------------------------------

    def start_listener(self, wait: float = 5.0) -> None:
        """Open the GET stream for server-initiated messages (idempotent).

        Returns once the server has answered the GET (at most ``wait``
        seconds), so messages the server sends after that are not missed; the
        stream itself is read by a background thread. A 405 answer means the
        server offers none: the listener then stays off quietly. A dropped
        stream is reopened with backoff (the server's ``retry`` wins) and
        ``Last-Event-ID``. Errors go to ``on_error``.
        """
        with self._lock:
            if self._listener_disabled or self._stop.is_set() or not self._started:
                return
            if self._listener is not None and self._listener.is_alive():
                return
            exchange = Exchange("listener")
            self._exchanges[id(exchange)] = exchange
            self._listener_exchange = exchange
            answered = threading.Event()
            thread = threading.Thread(target=self._listen, args=(exchange, answered),
                                      name=f"mcpsync-http-listener[{self.name}]", daemon=True)
            self._listener = thread
        thread.start()
        answered.wait(wait)

    def _listen(self, exchange: Exchange, answered: threading.Event) -> None:
        """The listener thread: one GET stream after another until close, a 405 or an expired session.

        No exception ends it silently: one that no other step handled is logged,
        given to ``on_error`` as a :class:`~mcpsync.TransportError` (chained
        with ``from``) and followed by a reconnection, as a dropped stream is.
        """
        parser = SSEParser(self.max_message_size)
        failures = 0
        first, longest = self.listener_backoff
        try:
            while not (self._stop.is_set() or exchange.aborted.is_set()):
                try:
                    delivered = self._listen_once(exchange, parser, answered)
                except Exception as exc:
                    if self._stop.is_set() or exchange.aborted.is_set():
                        return
                    error = TransportError(f"The GET listener failed ({type(exc).__name__}: {exc}); "
                                           "reconnecting")
                    error.__cause__ = exc
                    log.debug("[%s] Listener failure", self.name, exc_info=exc)
                    self._report(error)
                    delivered = (False, parser)
                answered.set()
                if delivered is None:
                    return
                parser = delivered[1]
                failures = 0 if delivered[0] else failures + 1
                delay = parser.retry if parser.retry is not None else min(longest, first * 2 ** min(failures, 10))
                # "retry: 0" must not become a busy loop; the parser bounds retry, this bounds the backoff too.
                if exchange.aborted.wait(min(max(delay, 0.01), MAX_RETRY)):
                    return
        finally:
            answered.set()
            self._untrack(exchange)

    def _listen_once(self, exchange: Exchange, parser: SSEParser,
                     answered: threading.Event) -> "Optional[tuple[bool, SSEParser]]":
        """One GET stream; returns (got events, parser) to go on, or None to stop listening."""
        headers = self._headers(_SSE)
        if parser.last_event_id is not None:
            headers["Last-Event-ID"] = parser.last_event_id
        sent = headers.get("Mcp-Session-Id")
        try:
            response = self._get(headers, exchange)
            answered.set()
            try:
                if response.status_code == 405 or (response.status_code == 404 and sent is None):
                    # 405 is the spec's "no GET stream here"; a 404 to a GET that named no session says
                    # the same (a web framework's default for a route it lacks). Asking again and again
                    # would only keep talking to a server that has nothing to say on GET.
                    log.debug("[%s] The server offers no GET stream (%d); not listening", self.name,
                              response.status_code)
                    self._listener_disabled = True
                    return None
                try:
                    self._note(response, sent)
                except SessionExpired:
                    log.info("[%s] Session expired; the listener stops until the client reconnects", self.name)
                    return None
                if media_type(response) != _SSE:
                    raise ProtocolError(f"The GET stream answered with Content-Type {media_type(response)!r}, "
                                        "not an event stream")
                parser = parser.resumed()
                self._feed_stream(response, parser, "SSE data on the listener stream")
            finally:
                exchange.release()
                response.close()
        except (HTTPStatusError, ProtocolError) as exc:
            if not (self._stop.is_set() or exchange.aborted.is_set()):
                self._report(exc)
        except Exception as exc:
            if self._stop.is_set() or exchange.aborted.is_set():
                return None
            error = self._translated(exc)
            self._exchange_failed(error)  # a managed transport whose server went away closes here
            if not self.connected:
                return None
            log.info("[%s] Listener stream dropped: %s; reconnecting", self.name, error)
        return parser.events_seen > 0, parser

    # -- settings and fork ------------------------------------------------------------------------

    def settings(self) -> Dict[str, Any]:
        """The HTTP settings (see :meth:`HTTPTransportBase.settings`) and this transport's own; never
        the session id or protocol version it was given (a copy starts a session of its own)."""
        return {**super().settings(), "resume_delay": self.resume_delay, "listener_backoff": self.listener_backoff,
                "legacy_fallback": self.legacy_fallback, "endpoint_timeout": self.endpoint_timeout}

    def _release_inherited(self) -> None:
        super()._release_inherited()
        self._listener = None
        self._listener_exchange = None

    # -- closing ----------------------------------------------------------------------------------

    def _before_shutdown(self, cause: Optional[BaseException]) -> None:
        listener = self._listener_exchange
        if listener is not None:
            listener.abort()
        session, session_id = self._session, self._session_id
        if cause is not None or session is None or session_id is None:
            return
        try:  # on the closing thread, bounded by shutdown_timeout
            response = session.delete(self.url, headers=self._headers(_POST_ACCEPT),
                                      timeout=(min(self.connect_timeout, self.shutdown_timeout),
                                               self.shutdown_timeout))
            response.close()
            log.debug("[%s] DELETE of the session answered %d", self.name, response.status_code)
        except Exception as exc:  # 405, gone, unreachable: the session ends anyway
            log.debug("[%s] DELETE of the session failed: %s", self.name, exc)

    def _join_threads(self) -> None:
        thread = self._listener
        if thread is not None and thread is not threading.current_thread():
            thread.join(self.shutdown_timeout)

    # -- what the fallback policy reads (transports/_factory.py decides) ---------------------------

    @property
    def first_post_refused(self) -> bool:
        """Whether the very first POST, before any session, was answered 400, 404 or 405."""
        return self._first_refused


def _unframed(response: "requests.Response") -> bool:
    """A response with neither a Content-Type, a Content-Length nor a Transfer-Encoding: its headers were cut
    off (the connection ended inside them), not an empty answer a server chose to send."""
    headers = response.headers
    return not any(name in headers for name in ("Content-Type", "Content-Length", "Transfer-Encoding"))


def _error_body(response: "requests.Response") -> bytes:
    try:
        return read_body(response, 64 * 1024, "error body")
    except Exception:  # the status alone is the error
        return b""


def _names_session(body: bytes) -> bool:
    """Whether an error body is about the session (the server lost it, or never had it)."""
    lowered = body[:4096].lower()
    return any(word in lowered for word in _SESSION_WORDS)
