"""One managed server: its connection attempts, status, tool fetching and reconnects.

A :class:`ManagedServer` belongs to a :class:`~mcpsync.Manager`, which hands it a
:class:`Host` (the manager's lock, policy and callbacks, and nothing else); it
shares the host's lock and condition, so a state change and the matching
change of the host's tool index happen together. Blocking work (spawning,
the handshake, ``tools/list``, closing) always runs outside that lock, on the
host's scheduler threads or on the caller's thread.

Every connection attempt carries a generation number. Closing, removing or
forcing a reconnect bumps the generation, so an attempt that finishes late
sees it is stale and closes its own client: no process or socket is orphaned.
"""

from __future__ import annotations

import collections
import math
import random
import threading
import time
import weakref
from dataclasses import dataclass
from typing import Any, Callable, Deque, Dict, List, Optional

from .._log import getLogger
from .._protocol.methods import NOTIFY_TOOLS_LIST_CHANGED, TOOLS_CALL
from .._rpc import delivery
from .._rpc.options import CallOptions, Deadline
from .._session.limits import Limits
from ..cancel import CancelToken
from ..client import Client
from ..config import ServerConfig
from ..exceptions import (
    CapabilityError, ConfigError, ConnectError, RequestCancelled, RequestTimeout, ServerNotConnected, TransportClosed,
)
from ..transports._factory import config_type, create_transport
from ..types import Tool
from .policy import StartupWindow, disabled_error

log = getLogger("mcpsync.manager")

IDLE = "idle"
CONNECTING = "connecting"
CONNECTED = "connected"
DEFERRED = "deferred"
FAILED = "failed"
RECONNECTING = "reconnecting"
CLOSED = "closed"
UNTRUSTED = "untrusted"
DISABLED = "disabled"
#: States in which a call waits for the connection instead of failing.
WAITING = frozenset({CONNECTING, DEFERRED, RECONNECTING})


@dataclass(frozen=True)
class ReconnectPolicy:
    """How a server whose connection closed unexpectedly is reconnected: a stdio server that
    exited, a legacy SSE stream that dropped, a Streamable HTTP server that stopped taking
    connections after it had answered (down, or restarting).

    Attempt *n* (from 0) of an outage starts after
    ``min(max_delay, initial_delay * multiplier**n)`` seconds, changed at random
    by up to ``jitter`` (a fraction) either way. When ``max_attempts`` attempts of
    the current outage have started within ``window`` seconds, the server is marked
    failed instead. A reconnect whose connection then stays up ``stable_after``
    seconds ends the outage: the next loss gets the whole budget again. One that
    drops sooner is part of the same outage, so a server that crashes right after
    each reconnect is still given up.
    ``ReconnectPolicy(enabled=False)`` (or ``Manager(reconnect=False)``) turns
    reconnecting off.
    """

    enabled: bool = True
    initial_delay: float = 0.5
    max_delay: float = 30.0
    multiplier: float = 2.0
    jitter: float = 0.25
    max_attempts: int = 5
    window: float = 60.0
    stable_after: float = 5.0

    def delay(self, attempt: int) -> float:
        """Seconds to wait before attempt number ``attempt`` (0 for the first) of a burst."""
        base = min(self.max_delay, self.initial_delay * self.multiplier ** min(attempt, 64))
        return max(0.0, base * (1.0 + random.uniform(-self.jitter, self.jitter)))


@dataclass(frozen=True)
class ServerStatus:
    """A snapshot of one managed server.

    Attributes:
        name: the server's name.
        state: ``idle`` (not started), ``connecting``, ``connected``, ``deferred``
            (still connecting; its cached tools are served), ``failed``,
            ``reconnecting``, ``closed``, ``untrusted`` (from a project file the
            user has not trusted: never started; ``last_error`` says what to do), or
            ``disabled`` (``"enabled": false`` in its config: never started).
        type: the transport in use: ``stdio``, ``http`` (Streamable HTTP) or ``sse``
            (legacy HTTP+SSE, also after a Streamable HTTP connect fell back to it). Before
            the first connection it is the configured type (``unknown`` for an invalid
            config); while reconnecting, the transport the last connection used.
        source: the config file the server came from.
        tools: how many tools it currently contributes.
        last_error: the text of its last error (connect failure, lost connection), if any.
        last_error_at, connected_at, since: wall-clock times (``time.time()``) of the
            last error, the last successful connect, and the last state change.
        reconnects: how many times it has been reconnected.
        configured_type: the ``type`` the config asks for (``http`` for a ``url`` without
            one), whatever the connection ended up using.
    """

    name: str
    state: str
    type: str
    source: str
    tools: int = 0
    last_error: Optional[str] = None
    last_error_at: Optional[float] = None
    connected_at: Optional[float] = None
    since: float = 0.0
    reconnects: int = 0
    configured_type: str = ""

    @property
    def connected(self) -> bool:
        """True when calls go straight through."""
        return self.state == CONNECTED

    def to_dict(self) -> Dict[str, Any]:
        """A JSON-ready dict of every field."""
        return {"name": self.name, "state": self.state, "type": self.type, "source": self.source,
                "tools": self.tools, "last_error": self.last_error, "last_error_at": self.last_error_at,
                "connected_at": self.connected_at, "since": self.since, "reconnects": self.reconnects,
                "configured_type": self.configured_type}


@dataclass(frozen=True)
class Host:
    """What a ManagedServer needs from its manager, handed over explicitly.

    Attributes:
        cond: the manager's condition (and lock); every ManagedServer field is guarded by it.
        policy: how lost connections are reconnected.
        client_options: keyword options for every server's Client.
        submit: ``submit(fn, *args, delay=0.0)`` runs ``fn`` on a manager thread; False once stopped.
        apply_tools_locked: ``(name, tools, deferred)`` replaces the server's slice of tools (lock held).
        tools_fetched: ``(server, tools)`` a live list arrived (lock not held): cache it, tell the user.
        server_failed: ``(server)`` the server failed for good (lock not held).
    """

    cond: threading.Condition
    policy: ReconnectPolicy
    client_options: Dict[str, Any]
    submit: Callable[..., bool]
    apply_tools_locked: Callable[[str, List[Tool], bool], bool]
    tools_fetched: Callable[["ManagedServer", List[Tool]], None]
    server_failed: Callable[["ManagedServer"], None]


def release(client: Client) -> None:
    """Close ``client`` and everything its transport holds. Call it off the transport's own threads.

    ``close()`` returns only once the transport's resources are released, even
    when the connection was already lost and is being torn down elsewhere.
    """
    client.close()


def fetch_tools(client: Client, timeout: Optional[float]) -> List[Tool]:
    """The server's whole tool list (empty when it offers no tools)."""
    try:
        return client.list_tools(refresh=True, timeout=timeout)
    except CapabilityError:
        return []


def _limits(name: str, config: Optional[ServerConfig]) -> Optional[Limits]:
    """rate_limit / max_concurrency: one set of limits for the server, kept across its reconnects."""
    if config is None or not (config.rate_limit or config.max_concurrency):
        return None
    return Limits(name, config.rate_limit, config.max_concurrency)


class ManagedServer:
    """One server's connection and status; every field is guarded by ``host._cond``."""

    def __init__(self, host: Host, name: str, config: Optional[ServerConfig],
                 error: Optional[ConfigError], timeout: float) -> None:
        self.host = host
        self.name = name
        self.config = config
        self.timeout = config.timeout if config is not None and config.timeout else timeout
        self.state = IDLE
        self.since = time.time()
        self.last_exc: Optional[BaseException] = None
        self.last_error: Optional[str] = None
        self.last_error_at: Optional[float] = None
        self.connected_at: Optional[float] = None
        self.reconnects = 0
        self.reason: Optional[str] = None
        self.client: Optional[Client] = None
        self.attempt: Optional[Client] = None
        self.dead: List[Client] = []  # lost connections not yet released (see release())
        self.generation = 0
        self.transport_kind: Optional[str] = None  # what the last connection really used ("sse" after a fallback)
        self.waiting_since = time.monotonic()  # when the current connection attempt (or its wait) began
        self._burst: Deque[float] = collections.deque()  # start times of this outage's attempts
        self.limits = _limits(name, config)
        self._failures = 0
        self._up_since = 0.0  # monotonic time the current connection was made
        self._initial_state(error, config)

    def _initial_state(self, error: Optional[ConfigError], config: Optional[ServerConfig]) -> None:
        """Mark a server that is never started: an invalid entry (failed), an untrusted one, a disabled one."""
        if error is not None:
            self._record_locked(error)
            self.state = FAILED
            self.reason = "invalid config"
        elif config is not None:
            self._screen(config)

    def _screen(self, config: ServerConfig) -> None:
        """The state a valid config starts in: untrusted (its refusal recorded) or disabled; else idle."""
        if not config.trusted:
            try:
                config.transport_config()  # refuses an untrusted entry, saying why and what to do
            except ConfigError as exc:
                self._record_locked(exc)
            self.state = UNTRUSTED
            self.reason = "its project file is not trusted"
        elif config is not None and not config.enabled:
            self.state, self.reason = DISABLED, str(disabled_error(self.name, config))

    def __repr__(self) -> str:
        return f"<ManagedServer {self.name!r} {self.state}>"

    # -- state (host lock held) ------------------------------------------------------------

    def status_locked(self, tools: int) -> ServerStatus:
        config = self.config
        configured = config.type if config is not None else "unknown"
        return ServerStatus(
            name=self.name, state=self.state, type=self.transport_kind or configured, configured_type=configured,
            source=config.source if config is not None else getattr(self.last_exc, "path", None) or "<dict>",
            tools=tools, last_error=self.last_error, last_error_at=self.last_error_at,
            connected_at=self.connected_at, since=self.since, reconnects=self.reconnects,
        )

    def _set_state_locked(self, state: str) -> None:
        if state != self.state:
            log.debug("[%s] %s -> %s", self.name, self.state, state)
            self.state = state
            self.since = time.time()
            self.host.cond.notify_all()

    def _record_locked(self, exc: BaseException) -> None:
        self.last_exc = exc
        self.last_error = str(exc) or type(exc).__name__
        self.last_error_at = time.time()

    def start_locked(self) -> bool:
        """Begin the first connection (from ``idle``); False if there is nothing to start."""
        if self.state != IDLE or self.config is None:
            return False
        self._begin_locked(CONNECTING)
        return True

    def _begin_locked(self, state: str, delay: float = 0.0) -> None:
        self.generation += 1
        self.reason = None
        self.waiting_since = time.monotonic()
        self._set_state_locked(state)
        self.host.submit(self._attempt, self.generation, delay=delay)

    def mark_deferred_locked(self) -> bool:
        """Still connecting at the end of the startup window: serve cached tools meanwhile."""
        if self.state != CONNECTING:
            return False
        self._set_state_locked(DEFERRED)
        return True

    def force_locked(self) -> List[Client]:
        """Drop the current connection (or attempt) and start a new attempt now.

        Returns the clients the caller must release (outside the lock).

        Raises:
            ConfigError: the server's config is invalid.
        """
        if self.state == DISABLED and self.config is not None:
            raise disabled_error(self.name, self.config)
        if self.config is None or self.state == UNTRUSTED:
            assert isinstance(self.last_exc, ConfigError)
            # raised on every reconnect: a fresh traceback, not every earlier raise's frames kept alive
            raise self.last_exc.with_traceback(None)
        old = [c for c in (self.client, self.attempt) if c is not None]
        was_up = self.state in (CONNECTED, RECONNECTING)
        self.client = self.attempt = None
        self._burst.clear()
        self._failures = 0
        self._begin_locked(RECONNECTING if was_up else CONNECTING)
        return old

    def close_locked(self) -> List[Client]:
        """Mark closed; returns the clients (current, in flight, lost) the caller must release."""
        old = [c for c in (self.client, self.attempt) if c is not None] + self.dead
        self.client = self.attempt = None
        self.dead = []
        self.generation += 1
        self.reason = "closed"
        self._set_state_locked(CLOSED)
        return old

    def _retry_locked(self) -> bool:
        """Schedule the next reconnect attempt, or give up (state failed); True if scheduled."""
        policy = self.host.policy
        now = time.monotonic()
        while self._burst and now - self._burst[0] > policy.window:
            self._burst.popleft()
        if not policy.enabled:
            self.reason = "reconnect is off"
        elif len(self._burst) >= policy.max_attempts:
            self.reason = f"gave up reconnecting after {len(self._burst)} attempts in {policy.window:g}s"
        else:
            delay = policy.delay(self._failures)
            self._failures += 1
            self._burst.append(now)
            log.info("[%s] Reconnecting in %.2fs (attempt %d)", self.name, delay, len(self._burst))
            self._begin_locked(RECONNECTING, delay)
            return True
        log.warning("[%s] Not reconnecting: %s", self.name, self.reason)
        self._set_state_locked(FAILED)
        return False

    # -- attempts (scheduler threads) ------------------------------------------------------

    def _attempt(self, generation: int) -> None:
        config = self.config
        assert config is not None
        with self.host.cond:
            if not self._current_locked(generation):
                return  # superseded while it waited for its turn
        try:
            client = self._new_client(config)
        except Exception as exc:  # a config the transport refuses, say an HTTP type not available
            self._attempt_failed(generation, exc, None)
            return
        me = weakref.ref(self)
        client_ref = weakref.ref(client)
        client.on_notification(NOTIFY_TOOLS_LIST_CHANGED, lambda _params: _list_changed(me, client_ref))
        client.on_session_renewed(lambda: _list_changed(me, client_ref))  # a restarted server: maybe other tools
        with self.host.cond:
            if not self._current_locked(generation):
                return  # superseded before anything was opened: nothing to release
            self.attempt = client
        try:
            window = StartupWindow(config, self.timeout)  # "startup_timeout": over both requests
            client.connect(timeout=window.connect())
            # After connect: the client may have moved to a fallback transport (legacy SSE).
            client.transport.on_close = lambda: _closed(me, client_ref)
            tools = fetch_tools(client, window.listing())
        except Exception as exc:
            release(client)
            self._attempt_failed(generation, exc, client)
            return
        with self.host.cond:
            current = self._settle_locked(generation, client, tools)
        if not current:
            release(client)  # closed, removed or superseded while connecting: never orphan it
            return
        log.info("[%s] Connected (%d tools)", self.name, len(tools))
        self.host.tools_fetched(self, tools)
        if _engine_closed(client):  # it closed before it became current: its on_close may have been ignored
            self.lost(client)

    def _current_locked(self, generation: int) -> bool:
        """Whether attempt ``generation`` is still the server's (not superseded, the server not closed)."""
        return generation == self.generation and self.state != CLOSED

    def _new_client(self, config: ServerConfig) -> Client:
        """A client over a new transport for ``config`` (not connected)."""
        transport = create_transport(config.transport_config(), name=config.name, timeout=self.timeout)
        # A server that stops taking connections is lost, as a stdio server that exits is:
        # the reconnect policy applies to both (a declared setting of every transport).
        transport.close_when_unreachable = True
        options = self.host.client_options
        if not config.telemetry:  # the server's "telemetry": false wins over the manager's client_options
            options = {**options, "telemetry": False}
        return Client(transport, timeout=self.timeout, **options)

    def _settle_locked(self, generation: int, client: Client, tools: List[Tool]) -> bool:
        """Make the connected ``client`` the server's, if attempt ``generation`` is still current."""
        if self.attempt is client:
            self.attempt = None
        if not self._current_locked(generation):
            return False
        if self.state == RECONNECTING:
            self.reconnects += 1
        self.client = client
        self.transport_kind = config_type(client.transport)
        self.connected_at = time.time()
        self._up_since = time.monotonic()
        self._failures = 0
        self.reason = None
        self.host.apply_tools_locked(self.name, tools, False)
        self._set_state_locked(CONNECTED)
        return True

    def _attempt_failed(self, generation: int, exc: BaseException, client: Optional[Client]) -> None:
        with self.host.cond:
            if client is not None and self.attempt is client:
                self.attempt = None
            if generation != self.generation or self.state == CLOSED:
                return
            self._record_locked(exc)
            if self.state == RECONNECTING:
                log.warning("[%s] Reconnect failed: %s", self.name, self.last_error)
                if self._retry_locked():
                    return
            else:
                log.warning("[%s] Could not connect: %s", self.name, self.last_error)
                self._set_state_locked(FAILED)
        self.host.server_failed(self)

    def lost(self, client: Client) -> None:
        """The connection of ``client`` closed; reconnect if it was the current one."""
        with self.host.cond:
            if self.client is not client:
                return  # a deliberate close, or an old connection
            self.client = None
            self._record_locked(_close_reason(client))
            log.warning("[%s] Connection lost: %s", self.name, (self.last_error or "").splitlines()[0])
            if time.monotonic() - self._up_since >= self.host.policy.stable_after:
                self._burst.clear()  # it was up: a new outage, with the whole budget (see ReconnectPolicy)
            self._failures = 0
            self.dead.append(client)
            retrying = self._retry_locked()
        # This runs on the transport's dispatcher thread, which must not wait for the reader:
        # the dead connection is released on a manager thread (or by close()).
        self.host.submit(self._release_dead)
        if not retrying:
            self.host.server_failed(self)

    def _release_dead(self) -> None:
        with self.host.cond:
            dead, self.dead = self.dead, []
        for client in dead:
            release(client)

    def refresh(self, client: Optional[Client] = None) -> Optional[List[Tool]]:
        """Fetch the tool list again (on ``client`` only if it is still current).

        Returns the tools, or None when there is no current connection to ask.

        Raises:
            whatever ``tools/list`` raises.
        """
        with self.host.cond:
            current = self.client
        if current is None or (client is not None and client is not current):
            return None
        tools = fetch_tools(current, self.timeout)
        with self.host.cond:
            if self.client is not current:
                return None
            self.host.apply_tools_locked(self.name, tools, False)
        self.host.tools_fetched(self, tools)
        return tools

    def refresh_job(self, client: Client) -> None:
        """A manager thread: refresh the tools after ``list_changed`` (a failure is logged)."""
        try:
            self.refresh(client)
        except Exception as exc:
            log.warning("[%s] Could not refresh the tool list: %s", self.name, exc)

    # -- calls (caller threads) ------------------------------------------------------------

    def call(self, send: Callable[[Client, CallOptions], Any], options: CallOptions, budget: float) -> Any:
        """``send(client, options)`` on the connected client, waiting for the connection first.

        ``options.deadline`` ends the wait and the call together (``budget`` is its length in
        seconds, for the error messages). A request that provably never reached the server
        (the connection was already closed before it got an id, or the server refused the
        connection: it is down or restarting) waits for the reconnect, within the same
        deadline, and is sent once more on the new connection. One the server may have
        seen is never sent twice.

        Raises:
            as :meth:`wait_client`, and whatever ``send`` raises.
        """
        deadline = options.deadline if options.deadline is not None else Deadline.after(budget)
        client = self.wait_client(deadline, options.cancel, budget)
        limits = self.limits
        if limits is not None:  # the server's rate_limit and max_concurrency: wait for a turn, in the deadline
            options = limits.enter(options._replace(deadline=deadline), budget)
        try:
            ids = _Ids(options.on_request_id)
            try:
                return send(client, options._replace(on_request_id=ids))
            except (TransportClosed, ConnectError) as exc:
                if not _undelivered(exc, ids.count) or deadline.expired:
                    raise
                log.info("[%s] A call never reached the server (%s); sending it again once reconnected", self.name,
                         str(exc).splitlines()[0])
            return send(self.wait_client(deadline, options.cancel, budget), options)
        finally:
            if limits is not None:
                limits.leave()

    # -- waiting (caller threads) ----------------------------------------------------------

    def wait_client(self, deadline: Deadline, cancel: Optional[CancelToken], budget: float) -> Client:
        """Block until the server is connected, ``deadline`` passes or ``cancel`` fires.

        ``budget`` is the seconds the deadline was set for (for the error message).

        Raises:
            ServerNotConnected: the server failed, was closed or was never started.
            RequestTimeout: still connecting at the deadline.
            RequestCancelled: ``cancel`` fired.
        """
        cond = self.host.cond
        unregister = None
        if cancel is not None:
            def wake(_reason: Any) -> None:
                with cond:
                    cond.notify_all()

            unregister = cancel.add_callback(wake)
        try:
            with cond:
                while True:
                    client = self._connected_locked(cancel)
                    if client is not None:
                        return client
                    remaining = deadline.remaining()
                    if remaining <= 0:
                        raise self._still_waiting_locked(budget)
                    cond.wait(None if math.isinf(remaining) else remaining)
        finally:
            if unregister is not None:
                unregister()

    def _connected_locked(self, cancel: Optional[CancelToken]) -> Optional[Client]:
        """The live client; None while still connecting. Raises ServerNotConnected when the server
        will not connect, RequestCancelled when ``cancel`` fired."""
        if self.state == CONNECTED and self.client is not None:
            if self.client.connected:
                return self.client
            # It died and its on_close is on the way (that will notify): wait for it,
            # then for the reconnect, rather than hand out a dead connection.
        elif self.state not in WAITING:
            raise self.not_connected_locked()
        if cancel is not None and cancel.cancelled:
            raise RequestCancelled(cancel.reason)
        return None

    def _still_waiting_locked(self, budget: float) -> RequestTimeout:
        """The error of a call that gave up waiting for the connection: for how long the server has
        been connecting, what its transport saw (say, stdout lines that are not JSON-RPC), what to do."""
        doing = "reconnecting" if self.state in (RECONNECTING, CONNECTED) else "connecting"
        elapsed = time.monotonic() - self.waiting_since
        attempt = self.attempt
        hint = attempt.transport.timeout_hint() if attempt is not None else ""
        text = f"MCP server {self.name!r} is still {doing}, {elapsed:.1f}s after it started"
        if budget > 0:  # a caller that asked not to wait (timeout=0, as the CLI does after its own wait)
            text += f"; this call waited {int(budget * 1000)}ms for it and gave up"  # is told nothing about 0ms
        if self.last_error and self.state == RECONNECTING:
            text += f" (its last error: {self.last_error.splitlines()[0]})"
        text += f". {hint}" if hint else ""
        log_name = attempt.server_log.name if attempt is not None else "mcpsync.server"
        text += (f". Wait longer for it (a larger timeout; an attempt may take {self.timeout:g}s to connect and "
                 f"as long again to list its tools), or see why in its status and its stderr log ({log_name!r})")
        return RequestTimeout(text, method=TOOLS_CALL, timeout=budget, server=self.name, hint=hint)

    def not_connected_locked(self) -> ServerNotConnected:
        reason = self.reason
        if self.state == IDLE:
            reason = "not started: call connect_all()"
        error = ServerNotConnected(self.name, self.last_error, reason)
        error.__cause__ = self.last_exc
        return error


class _Ids:
    """An ``on_request_id`` that counts the requests a call got ids for (any of them may have been sent)."""

    __slots__ = ("count", "then")

    def __init__(self, then: Optional[Callable[[Any], None]] = None) -> None:
        self.count = 0
        self.then = then  # the caller's own on_request_id (a retry counting requests), told as well

    def __call__(self, request_id: Any) -> None:
        self.count += 1
        if self.then is not None:
            self.then(request_id)


def _undelivered(error: BaseException, requests: int) -> bool:
    """Whether a call that failed with ``error`` after ``requests`` request ids provably reached no server:
    it got no request id (the connection was closed before it was made), or its one request never left
    (the delivery ledger's verdict on the error, see :mod:`mcpsync._rpc.delivery`)."""
    if requests == 0:
        return True
    return requests == 1 and delivery.may_resend(error, reconnect=True)


def _closed(me: "weakref.ref[ManagedServer]", client_ref: "weakref.ref[Client]") -> None:
    """Transport ``on_close`` (its dispatcher thread): must not block."""
    server, client = me(), client_ref()
    if server is not None and client is not None:
        server.lost(client)


def _list_changed(me: "weakref.ref[ManagedServer]", client_ref: "weakref.ref[Client]") -> None:
    """The server's tools may have changed (``list_changed``, a renewed session): refresh them on a manager thread."""
    server, client = me(), client_ref()
    if server is not None and client is not None:
        server.host.submit(server.refresh_job, client)
def _engine_closed(client: Client) -> bool:
    """True once the transport has failed its callers (its ``on_close`` runs after that)."""
    return client.transport.close_reason() is not None


def _close_reason(client: Client) -> BaseException:
    """The error the closed transport gives its callers (exit code and stderr tail for stdio)."""
    return client.transport.close_reason() or TransportClosed("Transport closed: the connection was lost")
