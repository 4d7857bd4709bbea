"""Client: one MCP server behind blocking, typed methods (the facade: lifecycle, one method per request).

Its parts live in :mod:`mcpsync._session` (see ``docs/architecture.md``); threads, pipes and sockets are
the transport's. Every public method builds its ``CallOptions`` once and hands it down whole.
"""

from __future__ import annotations

import threading
import time
from typing import (TYPE_CHECKING, Any, Callable, Dict, Iterable, Iterator, List, Literal, Mapping, Optional,
                    Sequence, Union, overload)

from ._log import getLogger
from ._protocol.methods import NOTIFY_ROOTS_LIST_CHANGED
from . import _batch, _fork, _lifecycle, _shared, capabilities
from . import retry as _retry
from ._rpc.jsonrpc import JSONObject
from ._rpc.options import CallOptions, Deadline, ProgressCallback
from ._session import era as _era
from ._session.limits import Limits
from ._session import mrtr as _mrtr
from ._session import telemetry as _telemetry
from ._session.notifications import LOG_LEVELS, NotificationHandler, NotificationRouter
from ._session.session import call_options
from ._features.spill import capped
from ._features import prompts, resources, utilities
from ._features.subscriptions import Subscription, UpdateCallback
from ._features.tasks import Task, TaskInfo, list_tasks
from ._features.tools import call_tool_limited, call_tool_retried
from .transports._factory import Target, transport_for
from ._version import __version__
from .cancel import CancelToken
from .exceptions import TransportClosed
from .handlers import LogMessage, RootsSource
from .transports import Transport
from .transports.base import close_unclosed, safe_name
from .skills import LoadedSkill, Skill, SkillContent
from .types import (CallToolResult, CompleteResult, GetPromptResult, Implementation, Prompt, ReadResourceResult,
                    Resource, ResourceTemplate, Tool)

if TYPE_CHECKING:
    from ._features.skills import SkillRef

__all__ = ["Client", "connect"]

Handler = Callable[[Any], Any]


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
        timeout: the default per-request timeout in seconds, for every call given
            ``timeout=None`` (the transport's own default otherwise: 30 s unless it was
            built with another).
        send_baggage: also send the calling thread's OpenTelemetry baggage in each request's
            ``_meta`` (off by default: baggage is the application's own data, and the server
            a third party; the trace context, ``traceparent`` and ``tracestate``, is always sent).
        telemetry: with an OpenTelemetry tracer or meter provider set by the application, each
            request and notification is a span and ``mcp.client.operation.duration`` is recorded,
            as the semantic conventions for MCP say (see ``docs/telemetry.md``); False turns both
            off for this client (the caller's own trace context still goes into ``_meta``).
        after_fork: a forked child's first call opens a new connection (``"reconnect"``) or raises
            ForkedError (``"raise"``), never touching the parent's; see ``docs/deploying.md``.
        rate_limit: at most this many tool calls a second to this server (a token bucket shared by
            every thread calling through this client); a call beyond it waits, within its timeout.
        max_concurrency: at most this many tool calls in flight to this server at once; a call
            beyond it waits for a free slot, within its timeout. Waiting past the timeout raises
            RequestTimeout, as a slow answer does (see ``docs/scale.md``).
        share: copies of this client unpickled in one process (Dask or Ray tasks that receive it as
            an argument) share one live connection (the default), instead of one each; see
            ``docs/deploying.md``. Set False, or ``MCPSYNC_SHARE_CONNECTIONS=0`` in the workers'
            environment, for a connection per copy.
        idle_timeout: seconds a shared connection no copy holds any more stays open for the next
            one (None: 300); then it is closed (its stdio server ended).

    Handlers run on worker threads, never on the reader thread, and may call
    the client; the same handlers serve legacy servers' requests and modern
    servers' ``input_required`` results. Every capability is advertised only
    when its handler is given.

    Thread safety: every method may be called from any number of threads at once; each call blocks
    its own thread only. Concurrent :meth:`connect` calls run one handshake: the others wait for it,
    then return the connected client (or, when it failed, raise :class:`~mcpsync.TransportClosed`),
    and :meth:`on_notification` may register and remove handlers from any thread, even a handler.
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
        after_fork: str = "reconnect",
        send_baggage: bool = False,
        telemetry: bool = True,
        rate_limit: Optional[float] = None,
        max_concurrency: Optional[int] = None,
        share: bool = True,
        idle_timeout: Optional[float] = None,
    ) -> None:
        if timeout is not None:
            transport.timeout = timeout
        if log_level is not None and log_level not in LOG_LEVELS:
            raise ValueError(f"Unknown log level {log_level!r}; expected one of {', '.join(LOG_LEVELS)}")
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
        self.send_baggage = send_baggage
        self.telemetry = telemetry
        self.tasks = tasks
        self.max_input_rounds = max_input_rounds
        self.server_log = getLogger(f"mcpsync.server.{safe_name(transport.name)}")
        self.after_fork = _fork.check_after_fork(after_fork)
        self.share = bool(share)
        self.idle_timeout = _shared.check_idle_timeout(idle_timeout)
        self.rate_limit = rate_limit
        self.max_concurrency = max_concurrency
        self._limits = self._new_limits(transport.name)
        self._assemble(transport, log_level, NotificationRouter(transport.name, self.server_log))
        _fork.watch(self, "_after_fork_in_child")

    def _assemble(self, transport: Transport, log_level: Optional[str], router: NotificationRouter) -> None:
        (self._handshake, self._session, self._router, self._subs, self._streams, self._lists, self._inbound,
         self._tool_calls, self._skills) = _lifecycle.build(self, transport, log_level, router)
        self._connect_lock = threading.Lock()

    def _new_limits(self, name: str) -> Optional[Limits]:
        if self.rate_limit is None and self.max_concurrency is None:
            return None
        return Limits(name, self.rate_limit, self.max_concurrency)

    def _after_fork_in_child(self) -> None:
        """In a forked child: new parts around a copy of the transport (see :mod:`mcpsync._lifecycle`)."""
        self._limits = self._new_limits(self.name)  # the parent's lock may be held by a thread not copied
        old = self._session
        if not old.closed:
            self._assemble(_lifecycle.child_transport(old.transport), old.log_level, self._router.inherited())
            self._session.first_use = _lifecycle.forked_first_use(self, _fork.parent_pid) if old.ready else None

    def __reduce__(self) -> Any:
        """Pickles as its transport's settings, options and handlers; unpickled, its first call connects.

        With ``share`` (the default) they travel with a digest of them, the key under which the copies
        unpickled in one process share one connection (see :mod:`mcpsync._shared`).
        """
        args = (type(self), self.transport, _lifecycle.pickled_options(self, self._session.log_level))
        if not self.share:
            return (_unpickle, args)
        return (_unpickle_shared, (_shared.key_of(self, args), *args))

    def __repr__(self) -> str:
        state = "connected" if self.connected else ("closed" if self._session.closed else "not connected")
        server = f" server={self.server_info.name!r}" if self.server_info else ""
        return f"<Client {self.name!r}{server} {state}>"

    def __enter__(self) -> "Client":
        if not self._session.ready:
            self.connect()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def __del__(self, _close: Callable[[Any], None] = close_unclosed,
                _is_handle: Callable[[Any], bool] = _shared.is_handle) -> None:
        # close_unclosed is bound as a default: at interpreter exit this module's globals may
        # already be None when the finalizer runs (seen on free-threaded builds).
        if _is_handle(self):  # a copy sharing a connection: its lease is released by its finalizer
            return
        session = getattr(self, "_session", None)
        if session is not None and session.ready and not session.closed:
            _close(self)

    # -- what the handshake settled ---------------------------------------------------------

    @property
    def transport(self) -> Transport:
        """The connection (after a fallback, the transport connecting moved to)."""
        return self._session.transport

    @property
    def name(self) -> str:
        """The server's label (from the config or the command)."""
        return self._session.name

    @property
    def connected(self) -> bool:
        """True after a successful handshake (or ``server/discover``), until the connection closes."""
        return self._session.connected

    @property
    def modern(self) -> bool:
        """True when the server speaks a modern (2026-07-28) version: no handshake, ``_meta`` on every request."""
        return self._session.modern

    @property
    def era(self) -> Optional[str]:
        """``"modern"`` or ``"legacy"`` once connected (None before)."""
        return _era.era_of(self._session.protocol_version)

    @property
    def protocol_version(self) -> Optional[str]:
        """The protocol version in use (None before connecting)."""
        return self._session.protocol_version

    @property
    def server_info(self) -> Optional[Implementation]:
        """The server's name and version, as it gave them."""
        return self._session.server_info

    @property
    def server_capabilities(self) -> capabilities.ServerCapabilities:
        """The server's capabilities, typed and still a dict (empty before connecting)."""
        return self._session.server_capabilities

    @property
    def instructions(self) -> Optional[str]:
        """The server's instructions for the model, if it gave any."""
        return self._session.instructions

    # -- lifecycle ------------------------------------------------------------------

    def connect(self, *, timeout: Optional[float] = None) -> "Client":
        """Open the transport, settle the protocol version, and learn about the server; returns self.

        With ``protocol="auto"`` the client finds out which era the server
        speaks (see the class docs); a legacy server then gets the ``initialize``
        handshake, a modern one ``server/discover``. Either way
        ``protocol_version``, ``server_info``, ``server_capabilities`` and
        ``instructions`` are set afterwards.

        ``timeout`` is in seconds and bounds the whole connect: the era probe, the
        handshake, a fallback to another transport and the requests that follow
        it (log level, list-changed stream) share one deadline. ``None`` gives the
        whole connect the client's default per-request timeout (``Client(timeout=)``
        or the transport's). Calls from several threads at once run one handshake.

        Raises:
            ConnectError: the server could not be started or reached.
            TransportClosed: the server went away during the handshake (the
                message carries its exit status and last stderr lines), or this
                client was closed, or another thread's connect failed.
            UnsupportedProtocolVersion: the server speaks no version we speak.
            RequestTimeout: the server did not answer in time.
            MCPError: the server refused ``initialize`` or ``server/discover``.
        In every failure case the transport is closed before the error is raised.
        """
        session = self._session
        if session.ready and not session.closed:
            return self
        with self._connect_lock:  # one handshake, however many threads ask for it
            if session.closed:
                raise TransportClosed("Transport closed: this client was closed; make a new one")
            if session.ready:
                return self
            budget = timeout if timeout is not None else session.transport.timeout
            session.connect_started = time.monotonic()
            deadline = self._handshake.connect(session, self._inbound.attach, self.protocol, self.probe_timeout,
                                               Deadline.after(budget), budget)  # moved on past a login
            session.settle(connected=True)
            session.ready = True  # last: a thread that sees it sees a settled session
            wanted = self._inbound.wanted(session.transport, session.server_capabilities)
            self._streams.after_connect(self._router.go_live(), wanted, deadline)
        return self

    def close(self) -> None:
        """Close the connection (and end a stdio server). Idempotent; safe from any thread.

        A copy that shares a connection (unpickled with ``share``) lets go of it instead: the others
        go on using it; the last one's close starts its ``idle_timeout``. This copy's calls then raise
        :class:`~mcpsync.TransportClosed`.

        A client that connected records ``mcp.client.session.duration`` (when an OpenTelemetry
        meter provider is set), once; with an ``error.type`` when the connection was already lost.
        """
        if _shared.detach(self, self._closed_copy):
            return
        session = self._session
        lost = session.ready and not session.closed and not self.transport.connected
        session.closed = True
        self._subs.close()
        self.transport.close()
        started, session.connect_started = session.connect_started, None
        if started is not None and session.ready:
            _telemetry.session_ended(session, time.monotonic() - started, lost)

    def _closed_copy(self) -> None:
        """A released shared copy (its attributes now its own): closed, around an unopened transport."""
        self._assemble(self.transport.replica(), None, NotificationRouter(self.name, self.server_log))
        self._session.closed = True

    def on_notification(self, method: str, handler: NotificationHandler) -> Callable[[], None]:
        """Call ``handler(params)`` for every ``method`` notification (``"*"`` for all).

        Handlers run in arrival order on the dispatcher thread; keep them quick.
        On a modern server, a handler for a ``list_changed`` notification
        opens a ``subscriptions/listen`` stream for it. Returns a function
        that removes the handler. Safe from any thread, at any time.
        """
        remove, live = self._router.add(method, handler)
        if live and not self._session.closed:
            self._streams.handler_added(method)
        return remove

    def on_session_renewed(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call ``callback()`` each time an expired (legacy, HTTP) session is started again in place: a new
        ``initialize``, maybe a restarted server with other tools, so cached lists are dropped. It runs on the
        thread whose call found the session expired, before that call is sent again: keep it quick.
        Returns a function that removes it; kept, as handlers are, in a forked child. Safe from any thread."""
        return self._router.add_renewal(callback)

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
            _telemetry.notify(self._session, NOTIFY_ROOTS_LIST_CHANGED)

    # -- requests --------------------------------------------------------------------

    def request(self, method: str, params: Optional[JSONObject] = None, *, timeout: Optional[float] = None,
                cancel: Optional[CancelToken] = None, on_progress: Optional[ProgressCallback] = None,
                reset_timeout_on_progress: bool = False, max_total_timeout: Optional[float] = None) -> Any:
        """Send any JSON-RPC request and return its raw ``result``.

        ``timeout`` is in seconds and bounds this one request, its write and its
        wait (``None``: the client's default per-request timeout, which is
        ``Client(timeout=)`` or else the transport's own, 30 s unless the transport
        was built with another; ``math.inf``: wait forever).
        ``on_progress(progress, total, message)`` receives the server's progress
        notifications on the dispatcher thread; with ``reset_timeout_on_progress``
        each one restarts ``timeout``, never past ``max_total_timeout`` seconds in all.

        The other typed methods take the same ``timeout``, ``cancel`` and
        ``on_progress``, with the same meaning, unless their docs say otherwise.

        Raises:
            MCPError, RequestTimeout, RequestCancelled, TransportClosed: an error answer, no
                answer in time, a fired cancel token, a lost connection.
        """
        return self._session.call(method, params, call_options(timeout, cancel, on_progress,
                                                               reset_timeout_on_progress, max_total_timeout))

    def ping(self, *, timeout: Optional[float] = None, cancel: Optional[CancelToken] = None) -> None:
        """Check the server answers (``ping``; ``server/discover`` on modern servers, which have no ping).

        Raises like :meth:`request`.
        """
        utilities.ping(self._session, call_options(timeout, cancel))

    # tools

    def list_tools(self, *, refresh: bool = False, timeout: Optional[float] = None,
                   cancel: Optional[CancelToken] = None,
                   on_progress: Optional[ProgressCallback] = None) -> List[Tool]:
        """Every tool, across all pages.

        When the server promises ``tools/list_changed`` notifications, the list
        is cached until one arrives; a modern server's list is cached for its
        ``ttlMs`` (``refresh=True`` skips the cache). Over modern HTTP, a tool
        with an invalid ``x-mcp-header`` annotation is left out, with a WARNING.
        ``timeout`` bounds each page's request.

        Raises:
            CapabilityError: the server offers no tools.
            ProtocolError: the server repeated a pagination cursor.
        """
        return self._lists.tools(refresh, call_options(timeout, cancel, on_progress))

    def iter_tools(self, *, timeout: Optional[float] = None,
                   cancel: Optional[CancelToken] = None) -> Iterator[Tool]:
        """Yield tools page by page, fetching the next page only when needed."""
        return self._lists.iter_tools(call_options(timeout, cancel))

    @overload
    def call_tool(self, name: str, arguments: Optional[Mapping[str, Any]] = None, *, task: Literal[False] = False,
                  timeout: Optional[float] = None, cancel: Optional[CancelToken] = None,
                  on_progress: Optional[ProgressCallback] = None, reset_timeout_on_progress: bool = False,
                  max_total_timeout: Optional[float] = None, max_output: Optional[int] = None,
                  retry: Optional[_retry.Retry] = None, idempotent: Optional[bool] = None) -> CallToolResult: ...

    @overload
    def call_tool(self, name: str, arguments: Optional[Mapping[str, Any]] = None, *, task: Literal[True],
                  timeout: Optional[float] = None, cancel: Optional[CancelToken] = None,
                  on_progress: Optional[ProgressCallback] = None, reset_timeout_on_progress: bool = False,
                  max_total_timeout: Optional[float] = None, max_output: Optional[int] = None,
                  retry: Optional[_retry.Retry] = None, idempotent: Optional[bool] = None) -> Task: ...

    def call_tool(self, name: str, arguments: Optional[Mapping[str, Any]] = None, *, task: bool = False,
                  timeout: Optional[float] = None, cancel: Optional[CancelToken] = None,
                  on_progress: Optional[ProgressCallback] = None, reset_timeout_on_progress: bool = False,
                  max_total_timeout: Optional[float] = None, max_output: Optional[int] = None,
                  retry: Optional[_retry.Retry] = None, idempotent: Optional[bool] = None,
                  ) -> Union[CallToolResult, Task]:
        """Call a tool and return its result.

        A result with ``is_error`` set is returned, not raised; call ``result.raise_for_error()`` to raise
        :class:`~mcpsync.ToolError`.

        With ``task=True`` the tool runs as a task and a :class:`~mcpsync.Task` handle is returned at once
        (2025-11-25: the tool must allow it, by its ``execution.taskSupport``; 2026-07-28: the server
        decides, and a call it answers at once gives an already completed handle). A tool whose
        ``taskSupport`` is ``"required"``, or a modern server that answers with a task, runs as a task
        inside a plain call too: the call waits for it.

        ``timeout`` is in seconds and bounds the whole call: for a plain call its one request (as in
        :meth:`request`); for a call that runs as a task inside a plain call, the request and every poll
        of the wait that follows, under one deadline (``None``: the client's default per-request timeout,
        for the whole wait). With ``task=True`` it bounds only the creating request.

        ``max_output`` caps the result's size in bytes: a larger result keeps its head and a note, and is
        a :class:`~mcpsync.SpilledResult` whose ``spill_path`` file holds all of it (docs/config.md).

        ``retry=mcpsync.Retry(...)`` sends a failed call again, but only when that cannot run it twice for
        nothing: when it provably never ran (refused before any byte of it was sent, or HTTP 429/503,
        whose ``Retry-After`` is honoured), or when the tool is declared safe to repeat (its listed
        annotations say ``idempotentHint`` or ``readOnlyHint``; ``idempotent=True`` says so for it,
        ``idempotent=False`` overrides the annotations). Each attempt gets the whole ``timeout``. An error
        not retried says why in its ``not_retried`` attribute (see ``docs/scale.md``).

        Raises:
            MCPError: the server refused the call (unknown tool, bad arguments).
            RequestTimeout, RequestCancelled, TransportClosed: as for :meth:`request`.
            CapabilityError: the server offers no tools.
            MCPSyncError: a result over ``max_output`` could not be spilled (also an OSError; ``.result``).
        """
        options = capped(call_options(timeout, cancel, on_progress, reset_timeout_on_progress, max_total_timeout),
                         max_output)
        if retry is None:
            return self._call_tool(name, arguments, task, options)
        return call_tool_retried(lambda again: self._call_tool(name, arguments, task, again), self._tool_calls, name,
                                 options, retry, idempotent, self.transport.timeout)

    def _call_tool(self, name: str, arguments: Optional[Mapping[str, Any]], task: bool,
                   options: CallOptions) -> Union[CallToolResult, Task]:
        """:meth:`call_tool` with its options built (the manager's way in: ``options.deadline``, when set, ends
        a task-backed wait), under the client's ``rate_limit`` and ``max_concurrency`` if it has them."""
        return call_tool_limited(self._session, self._tool_calls, self._limits, name, arguments, task, options,
                                 always=self.tasks)

    def map_tool(self, name: str, arguments: Iterable[Optional[Mapping[str, Any]]], *, max_concurrency: int = 8,
                 timeout: Optional[float] = None, return_exceptions: bool = False,
                 retry: Optional[_retry.Retry] = None, idempotent: Optional[bool] = None,
                 progress: _batch.ProgressArg = False) -> List[Any]:
        """Call tool ``name`` once for each arguments mapping of ``arguments``; the results, in input order.

        At most ``max_concurrency`` calls are in flight at once, each on a thread of a pool this call
        starts and ends (the client's own ``max_concurrency`` and ``rate_limit``, when set, still hold:
        calls beyond them wait). ``timeout``, ``retry`` and ``idempotent`` apply to each call as in
        :meth:`call_tool`. A result with ``is_error`` is a result, as in :meth:`call_tool`.

        With ``return_exceptions=True`` a call that raised is its exception in the list. Otherwise the
        first failure cancels the calls still in flight (their servers are sent ``notifications/cancelled``),
        sends no more, and is raised once they have ended. ``progress=True`` draws a progress bar (tqdm's,
        in a terminal or a notebook, with the ``progress`` extra; else a text line on stderr); a callable
        is called as ``progress(done, total, None)`` instead.

        Raises:
            ValueError: ``max_concurrency`` is not a whole number of at least 1.
            and the first failure of a call, as :meth:`call_tool` raises it (unless ``return_exceptions``).
        """
        return list(self._imap(name, arguments, max_concurrency, timeout, return_exceptions, retry, idempotent,
                               progress, None))

    def imap_tool(self, name: str, arguments: Iterable[Optional[Mapping[str, Any]]], *, max_concurrency: int = 8,
                  timeout: Optional[float] = None, return_exceptions: bool = False,
                  retry: Optional[_retry.Retry] = None, idempotent: Optional[bool] = None,
                  progress: _batch.ProgressArg = False) -> Iterator[Any]:
        """:meth:`map_tool`, lazily: yields each result, in input order, as soon as it and those before it are in.

        ``arguments`` may be an endless generator: at most ``max_concurrency`` items are read ahead of the
        last one yielded, and nothing is read (no thread started) before the first ``next()``. Closing the
        iterator early (``close()``, or leaving a ``with contextlib.closing(...)`` block) cancels the calls in
        flight and ends the threads; so does a failure, which is raised from ``next()``.
        """
        return self._imap(name, arguments, max_concurrency, timeout, return_exceptions, retry, idempotent,
                          progress, max_concurrency)

    def _imap(self, name: str, arguments: Iterable[Optional[Mapping[str, Any]]], max_concurrency: int,
              timeout: Optional[float], return_exceptions: bool, retry: Optional[_retry.Retry],
              idempotent: Optional[bool], progress: _batch.ProgressArg, read_ahead: Optional[int]) -> Iterator[Any]:
        _batch.check_concurrency(max_concurrency)

        def one(item: Optional[Mapping[str, Any]], cancel: CancelToken) -> CallToolResult:
            result = self.call_tool(name, item, timeout=timeout, cancel=cancel, retry=retry, idempotent=idempotent)
            return result

        return _batch.imap(one, arguments, max_concurrency=max_concurrency, return_exceptions=return_exceptions,
                           read_ahead=read_ahead, progress=progress, description=name)

    def list_tasks(self, *, timeout: Optional[float] = None, cancel: Optional[CancelToken] = None) -> List[TaskInfo]:
        """The server's tasks (``tasks/list``, 2025-11-25; the 2026 tasks extension has no list).

        Raises:
            CapabilityError: the server does not offer ``tasks.list``.
        """
        return list_tasks(self._session, self._lists.pages, call_options(timeout, cancel))

    # resources

    def list_resources(self, *, refresh: bool = False, timeout: Optional[float] = None,
                       cancel: Optional[CancelToken] = None,
                       on_progress: Optional[ProgressCallback] = None) -> List[Resource]:
        """Every resource, across all pages (cached like :meth:`list_tools`)."""
        return resources.list_resources(self._session, self._lists, refresh, call_options(timeout, cancel, on_progress))

    def list_resource_templates(self, *, timeout: Optional[float] = None,
                                cancel: Optional[CancelToken] = None,
                                on_progress: Optional[ProgressCallback] = None) -> List[ResourceTemplate]:
        """Every resource template, across all pages."""
        return resources.list_templates(self._session, self._lists, call_options(timeout, cancel, on_progress))

    def read_resource(self, uri: str, *, timeout: Optional[float] = None, cancel: Optional[CancelToken] = None,
                      on_progress: Optional[ProgressCallback] = None) -> ReadResourceResult:
        """Read one resource.

        Raises:
            ResourceNotFound: there is no such resource (``-32002`` or ``-32602``, over every
                transport and in every era).
        """
        return resources.read(self._session, uri, call_options(timeout, cancel, on_progress))

    def subscribe(self, uri: str, callback: Optional[UpdateCallback] = None, *,
                  timeout: Optional[float] = None) -> Subscription:
        """Get ``callback(updated_uri)`` for every update of ``uri`` (or of a resource below it).

        Legacy servers: ``resources/subscribe``; modern servers: a
        ``subscriptions/listen`` stream. Returns a :class:`~mcpsync.Subscription`;
        its ``close()`` (or a ``with`` block) stops the updates. Callbacks run
        on the dispatcher thread; keep them quick. ``timeout`` bounds the
        subscribe request (legacy) or the wait for the stream's acknowledgement (modern).

        Raises:
            CapabilityError: the server offers no subscriptions, or did not accept this one.
        """
        return resources.subscribe(self._session, self._subs, uri, callback, timeout)

    def subscribe_resource(self, uri: str, *, timeout: Optional[float] = None,
                           cancel: Optional[CancelToken] = None) -> None:
        """Ask for ``notifications/resources/updated`` about ``uri`` (see :meth:`subscribe` for a handle)."""
        resources.subscribe_resource(self._session, self._subs, self._streams, uri, call_options(timeout, cancel))

    def unsubscribe_resource(self, uri: str, *, timeout: Optional[float] = None,
                             cancel: Optional[CancelToken] = None) -> None:
        """Stop the updates :meth:`subscribe_resource` asked for."""
        resources.unsubscribe_resource(self._session, self._subs, self._streams, uri, call_options(timeout, cancel))

    # prompts

    def list_prompts(self, *, refresh: bool = False, timeout: Optional[float] = None,
                     cancel: Optional[CancelToken] = None,
                     on_progress: Optional[ProgressCallback] = None) -> List[Prompt]:
        """Every prompt, across all pages (cached like :meth:`list_tools`)."""
        return prompts.list_prompts(self._session, self._lists, refresh, call_options(timeout, cancel, on_progress))

    def get_prompt(self, name: str, arguments: Optional[Mapping[str, str]] = None, *,
                   timeout: Optional[float] = None, cancel: Optional[CancelToken] = None,
                   on_progress: Optional[ProgressCallback] = None) -> GetPromptResult:
        """Render one prompt with ``arguments``."""
        return prompts.get(self._session, name, arguments, call_options(timeout, cancel, on_progress))

    # skills (the io.modelcontextprotocol/skills extension: mcpsync._features.skills, docs/skills.md)

    def list_skills(self, *, refresh: bool = False, timeout: Optional[float] = None,
                    cancel: Optional[CancelToken] = None) -> List[Skill]:
        """Every skill's entry, all pages, cached for the listing's ``ttlMs``; reads no skill file.
        Raises :class:`~mcpsync.CapabilityError` if the server does not declare the extension."""
        return self._skills().list(refresh, call_options(timeout, cancel))

    def get_skill(self, skill: str, *, timeout: Optional[float] = None,
                  cancel: Optional[CancelToken] = None) -> Skill:
        """One entry, by ``SKILL.md`` URI (``skills/get``) or by name (from the listing); reads no file.
        Raises :class:`~mcpsync.UnknownSkillError` for no such skill, or a name listed skills share."""
        return self._skills().get(skill, call_options(timeout, cancel))

    def load_skill(self, skill: SkillRef, *, allow_dynamic: bool = False, timeout: Optional[float] = None,
                   cancel: Optional[CancelToken] = None) -> LoadedSkill:
        """Read a skill's ``SKILL.md`` (entry, URI or name) and check its size, digest and frontmatter.
        Raises :class:`~mcpsync.SkillVerificationError` on a mismatch; the content is not returned."""
        return self._skills().load(skill, call_options(timeout, cancel), allow_dynamic)

    def read_skill_file(self, skill: SkillRef, path: str, *, allow_dynamic: bool = False,
                        timeout: Optional[float] = None, cancel: Optional[CancelToken] = None) -> SkillContent:
        """Read one file the skill's manifest lists (relative path or URI), checked by size and digest.
        Raises :class:`~mcpsync.SkillVerificationError` if unlisted or different; nothing is returned."""
        return self._skills().read(skill, path, call_options(timeout, cancel), allow_dynamic)

    # utilities

    def complete(self, ref: Mapping[str, Any], argument: str, value: str, *,
                 context: Optional[Mapping[str, str]] = None, timeout: Optional[float] = None,
                 cancel: Optional[CancelToken] = None) -> CompleteResult:
        """Ask for completions of ``argument`` (typed so far: ``value``).

        ``ref`` is ``{"type": "ref/prompt", "name": ...}`` or
        ``{"type": "ref/resource", "uri": ...}``; ``context`` gives the
        arguments already chosen.
        """
        return utilities.complete(self._session, self.protocol_version, ref, argument, value, context,
                                  call_options(timeout, cancel))

    def set_logging_level(self, level: str, *, timeout: Optional[float] = None,
                          cancel: Optional[CancelToken] = None) -> None:
        """Ask the server to send log messages at ``level`` and above (``"debug"`` … ``"emergency"``).

        Legacy servers get ``logging/setLevel``; modern ones have no such
        request: the level goes in the ``_meta`` of every later request.
        """
        utilities.set_log_level(self._session, level, call_options(timeout, cancel))  # kept for a renewed session

def _unpickle(cls: Any, transport: Transport, options: Dict[str, Any]) -> Client:
    client: Client = cls(transport, **options)
    client._session.first_use = _lifecycle.connector(client)  # noqa: SLF001 the client's own unpickler
    return client


def _unpickle_shared(key: bytes, cls: Any, transport: Transport, options: Dict[str, Any]) -> Client:
    """A copy of a client pickled with ``share``: a handle on this process's connection for ``key``."""
    if not _shared.enabled():
        return _unpickle(cls, transport, options)

    def build() -> Any:
        core = _unpickle(cls, transport, options)
        return core, core.idle_timeout

    core, lease = _shared.acquire(key, build, _usable)
    handle: Client = _shared.lend(core, lease, key)
    return handle


def _usable(core: Client) -> bool:
    """Whether new copies may share ``core``: not closed, and its connection not lost (nor failed)."""
    return not core.transport.finished


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
    may be mixed in ``options``. ``timeout`` is the per-request default of every
    later call, and also bounds the whole connect.

    Raises:
        ValueError: ``target`` is not one of the forms above.
        and whatever :meth:`Client.connect` raises.
    """
    transport, client_options = transport_for(target, options)
    return Client(transport, **client_options).connect()
