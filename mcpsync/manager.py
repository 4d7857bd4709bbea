"""Manager: many MCP servers from config files, their tools under one namespace, kept connected.

::

    import mcpsync

    with mcpsync.Manager.discover() as manager:      # read the usual config files, connect all
        for tool in manager.tools():
            print(tool.qualified_name, "-", tool.tool.description)
        print(manager.call_tool("mcp_files_read_file", {"path": "README.md"}).text)

Startup never waits for the slowest server: :meth:`Manager.connect_all` waits at most
``startup_timeout``; servers still starting then serve their cached tools (from the last run)
as *deferred* tools (calling one waits for its server), or add their tools when ready.

This module is the registry and the router; its parts (one server's state machine, the tool
index, the scheduler, the tools cache, qualified names) live in :mod:`mcpsync._fleet`.
"""

from __future__ import annotations

import atexit
import os
import threading
import time
import weakref
from typing import Any, Callable, Dict, Iterable, Iterator, List, Mapping, Optional, Union

from ._log import getLogger
from . import _batch, _fork, _shared
from . import retry as _retry
from ._live import LiveSet
from ._fleet.index import ManagedTool, ToolIndex
from ._fleet.policy import output_limit, required_failure, required_starting, tool_timeout, wait_for
from ._fleet.scheduler import Scheduler
from ._fleet.server import (
    CLOSED, CONNECTING, DISABLED, FAILED, UNTRUSTED, WAITING, Host, ManagedServer, ReconnectPolicy, ServerStatus,
    release,
)
from ._fleet.toolcache import ToolCache
from ._rpc.engine import DEFAULT_TIMEOUT
from ._rpc.options import CallOptions, Deadline, ProgressCallback
from ._session.callbacks import PROGRESS_SIGNATURE, check_callback
from .cancel import CancelToken
from ._lifecycle import manager_refused, require_picklable
from .client import Client
from .config import Config, ServerConfig, TrustProject, discover, load, parse_server
from .exceptions import ConfigError, ForkedError, TransportClosed, UnknownServerError, UnknownToolError
from .types import CallToolResult, Tool

__all__ = ["ManagedTool", "Manager", "ReconnectPolicy", "ServerStatus"]

log = getLogger("mcpsync.manager")

DEFAULT_STARTUP_TIMEOUT = 2.0
DEFAULT_MAX_PARALLEL = 16
_CLOSE_TIMEOUT = 15.0
_EXIT_GRACE = 0.5

_live: "LiveSet[Manager]" = LiveSet()
_fork.on_child(_live.reset_after_fork)

ConfigSource = Union[str, "os.PathLike[str]", Mapping[str, Any], Config]
ToolsChanged = Callable[[str], None]


class Manager:
    """Runs many MCP servers and routes tool calls to them by qualified name.

    Args:
        config: a config file path, a dict (``{"mcpServers": {...}}``, ``{"servers": {...}}``
            or a bare ``{name: entry}`` map) or a :class:`~mcpsync.config.Config`;
            None starts empty (see :meth:`add_server`). :meth:`discover` reads the usual files.
        cache: the tools cache: True for the default directory, a path for another one,
            False for none.
        reconnect: a :class:`ReconnectPolicy`, or False to turn reconnecting off.
        timeout: the per-request timeout in seconds for servers whose config has no
            ``timeout`` (default 30 s); it also bounds each whole connect.
        max_parallel: how many servers connect at once (the size of the thread pool).
        on_tools_changed: ``fn(server_name)``, called after a server's tools were added,
            replaced or removed, on a manager thread (or the thread that made the change).
            Call :meth:`tools` from it for the new list.
        client_options: options for every server's :class:`~mcpsync.Client` (``roots``,
            ``sampling_handler``, ``elicitation_handler``, ``logging_handler``, ``client_info``).
        environ: the variables for ``${VAR}`` expansion (default ``os.environ``).
        after_fork: in a forked child, a manager started in the parent starts its servers anew on
            first use (``"reconnect"``) or raises ForkedError then (``"raise"``); the parent's servers
            are never touched. Pickled, it carries its config and settings and starts on first use.
        share: copies of this manager unpickled in one process (Dask or Ray tasks that receive it as
            an argument) share one live manager, its servers and connections (the default), instead of
            one each; see ``docs/deploying.md``. False (or ``MCPSYNC_SHARE_CONNECTIONS=0`` in the
            workers' environment): a manager per copy.
        idle_timeout: seconds a shared manager no copy holds any more stays open (None: 300); then
            it is closed.

    A config from :meth:`discover` may hold entries of project files the user has not
    trusted (``ServerConfig.trusted`` False): they are listed with state ``untrusted``,
    and never started, reconnected or given tools.

    Thread safety: every method may be called from any thread at once. Nothing
    blocks while holding the manager's lock; each call blocks only its own thread.
    ``close()`` ends every server process, thread and connection the manager started.
    """

    def __init__(
        self,
        config: Optional[ConfigSource] = None,
        *,
        cache: Union[bool, str, "os.PathLike[str]"] = True,
        reconnect: Union[bool, ReconnectPolicy] = True,
        timeout: Optional[float] = None,
        max_parallel: int = DEFAULT_MAX_PARALLEL,
        on_tools_changed: Optional[ToolsChanged] = None,
        client_options: Optional[Mapping[str, Any]] = None,
        environ: Optional[Mapping[str, str]] = None,
        after_fork: str = "reconnect",
        share: bool = True,
        idle_timeout: Optional[float] = None,
    ) -> None:
        check_callback(on_tools_changed, "on_tools_changed", "(server_name)")
        settings: Dict[str, Any] = {
            "cache": cache, "reconnect": reconnect, "timeout": timeout, "max_parallel": max_parallel,
            "on_tools_changed": on_tools_changed, "client_options": dict(client_options or {}),
            "environ": environ, "after_fork": _fork.check_after_fork(after_fork), "share": bool(share),
            "idle_timeout": _shared.check_idle_timeout(idle_timeout)}
        self._setup(load(config, environ=environ) if config is not None else Config(), settings, None)
        _fork.watch(self, "_after_fork_in_child")

    def _setup(self, config: Config, settings: Dict[str, Any],
               servers: Optional[Dict[str, Optional[ServerConfig]]]) -> None:
        """Build the manager's state from its settings; ``servers`` (name -> config, in order) is the set of
        servers to manage when it differs from ``config``'s (after add_server/remove_server)."""
        self.config = config
        self._settings = settings
        self.on_tools_changed: Optional[ToolsChanged] = settings["on_tools_changed"]
        self._environ: Optional[Mapping[str, str]] = settings["environ"]
        self._cond = threading.Condition(threading.RLock())
        self._scheduler = Scheduler("mcpsync-manager", settings["max_parallel"])
        reconnect, cache, timeout = settings["reconnect"], settings["cache"], settings["timeout"]
        if isinstance(reconnect, ReconnectPolicy):
            self._policy = reconnect
        else:
            self._policy = ReconnectPolicy(enabled=bool(reconnect))
        self.cache: Optional[ToolCache] = (ToolCache() if cache is True else None if cache is False or cache is None
                                           else ToolCache(cache))
        self._timeout = DEFAULT_TIMEOUT if timeout is None else timeout
        self._client_options: Dict[str, Any] = settings["client_options"]
        self._servers: Dict[str, ManagedServer] = {}
        self._index = ToolIndex()
        # What each ManagedServer may use of the manager: nothing else of it.
        self._host = Host(cond=self._cond, policy=self._policy, client_options=self._client_options,
                          submit=self._scheduler.submit, apply_tools_locked=self._apply_tools_locked,
                          tools_fetched=self._tools_fetched, server_failed=self._server_failed)
        self._started = False
        self._closed = False
        self._pending: Optional[str] = None  # after fork or unpickling: how the first use starts the servers
        _live.add(self)
        wanted = servers if servers is not None else {name: self.config.servers.get(name) for name in self.config.names}
        for name, server_config in wanted.items():  # a disabled one is listed, never started
            self._servers[name] = ManagedServer(self._host, name, server_config, self.config.errors.get(name),
                                                self._timeout)

    def _after_fork_in_child(self) -> None:
        """In a forked child (see :mod:`mcpsync._fork`): rebuilt from its settings with the same servers (the
        inherited clients turn inert by themselves); if it was started, its first use starts them here."""
        if self._closed:
            return
        started, inherited = self._started, self._servers  # kept: their clients are made inert by their own hooks
        self._setup(self.config, self._settings, {name: server.config for name, server in inherited.items()})
        self._inherited = inherited
        if started:
            self._pending = self._settings["after_fork"]

    def __reduce__(self) -> Any:
        """Pickles as its config, settings and servers (TypeError naming a handler that cannot be pickled);
        unpickled, its first use starts the servers if this manager was started."""
        with self._cond:
            servers = {name: server.config for name, server in self._servers.items()}
            started = (self._started or self._pending is not None) and not self._closed  # a copy of a copy too
        for name, value in [("on_tools_changed", self.on_tools_changed), *self._client_options.items()]:
            require_picklable("manager", name, value)
        args = (type(self), self.config, self._settings, servers, started)
        if not self._settings.get("share", True):
            return (_unpickle, args)
        return (_unpickle_shared, (_shared.key_of(self, args), *args))

    def _resume(self) -> None:
        """The first use after fork or unpickling: start the servers as the original manager had."""
        if self._pending == "raise":
            raise ForkedError(manager_refused())
        self.connect_all()

    @classmethod
    def discover(cls, cwd: Union[str, "os.PathLike[str]", None] = None, *, project: bool = True,
                 user: bool = True, trust_project: TrustProject = False, **options: Any) -> "Manager":
        """A manager for every server in the usual config files (see :func:`mcpsync.config.discover`).

        ``options`` are :class:`Manager`'s keyword arguments. Nothing is started
        until :meth:`connect_all` (or ``with``).

        Project files (``.mcp.json``, ``.cursor/mcp.json``, ``.vscode/mcp.json`` ... in
        ``cwd``) come with the repository, so their servers start only when trusted:

        - ``trust_project=False`` (the default): only files the trust record has, with
          their current content; the others' servers are listed with state
          ``untrusted`` and never started, and their ``${VAR}`` s are not expanded.
        - ``trust_project="ask"``: as False, but first ask on the terminal (stdin and
          stderr both terminals) about each untrusted file, listing what it would run;
          a yes is recorded. Without a terminal nothing is asked.
        - ``trust_project=True``: trust every project file for this manager, without
          recording it (for a job that runs a repository it already vetted).

        A config given to :class:`Manager` directly (a path, a dict) is trusted: you named it.
        """
        found = discover(cwd, project=project, user=user, environ=options.get("environ"),
                         trust_project=trust_project)
        return cls(found, **options)

    def __repr__(self) -> str:
        with self._cond:
            states = {name: server.state for name, server in self._servers.items()}
        return f"<Manager {states}{' closed' if self._closed else ''}>"

    def __del__(self, _is_handle: Callable[[Any], bool] = _shared.is_handle) -> None:
        # Unreachable and never closed: say so, and let the manager's idle threads end. The
        # clients close themselves as they are collected (with their own ResourceWarning).
        if _is_handle(self):  # a copy sharing a manager: its lease is released by its finalizer
            return
        if not getattr(self, "_closed", True):
            try:
                import warnings

                warnings.warn(f"unclosed {type(self).__name__}; call close() or use 'with'", ResourceWarning,
                              stacklevel=2)
                self._scheduler.stop(0.0)
            except Exception:
                pass

    def __enter__(self) -> "Manager":
        try:
            self.connect_all()
        except BaseException:  # a required server failed, say: nothing is left running
            self.close()
            raise
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    # -- starting -----------------------------------------------------------------------------

    def connect_all(self, startup_timeout: float = DEFAULT_STARTUP_TIMEOUT) -> Dict[str, ServerStatus]:
        """Start every server not yet started, in parallel; wait at most ``startup_timeout`` seconds.

        When the window ends, servers that connected serve live tools and failures are
        recorded in :meth:`status`; a server still starting serves its cached tools as
        deferred tools if the cache has them, else keeps connecting in the background
        and adds its tools when ready (``on_tools_changed`` tells you). Returns :meth:`status`.

        A server whose config says ``"required": true`` is waited for to the end of its attempt.

        Raises:
            TransportClosed: the manager is closed.
            ServerNotConnected: a required server did not connect (the others stay up; ``with`` closes all).
        """
        with self._cond:
            self._check_open()
            self._started = True
            started = [server for server in self._servers.values() if server.start_locked()]
            wait_for(self._cond, lambda: not any(s.state == CONNECTING for s in self._servers.values()),
                     startup_timeout)
            wait_for(self._cond, lambda: not required_starting(started, CONNECTING), None)
            failure = required_failure(started, (FAILED, CLOSED))
            self._pending = None
            pending = [server for server in started if server.state == CONNECTING]
        if failure is not None:
            raise failure
        for server in pending:
            self._serve_cached(server)
        return self.status()

    def _serve_cached(self, server: ManagedServer) -> None:
        if self.cache is None or server.config is None:
            return
        entries = self.cache.get(server.name, server.config.config_hash)
        if not entries:
            return
        tools = [Tool.from_dict(dict(entry)) for entry in entries]
        with self._cond:
            if not server.mark_deferred_locked() or not self._apply_tools_locked(server.name, tools, True):
                return  # it connected (or failed) meanwhile
        log.info("[%s] Still connecting; serving %d cached tools", server.name, len(tools))
        self._notify_tools_changed(server.name)

    def wait(self, timeout: Optional[float] = None, *, names: Optional[List[str]] = None) -> bool:
        """Block until no server (or none of ``names``) is connecting or reconnecting.

        Returns True if that happened within ``timeout`` seconds (None: no limit).
        """
        def done() -> bool:
            servers = [self._server_locked(n) for n in names] if names else list(self._servers.values())
            return not any(server.state in WAITING for server in servers)

        with self._cond:
            return wait_for(self._cond, done, timeout)

    def wait_until(self, predicate: Callable[[Dict[str, ServerStatus]], bool],
                   timeout: Optional[float] = None) -> bool:
        """Block until ``predicate(status())`` is true; False if ``timeout`` seconds pass first.

        The predicate is checked at every change of a server's state or tools, under the manager's lock:
        keep it quick and do not call the manager's blocking methods from it.
        """
        with self._cond:
            return wait_for(self._cond, lambda: predicate(self.status()), timeout)

    # -- tools and calls ----------------------------------------------------------------------

    def tools(self, server: Optional[str] = None) -> List[ManagedTool]:
        """The tools of every server that is connected or may still come (not failed or closed).

        In config order of the servers, then each server's own order. ``server``
        limits the list to one server.

        Raises:
            UnknownServerError: ``server`` is not configured.
        """
        if self._pending is not None:
            self._resume()
        with self._cond:
            if server is not None:
                self._server_locked(server)
            live = {name for name, s in self._servers.items()
                    if s.state not in (FAILED, CLOSED, UNTRUSTED, DISABLED) and (server is None or name == server)}
            return self._index.tools(live)

    def tool(self, qualified_name: str) -> ManagedTool:
        """The tool with that qualified name.

        Raises:
            UnknownToolError: no tool has that name (now).
        """
        if self._pending is not None:
            self._resume()
        with self._cond:
            found = self._index.get(qualified_name)
            if found is None:  # ToolNotAllowed for a tool its server's config filters out
                raise self._index.unknown(qualified_name)
        return found

    def call_tool(
        self,
        qualified_name: str,
        arguments: Optional[Mapping[str, Any]] = None,
        *,
        timeout: Optional[float] = None,
        cancel: Optional[CancelToken] = None,
        on_progress: Optional[ProgressCallback] = None,
        max_output: Optional[int] = None,
        retry: Optional[_retry.Retry] = None,
        idempotent: Optional[bool] = None,
    ) -> CallToolResult:
        """Call a tool by its qualified name; waits for its server if it is still (re)connecting.

        ``timeout`` is in seconds (default: the server's ``tool_timeout``, else its timeout) and is one
        deadline over the wait for the connection and the call together. A call that provably never
        reached the server (it was down, restarting, just lost) waits in that time for the reconnect
        and is sent again (once). A result with ``is_error`` is returned, not raised. ``max_output``
        (default: the server's) caps the result's size in bytes, as for :meth:`Client.call_tool`.
        ``retry`` and ``idempotent`` as for :meth:`Client.call_tool` (the tool's annotations come from the
        manager's tool list); each attempt gets the whole ``timeout``. The server's ``rate_limit`` and
        ``max_concurrency`` config keys hold here: a call beyond them waits for its turn, within ``timeout``.

        Raises:
            UnknownToolError: no tool has that name (ToolNotAllowed: its server's config filters it out).
            ServerNotConnected: its server failed (the text has its last error) or was closed.
            RequestTimeout: still not connected, or no answer, within ``timeout``.
            RequestCancelled, MCPError, TransportClosed: as :meth:`Client.call_tool`.
            TypeError: ``on_progress`` cannot be called as ``on_progress(progress, total, message)``.
        """
        check_callback(on_progress, "on_progress", PROGRESS_SIGNATURE)
        entry = self.tool(qualified_name)
        with self._cond:
            server = self._servers.get(entry.server)
            if server is None:
                raise UnknownToolError(qualified_name)
        budget = tool_timeout(server.config, server.timeout) if timeout is None else timeout
        limit = output_limit(server.config, max_output)

        def attempt(ids: Optional[Callable[[Any], None]]) -> CallToolResult:
            options = CallOptions(timeout=budget, cancel=cancel, on_progress=on_progress,
                                  deadline=Deadline.after(budget), max_output=limit, on_request_id=ids)
            # The one options value, deadline included, goes to the client whole (its public call_tool would
            # start a new clock); a call that never reached the server is sent again after the reconnect
            # (ManagedServer.call).
            result = server.call(lambda c, o: c._call_tool(entry.name, arguments, False, o),  # noqa: SLF001
                                 options, budget)
            assert isinstance(result, CallToolResult)
            return result

        if retry is None:
            return attempt(None)

        def repeatable() -> bool:
            if idempotent is not None:
                return idempotent
            annotations = entry.tool.annotations or {}
            return annotations.get("idempotentHint") is True or annotations.get("readOnlyHint") is True

        return _retry.run(attempt, retry, repeatable=repeatable, timeout=budget, cancel=cancel, tool=qualified_name)

    def map_tool(self, qualified_name: str, arguments: Iterable[Optional[Mapping[str, Any]]], *,
                 max_concurrency: int = 8, timeout: Optional[float] = None, return_exceptions: bool = False,
                 retry: Optional[_retry.Retry] = None, idempotent: Optional[bool] = None,
                 progress: _batch.ProgressArg = False) -> List[Any]:
        """:meth:`call_tool` once for each arguments mapping of ``arguments``; the results, in input order.

        As :meth:`Client.map_tool` (bounded pool, ``return_exceptions``, first failure cancels the calls in
        flight, ``progress``), each call made as :meth:`call_tool` makes it (waiting for its server, its
        ``rate_limit`` and ``max_concurrency``).

        Raises:
            UnknownToolError: no tool has that name (before anything is sent).
            ValueError: ``max_concurrency`` is not a whole number of at least 1.
            and the first failure of a call (unless ``return_exceptions``).
        """
        return list(self._imap(qualified_name, arguments, max_concurrency, timeout, return_exceptions, retry,
                               idempotent, progress, None))

    def imap_tool(self, qualified_name: str, arguments: Iterable[Optional[Mapping[str, Any]]], *,
                  max_concurrency: int = 8, timeout: Optional[float] = None, return_exceptions: bool = False,
                  retry: Optional[_retry.Retry] = None, idempotent: Optional[bool] = None,
                  progress: _batch.ProgressArg = False) -> Iterator[Any]:
        """:meth:`map_tool`, lazily, as :meth:`Client.imap_tool` (at most ``max_concurrency`` items read ahead)."""
        return self._imap(qualified_name, arguments, max_concurrency, timeout, return_exceptions, retry,
                          idempotent, progress, max_concurrency)

    def _imap(self, qualified_name: str, arguments: Iterable[Optional[Mapping[str, Any]]], max_concurrency: int,
              timeout: Optional[float], return_exceptions: bool, retry: Optional[_retry.Retry],
              idempotent: Optional[bool], progress: _batch.ProgressArg, read_ahead: Optional[int]) -> Iterator[Any]:
        _batch.check_concurrency(max_concurrency)
        self.tool(qualified_name)  # an unknown name fails here, not once per item

        def one(item: Optional[Mapping[str, Any]], cancel: CancelToken) -> CallToolResult:
            return self.call_tool(qualified_name, item, timeout=timeout, cancel=cancel, retry=retry,
                                  idempotent=idempotent)

        return _batch.imap(one, arguments, max_concurrency=max_concurrency, return_exceptions=return_exceptions,
                           read_ahead=read_ahead, progress=progress, description=qualified_name)

    def client(self, name: str, *, timeout: Optional[float] = None) -> Client:
        """The server's connected :class:`~mcpsync.Client`, waiting up to ``timeout`` seconds for it.

        The client is replaced on a reconnect: ask again rather than keeping it.

        Raises:
            UnknownServerError, ServerNotConnected, RequestTimeout: no such server; it failed
                or was closed; it did not connect within ``timeout``.
        """
        if self._pending is not None:
            self._resume()
        with self._cond:
            server = self._server_locked(name)
        budget = server.timeout if timeout is None else timeout
        return server.wait_client(Deadline.after(budget), None, budget)

    def refresh_tools(self, name: str) -> List[ManagedTool]:
        """Fetch ``name``'s tool list again now (and update the cache); returns its tools.

        Raises:
            UnknownServerError, ServerNotConnected: as for :meth:`client`; and whatever
                ``tools/list`` raises.
        """
        with self._cond:
            server = self._server_locked(name)
            if server.client is None:
                raise server.not_connected_locked()
        server.refresh()
        return self.tools(name)

    # -- status ---------------------------------------------------------------------------------

    @property
    def servers(self) -> List[str]:
        """The managed servers' names (valid or not, disabled ones too), in config order."""
        with self._cond:
            return list(self._servers)

    def status(self) -> Dict[str, ServerStatus]:
        """A snapshot of every server's status, in config order."""
        with self._cond:
            return {name: self._status_locked(server) for name, server in self._servers.items()}

    def server_status(self, name: str) -> ServerStatus:
        """One server's status. Raises UnknownServerError."""
        with self._cond:
            return self._status_locked(self._server_locked(name))

    def _status_locked(self, server: ManagedServer) -> ServerStatus:
        return server.status_locked(self._index.count(server.name))

    # -- changing the set of servers ------------------------------------------------------------

    def add_server(self, name: str, config: Union[ServerConfig, Mapping[str, Any]], *,
                   connect: bool = True) -> None:
        """Add a server; it starts connecting at once if the manager is started and ``connect``.

        ``config`` is an ``mcpServers`` entry (``${VAR}`` is expanded) or a ServerConfig;
        one with ``trusted=False`` is added in state ``untrusted`` and never started.

        Raises:
            ConfigError: the entry is invalid, or a server of that name exists.
            TransportClosed: the manager is closed.
        """
        if not isinstance(config, ServerConfig):
            config = parse_server(name, dict(config), environ=self._environ)
        with self._cond:
            self._check_open()
            if name in self._servers:
                raise ConfigError(f'server "{name}" already exists; remove it first', server=name)
            server = ManagedServer(self._host, name, config, None, self._timeout)
            self._servers[name] = server
            if self._started and connect and config.enabled:
                server.start_locked()

    def remove_server(self, name: str) -> None:
        """Close and forget a server (even one still connecting); its tools go with it.

        Raises:
            UnknownServerError: no server has that name.
        """
        with self._cond:
            server = self._server_locked(name)
            del self._servers[name]
            clients = server.close_locked()
            had_tools = self._index.drop_locked(self._servers, name)
        for client in clients:
            release(client)
        if had_tools:
            self._notify_tools_changed(name)

    def reconnect(self, name: str, *, wait: bool = True, timeout: Optional[float] = None) -> ServerStatus:
        """Close ``name``'s connection (or attempt) and connect again now, even if it had failed.

        With ``wait`` (the default) blocks until the attempt ends (at most ``timeout``,
        default the server's timeout) and returns the status.

        Raises:
            UnknownServerError: no server has that name.
            ConfigError: its config is invalid.
            ServerNotConnected: the attempt failed (only with ``wait``).
            TransportClosed: the manager is closed.
        """
        with self._cond:
            self._check_open()
            server = self._server_locked(name)
            self._started = True
            old = server.force_locked()
            generation = server.generation
        for client in old:
            release(client)
        if not wait:
            return self.server_status(name)
        budget = server.timeout if timeout is None else timeout
        deadline = time.monotonic() + budget
        with self._cond:
            while server.generation == generation and server.state in WAITING:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self._cond.wait(remaining)
            if server.state in (FAILED, CLOSED):
                raise server.not_connected_locked()
            return self._status_locked(server)

    def close(self) -> None:
        """Close every server in parallel, including connects still in flight. Idempotent.

        Pending and later calls fail (``TransportClosed``, ``ServerNotConnected``);
        every process, thread and connection the manager started is ended and joined.
        A manager still open at interpreter exit is closed then. A copy that shares a manager
        (unpickled with ``share``) lets go of it instead, as :meth:`Client.close` says.
        """
        if _shared.detach(self, self._closed_copy):
            return
        self._close(None)

    def _closed_copy(self) -> None:
        """A released shared copy (its attributes now its own): built anew around the same servers, never
        started, then closed (its calls raise as a closed manager's)."""
        self._setup(self.config, self._settings, {name: server.config for name, server in self._servers.items()})
        self._close(None)

    def _close(self, grace: Optional[float]) -> None:
        with self._cond:
            if self._closed:
                return
            self._closed = True
            clients: List[Client] = []
            for server in self._servers.values():
                clients.extend(server.close_locked())
        _live.discard(self)
        if grace is not None:
            for client in clients:
                if hasattr(client.transport, "shutdown_timeout"):
                    setattr(client.transport, "shutdown_timeout",
                            min(grace, getattr(client.transport, "shutdown_timeout")))
        threads = [threading.Thread(target=release, args=(client,), name=f"mcpsync-close[{client.name}]", daemon=True)
                   for client in clients]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(_CLOSE_TIMEOUT)
        stuck = self._scheduler.stop(_CLOSE_TIMEOUT)
        if stuck:
            log.warning("Manager threads still busy after close: %s", stuck)

    @property
    def closed(self) -> bool:
        """True once :meth:`close` was called."""
        return self._closed

    # -- for ManagedServer (through its Host) ------------------------------------------------------

    def _apply_tools_locked(self, name: str, tools: List[Tool], deferred: bool) -> bool:
        """Replace one server's slice of the tools (never touching another's); lock held."""
        server = self._servers.get(name)
        if server is None or not self._index.apply_locked(self._servers, name, tools, deferred, server.config):
            return False
        self._cond.notify_all()  # wait_until() predicates may look at the tools
        return True

    def _tools_fetched(self, server: ManagedServer, tools: List[Tool]) -> None:
        """A server's live tool list arrived (outside the lock): update the cache, tell the user."""
        if self.cache is not None and server.config is not None:
            self.cache.put(server.name, server.config.config_hash, [tool.to_dict() for tool in tools])
        self._notify_tools_changed(server.name)

    def _server_failed(self, server: ManagedServer) -> None:
        with self._cond:
            had_tools = self._index.has(server.name)
        if had_tools:
            self._notify_tools_changed(server.name)

    def _notify_tools_changed(self, name: str) -> None:
        callback = self.on_tools_changed
        if callback is not None:
            try:
                callback(name)
            except Exception:
                log.exception("on_tools_changed callback raised")

    # -- helpers ------------------------------------------------------------------------------

    def _server_locked(self, name: str) -> ManagedServer:
        server = self._servers.get(name)
        if server is None:
            raise UnknownServerError(name, list(self._servers))
        return server

    def _check_open(self) -> None:
        if self._closed:
            raise TransportClosed("Transport closed: the manager is closed; make a new one")


def _unpickle(cls: Any, config: Config, settings: Dict[str, Any], servers: Dict[str, Optional[ServerConfig]],
              started: bool) -> Manager:
    manager: Manager = cls.__new__(cls)
    manager._setup(config, settings, servers)  # noqa: SLF001 the manager's own unpickler
    _fork.watch(manager, "_after_fork_in_child")
    if started:
        manager._pending = "reconnect"  # noqa: SLF001 likewise
    return manager


def _unpickle_shared(key: bytes, cls: Any, config: Config, settings: Dict[str, Any],
                     servers: Dict[str, Optional[ServerConfig]], started: bool) -> Manager:
    """A copy of a manager pickled with ``share``: a handle on this process's manager for ``key``."""
    if not _shared.enabled():
        return _unpickle(cls, config, settings, servers, started)

    def build() -> Any:
        return (_unpickle(cls, config, settings, servers, started),
                settings.get("idle_timeout", _shared.DEFAULT_IDLE_TIMEOUT))

    core, lease = _shared.acquire(key, build, _usable)
    handle: Manager = _shared.lend(core, lease, key)
    return handle


def _usable(core: Manager) -> bool:
    """Whether new copies may share ``core``: not closed (it reconnects its servers by itself)."""
    return not core.closed


def _close_all_at_exit() -> None:
    """Close managers left open, before the transports' own exit hook closes their connections
    (which would otherwise look like crashes and start reconnects). atexit runs hooks in
    reverse order of registration, and this module registers after the transports."""
    for manager in _live.snapshot():
        manager._close(_EXIT_GRACE)  # noqa: SLF001 same module: the exit hook closes with a short grace


atexit.register(_close_all_at_exit)
