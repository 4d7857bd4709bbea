"""Client: one MCP server behind blocking, typed methods.

The client knows MCP (the handshake, method names, capabilities, results);
it never touches a thread, a pipe or a socket: that is the transport's job.
"""

from __future__ import annotations

import logging
import os
import threading
import weakref
from typing import (
    Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Set, Type, TypeVar, Union,
)

from . import _jsonrpc as rpc
from ._engine import ProgressCallback
from ._jsonrpc import JSONObject
from ._pagination import paginate
from ._version import __version__
from ._versions import LATEST_LEGACY_VERSION, SUPPORTED_VERSIONS, at_least
from .cancel import CancelToken
from .exceptions import CapabilityError, MCPError, SessionExpired, TransportClosed, UnsupportedProtocolVersion
from .transports import StdioTransport, Transport, create_transport
from .transports.base import safe_name
from .types import (
    CallToolResult, CompleteResult, GetPromptResult, Implementation, MCPObject, Prompt, PromptList,
    ReadResourceResult, Resource, ResourceList, ResourceTemplate, Tool, ToolList,
)

__all__ = ["Client", "connect"]

log = logging.getLogger("mcpsync.client")

Handler = Callable[[JSONObject], Any]
NotificationHandler = Callable[[Optional[JSONObject]], None]
RootsSource = Union[Sequence[Union[str, Mapping[str, Any]]], Callable[[], Sequence[Union[str, Mapping[str, Any]]]]]
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
        roots: the roots offered to the server (paths, ``file://`` URIs or
            ``{"uri", "name"}`` dicts), or a callable returning them.
        sampling_handler: ``fn(params) -> result`` answering ``sampling/createMessage``.
        elicitation_handler: ``fn(params) -> result`` answering ``elicitation/create``.
        logging_handler: ``fn(params)`` for ``notifications/message``; by default
            those go to the logger ``mcpsync.server.<name>``.
        client_info: overrides for ``clientInfo`` (``name``, ``version``, ``title``).
        timeout: default per-request timeout in seconds (the transport's otherwise).

    Handlers run on worker threads, never on the reader thread, and may call
    the client. Every capability is advertised only when its handler is given.

    Thread safety: every method may be called from any number of threads at
    once; each call blocks its own thread only.
    """

    def __init__(
        self,
        transport: Transport,
        *,
        roots: Optional[RootsSource] = None,
        sampling_handler: Optional[Handler] = None,
        elicitation_handler: Optional[Handler] = None,
        logging_handler: Optional[Callable[[JSONObject], None]] = None,
        client_info: Optional[Mapping[str, Any]] = None,
        timeout: Optional[float] = None,
    ) -> None:
        self.transport = transport
        if timeout is not None:
            transport.timeout = timeout
        self.roots = roots
        self.sampling_handler = sampling_handler
        self.elicitation_handler = elicitation_handler
        self.logging_handler = logging_handler
        self.client_info: Dict[str, Any] = {"name": "mcpsync", "version": __version__, **(client_info or {})}
        self.protocol_version: Optional[str] = None
        self.server_info: Optional[Implementation] = None
        self.server_capabilities: Dict[str, Any] = {}
        self.instructions: Optional[str] = None
        self.server_log = logging.getLogger(f"mcpsync.server.{safe_name(transport.name)}")
        self._handlers: Dict[str, List[NotificationHandler]] = {}
        self._cache: Dict[str, List[Any]] = {}
        self._cache_generation = 0
        self._connected = False
        self._closed = False
        # What a new session must restore (HTTP session expiry).
        self._renew_lock = threading.Lock()
        self._session_generation = 0
        self._listening = False
        self._subscriptions: Set[str] = set()
        self._log_level: Optional[str] = None

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
            import warnings

            warnings.warn(f"unclosed {self!r}; closing it now", ResourceWarning, stacklevel=2)
            try:
                self.close()
            except Exception:
                pass

    @property
    def name(self) -> str:
        """The server's label (from the config or the command)."""
        return self.transport.name

    @property
    def connected(self) -> bool:
        """True after a successful handshake, until the connection closes."""
        return self._connected and not self._closed and self.transport.connected

    # -- lifecycle ------------------------------------------------------------------

    def connect(self, *, timeout: Optional[float] = None) -> "Client":
        """Open the transport and run the ``initialize`` handshake; returns self.

        Raises:
            ConnectError: the server could not be started or reached.
            TransportClosed: the server went away during the handshake (the
                message carries its exit status and last stderr lines).
            UnsupportedProtocolVersion: the server chose a version we do not speak.
            RequestTimeout: the server did not answer ``initialize`` in time.
            MCPError: the server refused ``initialize``.
        In every failure case the transport is closed before the error is raised.
        """
        if self._closed:
            raise TransportClosed("Transport closed: this client was closed; make a new one")
        if self._connected:
            return self
        transport = self.transport
        try:
            self._open_and_initialize(transport, timeout)
        except BaseException as exc:
            # A transport may offer another to try (Streamable HTTP -> legacy HTTP+SSE).
            alternate = transport.fallback_for(exc) if isinstance(exc, Exception) else None
            transport.close()
            if alternate is None:
                raise
            alternate.timeout = transport.timeout
            self.transport = transport = alternate
            try:
                self._open_and_initialize(transport, timeout)
            except BaseException:
                transport.close()
                raise
        self._connected = True
        if self._wants_listener():
            self._start_listener()
        return self

    def _open_and_initialize(self, transport: Transport, timeout: Optional[float]) -> None:
        me = weakref.ref(self)
        transport.set_inline_handler("ping", lambda _params: {})
        transport.set_request_handler(_weakly(me, "_handle_server_request"))
        transport.add_notification_listener(_weakly(me, "_handle_notification"))
        transport.set_notification_hook(_weakly(me, "_invalidate_on_notification"))
        transport.open()
        self._initialize(timeout)

    def _initialize(self, timeout: Optional[float]) -> None:
        transport = self.transport
        result = transport.request("initialize", self._initialize_params(), timeout=timeout)
        self._accept_initialize(result)
        transport.set_protocol_version(str(self.protocol_version))
        transport.notify("notifications/initialized")

    def _wants_listener(self) -> bool:
        """Whether server-initiated messages have anywhere to go (then HTTP opens its GET stream)."""
        if (self._handlers or self.sampling_handler or self.elicitation_handler or self.roots is not None
                or self.logging_handler or self.transport.on_notification):
            return True
        # Cached lists rely on list_changed notifications to stay fresh.
        return any(isinstance(self.server_capabilities.get(kind), dict)
                   and self.server_capabilities[kind].get("listChanged") for kind in ("tools", "resources", "prompts"))

    def _start_listener(self) -> None:
        self._listening = True
        self.transport.start_listener()  # a no-op on transports that need no extra channel

    def _renew_session(self, generation: int, timeout: Optional[float]) -> None:
        """The server dropped our session: run a new handshake once and restore what we had."""
        with self._renew_lock:
            if self._session_generation != generation:
                return  # another thread already renewed it
            log.info("[%s] Session expired; starting a new one", self.name)
            self._initialize(timeout)
            self._session_generation += 1
            if self._listening:
                self._start_listener()
            for uri in sorted(self._subscriptions):
                self.transport.request("resources/subscribe", {"uri": uri}, timeout=timeout)
            if self._log_level is not None:
                self.transport.request("logging/setLevel", {"level": self._log_level}, timeout=timeout)

    def close(self) -> None:
        """Close the connection (and end a stdio server). Idempotent; safe from any thread."""
        self._closed = True
        self.transport.close()

    def _initialize_params(self) -> JSONObject:
        capabilities: JSONObject = {}
        if self.roots is not None:
            capabilities["roots"] = {"listChanged": True}
        if self.sampling_handler is not None:
            capabilities["sampling"] = {}
        if self.elicitation_handler is not None:
            capabilities["elicitation"] = {}
        return {"protocolVersion": LATEST_LEGACY_VERSION, "capabilities": capabilities,
                "clientInfo": dict(self.client_info)}

    def _accept_initialize(self, result: Any) -> None:
        if not isinstance(result, dict):
            raise MCPError(rpc.INTERNAL_ERROR, "initialize returned a non-object result")
        version = result.get("protocolVersion")
        if version not in SUPPORTED_VERSIONS:
            raise UnsupportedProtocolVersion(str(version), SUPPORTED_VERSIONS)
        self.protocol_version = version
        capabilities = result.get("capabilities")
        self.server_capabilities = capabilities if isinstance(capabilities, dict) else {}
        self.server_info = Implementation.from_dict(result.get("serverInfo") or {})
        instructions = result.get("instructions")
        self.instructions = instructions if isinstance(instructions, str) else None

    # -- server-to-client traffic (worker and dispatcher threads) -------------------------

    def _handle_server_request(self, method: str, params: Optional[JSONObject], cancel: CancelToken) -> Any:
        params = params or {}
        if method == "roots/list" and self.roots is not None:
            return {"roots": self._roots_payload()}
        if method == "sampling/createMessage" and self.sampling_handler is not None:
            return _wire(self.sampling_handler(params))
        if method == "elicitation/create" and self.elicitation_handler is not None:
            return _wire(self.elicitation_handler(params))
        raise MCPError(rpc.METHOD_NOT_FOUND, f"Method not found: {method}")

    def _roots_payload(self) -> List[JSONObject]:
        source = self.roots() if callable(self.roots) else self.roots
        roots: List[JSONObject] = []
        for root in source or ():
            if isinstance(root, Mapping):
                roots.append(dict(root))
            else:
                roots.append({"uri": _file_uri(str(root))})
        return roots

    def _handle_notification(self, method: str, params: Optional[JSONObject]) -> None:
        if method == "notifications/message" and params is not None:
            if self.logging_handler is not None:
                try:
                    self.logging_handler(params)
                except Exception:
                    log.exception("[%s] logging_handler raised", self.name)
            else:
                level = _LOG_LEVELS.get(str(params.get("level")), logging.INFO)
                source = params.get("logger")
                self.server_log.log(level, "%s%s", f"[{source}] " if source else "", params.get("data"))
        for handler in list(self._handlers.get(method, ())) + list(self._handlers.get("*", ())):
            try:
                handler(params)
            except Exception:
                log.exception("[%s] Handler for %s raised", self.name, method)

    def on_notification(self, method: str, handler: NotificationHandler) -> Callable[[], None]:
        """Call ``handler(params)`` for every ``method`` notification (``"*"`` for all).

        Handlers run in arrival order on the dispatcher thread; keep them quick.
        Returns a function that removes the handler.
        """
        self._handlers.setdefault(method, []).append(handler)
        if self._connected and not self._closed:
            self._start_listener()

        def remove() -> None:
            try:
                self._handlers.get(method, []).remove(handler)
            except ValueError:
                pass

        return remove

    def send_roots_list_changed(self) -> None:
        """Tell the server the roots changed (``notifications/roots/list_changed``)."""
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
            MCPError, RequestTimeout, RequestCancelled, TransportClosed.
        """
        if not self._connected:
            raise TransportClosed("Transport closed: client not connected (call connect() or use 'with')")
        generation = self._session_generation
        try:
            return self.transport.request(
                method, params, timeout=timeout, cancel=cancel, on_progress=on_progress,
                reset_timeout_on_progress=reset_timeout_on_progress, max_total_timeout=max_total_timeout,
            )
        except SessionExpired:
            # The transport already dropped the stale session id: start a new session, retry once.
            self._renew_session(generation, timeout)
        return self.transport.request(
            method, params, timeout=timeout, cancel=cancel, on_progress=on_progress,
            reset_timeout_on_progress=reset_timeout_on_progress, max_total_timeout=max_total_timeout,
        )

    def _require(self, capability: str, sub: Optional[str] = None, what: str = "") -> None:
        if not self._connected:
            raise TransportClosed("Transport closed: client not connected (call connect() or use 'with')")
        offered = self.server_capabilities.get(capability)
        if offered is None or (sub is not None and not (isinstance(offered, dict) and offered.get(sub))):
            needed = f"{capability}.{sub}" if sub else capability
            raise CapabilityError(f"Server {self.name!r} does not offer {needed!r}; cannot {what}")

    def ping(self, *, timeout: Optional[float] = None, cancel: Optional[CancelToken] = None) -> None:
        """Check the server answers. Raises like :meth:`request`."""
        self.request("ping", None, timeout=timeout, cancel=cancel)

    # tools

    def list_tools(self, *, refresh: bool = False, timeout: Optional[float] = None,
                   cancel: Optional[CancelToken] = None,
                   on_progress: Optional[ProgressCallback] = None) -> List[Tool]:
        """Every tool, across all pages.

        When the server promises ``tools/list_changed`` notifications, the list
        is cached until one arrives (``refresh=True`` skips the cache).

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
            yield Tool.from_dict(item)

    def call_tool(
        self,
        name: str,
        arguments: Optional[Mapping[str, Any]] = None,
        *,
        timeout: Optional[float] = None,
        cancel: Optional[CancelToken] = None,
        on_progress: Optional[ProgressCallback] = None,
        reset_timeout_on_progress: bool = False,
        max_total_timeout: Optional[float] = None,
    ) -> CallToolResult:
        """Call a tool and return its result.

        A result with ``is_error`` set is returned, not raised; call
        ``result.raise_for_error()`` to raise :class:`~mcpsync.ToolError`.

        Raises:
            MCPError: the server refused the call (unknown tool, bad arguments).
            RequestTimeout, RequestCancelled, TransportClosed, CapabilityError.
        """
        self._require("tools", what=f"call tool {name!r}")
        params: JSONObject = {"name": name, "arguments": dict(arguments or {})}
        result = self.request("tools/call", params, timeout=timeout, cancel=cancel, on_progress=on_progress,
                              reset_timeout_on_progress=reset_timeout_on_progress,
                              max_total_timeout=max_total_timeout)
        return CallToolResult.from_dict(result)

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
        """Read one resource."""
        self._require("resources", what=f"read {uri!r}")
        return ReadResourceResult.from_dict(self.request(
            "resources/read", {"uri": uri}, timeout=timeout, cancel=cancel, on_progress=on_progress))

    def subscribe_resource(self, uri: str, *, timeout: Optional[float] = None,
                           cancel: Optional[CancelToken] = None) -> None:
        """Ask for ``notifications/resources/updated`` about ``uri``."""
        self._require("resources", "subscribe", what=f"subscribe to {uri!r}")
        self.request("resources/subscribe", {"uri": uri}, timeout=timeout, cancel=cancel)
        self._subscriptions.add(uri)  # restored if an HTTP session has to be renewed

    def unsubscribe_resource(self, uri: str, *, timeout: Optional[float] = None,
                             cancel: Optional[CancelToken] = None) -> None:
        """Stop the updates :meth:`subscribe_resource` asked for."""
        self._require("resources", "subscribe", what=f"unsubscribe from {uri!r}")
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
        """Ask the server to send log messages at ``level`` and above (``"debug"`` … ``"emergency"``)."""
        if level not in _LOG_LEVELS:
            raise ValueError(f"Unknown log level {level!r}; expected one of {', '.join(_LOG_LEVELS)}")
        self._require("logging", what="set the log level")
        self.request("logging/setLevel", {"level": level}, timeout=timeout, cancel=cancel)
        self._log_level = level  # restored if an HTTP session has to be renewed

    # -- helpers ----------------------------------------------------------------------

    def _pages(self, method: str, key: str, **options: Any) -> Iterator[JSONObject]:
        return paginate(lambda params: self.request(method, params, **options), method, key)

    def _cached_list(self, cache_key: str, method: str, key: str, kind: Type[O], refresh: bool,
                     **options: Any) -> List[O]:
        rich = _RICH_LISTS[cache_key]
        cached = None if refresh else self._cache.get(cache_key)
        if cached is not None:
            return rich(cached)  # a fresh list: callers may mutate what they get
        generation = self._cache_generation
        items = [kind.from_dict(item) for item in self._pages(method, key, **options)]
        offered = self.server_capabilities.get(cache_key)
        # Cache only if no list_changed arrived while the pages were being fetched.
        if isinstance(offered, dict) and offered.get("listChanged") and generation == self._cache_generation:
            self._cache[cache_key] = items
        return rich(items)

    def _invalidate_on_notification(self, method: str, params: Optional[JSONObject]) -> None:
        """Reader thread: drop a cached list the moment its list_changed arrives."""
        kind = _LIST_CHANGED.get(method)
        if kind is not None:
            self._cache_generation += 1
            self._cache.pop(kind, None)


def _weakly(ref: "weakref.ref[Client]", name: str) -> Callable[..., Any]:
    """Call ``name`` on the referenced client; a collected client answers like no handler."""

    def call(*args: Any) -> Any:
        client = ref()
        if client is None:
            raise MCPError(rpc.METHOD_NOT_FOUND, "Client is gone")
        return getattr(client, name)(*args)

    return call


def _wire(value: Any) -> Any:
    return value.to_dict() if isinstance(value, MCPObject) else value


def _file_uri(path: str) -> str:
    if "://" in path:
        return path
    from pathlib import Path

    return Path(os.path.abspath(os.path.expanduser(path))).as_uri()


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
    ``max_message_size``, ``shutdown_timeout``) and client options (``roots``,
    ``sampling_handler``, ``elicitation_handler``, ``logging_handler``,
    ``client_info``) may be mixed in ``options``.

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
