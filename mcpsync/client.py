"""Client: one MCP server behind blocking, typed methods.

The client knows MCP (the handshake, method names, capabilities, results);
it never touches a thread, a pipe or a socket: that is the transport's job.
"""

from __future__ import annotations

import logging
import threading
import weakref
from typing import (
    Any, Callable, Dict, Iterator, List, Literal, Mapping, Optional, Sequence, Set, Tuple, Type, TypeVar,
    Union, cast, overload,
)

from ._session import era as _era
from ._rpc import jsonrpc as rpc
from ._session import meta as _meta
from ._session import mrtr as _mrtr
from ._rpc.options import ProgressCallback
from .transports._headers import HeaderPlan, screen_tools
from ._rpc.jsonrpc import JSONObject, RequestId
from ._session.listcache import ListCache, credential_of
from ._session.pagination import paginate
from ._version import __version__
from ._versions import LATEST_LEGACY_VERSION, SUPPORTED_VERSIONS, at_least, is_modern
from .cancel import CancelToken
from .exceptions import (
    CapabilityError, MCPError, MCPSyncError, MissingClientCapability, ProtocolError, ResourceNotFound,
    SessionExpired, TransportClosed, UnsupportedProtocolVersion, URLElicitationRequired,
)
from .handlers import LogMessage, Responder, RootsSource
from .subscriptions import LIST_CHANGED_FLAGS, Subscription, Subscriptions, UpdateCallback
from .tasks import Task, TaskInfo, infos, offers_tool_tasks, parse_created
from .transports import StdioTransport, Transport, create_transport
from .transports.base import close_unclosed, safe_name
from .types import (
    CallToolResult, CompleteResult, GetPromptResult, Implementation, MCPObject, Prompt, PromptList,
    ReadResourceResult, Resource, ResourceList, ResourceTemplate, Tool, ToolList,
)

__all__ = ["Client", "connect"]

log = logging.getLogger("mcpsync.client")

Handler = Callable[[Any], Any]
NotificationHandler = Callable[[Optional[JSONObject]], None]
O = TypeVar("O", bound=MCPObject)

# RFC 5424 levels used by notifications/message, mapped onto Python logging.
_LOG_LEVELS = {
    "debug": logging.DEBUG, "info": logging.INFO, "notice": logging.INFO, "warning": logging.WARNING,
    "error": logging.ERROR, "critical": logging.CRITICAL, "alert": logging.CRITICAL,
    "emergency": logging.CRITICAL,
}
_LIST_CHANGED = {
    "notifications/tools/list_changed": "tools",
    "notifications/resources/list_changed": "resources",
    "notifications/prompts/list_changed": "prompts",
}

_RICH_LISTS: Dict[str, Callable[[List[Any]], List[Any]]] = {
    "tools": ToolList, "resources": ResourceList, "prompts": PromptList,
}

# Errors with a typed exception of their own (whatever the request).
_TYPED_ERRORS: Dict[int, Type[MCPError]] = {-32021: MissingClientCapability, -32042: URLElicitationRequired}
_RESOURCE_NOT_FOUND = -32002
_HEADER_MISMATCH = -32020

_TRANSPORT_OPTIONS = {"env", "cwd", "inherit_env", "name", "timeout", "max_message_size",
                      "shutdown_timeout", "max_workers",
                      # HTTP transports
                      "headers", "token", "auth", "verify", "cert", "proxies", "trust_env", "connect_timeout",
                      "endpoint_timeout", "legacy_fallback", "resume_delay", "pool_size"}


class Client:
    """A blocking MCP client for one server.

    ::

        with mcpsync.connect(["python", "server.py"]) as client:
            for tool in client.list_tools():
                print(tool.name)
            print(client.call_tool("echo", {"text": "hi"}).text)

    Args:
        transport: an unopened (or open) transport.
        protocol: ``"auto"`` (the default: find out each server's era: a
            ``server/discover`` probe on stdio, the modern request first over
            HTTP), ``"modern"`` (2026-07-28, no handshake), ``"legacy"`` (the
            ``initialize`` handshake) or an exact version.
        probe_timeout: seconds an ``"auto"`` stdio probe waits for an answer
            (a legacy server that never answers unknown requests costs this once
            per process; ``protocol="legacy"`` skips it).
        roots: the roots offered to the server (paths, ``file://`` URIs or
            ``{"uri", "name"}`` dicts), or a callable returning them.
        sampling_handler: ``fn(CreateMessageParams) -> CreateMessageResult`` (or
            its wire dict) answering ``sampling/createMessage``; raise
            :class:`~mcpsync.SamplingRejected` to refuse.
        sampling_tools: the sampling handler can run tool loops (declares ``sampling.tools``).
        elicitation_handler: ``fn(ElicitParams) -> ElicitResult`` (or its wire
            dict) answering ``elicitation/create``.
        elicitation_modes: the elicitation modes the handler supports
            (``("form",)`` by default; add ``"url"`` to be handed URL-mode requests).
        logging_handler: ``fn(LogMessage)`` for ``notifications/message``; by default
            those go to the logger ``mcpsync.server.<name>``.
        log_level: ask for log messages at this level and above from the start.
        client_info: overrides for ``clientInfo`` (``name``, ``version``, ``title``).
        send_client_info: send ``clientInfo`` on every modern request (the default).
        tasks: declare the 2026-07-28 tasks extension on every tool call, so the
            server may run any call as a task (waited for transparently).
        max_input_rounds: how many ``input_required`` rounds one call may take.
        timeout: default per-request timeout in seconds (the transport's otherwise).

    Handlers run on worker threads, never on the reader thread, and may call
    the client; the same handlers serve legacy servers' requests and modern
    servers' ``input_required`` results. Every capability is advertised only
    when its handler is given.

    Thread safety: every method may be called from any number of threads at
    once; each call blocks its own thread only.
    """

    def __init__(
        self,
        transport: Transport,
        *,
        protocol: str = "auto",
        probe_timeout: float = _era.DEFAULT_PROBE_TIMEOUT,
        roots: Optional[RootsSource] = None,
        sampling_handler: Optional[Handler] = None,
        sampling_tools: bool = False,
        elicitation_handler: Optional[Handler] = None,
        elicitation_modes: Sequence[str] = ("form",),
        logging_handler: Optional[Callable[[LogMessage], None]] = None,
        log_level: Optional[str] = None,
        client_info: Optional[Mapping[str, Any]] = None,
        send_client_info: bool = True,
        tasks: bool = False,
        max_input_rounds: int = _mrtr.DEFAULT_MAX_ROUNDS,
        timeout: Optional[float] = None,
    ) -> None:
        self.transport = transport
        if timeout is not None:
            transport.timeout = timeout
        if log_level is not None and log_level not in _LOG_LEVELS:
            raise ValueError(f"Unknown log level {log_level!r}; expected one of {', '.join(_LOG_LEVELS)}")
        self.protocol = _era.check_protocol(protocol)
        self.probe_timeout = probe_timeout
        self.roots = roots
        self.sampling_handler = sampling_handler
        self.sampling_tools = sampling_tools
        self.elicitation_handler = elicitation_handler
        self.elicitation_modes = tuple(elicitation_modes)
        self.logging_handler = logging_handler
        self.client_info: Dict[str, Any] = {"name": "mcpsync", "version": __version__, **(client_info or {})}
        self.send_client_info = send_client_info
        self.tasks = tasks
        self.max_input_rounds = max_input_rounds
        self.protocol_version: Optional[str] = None
        self.server_info: Optional[Implementation] = None
        self.server_capabilities: Dict[str, Any] = {}
        self.instructions: Optional[str] = None
        self.server_log = logging.getLogger(f"mcpsync.server.{safe_name(transport.name)}")
        self._handlers: Dict[str, List[NotificationHandler]] = {}
        self._cache = ListCache()
        # Helpers reach the client through a proxy: a client nobody holds must stay collectable at once.
        me = cast("Client", weakref.proxy(self))
        self._responder = Responder(me)
        self._subs = Subscriptions(me)
        self._capabilities_known = True  # False for a modern server that would not describe itself
        self._legacy_ask: Tuple[str, bool] = (LATEST_LEGACY_VERSION, False)  # (version, exact) for initialize
        self._tool_defs: Dict[str, JSONObject] = {}
        self._header_plans: Optional[Dict[str, HeaderPlan]] = None  # None until the tools were listed
        self._listened: Dict[str, Subscription] = {}  # modern subscribe_resource() streams
        self._connected = False
        self._closed = False
        self._plain_tool_calls = False  # legacy, tools offered, no tool tasks: see _note_session()
        # What a new session must restore (HTTP session expiry).
        self._renew_lock = threading.Lock()
        self._session_generation = 0
        self._listening = False
        self._subscriptions: Set[str] = set()
        self._log_level: Optional[str] = log_level

    def __repr__(self) -> str:
        state = "connected" if self.connected else ("closed" if self._closed else "not connected")
        server = f" server={self.server_info.name!r}" if self.server_info else ""
        return f"<Client {self.name!r}{server} {state}>"

    def __enter__(self) -> "Client":
        if not self._connected:
            self.connect()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def __del__(self) -> None:
        if getattr(self, "_connected", False) and not getattr(self, "_closed", True):
            close_unclosed(self)

    @property
    def name(self) -> str:
        """The server's label (from the config or the command)."""
        return self.transport.name

    @property
    def connected(self) -> bool:
        """True after a successful handshake (or ``server/discover``), until the connection closes."""
        return self._connected and not self._closed and self.transport.connected

    @property
    def modern(self) -> bool:
        """True when the server speaks a modern (2026-07-28) version: no handshake, ``_meta`` on every request."""
        return is_modern(self.protocol_version)

    @property
    def era(self) -> Optional[str]:
        """``"modern"`` or ``"legacy"`` once connected (None before)."""
        return _era.era_of(self.protocol_version)

    # -- lifecycle ------------------------------------------------------------------

    def connect(self, *, timeout: Optional[float] = None) -> "Client":
        """Open the transport, settle the protocol version, and learn about the server; returns self.

        With ``protocol="auto"`` the client finds out which era the server
        speaks (see the class docs); a legacy server then gets the ``initialize``
        handshake, a modern one ``server/discover``. Either way
        ``protocol_version``, ``server_info``, ``server_capabilities`` and
        ``instructions`` are set afterwards.

        Raises:
            ConnectError: the server could not be started or reached.
            TransportClosed: the server went away during the handshake (the
                message carries its exit status and last stderr lines).
            UnsupportedProtocolVersion: the server speaks no version we speak.
            RequestTimeout: the server did not answer in time.
            MCPError: the server refused ``initialize`` or ``server/discover``.
        In every failure case the transport is closed before the error is raised.
        """
        if self._closed:
            raise TransportClosed("Transport closed: this client was closed; make a new one")
        if self._connected:
            return self
        transport = self.transport
        try:
            self._open(transport)
            self._negotiate(transport, timeout)
        except BaseException as exc:
            # A transport may offer another to try (Streamable HTTP -> legacy HTTP+SSE).
            alternate = transport.fallback_for(exc) if isinstance(exc, Exception) else None
            transport.close()
            if alternate is None:
                raise
            alternate.timeout = transport.timeout
            self.transport = transport = alternate
            try:
                self._open(transport)
                self._negotiate(transport, timeout)
            except BaseException:
                transport.close()
                raise
        self._connected = True
        self._note_session()
        self._after_connect(timeout)
        return self

    def _note_session(self) -> None:
        """Work out once per handshake what every call would otherwise check again."""
        capabilities = self.server_capabilities
        self._plain_tool_calls = (self._connected and not self.modern and "tools" in capabilities
                                  and not offers_tool_tasks(capabilities))

    def _open(self, transport: Transport) -> None:
        me = weakref.ref(self)
        transport.set_inline_handler("ping", lambda _params: {})
        transport.set_request_handler(_weakly(me, "_handle_server_request"))
        transport.add_notification_listener(_weakly(me, "_handle_notification"))
        transport.set_notification_hook(_weakly(me, "_invalidate_on_notification"))
        transport.open()

    def _negotiate(self, transport: Transport, timeout: Optional[float]) -> None:
        _era.Negotiation(
            discover=self._discover, initialize=self._initialize, adopt=self._adopt,
            detection=transport.era_detection, key=_era.cache_key(transport), probe_timeout=self.probe_timeout,
        ).run(self.protocol, timeout)

    def _after_connect(self, timeout: Optional[float]) -> None:
        if self.modern:
            methods = set(self._handlers) & set(LIST_CHANGED_FLAGS)
            if methods:
                self._listen_for_list_changes(methods, timeout)
            return
        if self._wants_listener():
            self._start_listener()
        if self._log_level is not None and "logging" in self.server_capabilities:
            try:
                self.transport.request("logging/setLevel", {"level": self._log_level}, timeout=timeout)
            except MCPSyncError as exc:  # the connection is fine; only the log level did not take
                log.warning("[%s] Could not set the log level to %r: %s", self.name, self._log_level, exc)

    def _initialize(self, version: str, exact: bool, timeout: Optional[float]) -> None:
        """The legacy handshake, asking for ``version`` (and only accepting it, when ``exact``)."""
        transport = self.transport
        self._legacy_ask = (version, exact)
        transport.set_protocol_version(None)  # no MCP-Protocol-Version header on initialize itself
        result = transport.request("initialize", self._initialize_params(version), timeout=timeout)
        self._accept_initialize(result, version if exact else None)
        transport.set_protocol_version(str(self.protocol_version))
        transport.notify("notifications/initialized")

    def _discover(self, version: str, timeout: Optional[float]) -> JSONObject:
        """``server/discover`` at ``version`` (the first modern request, or the stdio probe)."""
        self.transport.set_protocol_version(version)
        params = _meta.with_meta(None, self._request_meta(version, self._capabilities(True)))
        result = self.transport.request("server/discover", params, timeout=timeout)
        if not isinstance(result, dict):
            raise ProtocolError("server/discover returned a non-object result")
        return result

    def _adopt(self, version: str, result: Optional[JSONObject]) -> None:
        """Become modern at ``version``, described by a DiscoverResult (None: the server gave none)."""
        self._plain_tool_calls = False
        self.protocol_version = version
        self.transport.set_protocol_version(version)
        if result is None:
            self._capabilities_known = False
            return
        capabilities = result.get("capabilities")
        self.server_capabilities = capabilities if isinstance(capabilities, dict) else {}
        meta = result.get("_meta")
        info = meta.get(_meta.SERVER_INFO) if isinstance(meta, dict) else None
        self.server_info = Implementation.from_dict(info if isinstance(info, dict) else {})
        instructions = result.get("instructions")
        self.instructions = instructions if isinstance(instructions, str) else None

    def _wants_listener(self) -> bool:
        """Whether server-initiated messages have anywhere to go (then HTTP opens its GET stream)."""
        if (self._handlers or self.sampling_handler or self.elicitation_handler or self.roots is not None
                or self.logging_handler or self.transport.on_notification):
            return True
        # Cached lists rely on list_changed notifications to stay fresh.
        return any(isinstance(self.server_capabilities.get(kind), dict)
                   and self.server_capabilities[kind].get("listChanged") for kind in ("tools", "resources", "prompts"))

    def _start_listener(self) -> None:
        if self.modern:
            return  # 2026-07-28 has no GET stream: subscriptions/listen instead
        self._listening = True
        self.transport.start_listener()  # a no-op on transports that need no extra channel

    def _listen_for_list_changes(self, methods: Set[str], timeout: Optional[float]) -> None:
        """Modern: a subscriptions/listen stream for the list_changed kinds the server can announce."""
        wanted = {m for m in methods if m in LIST_CHANGED_FLAGS and self._announces(_LIST_CHANGED[m])}
        if wanted:
            self._subs.listen_for_list_changes(wanted, timeout if timeout is not None else self.transport.timeout)

    def _announces(self, kind: str) -> bool:
        offered = self.server_capabilities.get(kind)
        return not self._capabilities_known or (isinstance(offered, dict) and bool(offered.get("listChanged")))

    def _renew_session(self, generation: int, timeout: Optional[float]) -> None:
        """The server dropped our session: run a new handshake once and restore what we had."""
        with self._renew_lock:
            if self._session_generation != generation:
                return  # another thread already renewed it
            log.info("[%s] Session expired; starting a new one", self.name)
            version, exact = self._legacy_ask
            self._initialize(version, exact, timeout)
            self._session_generation += 1
            if self._listening:
                self._start_listener()
            for uri in sorted(self._subscriptions | set(self._subs.legacy_uris())):
                self.transport.request("resources/subscribe", {"uri": uri}, timeout=timeout)
            if self._log_level is not None:
                self.transport.request("logging/setLevel", {"level": self._log_level}, timeout=timeout)

    def close(self) -> None:
        """Close the connection (and end a stdio server). Idempotent; safe from any thread."""
        self._closed = True
        self._subs.close()
        self.transport.close()

    def _capabilities(self, modern: bool) -> JSONObject:
        """The client capabilities: only what a handler is registered for (``{}`` when none)."""
        return self._responder.capabilities(modern)

    def _request_meta(self, version: str, capabilities: Mapping[str, Any]) -> JSONObject:
        return _meta.request_meta(version, capabilities, self.client_info if self.send_client_info else None,
                                  self._log_level)

    def _initialize_params(self, version: str = LATEST_LEGACY_VERSION) -> JSONObject:
        return {"protocolVersion": version, "capabilities": self._capabilities(False),
                "clientInfo": dict(self.client_info)}

    def _accept_initialize(self, result: Any, exact: Optional[str] = None) -> None:
        if not isinstance(result, dict):
            raise MCPError(rpc.INTERNAL_ERROR, "initialize returned a non-object result")
        version = result.get("protocolVersion")
        if version not in SUPPORTED_VERSIONS or (exact is not None and version != exact):
            raise UnsupportedProtocolVersion(str(version), (exact,) if exact is not None else SUPPORTED_VERSIONS)
        self.protocol_version = version
        capabilities = result.get("capabilities")
        self.server_capabilities = capabilities if isinstance(capabilities, dict) else {}
        self.server_info = Implementation.from_dict(result.get("serverInfo") or {})
        instructions = result.get("instructions")
        self.instructions = instructions if isinstance(instructions, str) else None
        self._note_session()

    # -- server-to-client traffic (worker and dispatcher threads) -------------------------

    def _handle_server_request(self, method: str, params: Optional[JSONObject], cancel: CancelToken) -> Any:
        return self._responder.answer(method, params)

    def _handle_notification(self, method: str, params: Optional[JSONObject]) -> None:
        if method == "notifications/message" and params is not None:
            if self.logging_handler is not None:
                try:
                    self.logging_handler(LogMessage(params))
                except Exception:
                    log.exception("[%s] logging_handler raised", self.name)
            else:
                level = _LOG_LEVELS.get(str(params.get("level")), logging.INFO)
                source = params.get("logger")
                self.server_log.log(level, "%s%s", f"[{source}] " if source else "", params.get("data"))
        try:
            self._subs.deliver(method, params)
        except Exception:
            log.exception("[%s] Delivering %s to its subscription failed", self.name, method)
        for handler in list(self._handlers.get(method, ())) + list(self._handlers.get("*", ())):
            try:
                handler(params)
            except Exception:
                log.exception("[%s] Handler for %s raised", self.name, method)

    def on_notification(self, method: str, handler: NotificationHandler) -> Callable[[], None]:
        """Call ``handler(params)`` for every ``method`` notification (``"*"`` for all).

        Handlers run in arrival order on the dispatcher thread; keep them quick.
        On a modern server, a handler for a ``list_changed`` notification
        opens a ``subscriptions/listen`` stream for it. Returns a function
        that removes the handler.
        """
        self._handlers.setdefault(method, []).append(handler)
        if self._connected and not self._closed:
            if self.modern:
                if method in LIST_CHANGED_FLAGS:
                    self._listen_for_list_changes({method}, None)
            else:
                self._start_listener()

        def remove() -> None:
            try:
                self._handlers.get(method, []).remove(handler)
            except ValueError:
                pass

        return remove

    def set_roots(self, roots: Optional[RootsSource]) -> None:
        """Replace the roots offered to the server.

        A legacy server that was offered roots at connect is told with
        ``notifications/roots/list_changed``; a modern one simply gets the new
        roots the next time it asks.
        """
        had_roots = self.roots is not None
        self.roots = roots
        if self.connected and not self.modern and had_roots:
            self.send_roots_list_changed()

    def send_roots_list_changed(self) -> None:
        """Tell a legacy server the roots changed (``notifications/roots/list_changed``)."""
        if not self.modern:
            self.transport.notify("notifications/roots/list_changed")

    # -- requests --------------------------------------------------------------------

    def request(
        self,
        method: str,
        params: Optional[JSONObject] = None,
        *,
        timeout: Optional[float] = None,
        cancel: Optional[CancelToken] = None,
        on_progress: Optional[ProgressCallback] = None,
        reset_timeout_on_progress: bool = False,
        max_total_timeout: Optional[float] = None,
    ) -> Any:
        """Send any JSON-RPC request and return its raw ``result``.

        ``timeout`` is in seconds (``None``: the client default of 30 s;
        ``math.inf``: wait forever). ``on_progress(progress, total, message)``
        receives the server's progress notifications on the dispatcher thread.

        Raises:
            MCPError, RequestTimeout, RequestCancelled, TransportClosed: an error answer, no
                answer in time, a fired cancel token, a lost connection.
        """
        return self._call(method, params, timeout=timeout, cancel=cancel, on_progress=on_progress,
                          reset_timeout_on_progress=reset_timeout_on_progress, max_total_timeout=max_total_timeout)

    def _call(self, method: str, params: Optional[JSONObject] = None, *, extension: Optional[str] = None,
              on_request_id: Optional[Callable[[RequestId], None]] = None, **options: Any) -> Any:
        """One request in the era in use; ``extension`` is declared in a modern request's capabilities."""
        if not self._connected:
            raise TransportClosed("Transport closed: client not connected (call connect() or use 'with')")
        if self.modern:
            return self._modern_call(method, params, extension, on_request_id, options)
        return self._legacy_call(method, params, options, on_request_id)

    def _legacy_call(self, method: str, params: Optional[JSONObject], options: Mapping[str, Any],
                     on_request_id: Optional[Callable[[RequestId], None]] = None) -> Any:
        """A request in a legacy session: renewed once if the server expired it (HTTP)."""
        generation = self._session_generation
        try:
            return self._send(method, params, options, on_request_id)
        except SessionExpired:
            # The transport already dropped the stale session id: start a new session, retry once.
            self._renew_session(generation, options.get("timeout"))
        return self._send(method, params, options, on_request_id)

    def _send(self, method: str, params: Optional[JSONObject], options: Mapping[str, Any],
              on_request_id: Optional[Callable[[RequestId], None]] = None) -> Any:
        """``transport.request``, with the errors that have a type of their own raised as that type."""
        try:
            return self.transport.request(method, params, on_request_id=on_request_id, **options)
        except MCPError as exc:
            typed = _TYPED_ERRORS.get(exc.code)
            if typed is None or isinstance(exc, typed):
                raise
            error = typed(exc.code, exc.message, exc.data)
            error.http_status = exc.http_status
            raise error from exc

    def _modern_call(self, method: str, params: Optional[JSONObject], extension: Optional[str],
                     on_request_id: Optional[Callable[[RequestId], None]], options: Mapping[str, Any]) -> Any:
        """A 2026-07-28 request: ``_meta`` added, ``resultType`` checked, ``input_required`` answered."""
        capabilities = self._capabilities(True)
        if extension is not None:
            capabilities = _meta.with_extension(capabilities, extension)
        assert self.protocol_version is not None
        sent = _meta.with_meta(params, self._request_meta(self.protocol_version, capabilities))
        result = self._send(method, sent, options, on_request_id)
        if _mrtr.result_type(result) == _mrtr.INPUT_REQUIRED and method in _mrtr.METHODS:
            result = _mrtr.complete(method, sent, result, lambda retry: self._send(method, retry, options),
                                    self._responder.answer, self.max_input_rounds)
        kind = _mrtr.result_type(result)
        if kind == _mrtr.COMPLETE or (kind == _mrtr.TASK and method == "tools/call"
                                      and extension == _meta.TASKS_EXTENSION):
            return result
        if kind in (_mrtr.INPUT_REQUIRED, _mrtr.TASK):
            raise ProtocolError(f"{method}: the server answered with resultType {kind!r}, which is not valid here")
        raise ProtocolError(f"{method}: the server answered with resultType {kind!r}, which this client does not "
                            "know: an invalid result")

    def _require(self, capability: str, sub: Optional[str] = None, what: str = "") -> None:
        if not self._connected:
            raise TransportClosed("Transport closed: client not connected (call connect() or use 'with')")
        if not self._capabilities_known:
            return  # a modern server that would not describe itself: let it answer for itself
        offered = self.server_capabilities.get(capability)
        if offered is None or (sub is not None and not (isinstance(offered, dict) and offered.get(sub))):
            needed = f"{capability}.{sub}" if sub else capability
            raise CapabilityError(f"Server {self.name!r} does not offer {needed!r}; cannot {what}")

    def ping(self, *, timeout: Optional[float] = None, cancel: Optional[CancelToken] = None) -> None:
        """Check the server answers (``ping``; ``server/discover`` on modern servers, which have no ping).

        Raises like :meth:`request`.
        """
        self.request("server/discover" if self.modern else "ping", None, timeout=timeout, cancel=cancel)

    # tools

    def list_tools(self, *, refresh: bool = False, timeout: Optional[float] = None,
                   cancel: Optional[CancelToken] = None,
                   on_progress: Optional[ProgressCallback] = None) -> List[Tool]:
        """Every tool, across all pages.

        When the server promises ``tools/list_changed`` notifications, the list
        is cached until one arrives; a modern server's list is cached for its
        ``ttlMs`` (``refresh=True`` skips the cache). Over modern HTTP, a tool
        with an invalid ``x-mcp-header`` annotation is left out, with a WARNING.

        Raises:
            CapabilityError: the server offers no tools.
            ProtocolError: the server repeated a pagination cursor.
        """
        self._require("tools", what="list tools")
        return self._cached_list("tools", "tools/list", "tools", Tool, refresh,
                                 timeout=timeout, cancel=cancel, on_progress=on_progress)

    def iter_tools(self, *, timeout: Optional[float] = None,
                   cancel: Optional[CancelToken] = None) -> Iterator[Tool]:
        """Yield tools page by page, fetching the next page only when needed."""
        self._require("tools", what="list tools")
        for item in self._pages("tools/list", "tools", timeout=timeout, cancel=cancel):
            for accepted in self._accept_tools([item]):
                yield Tool.from_dict(accepted)

    @overload
    def call_tool(self, name: str, arguments: Optional[Mapping[str, Any]] = None, *,
                  task: Literal[False] = False, timeout: Optional[float] = None,
                  cancel: Optional[CancelToken] = None, on_progress: Optional[ProgressCallback] = None,
                  reset_timeout_on_progress: bool = False,
                  max_total_timeout: Optional[float] = None) -> CallToolResult: ...

    @overload
    def call_tool(self, name: str, arguments: Optional[Mapping[str, Any]] = None, *,
                  task: Literal[True], timeout: Optional[float] = None,
                  cancel: Optional[CancelToken] = None, on_progress: Optional[ProgressCallback] = None,
                  reset_timeout_on_progress: bool = False,
                  max_total_timeout: Optional[float] = None) -> Task: ...

    def call_tool(
        self,
        name: str,
        arguments: Optional[Mapping[str, Any]] = None,
        *,
        task: bool = False,
        timeout: Optional[float] = None,
        cancel: Optional[CancelToken] = None,
        on_progress: Optional[ProgressCallback] = None,
        reset_timeout_on_progress: bool = False,
        max_total_timeout: Optional[float] = None,
    ) -> Union[CallToolResult, Task]:
        """Call a tool and return its result.

        A result with ``is_error`` set is returned, not raised; call
        ``result.raise_for_error()`` to raise :class:`~mcpsync.ToolError`.

        With ``task=True`` the tool runs as a task and a :class:`~mcpsync.Task`
        handle is returned at once (2025-11-25: the tool must allow it, by its
        ``execution.taskSupport``; 2026-07-28: the server decides, and a call it
        answers at once gives an already completed handle). A tool whose
        ``taskSupport`` is ``"required"``, or a modern server that answers with
        a task, runs as a task inside a plain call too: the call waits for it
        (``timeout`` then bounds the whole wait).

        Raises:
            MCPError: the server refused the call (unknown tool, bad arguments).
            RequestTimeout, RequestCancelled, TransportClosed: as for :meth:`request`.
            CapabilityError: the server offers no tools.
        """
        params: JSONObject = {"name": name, "arguments": dict(arguments) if arguments else {}}
        options: Dict[str, Any] = dict(timeout=timeout, cancel=cancel, on_progress=on_progress,
                                       reset_timeout_on_progress=reset_timeout_on_progress,
                                       max_total_timeout=max_total_timeout)
        if self._plain_tool_calls and not task:
            # The hot path: a legacy session whose server runs no tool as a task.
            return CallToolResult.from_dict(self._legacy_call("tools/call", params, options))
        self._require("tools", what=f"call tool {name!r}")
        if self.modern:
            return self._call_tool_modern(name, params, task, options)
        support = self._task_support(name, timeout) if task or self._offers_tool_tasks() else None
        if task and support not in ("optional", "required"):
            why = "the server offers no tool tasks" if not self._offers_tool_tasks() else \
                f"its taskSupport is {support or 'forbidden'!r}"
            raise CapabilityError(f"Tool {name!r} of {self.name!r} cannot run as a task: {why}")
        if task or support == "required":
            params["task"] = {}
            handle = Task(self, parse_created(self._call("tools/call", params, **options), False),
                          modern=False, tool=name)
            return handle if task else handle.result(timeout if timeout is not None else self.transport.timeout)
        return CallToolResult.from_dict(self._call("tools/call", params, **options))

    def _call_tool_modern(self, name: str, params: JSONObject, task: bool,
                          options: Dict[str, Any]) -> Union[CallToolResult, Task]:
        extension = _meta.TASKS_EXTENSION if task or self.tasks else None
        http = self.transport.era_detection == _era.HTTP
        if http and self._header_plans is None:
            self._refresh_tools(options.get("timeout"))  # its x-mcp-header plan, before the first call
        try:
            result = self._call("tools/call", params, extension=extension, **options)
        except MCPError as exc:
            if not (http and exc.code == _HEADER_MISMATCH):
                raise
            log.info("[%s] %s: the server says the headers do not match; listing the tools again", self.name, name)
            self._refresh_tools(options.get("timeout"))
            result = self._call("tools/call", params, extension=extension, **options)
        if _mrtr.result_type(result) == _mrtr.TASK:
            handle = Task(self, parse_created(result, True), modern=True, tool=name)
            if task:
                return handle
            timeout = options.get("timeout")
            return handle.result(timeout if timeout is not None else self.transport.timeout)
        return Task.completed(self, name, result, True) if task else CallToolResult.from_dict(result)

    def _refresh_tools(self, timeout: Optional[float]) -> None:
        try:
            self.list_tools(refresh=True, timeout=timeout)
        except CapabilityError:
            self._header_plans = {}

    def _offers_tool_tasks(self) -> bool:
        return offers_tool_tasks(self.server_capabilities)

    def _task_support(self, name: str, timeout: Optional[float]) -> Optional[str]:
        """A legacy (2025-11-25) tool's ``execution.taskSupport`` (listing the tools once if need be)."""
        if not self._offers_tool_tasks():
            return None
        if name not in self._tool_defs:
            self.list_tools(timeout=timeout)
        execution = self._tool_defs.get(name, {}).get("execution")
        support = execution.get("taskSupport") if isinstance(execution, dict) else None
        return support if isinstance(support, str) else None

    def list_tasks(self, *, timeout: Optional[float] = None, cancel: Optional[CancelToken] = None) -> List[TaskInfo]:
        """The server's tasks (``tasks/list``, 2025-11-25; the 2026 tasks extension has no list).

        Raises:
            CapabilityError: the server does not offer ``tasks.list``.
        """
        tasks = self.server_capabilities.get("tasks")
        if self.modern or not (isinstance(tasks, dict) and "list" in tasks):
            raise CapabilityError(f"Server {self.name!r} does not offer 'tasks.list'; cannot list tasks")
        return infos(list(self._pages("tasks/list", "tasks", timeout=timeout, cancel=cancel)))

    def _task_call(self, method: str, params: JSONObject, *, timeout: Optional[float] = None,
                   modern: bool) -> Any:
        """A ``tasks/*`` request (declaring the tasks extension on modern servers, as the extension requires)."""
        return self._call(method, params, extension=_meta.TASKS_EXTENSION if modern else None, timeout=timeout)

    # resources

    def list_resources(self, *, refresh: bool = False, timeout: Optional[float] = None,
                       cancel: Optional[CancelToken] = None,
                       on_progress: Optional[ProgressCallback] = None) -> List[Resource]:
        """Every resource, across all pages (cached like :meth:`list_tools`)."""
        self._require("resources", what="list resources")
        return self._cached_list("resources", "resources/list", "resources", Resource, refresh,
                                 timeout=timeout, cancel=cancel, on_progress=on_progress)

    def list_resource_templates(self, *, timeout: Optional[float] = None,
                                cancel: Optional[CancelToken] = None,
                                on_progress: Optional[ProgressCallback] = None) -> List[ResourceTemplate]:
        """Every resource template, across all pages."""
        self._require("resources", what="list resource templates")
        return [ResourceTemplate.from_dict(item) for item in self._pages(
            "resources/templates/list", "resourceTemplates", timeout=timeout, cancel=cancel,
            on_progress=on_progress)]

    def read_resource(self, uri: str, *, timeout: Optional[float] = None, cancel: Optional[CancelToken] = None,
                      on_progress: Optional[ProgressCallback] = None) -> ReadResourceResult:
        """Read one resource.

        Raises:
            ResourceNotFound: there is no such resource (``-32002``, or ``-32602`` from a modern server).
        """
        self._require("resources", what=f"read {uri!r}")
        try:
            result = self.request("resources/read", {"uri": uri}, timeout=timeout, cancel=cancel,
                                  on_progress=on_progress)
        except MCPError as exc:
            if exc.code == _RESOURCE_NOT_FOUND or (exc.code == rpc.INVALID_PARAMS and self.modern):
                error = ResourceNotFound(exc.code, exc.message, exc.data)
                error.http_status = exc.http_status
                raise error from exc
            raise
        return ReadResourceResult.from_dict(result)

    def subscribe(self, uri: str, callback: Optional[UpdateCallback] = None, *,
                  timeout: Optional[float] = None) -> Subscription:
        """Get ``callback(updated_uri)`` for every update of ``uri`` (or of a resource below it).

        Legacy servers: ``resources/subscribe``; modern servers: a
        ``subscriptions/listen`` stream. Returns a :class:`~mcpsync.Subscription`;
        its ``close()`` (or a ``with`` block) stops the updates. Callbacks run
        on the dispatcher thread; keep them quick.

        Raises:
            CapabilityError: the server offers no subscriptions, or did not accept this one.
        """
        self._require("resources", "subscribe", what=f"subscribe to {uri!r}")
        return self._subs.subscribe(uri, callback, timeout)

    def subscribe_resource(self, uri: str, *, timeout: Optional[float] = None,
                           cancel: Optional[CancelToken] = None) -> None:
        """Ask for ``notifications/resources/updated`` about ``uri`` (see :meth:`subscribe` for a handle)."""
        self._require("resources", "subscribe", what=f"subscribe to {uri!r}")
        if self.modern:
            if uri not in self._listened:
                self._listened[uri] = self._subs.subscribe(uri, None, timeout)
            return
        self.request("resources/subscribe", {"uri": uri}, timeout=timeout, cancel=cancel)
        self._subscriptions.add(uri)  # restored if an HTTP session has to be renewed

    def unsubscribe_resource(self, uri: str, *, timeout: Optional[float] = None,
                             cancel: Optional[CancelToken] = None) -> None:
        """Stop the updates :meth:`subscribe_resource` asked for."""
        self._require("resources", "subscribe", what=f"unsubscribe from {uri!r}")
        if self.modern:
            subscription = self._listened.pop(uri, None)
            if subscription is not None:
                subscription.close()
            return
        self.request("resources/unsubscribe", {"uri": uri}, timeout=timeout, cancel=cancel)
        self._subscriptions.discard(uri)

    # prompts

    def list_prompts(self, *, refresh: bool = False, timeout: Optional[float] = None,
                     cancel: Optional[CancelToken] = None,
                     on_progress: Optional[ProgressCallback] = None) -> List[Prompt]:
        """Every prompt, across all pages (cached like :meth:`list_tools`)."""
        self._require("prompts", what="list prompts")
        return self._cached_list("prompts", "prompts/list", "prompts", Prompt, refresh,
                                 timeout=timeout, cancel=cancel, on_progress=on_progress)

    def get_prompt(self, name: str, arguments: Optional[Mapping[str, str]] = None, *,
                   timeout: Optional[float] = None, cancel: Optional[CancelToken] = None,
                   on_progress: Optional[ProgressCallback] = None) -> GetPromptResult:
        """Render one prompt with ``arguments``."""
        self._require("prompts", what=f"get prompt {name!r}")
        params: JSONObject = {"name": name}
        if arguments:
            params["arguments"] = {str(k): str(v) for k, v in arguments.items()}
        return GetPromptResult.from_dict(self.request(
            "prompts/get", params, timeout=timeout, cancel=cancel, on_progress=on_progress))

    # utilities

    def complete(self, ref: Mapping[str, Any], argument: str, value: str, *,
                 context: Optional[Mapping[str, str]] = None, timeout: Optional[float] = None,
                 cancel: Optional[CancelToken] = None) -> CompleteResult:
        """Ask for completions of ``argument`` (typed so far: ``value``).

        ``ref`` is ``{"type": "ref/prompt", "name": ...}`` or
        ``{"type": "ref/resource", "uri": ...}``; ``context`` gives the
        arguments already chosen.
        """
        if self.protocol_version and at_least(self.protocol_version, "2025-03-26"):
            self._require("completions", what="complete arguments")
        params: JSONObject = {"ref": dict(ref), "argument": {"name": argument, "value": value}}
        if context:
            params["context"] = {"arguments": dict(context)}
        return CompleteResult.from_dict(self.request("completion/complete", params,
                                                     timeout=timeout, cancel=cancel))

    def set_logging_level(self, level: str, *, timeout: Optional[float] = None,
                          cancel: Optional[CancelToken] = None) -> None:
        """Ask the server to send log messages at ``level`` and above (``"debug"`` … ``"emergency"``).

        Legacy servers get ``logging/setLevel``; modern ones have no such
        request: the level goes in the ``_meta`` of every later request.
        """
        if level not in _LOG_LEVELS:
            raise ValueError(f"Unknown log level {level!r}; expected one of {', '.join(_LOG_LEVELS)}")
        if self.modern:
            self._log_level = level
            return
        self._require("logging", what="set the log level")
        self.request("logging/setLevel", {"level": level}, timeout=timeout, cancel=cancel)
        self._log_level = level  # restored if an HTTP session has to be renewed

    # -- helpers ----------------------------------------------------------------------

    def _pages(self, method: str, key: str, **options: Any) -> Iterator[JSONObject]:
        return paginate(lambda params: self.request(method, params, **options), method, key)

    def _cached_list(self, cache_key: str, method: str, key: str, kind: Type[O], refresh: bool,
                     **options: Any) -> List[O]:
        rich = _RICH_LISTS[cache_key]
        credential = credential_of(self.transport)
        cached = None if refresh else self._cache.get(cache_key, credential)
        if cached is not None:
            return rich(cached)  # a fresh list: callers may mutate what they get
        generation = self._cache.generation
        pages: List[Tuple[Any, Any]] = []

        def fetch(params: Optional[JSONObject]) -> Any:
            page = self.request(method, params, **options)
            if isinstance(page, dict):
                pages.append((page.get("ttlMs"), page.get("cacheScope")))
            return page

        found = list(paginate(fetch, method, key))
        if cache_key == "tools":
            found = self._accept_tools(found, complete=True)
        items = [kind.from_dict(item) for item in found]
        # Cache only if no list_changed arrived while the pages were being fetched.
        if self.modern:
            self._cache.store_pages(cache_key, items, pages, generation, credential)
        elif self._announces(cache_key):
            self._cache.store_until_changed(cache_key, items, generation)
        return rich(items)

    def _accept_tools(self, tools: List[JSONObject], complete: bool = False) -> List[JSONObject]:
        """Remember the tool definitions; over modern HTTP drop invalid x-mcp-header tools and pass the plans on."""
        if self.modern and self.transport.era_detection == _era.HTTP:
            tools, plans = screen_tools(tools, self.name)
            merged = plans if complete else {**(self._header_plans or {}), **plans}
            self._header_plans = merged
            self.transport.set_header_plans(merged)
        if complete:
            self._tool_defs = {str(tool.get("name")): tool for tool in tools}
        else:
            self._tool_defs.update((str(tool.get("name")), tool) for tool in tools)
        return tools

    def _invalidate_on_notification(self, method: str, params: Optional[JSONObject]) -> None:
        """Reader thread: drop a cached list the moment its list_changed arrives; note acknowledgements."""
        kind = _LIST_CHANGED.get(method)
        if kind is not None:
            self._cache.invalidate(kind)
        self._subs.acknowledge(method, params)


def _weakly(ref: "weakref.ref[Client]", name: str) -> Callable[..., Any]:
    """Call ``name`` on the referenced client; a collected client answers like no handler."""

    def call(*args: Any) -> Any:
        client = ref()
        if client is None:
            raise MCPError(rpc.METHOD_NOT_FOUND, "Client is gone")
        return getattr(client, name)(*args)

    return call


Target = Union[str, Sequence[str], Mapping[str, Any], Transport]


def connect(target: Target, **options: Any) -> Client:
    """Start or reach a server and return a connected :class:`Client`.

    ``target`` is an argv list (``["python", "server.py"]``, run over stdio),
    an ``http://`` or ``https://`` URL (Streamable HTTP, falling back to the
    legacy HTTP+SSE transport when the server answers the first POST with
    400, 404 or 405), a server config dict (``{"command": ..., "args": [...],
    "env": {...}, "cwd": ...}`` or ``{"type": "http", "url": ..., "headers":
    {...}}``) or a :class:`~mcpsync.transports.Transport`.

    HTTP options: ``headers``, ``token`` (bearer), ``auth`` (a requests auth
    object), ``verify``, ``cert``, ``proxies``, ``trust_env``, ``connect_timeout``.

    Transport options (``env``, ``cwd``, ``inherit_env``, ``name``, ``timeout``,
    ``max_message_size``, ``shutdown_timeout``) and client options (``protocol``,
    ``probe_timeout``, ``roots``, ``sampling_handler``, ``elicitation_handler``,
    ``logging_handler``, ``log_level``, ``client_info``... see :class:`Client`)
    may be mixed in ``options``.

    Raises:
        ValueError: ``target`` is not one of the forms above.
        and whatever :meth:`Client.connect` raises.
    """
    transport_options = {k: v for k, v in options.items() if k in _TRANSPORT_OPTIONS}
    client_options = {k: v for k, v in options.items() if k not in _TRANSPORT_OPTIONS}
    transport: Transport
    if isinstance(target, Transport):
        if "timeout" in transport_options:  # the one option a ready transport can still take
            client_options["timeout"] = transport_options.pop("timeout")
        if transport_options:
            raise ValueError(f"Transport options {sorted(transport_options)} do not apply to a ready transport")
        transport = target
    elif isinstance(target, Mapping):
        transport = create_transport(dict(target), **transport_options)
    elif isinstance(target, str) and target.lower().startswith(("http://", "https://")):
        transport = create_transport({"url": target}, **transport_options)
    elif isinstance(target, str):
        raise ValueError("Give the command as a list of arguments, e.g. ['python', 'server.py'] "
                         f"(got the string {target!r})")
    elif isinstance(target, Sequence) and target and all(isinstance(a, str) for a in target):
        transport = StdioTransport(target[0], list(target[1:]), **transport_options)
    else:
        raise ValueError(f"Cannot connect to {target!r}: expected an argv list, a config dict or a Transport")
    return Client(transport, **client_options).connect()
