"""One server conversation: what the handshake settled, and the era-aware call pipeline.

A :class:`Session` holds the negotiated state (protocol version, the server's
capabilities, info and instructions) and owns the JSON-RPC engine of its connection: it
builds it from what the transport offers (:func:`engine_for`) and hands it to the transport
as the receiver of what it reads. It sends every request in the era in use:

* legacy: the request goes out as given; when an HTTP server says our session
  expired, the session is renewed once (a new ``initialize``) and the request sent again;
* modern (2026-07-28): the reserved ``_meta`` (version, client capabilities, client
  info, log level) is added, an ``input_required`` result is answered with the
  client's handlers and the request retried, and the ``resultType`` is checked.

Either way an error with a type of its own is raised as that type (see
:func:`~mcpsync._session.errors.typed`). The call's :class:`~mcpsync._rpc.options.CallOptions`
travel whole to ``Transport.request``.

:class:`SessionHandle` is the narrow part of a Session that :class:`~mcpsync.Task` and
:class:`~mcpsync.Subscription` hold: they never see the :class:`~mcpsync.Client`.

Threads: :meth:`Session.call` may run on any number of threads at once; it blocks
its own thread until the answer, the timeout, the cancel token or the end of the
connection. The negotiated state is written only while connecting (one thread,
under the client's connect lock) and when a session is renewed (under the renew lock).
"""

from __future__ import annotations

import threading
import time
from typing import Any, Callable, Mapping, Optional, Protocol, Tuple

from .._log import getLogger
from .._protocol.methods import RESOURCES_READ, TOOLS_CALL
from .._rpc.engine import Engine
from .._rpc.jsonrpc import JSONObject
from .._rpc.options import DEFAULT_OPTIONS, CallOptions, ProgressCallback
from .._rpc import delivery
from .._protocol.versions import LATEST_LEGACY_VERSION, is_modern
from ..cancel import CancelToken
from ..exceptions import CapabilityError, MCPError, ProtocolError, SessionExpired, StreamBroken, TransportClosed
from .responder import Responder
from ..transports.base import Transport
from ..capabilities import ServerCapabilities
from ..types import Implementation
from . import meta as _meta
from . import mrtr as _mrtr
from .callbacks import PROGRESS_SIGNATURE, check_callback
from .errors import UNSUPPORTED_VERSION, typed, version_refused
from .resend import send_again
from .routing import RoutingHeaders
from . import telemetry as _telemetry

__all__ = ["Session", "SessionHandle", "call_options", "engine_for"]

log = getLogger("mcpsync.client")

#: ``renew(session, options)``: start a new legacy session after the server expired ours.
Renew = Callable[["Session", CallOptions], None]


def call_options(timeout: Optional[float], cancel: Optional[CancelToken],
                 on_progress: Optional[ProgressCallback] = None, reset_timeout_on_progress: bool = False,
                 max_total_timeout: Optional[float] = None) -> CallOptions:
    """The options of one public call; the shared ``DEFAULT_OPTIONS`` when it sets none (nothing built).

    Raises:
        TypeError: ``on_progress`` cannot be called as ``on_progress(progress, total, message)``.
    """
    if timeout is None and cancel is None and on_progress is None and max_total_timeout is None \
            and not reset_timeout_on_progress:
        return DEFAULT_OPTIONS
    if on_progress is not None:  # a wrong signature fails here, not silently on the dispatcher thread
        check_callback(on_progress, "on_progress", PROGRESS_SIGNATURE)
    return CallOptions(timeout, cancel, on_progress, reset_timeout_on_progress, max_total_timeout)


class SessionHandle(Protocol):
    """What a task handle or a subscription needs of its server conversation, and no more."""

    @property
    def name(self) -> str:
        """The server's label."""

    @property
    def modern(self) -> bool:
        """True in the 2026-07-28 era."""

    @property
    def connected(self) -> bool:
        """True after the handshake, until the connection closes."""

    @property
    def default_timeout(self) -> Optional[float]:
        """The per-request timeout a call with ``timeout=None`` gets, in seconds."""

    def call(self, method: str, params: Optional[JSONObject] = None, options: CallOptions = DEFAULT_OPTIONS, *,
             extension: Optional[str] = None) -> Any:
        """One request in the era in use (see :meth:`Session.call`)."""

    def answer(self, method: str, params: Optional[JSONObject]) -> JSONObject:
        """Run the client's handler for one server request for input; return the wire answer."""


class Session:
    """The state and the call pipeline of one client's conversation with its server.

    Args:
        transport: the connection (replaced once if connecting falls back to another transport).
        responder: answers the server's requests for input with the client's handlers.
        client_info: the ``clientInfo`` of modern requests (None: leave it out).
        max_input_rounds: how many ``input_required`` rounds one modern call may take.
        log_level: the log level modern requests ask for (None: the server's default).
        renew: starts a new legacy session (see :mod:`mcpsync._session.handshake`).
    """

    def __init__(self, transport: Transport, responder: Responder, *, client_info: Optional[Mapping[str, Any]],
                 max_input_rounds: int, log_level: Optional[str], renew: Renew, send_baggage: bool = False,
                 telemetry: bool = True) -> None:
        self.transport = transport
        #: The JSON-RPC engine of the connection: the session's, fed by :attr:`transport`.
        self.engine = engine_for(transport)
        #: Whether OpenTelemetry baggage goes into requests' ``_meta`` (trace context always does).
        self.send_baggage = send_baggage
        #: Whether requests are OpenTelemetry spans and durations when a provider is set
        #: (see :mod:`mcpsync._session.telemetry`).
        self.telemetry = telemetry
        #: When the current connect began (monotonic seconds), for ``mcp.client.session.duration``.
        self.connect_started: Optional[float] = None
        self.responder = responder
        self.client_info = client_info
        self.max_input_rounds = max_input_rounds
        self.log_level = log_level
        self._renew = renew
        self.protocol_version: Optional[str] = None
        self.server_info: Optional[Implementation] = None
        self.server_capabilities = ServerCapabilities()
        self.instructions: Optional[str] = None
        self.capabilities_known = True  # False for a modern server that would not describe itself
        self.legacy_ask: Tuple[str, bool] = (LATEST_LEGACY_VERSION, False)  # (version, exact) of initialize
        self.ready = False  # the handshake (or server/discover) succeeded
        self.closed = False
        # Worked out once per handshake (see settle()), so no call checks them again.
        self.plain_tool_calls = False  # legacy, tools offered, no tool tasks: call_tool's fast path
        self.header_routing = False  # modern Streamable HTTP: tools' x-mcp-header values go into headers
        #: The routing headers of modern requests, handed to the transport as a header provider.
        self.routing = RoutingHeaders()
        self._renew_lock = threading.Lock()
        self._generation = 0
        #: Run by the first call on a session not yet connected, instead of raising "not connected":
        #: set for a client unpickled or inherited across fork (it connects, or raises ForkedError).
        self.first_use: Optional[Callable[[], None]] = None

    def use(self, transport: Transport) -> None:
        """Go on over ``transport`` (a failed connect's fallback), with an engine of its own."""
        self.transport = transport
        self.engine = engine_for(transport)

    def speak(self, version: Optional[str]) -> None:
        """The version in use (None before one is chosen), as the session decides it for the connection.

        The transport is told (HTTP sends it as a header, and reads errors and cancels the
        modern way), and given the modern era's routing headers as plain data (a header
        provider, see :mod:`mcpsync._session.routing`). And the era decides, on the engine, whether the server's requests are
        answered: the 2026-07-28 era has none, and a client must not write responses in it.
        This is the one place that rule is applied.
        """
        modern = is_modern(version)
        self.transport.set_protocol_version(version)
        self.transport.set_request_headers(self.routing if modern else None)
        self.engine.incoming.set_answering(not modern)

    # -- the narrow interface (SessionHandle) ----------------------------------------------------

    @property
    def name(self) -> str:
        return self.transport.name

    @property
    def modern(self) -> bool:
        return is_modern(self.protocol_version)

    @property
    def connected(self) -> bool:
        return self.ready and not self.closed and self.transport.connected

    @property
    def default_timeout(self) -> Optional[float]:
        return self.transport.timeout

    def answer(self, method: str, params: Optional[JSONObject]) -> JSONObject:
        return self.responder.answer(method, params)

    def call(self, method: str, params: Optional[JSONObject] = None, options: CallOptions = DEFAULT_OPTIONS, *,
             extension: Optional[str] = None) -> Any:
        """Send one request in the era in use and return its result.

        ``extension`` is declared in a modern request's client capabilities (the
        tasks extension, for ``tasks/*`` and task-backed tool calls).

        Raises:
            TransportClosed: not connected (or the connection went away).
            MCPError (or its typed subclass), RequestTimeout, RequestCancelled: as ``Transport.request``.
            ProtocolError: a modern server answered with a result type that is not valid here.
        """
        if not self.ready:
            self._first_use()
        if self.modern:
            return self._modern_call(method, params, extension, options)
        return self.legacy_call(method, params, options)

    def _first_use(self) -> None:
        """A call before the session is connected: run :attr:`first_use` (which connects it or raises),
        or raise "not connected"."""
        first_use = self.first_use
        if first_use is None or self.closed:
            raise TransportClosed("Transport closed: client not connected (call connect() or use 'with')")
        first_use()
        if not self.ready:
            raise TransportClosed("Transport closed: client not connected (call connect() or use 'with')")

    # -- the pipeline ----------------------------------------------------------------------------

    def legacy_call(self, method: str, params: Optional[JSONObject], options: CallOptions) -> Any:
        """A request in a legacy session: renewed once if the server expired it (HTTP)."""
        generation = self._generation
        try:
            return self._send(method, params, options)
        except SessionExpired as exc:
            if not delivery.may_resend(exc):
                raise  # a stream of a request the server took, whose resume found the session gone
            # The transport already dropped the stale session id: start a new session, retry once.
            self._renew_once(generation, options)
        return self._send(method, params, options)

    def _send(self, method: str, params: Optional[JSONObject], options: CallOptions) -> Any:
        """``transport.request``, with the errors that have a type of their own raised as that type.

        The calling thread's OpenTelemetry trace context, when one is active, goes into ``_meta``
        (its baggage too, when :attr:`send_baggage`); with a provider set, the request is a span
        of its own (:mod:`mcpsync._session.telemetry`).
        """
        try:
            return _telemetry.request(self, method, params, options)
        except MCPError as exc:
            if exc.code == UNSUPPORTED_VERSION:  # the server no longer speaks the version in use
                raise version_refused(exc, str(self.protocol_version)) from exc
            error = typed(exc)
            if error is exc:
                raise
            raise error from exc

    def read_resource(self, uri: str, options: CallOptions) -> Any:
        """``resources/read`` of ``uri``, its raw result; an unknown resource raised as ResourceNotFound.

        Raises:
            ResourceNotFound: ``-32002`` or ``-32602``, in every era.
            and as :meth:`call`.
        """
        try:
            return self.call(RESOURCES_READ, {"uri": uri}, options)
        except MCPError as exc:
            error = typed(exc, resource_read=True, modern=self.modern)
            if error is exc:
                raise
            raise error from exc

    def _modern_call(self, method: str, params: Optional[JSONObject], extension: Optional[str],
                     options: CallOptions) -> Any:
        """A 2026-07-28 request: ``_meta`` added, ``input_required`` answered, ``resultType`` checked."""
        capabilities = self.responder.capabilities(True)
        if extension is not None:
            capabilities = _meta.with_extension(capabilities, extension)
        assert self.protocol_version is not None
        sent = _meta.with_meta(params, self.request_meta(self.protocol_version, capabilities))
        result = self._send_modern(method, sent, options)
        if _mrtr.result_type(result) == _mrtr.INPUT_REQUIRED and method in _mrtr.METHODS:
            result = _mrtr.complete(method, sent, result, lambda retry: self._send_modern(method, retry, options),
                                    self.responder.answer, self.max_input_rounds)
        if self.server_info is None:  # a server that would not describe itself still signs its results
            info = _meta.server_info(result)
            self.server_info = Implementation.from_dict(info) if info is not None else None
        kind = _mrtr.result_type(result)
        if kind == _mrtr.COMPLETE or (kind == _mrtr.TASK and method == TOOLS_CALL
                                      and extension == _meta.TASKS_EXTENSION):
            return result
        if kind in (_mrtr.INPUT_REQUIRED, _mrtr.TASK):
            raise ProtocolError(f"{method}: the server answered with resultType {kind!r}, which is not valid here")
        raise ProtocolError(f"{method}: the server answered with resultType {kind!r}, which this client does not "
                            "know: an invalid result")

    def _send_modern(self, method: str, params: JSONObject, options: CallOptions) -> Any:
        """:meth:`_send`; a request whose response stream broke is sent once more, with a new id
        (2026-07-28 streams cannot be resumed; see :mod:`mcpsync._session.resend`)."""
        started = time.monotonic()
        try:
            return self._send(method, params, options)
        except StreamBroken as exc:
            if not delivery.may_resend(exc):
                raise
            return send_again(lambda again: self._send(method, params, again), method, options, started,
                              self.default_timeout, exc, self.name)

    def _renew_once(self, generation: int, options: CallOptions) -> None:
        """The server dropped our session: one thread renews it, the others wait and then retry."""
        with self._renew_lock:
            if self._generation != generation:
                return  # another thread already renewed it
            log.info("[%s] Session expired; starting a new one", self.name)
            self._renew(self, options)
            self._generation += 1

    # -- negotiated state ------------------------------------------------------------------------

    def request_meta(self, version: str, capabilities: Mapping[str, Any]) -> JSONObject:
        """The reserved ``_meta`` of a modern request at ``version`` declaring ``capabilities``."""
        return _meta.request_meta(version, capabilities, self.client_info, self.log_level)

    def settle(self, connected: Optional[bool] = None) -> None:
        """Work out once per handshake what every call would otherwise check again.

        ``connected`` (default: :attr:`ready`) says whether calls may take the fast path
        yet; the connect settles with True just before it sets ``ready``, so a thread that
        sees ``ready`` also sees the settled values.
        """
        modern = self.modern
        live = self.ready if connected is None else connected
        capabilities = self.server_capabilities
        self.plain_tool_calls = (live and not modern and capabilities.tools is not None
                                 and not (capabilities.tasks is not None and capabilities.tasks.tool_calls))
        self.header_routing = modern and takes_header_plans(self.transport)

    def announces(self, kind: str) -> bool:
        """Whether the server sends ``list_changed`` for ``kind`` (assumed, when it would not say)."""
        offered = self.server_capabilities.get(kind)
        return not self.capabilities_known or (isinstance(offered, dict) and bool(offered.get("listChanged")))

    def require(self, capability: str, sub: Optional[str] = None, what: str = "") -> None:
        """Raise unless connected to a server that offers ``capability`` (and its ``sub`` feature).

        Raises:
            TransportClosed: not connected.
            CapabilityError: the server does not offer it (never raised for a server that would not say).
        """
        if not self.ready:
            self._first_use()
        if not self.capabilities_known:
            return  # a modern server that would not describe itself: let it answer for itself
        offered = self.server_capabilities.get(capability)
        if offered is None or (sub is not None and not (isinstance(offered, dict) and offered.get(sub))):
            needed = f"{capability}.{sub}" if sub else capability
            raise CapabilityError(f"Server {self.name!r} does not offer {needed!r}; cannot {what}")

    def require_extension(self, extension: str, what: str = "") -> None:
        """Raise unless connected to a server that declares ``extension`` in ``capabilities.extensions``.

        Either era: a legacy server declares extensions in its ``initialize`` result, a modern one
        in ``server/discover``.

        Raises:
            TransportClosed: not connected.
            CapabilityError: the server does not declare it (never raised for a server that would not say).
        """
        if not self.ready:
            raise TransportClosed("Transport closed: client not connected (call connect() or use 'with')")
        if self.capabilities_known and extension not in self.server_capabilities.extensions:
            raise CapabilityError(f"Server {self.name!r} does not declare the {extension!r} extension; cannot {what}")


# The transports that copy tool arguments into ``Mcp-Param-*`` headers (the header provider
# ``set_request_headers`` gives them is honoured): Streamable HTTP, in the 2026-07-28 era.
_HEADER_ROUTING_KINDS = frozenset({"streamable-http"})


def takes_header_plans(transport: Any) -> bool:
    """Whether ``transport`` sends tool arguments as ``Mcp-Param-*`` headers (by its kind: the session decides;
    a stand-in for another transport, a cassette's replay, says so as ``routes_tool_headers``)."""
    declared = getattr(transport, "routes_tool_headers", None)
    if isinstance(declared, bool):
        return declared
    return getattr(transport, "kind", "") in _HEADER_ROUTING_KINDS


def engine_for(transport: Transport) -> Engine:
    """The engine of a session over ``transport``: built here from what the transport offers (its
    wire, notification sink and timeout hint, each holding it weakly) and attached to it as the
    receiver of every message it reads. A transport that already feeds an engine (one driven on its
    own before a client took it) keeps it, and that one is returned."""
    current = transport.engine
    if current is not None:
        return current
    return transport.attach(Engine(transport.wire, name=transport.name, default_timeout=transport.timeout,
                                   max_workers=transport.max_workers, on_notification=transport.notification_sink,
                                   hint=transport.hint_source))
