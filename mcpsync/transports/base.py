"""The Transport base class: the contract every transport keeps.

A transport moves JSON-RPC messages and owns its threads and OS or HTTP
resources. It knows nothing of MCP methods or eras: the session tells it what it needs
as plain data (the protocol version HTTP sends as a header, the headers of a request).
Pairing responses with requests is the :class:`~mcpsync._rpc.engine.Engine`'s job, and
the engine is not the transport's: the client's session builds it from the transport's
:attr:`~Transport.wire` and hands it over with :meth:`~Transport.attach`; from then on
the transport's readers give every decoded message to it, typed as a
:class:`~mcpsync._rpc.wire.Receiver`. A transport driven on its own (no client) builds
the same engine itself at first need.
"""

from __future__ import annotations

import abc
import os
import re
import sys
import threading
import warnings
import weakref
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

from .._log import getLogger
from .. import _fork

from .._rpc.engine import DEFAULT_TIMEOUT, Engine, MessageTap, RequestHandler
from .._rpc.jsonrpc import JSONObject, RequestId
from .._rpc.options import DEFAULT_OPTIONS, CallOptions, Deadline
from .._rpc.wire import CallWire, SendCancelled, Wire
from ..cancel import CancelToken
from ..exceptions import ConnectionLost, ForkedError, TransportClosed

log = getLogger("mcpsync.transport")

#: ``source(message)``: extra headers for one outgoing request (see :meth:`Transport.set_request_headers`).
HeaderSource = Callable[[JSONObject], Mapping[str, str]]

_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9_.-]+")


def safe_name(name: str) -> str:
    """A server name made safe for logger and thread names."""
    cleaned = _UNSAFE_NAME.sub("_", name).strip("._") or "server"
    return cleaned[:64]


def weak_method(obj: Any, name: str) -> Callable[..., Any]:
    """``getattr(obj, name)`` called through a weak reference to ``obj``.

    Raises TransportClosed once ``obj`` is gone.
    """
    ref = weakref.ref(obj)

    def call(*args: Any, **kwargs: Any) -> Any:
        target = ref()
        if target is None:
            raise TransportClosed("Transport closed: the transport was garbage collected")
        return getattr(target, name)(*args, **kwargs)

    return call


def close_unclosed(obj: Any, _finalizing: Callable[[], bool] = sys.is_finalizing,
                   _warn: Callable[..., None] = warnings.warn) -> None:
    """From ``__del__`` of something never closed: say so (ResourceWarning), then close it.

    Never raises: at interpreter exit much of the runtime may already be gone, and a
    warning turned into an error must not stop the close. Does nothing once the interpreter
    is finalizing (module globals being cleared, after the at-exit hooks): no thread can
    start then, and a close that starts one (the engine's) would wait for it for ever; the
    process's exit lets go of what is left.

    Callers bind it as a default argument of their ``__del__`` (and it binds what it calls the
    same way): at interpreter exit module globals may already be None when a finalizer runs
    (seen on free-threaded builds), and a finalizer must not depend on them.
    """
    if _finalizing():
        return
    try:
        _warn(f"unclosed {obj!r}; closing it now", ResourceWarning, stacklevel=3)
    except Exception:
        pass
    try:
        obj.close()
    except Exception:
        pass


class EnginePort:
    """The side of a transport that faces the engine it feeds: what the engine is built from, and
    the engine once attached (see :meth:`attach`). A part of :class:`Transport`, not used alone."""

    name: str

    def __init__(self, wire: Wire, timeout: Optional[float], max_workers: int,
                 sink: Callable[[str, Optional[JSONObject]], None], hint: Callable[[], str]) -> None:
        #: Threads serving the peer's requests at once, for the engine built over this transport.
        self.max_workers = max_workers
        self._wire = wire
        self._sink = sink
        self._hint = hint
        self._attached: Optional[Engine] = None  # the engine this transport feeds (see attach)
        self._attach_lock = threading.Lock()
        self._timeout = timeout  # the engine's default timeout, until there is an engine
        self._tap: Optional[MessageTap] = None  # handed to the engine at attach

    @property
    def wire(self) -> Wire:
        """The way out of the engine that feeds this transport: what the session builds its engine with.

        Its methods hold the transport weakly, so an engine (and its threads) never keeps an
        unclosed transport alive.
        """
        return self._wire

    @property
    def notification_sink(self) -> Callable[[str, Optional[JSONObject]], None]:
        """``sink(method, params)``: where the engine built over this transport delivers notifications
        (the listeners, then :attr:`on_notification`), on its dispatcher thread. Holds the transport weakly."""
        return self._sink

    @property
    def hint_source(self) -> Callable[[], str]:
        """:meth:`timeout_hint`, held weakly: what the engine asks when it builds a timeout error."""
        return self._hint

    @property
    def engine(self) -> Optional[Engine]:
        """The engine this transport hands what it reads to (its receiver), or None before one is attached."""
        return self._attached

    def attach(self, engine: Engine) -> Engine:
        """Hand this transport the engine it feeds: the receiver of every message it reads.

        The client's session builds the engine from :attr:`wire` (and :attr:`notification_sink`,
        :attr:`hint_source`, :attr:`timeout`, :attr:`max_workers`) and attaches it before
        opening. An engine is attached once: a transport that already feeds one (it was
        driven on its own first, and built its own) keeps it. Returns the engine in use.
        """
        with self._attach_lock:
            if self._attached is None:
                engine.default_timeout = self._timeout
                if self._tap is not None:
                    engine.tap = self._tap
                self._attached = engine
            return self._attached

    @property
    def _engine(self) -> Engine:
        """The engine in use; a transport driven on its own builds it here, at first need."""
        engine = self._attached
        if engine is None:
            engine = self.attach(Engine(self._wire, name=self.name, default_timeout=self._timeout,
                                        max_workers=self.max_workers, on_notification=self._sink, hint=self._hint))
        return engine

    @property
    def timeout(self) -> Optional[float]:
        """The default per-request timeout in seconds."""
        engine = self._attached
        return engine.default_timeout if engine is not None else self._timeout

    @timeout.setter
    def timeout(self, value: Optional[float]) -> None:
        with self._attach_lock:
            self._timeout = value
            if self._attached is not None:
                self._attached.default_timeout = value

    def set_message_tap(self, tap: "Optional[MessageTap]") -> None:
        """See every message of this connection, in conversation order (see ``Engine.tap``); None stops it.

        Recording a cassette is what this is for; when a failed connect falls back to another
        transport (the factory's ``fallback_for``), the tap goes over to it too. Set before an
        engine is attached, it is handed to that engine.
        """
        with self._attach_lock:
            self._tap = tap
            if self._attached is not None:
                self._attached.tap = tap

    @property
    def message_tap(self) -> "Optional[MessageTap]":
        """The tap set by :meth:`set_message_tap`, or None."""
        return self._tap


class Transport(EnginePort, abc.ABC):
    """A connection to one MCP server.

    Subclasses implement :meth:`_open` and :meth:`_write`, usually :meth:`_release`, and
    may give the engine their own wire; everything else (request ids, waiters, timeouts,
    cancellation, progress, dispatching, the order of a close) is shared.

    Callbacks, all optional, all run off the reader thread:

    * ``on_notification(method, params)``: every notification from the server,
      in arrival order, on the dispatcher thread.
    * ``on_error(exc)``: reading failed while connected (then the transport closes).
    * ``on_close()``: called exactly once when the transport closes, for any reason.

    Thread safety: :meth:`request` and :meth:`notify` may be called from any
    thread at once. :meth:`close` is idempotent and may be called from any thread.
    """

    kind = "transport"
    #: The keys of a server config dict this kind takes (``timeout`` aside: the factory converts it).
    config_keys: Tuple[str, ...] = ()

    #: Whether garbage collecting an open transport warns (ResourceWarning) and closes it.
    _close_when_collected = True

    #: Set by a :class:`~mcpsync.Manager`, which recovers lost connections: once the server has
    #: answered, a connection it refuses closes the transport as lost (``on_close`` runs), as an
    #: exited stdio server does, instead of failing only that request. A transport whose server
    #: can refuse connections honours it (Streamable HTTP); on the others it changes nothing.
    close_when_unreachable = False

    def __init__(self, *, name: str, timeout: Optional[float] = DEFAULT_TIMEOUT, max_workers: int = 4,
                 wire: Optional[Wire] = None) -> None:
        self.name = safe_name(name)
        self.on_notification: Optional[Callable[[str, Optional[JSONObject]], None]] = None
        self.on_error: Optional[Callable[[BaseException], None]] = None
        self.on_close: Optional[Callable[[], None]] = None
        self._listeners: List[Callable[[str, Optional[JSONObject]], None]] = []
        # The engine and the threads reach the transport only through weak references,
        # so an unclosed transport can still be garbage collected (and then cleaned up).
        # Without a wire of its own, the transport's _write, _write_by and _abandon are it.
        if wire is None:
            wire = CallWire(weak_method(self, "_write"), weak_method(self, "_write_by"),
                            weak_method(self, "_abandon"))
        EnginePort.__init__(self, wire, timeout, max_workers, weak_method(self, "_deliver_notification"),
                            weak_method(self, "timeout_hint"))
        self._state_lock = threading.Lock()
        self._started = False
        self._closing = False
        self._released = threading.Event()  # set once a close has released everything
        self._close_message = "Transport closed"  # what later calls are told (see _closed_error)
        self._was_lost = False  # closed by a failure, not by close(): callers get ConnectionLost
        self._inherited_from: Optional[int] = None  # in a forked child: the pid whose connection this is
        self._opened_in: Optional[int] = None  # the pid that opened it (a fork the hook missed is caught by it)
        _fork.watch(self, "_after_fork_in_child")

    def __repr__(self) -> str:
        state = "connected" if self.connected else ("closed" if self._closing else "not connected")
        return f"<{type(self).__name__} {self.name!r} {state}>"

    def __enter__(self) -> "Transport":
        self.open()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    # -- public contract --------------------------------------------------------------

    @property
    def connected(self) -> bool:
        """True between a successful :meth:`open` and the close."""
        engine = self._attached
        return self._started and not self._closing and not (engine is not None and engine.closed)

    @property
    def finished(self) -> bool:
        """True once closed, or its connection lost: it can never be opened (again); use :meth:`replica`."""
        engine = self._attached
        return self._closing or (engine is not None and engine.closed)

    #: Seconds the last :meth:`open` spent in a person's login (HTTP with OAuth), which the
    #: connect's deadline does not count; 0 for transports that log in to nothing.
    login_seconds = 0.0

    def open(self, deadline: Optional[Deadline] = None) -> None:
        """Start the connection (spawn the process, open the stream). Idempotent.

        ``deadline`` (the connect's) bounds what opening waits for, where it waits (the
        legacy HTTP+SSE ``endpoint`` event); the transport's own limits apply within it.

        Raises:
            ConnectError: the server could not be started or reached.
            TransportClosed: the transport was already closed.
            ForkedError: the transport was opened in a parent process and inherited across
                fork (see :meth:`replica` for a new one in this process).
        """
        with self._state_lock:
            if self._inherited_from is not None:
                raise self._inherited_error()
            if self._closing or self._engine.closed:
                raise self._engine.closed_error()
            if self._started:
                return
            self._open()
            self._started = True
            self._opened_in = os.getpid()

    def request(self, method: str, params: Optional[JSONObject] = None,
                options: Optional[CallOptions] = None, **changes: Any) -> Any:
        """Send a JSON-RPC request and block for its result; see :meth:`Engine.request`.

        ``options`` is the call's :class:`~mcpsync._rpc.options.CallOptions`; keyword
        ``changes`` (``timeout=``, ``cancel=`` and the other fields) are applied to a copy,
        for code that drives a transport directly.
        """
        if not self._started:
            raise self._not_open_error()
        if changes:
            options = (options or DEFAULT_OPTIONS)._replace(**changes)
        return self._engine.request(method, params, options or DEFAULT_OPTIONS)

    def notify(self, method: str, params: Optional[JSONObject] = None) -> None:
        """Send a JSON-RPC notification; returns once it is written (bounded by :attr:`timeout`).

        Raises:
            TransportClosed: the transport is not connected.
            RequestTimeout: the server did not take it in time.
        """
        if not self._started:
            raise self._not_open_error()
        self._engine.notify(method, params)

    def set_request_handler(self, handler: Optional[RequestHandler]) -> None:
        """Route server-to-client requests to ``handler(method, params, cancel_token)``.

        The handler runs on a worker thread and returns the result dict or raises
        :class:`~mcpsync.MCPError`; without a handler every request gets ``-32601``.
        """
        self._engine.incoming.set_handler(handler)

    def set_inline_handler(self, method: str, handler: Callable[[Optional[JSONObject]], Any]) -> None:
        """Answer ``method`` straight from the reader thread; ``handler`` must not block."""
        self._engine.incoming.set_inline_handler(method, handler)

    def set_protocol_version(self, version: Optional[str]) -> None:
        """Told by the client: the version in use (None before one is chosen); HTTP sends it as a header.

        A modern (2026-07-28) version also tells an HTTP transport to read JSON-RPC errors
        in 4xx bodies and to cancel by closing a request's stream instead of sending
        ``notifications/cancelled``. Nothing here: other transports send no version.
        (Whether the peer's requests are answered in that era is the session's decision,
        made on its engine: see :meth:`mcpsync._session.session.Session.speak`.)
        """

    def set_request_headers(self, source: Optional[HeaderSource]) -> None:
        """Told by the session: ``source(message)`` gives extra headers for each request it sends (HTTP).

        Plain data to the transport: the session decides what goes in them (the 2026-07-28
        routing headers, see :mod:`mcpsync._session.routing`); None stops them. Transports
        without headers ignore it.
        """

    def start_listener(self) -> None:
        """Open a channel for messages the server sends unprompted, if this transport needs one.

        A no-op here (stdio reads everything on one stream); Streamable HTTP opens its GET stream.
        """

    def timeout_hint(self) -> str:
        """A sentence for timeout errors: what this transport saw that may explain the server's
        silence, or "" (the default). Called only while a timeout error is built; must not block."""
        return ""

    def close_reason(self) -> "Optional[BaseException]":
        """Once closed, the error pending and later calls get (exit code, stderr tail...); else None."""
        engine = self._attached
        return engine.closed_error() if engine is not None and engine.closed else None

    def close(self) -> None:
        """Close the connection: fail pending calls, release resources, call ``on_close`` once.

        Idempotent, safe from any thread, and bounded in time. In a process that did not open
        the transport (a fork child), it only lets go of this process's copies (see
        :meth:`_after_fork_in_child`): the parent's server and session are left alone.
        """
        if self._opened_in is not None and self._opened_in != os.getpid() and self._inherited_from is None:
            self._after_fork_in_child()  # a fork that skipped the at-fork hooks (os.fork() never does)
            return
        with self._state_lock:
            already = self._closing
            self._closing = True
        if not already:
            self._shutdown(None)
        elif self._started:
            # Closing elsewhere (the connection was lost, or another thread): return only
            # once its resources are released, so "after close()" means what it says.
            self._released.wait(30.0)

    # -- settings, pickling and fork --------------------------------------------------------

    def settings(self) -> Optional[Dict[str, Any]]:
        """The keyword arguments that build a new, unopened copy of this transport, or None.

        ``type(self)(**transport.settings())`` is that copy: same server, options and
        timeouts, nothing of the connection (no process, socket, session id or token it
        obtained). The stdio and HTTP transports have settings; the base class, the
        memory transport and a subclass that does not override this have none.
        """
        return None

    def replica(self) -> "Transport":
        """A new, unopened transport with this one's :meth:`settings` (used after fork and unpickling).

        Raises:
            TypeError: this transport has no settings to rebuild it from.
        """
        copy: Transport = _rebuild_transport(type(self), self._required_settings("copied"))
        return copy

    def __reduce__(self) -> Any:
        """A transport pickles as its :meth:`settings`; it is unpickled unopened.

        Raises:
            TypeError: it has none (a memory transport, a custom one without ``settings()``).
        """
        return (_rebuild_transport, (type(self), self._required_settings("pickled")))

    def _required_settings(self, what: str) -> Dict[str, Any]:
        settings = self.settings()
        if settings is None:
            raise TypeError(f"{type(self).__name__} {self.name!r} cannot be {what}: it has no settings() to rebuild "
                            "it from. Build the client from a target (argv list, URL or config dict) instead, "
                            "or give the transport class a settings() method")
        return settings

    def _after_fork_in_child(self) -> None:
        """In a forked child (called by :mod:`mcpsync._fork`): leave the parent's connection alone.

        A transport that was open (or opening, or closed) at the fork becomes inert here:
        it never writes to the parent's pipes or sockets, never signals or waits for the
        parent's server and never ends its HTTP session; its close, garbage collection and
        exit hook do nothing more. Only the child's own copies of the file descriptors are
        closed (:meth:`_release_inherited`). Later calls raise :class:`~mcpsync.ForkedError`.
        A transport never opened stays usable in the child.
        """
        busy = self._state_lock.locked()  # a thread was opening or closing it at the fork
        self._state_lock = threading.Lock()  # whoever held the old one does not exist here
        self._attach_lock = threading.Lock()
        if not (self._started or self._closing or busy):
            return
        self._inherited_from = _fork.parent_pid
        self._started = False  # requests are refused; close() and __del__ have nothing to do
        self._closing = True
        self._release_inherited()

    def _release_inherited(self) -> None:
        """In a forked child: close this process's copies of the connection's descriptors, and
        drop the dead threads' objects, taking none of the locks they may have held. Nothing here."""

    def _inherited_error(self) -> ForkedError:
        return ForkedError(
            f"Transport closed: {type(self).__name__} {self.name!r} was opened by process {self._inherited_from} "
            f"and inherited by this forked process ({os.getpid()}); its connection belongs to the parent and is "
            "never used here. Use a Client (it reconnects by itself after fork) or transport.replica() for a "
            "new transport in this process")

    def _not_open_error(self) -> TransportClosed:
        if self._inherited_from is not None:
            return self._inherited_error()
        return TransportClosed("Transport closed: not connected (call open() first)")

    # -- for subclasses -----------------------------------------------------------------

    @abc.abstractmethod
    def _open(self) -> None:
        """Acquire resources and start the reader; raise ConnectError on failure."""

    @abc.abstractmethod
    def _write(self, message: JSONObject) -> None:
        """Send one message; raise TransportClosed if the connection is gone."""

    def _release(self, cause: Optional[BaseException]) -> None:
        """Release the OS/HTTP resources and stop the transport's threads, bounded in time.

        Runs once, on the closing thread (which may be the reader), from :meth:`_shutdown`.
        ``cause`` is None for a deliberate close, else what ended the connection. Nothing
        to release here. (A transport written against the older contract may override
        :meth:`_shutdown` itself instead, ending with :meth:`_finish_close`.)
        """

    def _write_by(self, message: JSONObject, deadline: float, cancel: Optional[CancelToken]) -> None:
        """The default wire's timed write: :meth:`_write`, for writes that never block."""
        self._write(message)

    def _abandon(self, request_id: RequestId, reason: Any, send_cancelled: SendCancelled) -> None:
        """The default wire's abandon: tell the server with ``notifications/cancelled``."""
        send_cancelled(request_id, reason)

    def _shutdown(self, cause: Optional[BaseException]) -> None:
        """The order of every close, run once: fail the waiters, release, then finish.

        A deliberate close (``cause`` None) fails pending calls at once, before the
        polite part (which may take up to the shutdown timeouts); a lost connection
        fails them after the release, with the error that says what happened.
        """
        self._was_lost = cause is not None
        if cause is None:
            # A deliberate close: fail the waiters now, not after the polite shutdown below.
            self._engine.fail_pending(self._closed_error)
        try:
            self._release(cause)
        finally:
            self._close_message = self._describe_close(cause)
            self._finish_close(self._closed_error)

    def _describe_close(self, cause: Optional[BaseException]) -> str:
        """The message of the error later calls get (after :meth:`_release`, so it may use its results)."""
        return "Transport closed" if cause is None else f"Transport closed: {cause}"

    def _closed_error(self) -> TransportClosed:
        """The error pending and later calls get once closed (subclasses add details): a
        :class:`~mcpsync.ConnectionLost` when the connection failed, else a plain TransportClosed."""
        return (ConnectionLost if self._was_lost else TransportClosed)(self._close_message)

    def _lost(self, cause: Optional[BaseException]) -> None:
        """The connection died under us (EOF, read error): close from the reader side."""
        with self._state_lock:
            if self._closing:
                return
            self._closing = True
        if cause is not None and self.on_error is not None and self._started:
            self._engine.call_soon(self.on_error, cause)
        self._shutdown(cause)

    def _finish_close(self, error_factory: Callable[[], Any]) -> None:
        """The end of :meth:`_shutdown`, once the OS/HTTP resources are released."""
        self._engine.fail_pending(error_factory)
        self._released.set()
        self._engine.close(error_factory, final=self._call_on_close)

    def __del__(self, _close: Callable[[Any], None] = close_unclosed) -> None:
        if self._close_when_collected and getattr(self, "_started", False) and not getattr(self, "_closing", True):
            _close(self)

    def _call_on_close(self) -> None:
        callback = self.on_close
        if callback is not None:
            try:
                callback()
            except Exception:
                log.exception("[%s] on_close callback raised", self.name)

    def set_notification_hook(self, hook: Optional[Callable[[str, Optional[JSONObject]], None]]) -> None:
        """Run ``hook(method, params)`` on the reader thread as each notification arrives.

        For the client's own bookkeeping that must happen before any later
        response is seen (dropping a cached list on ``list_changed``). The hook
        must be quick and must not block or call back into the transport.
        """
        self._engine.set_notification_hook(hook)

    def add_notification_listener(self, listener: Callable[[str, Optional[JSONObject]], None]) -> None:
        """Also deliver every notification to ``listener`` (before ``on_notification``).

        The client uses this for its own bookkeeping, leaving ``on_notification`` to the user.
        """
        self._listeners.append(listener)

    def _deliver_notification(self, method: str, params: Optional[JSONObject]) -> None:
        for listener in list(self._listeners):
            try:
                listener(method, params)
            except Exception:
                log.exception("[%s] Notification listener raised", self.name)
        callback = self.on_notification
        if callback is not None:
            callback(method, params)

    def _feed(self, message: Any, size: int = 0) -> None:
        """Hand one decoded message (``size``: the bytes it came as, 0 if unknown) to the engine (reader thread)."""
        self._engine.receive(message, size)


def _rebuild_transport(cls: Any, settings: Dict[str, Any]) -> Any:
    """Unpickle (or copy) a transport: ``cls(**settings)``, unopened."""
    return cls(**settings)


