"""Starting a server conversation in either era, and renewing a legacy session the server expired.

:class:`Handshake` settles one :class:`~mcpsync._session.session.Session`: it runs the era
decision of :mod:`mcpsync._session.era` with three steps of its own:

* ``initialize`` (legacy): ask for a version, accept the server's answer, send
  ``notifications/initialized``;
* ``server/discover`` (modern, and the stdio era probe);
* adopt: become modern at a version, described by the DiscoverResult.

Neither ``initialize`` nor ``server/discover`` is ever cancelled on the wire
(``CallOptions(notify_cancel=False)``): the spec forbids cancelling ``initialize``, and
the probe may reach a legacy server that should not get a stray cancellation before
its handshake.

Both carry the calling thread's OpenTelemetry trace context in ``params._meta`` when a
span is active (:mod:`mcpsync._session.tracing`; the 2025-11-25 schema gives
``InitializeRequestParams`` a ``_meta`` like every request's), so a server's
spans for the handshake (and for the era probe, which is ``server/discover``)
join the connecting thread's trace like those of every later request; with an OpenTelemetry
provider set, each is a span of its own, as ``notifications/initialized`` is
(:mod:`mcpsync._session.telemetry`).

Every step of one connect shares one :class:`~mcpsync._rpc.options.Deadline`, so
``connect(timeout=)`` bounds the whole connect, a fallback to another transport
(Streamable HTTP to legacy HTTP+SSE) included.

After a renewal, the callbacks given to :meth:`Handshake.on_renewed` are told (the
client drops its cached lists, then calls the user's ``on_session_renewed`` callbacks,
a Manager's tool refresh among them): a new session may be a restarted server with
other tools, resources and prompts.

Threads: :meth:`Handshake.run` runs on the connecting thread only (the client's
connect lock is held); :meth:`Handshake.renew` under the session's renew lock.
Both block until the server answered, the deadline passed or the connection closed.
"""

from __future__ import annotations

import weakref
from typing import Any, Callable, List, Mapping, Optional

from .._log import getLogger
from .._protocol.methods import INITIALIZE, NOTIFY_INITIALIZED, SERVER_DISCOVER
from .._rpc.jsonrpc import INTERNAL_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, JSONObject
from .._rpc.options import CallOptions, Deadline
from .._protocol.versions import MODERN_VERSIONS, SUPPORTED_VERSIONS
from ..exceptions import HTTPStatusError, MCPError, ProtocolError, RequestTimeout, UnsupportedProtocolVersion
from ..transports._factory import fallback_for
from ..transports.base import Transport
from ..capabilities import ServerCapabilities
from ..types import Implementation
from . import era as _era
from . import meta as _meta
from .errors import UNSUPPORTED_VERSION, version_refused
from .session import Session
from . import telemetry

__all__ = ["Handshake"]

log = getLogger("mcpsync.client")

#: ``restore(options)``: after a renewal, ask the new session for what the old one had.
Restore = Callable[[CallOptions], None]


class Handshake:
    """How one client starts (and restarts) its conversation with the server.

    Args:
        client_info: the ``clientInfo`` of ``initialize``.
    """

    def __init__(self, *, client_info: Mapping[str, Any]) -> None:
        self.client_info = client_info
        self._restore: Optional["weakref.WeakMethod[Restore]"] = None
        self._renewed: List[Callable[[], None]] = []  # on_renewed() callbacks, fixed once built
        self._asked = ""  # the version the last initialize or server/discover asked for (for errors)

    def after_renewal(self, restore: Restore) -> None:
        """Call the bound method ``restore(options)`` after each renewed ``initialize`` (to subscribe
        again, set the log level again...). Held weakly: its object is the caller's to keep."""
        self._restore = weakref.WeakMethod(restore)

    def on_renewed(self, callback: Callable[[], None]) -> None:
        """Call ``callback()`` after each renewal (after ``restore``), in the order given. Wired when the
        client's parts are built, before any thread can renew.

        It runs on the thread that renewed the session, before its request is sent
        again, so it must be quick and must not wait for a request of this client
        (a Manager only schedules its refresh). One that raises is logged.
        """
        self._renewed.append(callback)

    def connect(self, session: Session, prepare: Callable[[Transport], None], protocol: str, probe_timeout: float,
                deadline: Deadline, budget: Optional[float]) -> Deadline:
        """Open ``session.transport`` (``prepare`` wires it first) and :meth:`run`; fall back once if it offers.

        ``deadline`` bounds every step that waits: opening (a legacy SSE ``endpoint``
        event), the era probe, the handshake. A person's login while opening is not
        counted (it has a limit of its own): the deadline moves on by the time it took,
        and the connect's deadline so moved is returned, for the requests that follow it.

        When the connect failed, the transport factory's ``fallback_for`` may offer another
        transport to try (a policy of the client, not of the transport); then
        ``session.transport`` becomes that one, under the same deadline. Every failed transport is closed before the error is raised.
        """
        transport = session.transport
        try:
            prepare(transport)
            transport.open(deadline)
            deadline = _after_login(deadline, transport)
            self.run(session, protocol, probe_timeout, deadline, budget)
            return deadline
        except BaseException as exc:
            alternate = fallback_for(transport, exc) if isinstance(exc, Exception) else None
            transport.close()
            if alternate is None:
                raise
            alternate.timeout = transport.timeout
            session.use(alternate)
            transport = alternate
            try:
                prepare(transport)
                transport.open(deadline)
                deadline = _after_login(deadline, transport)
                self.run(session, protocol, probe_timeout, deadline, budget)
            except BaseException:
                transport.close()
                raise
        return deadline

    def run(self, session: Session, protocol: str, probe_timeout: float, deadline: Deadline,
            budget: Optional[float]) -> None:
        """Find the era, run its handshake and fill in ``session``; every request ends by ``deadline``.

        ``protocol`` is ``"auto"``, ``"modern"``, ``"legacy"`` or an exact version;
        ``probe_timeout`` the longest an ``"auto"`` stdio probe waits; ``budget`` the
        connect's timeout in seconds (what the era rules compare waits against; None for none).

        Raises:
            UnsupportedProtocolVersion, MCPError, RequestTimeout, TransportClosed, ProtocolError,
                HTTPStatusError: the connect failed (the caller closes the transport).
        """
        def options(timeout: Optional[float]) -> CallOptions:
            return CallOptions(timeout=timeout, deadline=deadline, notify_cancel=False)

        transport = session.transport
        negotiation = _era.Negotiation(
            discover=lambda version, timeout: self.discover(session, version, options(timeout)),
            initialize=lambda version, exact, timeout: self.initialize(session, version, exact, options(timeout)),
            adopt=lambda version, result: self.adopt(session, version, result),
            detection=_era.detection_for(transport), key=_era.cache_key(transport), probe_timeout=probe_timeout,
        )
        try:
            negotiation.run(protocol, budget)
        except (MCPError, HTTPStatusError) as exc:
            refusal = _era.http_error(exc)
            if refusal is not None and refusal.code in _LEGACY_REFUSALS and (
                    protocol == _era.MODERN or protocol in MODERN_VERSIONS):
                raise _legacy_server(protocol, refusal) from exc
            if refusal is None or refusal.code != UNSUPPORTED_VERSION:
                raise
            # Every -32022 the era rules did not settle (a forced version, no common version, a
            # refused initialize) means the same to the user: no version both sides speak.
            raise version_refused(refusal, self._asked) from exc
        except RequestTimeout as exc:
            if budget is None or not deadline.expired:
                raise
            # The connect's own deadline ran out, whichever step was waiting: say so with its budget.
            raise RequestTimeout.after(budget, method=exc.method, server=exc.server, hint=exc.hint) from exc

    def initialize(self, session: Session, version: str, exact: bool, options: CallOptions) -> None:
        """The legacy handshake, asking for ``version`` (and only accepting it, when ``exact``)."""
        session.legacy_ask = (version, exact)
        self._asked = version
        session.speak(None)  # no MCP-Protocol-Version header on initialize itself
        params: JSONObject = {"protocolVersion": version, "capabilities": session.responder.capabilities(False),
                              "clientInfo": dict(self.client_info)}
        result = telemetry.request(session, INITIALIZE, params, options)
        self._accept_initialize(session, result, version if exact else None)
        session.speak(str(session.protocol_version))
        telemetry.notify(session, NOTIFY_INITIALIZED)

    def _accept_initialize(self, session: Session, result: Any, exact: Optional[str]) -> None:
        if not isinstance(result, dict):
            raise MCPError(INTERNAL_ERROR, "initialize returned a non-object result")
        version = result.get("protocolVersion")
        if version not in SUPPORTED_VERSIONS or (exact is not None and version != exact):
            raise UnsupportedProtocolVersion(str(version), (exact,) if exact is not None else SUPPORTED_VERSIONS)
        session.protocol_version = version
        session.server_capabilities = ServerCapabilities.from_dict(result.get("capabilities"))
        session.server_info = Implementation.from_dict(result.get("serverInfo") or {})
        instructions = result.get("instructions")
        session.instructions = instructions if isinstance(instructions, str) else None
        session.settle()

    def discover(self, session: Session, version: str, options: CallOptions) -> JSONObject:
        """``server/discover`` at ``version`` (the first modern request, or the stdio probe)."""
        session.speak(version)
        self._asked = version
        params = _meta.with_meta(None, session.request_meta(version, session.responder.capabilities(True)))
        result = telemetry.request(session, SERVER_DISCOVER, params, options)
        if not isinstance(result, dict):
            raise ProtocolError("server/discover returned a non-object result")
        return result

    def adopt(self, session: Session, version: str, result: Optional[JSONObject]) -> None:
        """Become modern at ``version``, described by a DiscoverResult (None: the server gave none)."""
        session.plain_tool_calls = False
        session.protocol_version = version
        session.speak(version)
        if result is None:
            session.capabilities_known = False
            return
        session.server_capabilities = ServerCapabilities.from_dict(result.get("capabilities"))
        meta = result.get("_meta")
        info = meta.get(_meta.SERVER_INFO) if isinstance(meta, dict) else None
        session.server_info = Implementation.from_dict(info if isinstance(info, dict) else {})
        instructions = result.get("instructions")
        session.instructions = instructions if isinstance(instructions, str) else None

    def renew(self, session: Session, options: CallOptions) -> None:
        """A new legacy session after the server expired ours: ``initialize`` again, then restore.

        Runs with the options of the call that found the session expired (its
        timeout and deadline; never cancelled on the wire).
        """
        version, exact = session.legacy_ask
        self.initialize(session, version, exact, CallOptions(timeout=options.timeout, deadline=options.deadline,
                                                             notify_cancel=False))
        restore = self._restore() if self._restore is not None else None
        if restore is not None:
            restore(CallOptions(timeout=options.timeout, deadline=options.deadline))
        for callback in self._renewed:
            try:
                callback()
            except Exception:
                log.exception("[%s] A callback for the renewed session raised", session.name)


def _after_login(deadline: Deadline, transport: Transport) -> Deadline:
    """``deadline``, moved on by the time the transport's open spent in a person's login."""
    spent = transport.login_seconds
    return Deadline(deadline.at + spent) if spent > 0 else deadline


# How a legacy server refuses server/discover, the first modern request: it does not know the method
# (stdio), or (Streamable HTTP) wants an initialize first: "-32000 Server not initialized", or
# "-32600 no session".
_LEGACY_REFUSALS = frozenset({METHOD_NOT_FOUND, INVALID_REQUEST, -32000})


def _legacy_server(protocol: str, refusal: MCPError) -> UnsupportedProtocolVersion:
    """The error for ``protocol="modern"`` (or a modern version) forced on a server that does not
    know ``server/discover``: a legacy server, which ``"auto"`` would have found and spoken to."""
    said = f" ({refusal.message})" if refusal.message else ""
    message = (f"The server does not speak the modern protocol: it refused server/discover with "
               f"{refusal.code}{said}, so it is a legacy-era server; protocol={protocol!r} allows only {', '.join(MODERN_VERSIONS)}. Connect with "
               "protocol='auto' (the default), which finds the server's era by itself, or protocol='legacy'")
    return UnsupportedProtocolVersion("legacy", MODERN_VERSIONS, message)
