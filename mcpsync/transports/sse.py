"""SSETransport: the legacy HTTP+SSE transport of protocol 2024-11-05.

One long GET to the SSE URL carries everything the server sends. Its first
event, ``endpoint``, names the URL every client message is POSTed to; the
POST answers carry nothing (responses arrive on the stream). A reader thread
owns the stream; the caller only parks on its Event. Losing the stream closes
the transport: pending calls fail with ``Transport closed`` and ``on_close``
runs once.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Dict, Optional

from .._log import getLogger
from .._rpc import jsonrpc as rpc
from .._rpc.jsonrpc import JSONObject
from ..exceptions import ConnectError, EgressRefused, HTTPStatusError, RequestTimeout, TransportError
from ._http import HTTPTransportBase
from ._http_io import media_type, not_an_endpoint, read_body, status_error
from ._egress import shown
from ._http_session import Exchange, prepared_url
from ._sse import SSEEvent, SSEParser
from ._urls import display_url

if TYPE_CHECKING:  # pragma: no cover
    import requests

__all__ = ["SSETransport"]

log = getLogger("mcpsync.transport.sse")


class SSETransport(HTTPTransportBase):
    """Speaks the legacy (2024-11-05) HTTP+SSE transport to the SSE endpoint ``url``.

    ::

        with mcpsync.Client(SSETransport("http://localhost:8000/sse")) as client:
            print(client.list_tools())

    Takes the options of :class:`StreamableHTTPTransport` (headers, token,
    auth, verify, cert, proxies, timeouts, max_message_size), plus:

    Args:
        endpoint_timeout: seconds to wait for the ``endpoint`` event on open (a connect's
            timeout, when shorter, ends the wait first, with RequestTimeout).

    The endpoint must be on the SSE URL's origin (scheme, host and port);
    another origin is refused, so no message, and no credential, goes
    anywhere the user did not point the client at.

    Thread safety: see :class:`~mcpsync.transports.Transport`.
    """

    kind = "sse"

    def __init__(self, url: str, *, endpoint_timeout: float = 10.0, **options: Any) -> None:
        super().__init__(url, **options)
        self.endpoint_timeout = endpoint_timeout
        self.endpoint: Optional[str] = None
        self._endpoint_ready = threading.Event()
        self._open_error: Optional[BaseException] = None
        self._reader: Optional[threading.Thread] = None
        self._stream = Exchange("stream")
        #: Set by Streamable HTTP when this transport is its fallback: the error its first POST got.
        self.fallback_from: Optional[HTTPStatusError] = None

    def settings(self) -> Dict[str, Any]:
        """The HTTP settings (see :meth:`HTTPTransportBase.settings`) and the endpoint timeout."""
        return {**super().settings(), "endpoint_timeout": self.endpoint_timeout}

    def _release_inherited(self) -> None:
        super()._release_inherited()
        self._reader = None

    # -- lifecycle -------------------------------------------------------------------------------

    def _open(self) -> None:
        super()._open()
        self._track(self._stream)
        self._reader = threading.Thread(target=self._read, name=f"mcpsync-sse-reader[{self.name}]", daemon=True)
        self._reader.start()
        # The connect's deadline (see open) cuts the wait shorter than endpoint_timeout.
        left = self._open_deadline.remaining()
        arrived = self._endpoint_ready.wait(max(min(self.endpoint_timeout, left), 0.0))
        error = self._open_error
        if arrived and error is None and self.endpoint is not None:
            log.debug("[%s] Endpoint: %s", self.name, display_url(self.endpoint))
            return
        if error is None and left < self.endpoint_timeout:
            error = RequestTimeout(f"Connect timeout: {display_url(self.url)} sent no endpoint event in the "
                                   f"{max(left, 0.0):.3g}s the connect had left: is this an MCP HTTP+SSE endpoint? "
                                   "(A slow one needs a larger connect timeout.)", timeout=max(left, 0.0),
                                   server=self.name)
        elif error is None:
            error = ConnectError(f"No endpoint event from {display_url(self.url)} within "
                                 f"{self.endpoint_timeout:g}s: is this an MCP HTTP+SSE endpoint?")
        self._release_resources()
        if self.fallback_from is not None and isinstance(error, HTTPStatusError):
            raise not_an_endpoint(self.url, self.fallback_from, error) from error
        raise error

    def _join_threads(self) -> None:
        reader = self._reader
        if reader is not None and reader is not threading.current_thread():
            reader.join(self.shutdown_timeout)

    # -- the stream (reader thread) ------------------------------------------------------------

    def _read(self) -> None:
        cause: BaseException = TransportError("the server closed the SSE stream")
        try:
            self._consume()
        except BaseException as exc:
            cause = self._translated(exc)
        if not self._endpoint_ready.is_set():
            self._open_error = cause
            self._endpoint_ready.set()
            return
        if self._stop.is_set():
            return
        log.info("[%s] SSE stream lost: %s", self.name, cause)
        self._lost(cause)

    def _consume(self) -> None:
        session = self._session
        if session is None:
            return
        headers = {"Accept": "text/event-stream", **self.headers}
        # Connecting, too, ends by the connect's deadline.
        connect = max(min(self.connect_timeout, self._open_deadline.remaining()), 0.001)
        with self._stream.running():
            response = session.get(self.url, headers=headers, stream=True, timeout=(connect, None))
        try:
            if not 200 <= response.status_code < 300:
                raise status_error(response, first="GET" if self.fallback_from is None else "")
            if media_type(response) != "text/event-stream":
                raise ConnectError(f"{display_url(self.url)} answered with Content-Type "
                                   f"{media_type(response)!r}, not an event stream")
            self._feed_stream(response, SSEParser(self.max_message_size), "SSE data from the server",
                              on_other=self._on_event)
        finally:
            self._stream.release()
            response.close()

    def _on_event(self, event: SSEEvent) -> None:
        """A non-``message`` event: the first ``endpoint`` names where to POST; others are skipped."""
        if event.event != "endpoint":
            self._skip_event(event)
        elif self.endpoint is None:
            self._accept_endpoint(event.data)

    def _accept_endpoint(self, data: bytes) -> None:
        """Check the ``endpoint`` event's URI and make it where every message goes.

        A relative reference or an absolute URL on the SSE URL's origin is
        accepted, as this connection's egress gate (:mod:`._egress`) reads it: a
        backslash, userinfo, whitespace or a control character is refused outright
        (no honest server needs them, and they are where URL parsers disagree),
        and so is another origin. The URL kept is the one requests will send
        (:func:`._http_session.prepared_url`); the gate checks every POST to it again.

        Raises:
            ConnectError: the endpoint is refused (the open fails with it, chained from
                the gate's :class:`~mcpsync.exceptions.EgressRefused`).
        """
        text = data.decode("utf-8", errors="replace").strip()
        what = f"Refusing the endpoint {shown(text)} from {display_url(self.url)}"  # never its query (a session id)
        try:
            resolved = prepared_url(self._gate.check_reference(self.url, text, "the endpoint"))
            self._gate.check("POST", resolved)
        except EgressRefused as exc:
            reason = "it is on another origin" if exc.rule == "origin" else "it is not a plain URL on this origin"
            raise ConnectError(f"{what}: {reason}. {exc}") from exc
        except ValueError as exc:
            raise ConnectError(f"{what}: requests cannot send to it (no host, a bad port or scheme); a server "
                               "should send a path such as '/messages?session_id=...'") from exc
        self.endpoint = resolved
        self._endpoint_ready.set()

    # -- writing -------------------------------------------------------------------------------

    def _post(self, message: JSONObject, exchange: Exchange) -> "requests.Response":
        session, endpoint = self._session, self.endpoint
        if session is None or endpoint is None:
            raise self._engine.closed_error()
        headers: Dict[str, str] = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
                                   **self.headers}
        with exchange.running():
            return session.post(endpoint, data=rpc.encode(message), headers=headers, stream=True,
                                timeout=(self.connect_timeout, None))

    def _post_message(self, message: JSONObject, exchange: Exchange) -> None:
        response = self._post(message, exchange)
        try:
            if not 200 <= response.status_code < 300:
                raise status_error(response)
            try:
                read_body(response, self.max_message_size, "The answer to a POST")
            except Exception:  # the answer travels on the stream; this body is only an acknowledgement
                pass
        finally:
            exchange.release()
            response.close()

    def _request_exchange(self, message: JSONObject, exchange: Exchange) -> None:
        try:
            self._post_message(message, exchange)  # the response arrives on the stream
        except BaseException as exc:
            self._post_failed(message["id"], exc)
            raise
