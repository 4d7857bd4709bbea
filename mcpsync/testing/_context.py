"""What a fake function sees while it serves a request: the ``ctx`` it receives, and the run behind it.

An :class:`Invocation` is one run of a user function. Under the 2026-07-28
protocol one run can span several wire requests (the first request, then each
retry that brings the client's input), so the run keeps the *current* request:
its id, its ``_meta`` and whether the client cancelled it. A
:class:`LegacySession` is what an ``initialize`` handshake set up on a
connection. :class:`Link` is all a run needs of the connection it came on, so
this module knows nothing of how connections work.

Thread safety: an ``Invocation`` is cancelled from any thread (the dispatcher,
a closing connection); its other state belongs to the connection's lock and
the thread running the function. A ``Context`` is used from the thread that
runs the function; its ``sample``/``elicit``/``list_roots`` block that thread
until the client answers, the request is cancelled, or the timeout passes.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Protocol, Sequence, Set, Union

from .._protocol.methods import (
    ELICITATION_CREATE, NOTIFY_MESSAGE, NOTIFY_PROGRESS, RESOURCES_READ, ROOTS_LIST, SAMPLING_CREATE_MESSAGE,
)
from .._rpc import jsonrpc as rpc
from .._rpc.jsonrpc import JSONObject, RequestId
from ..exceptions import MCPError, RequestCancelled
from ._protocol import CLIENT_CAPABILITIES_KEY, CLIENT_INFO_KEY, LOG_LEVEL_KEY, LOG_LEVELS, MISSING_CLIENT_CAPABILITY
from ._recorder import RecordedRequest
from ._side import ServerSide

__all__ = ["Context", "Invocation", "LegacySession", "Link", "NoAnswer", "abandoned"]


@dataclass
class LegacySession:
    """What one connection's ``initialize`` handshake (and ``logging/setLevel``) set up.

    Written on the connection's dispatcher thread; read from any thread.
    """

    version: Optional[str] = None
    """The negotiated version; None before ``initialize`` (no legacy session yet)."""
    initialized: bool = False
    """The client sent ``notifications/initialized``."""
    client_capabilities: JSONObject = field(default_factory=dict)
    client_info: JSONObject = field(default_factory=dict)
    log_level: Optional[str] = None
    """The level ``logging/setLevel`` asked for (None: everything)."""
    subscriptions: Set[str] = field(default_factory=set)
    """The resource URIs the client subscribed to."""


class Link(Protocol):
    """What a run needs of the connection it came on."""

    @property
    def side(self) -> ServerSide:
        """The server side the connection serves."""

    @property
    def session(self) -> LegacySession:
        """The connection's legacy session state."""

    def notify(self, method: str, params: Optional[JSONObject] = None) -> bool:
        """Send a notification to the client; False if the connection is closed."""

    def request_client(self, run: "Invocation", method: str, params: JSONObject, timeout: Optional[float]) -> Any:
        """Legacy: send the client a request and block for its result."""

    def ask_for_input(self, run: "Invocation", method: str, params: JSONObject, timeout: Optional[float]) -> Any:
        """2026-07-28: answer ``input_required`` and block for the client's retry with the input."""


class NoAnswer(Exception):
    """Raised inside a fake function to end it without answering the request."""


class Invocation:
    """One run of a user function and the wire request it currently answers."""

    def __init__(self, connection: Link, request_id: RequestId, method: str, params: JSONObject,
                 era: str, protocol_version: Optional[str], record: Optional[RecordedRequest] = None) -> None:
        self.connection = connection
        self.record = record  # the first request's record (a refusal before the function runs marks it)
        self.method = method
        self.params = params
        self.era = era
        self.protocol_version = protocol_version
        self.request_id: Optional[RequestId] = request_id  # None once answered or abandoned
        self.meta: JSONObject = _meta_of(params)
        self.cancelled = threading.Event()
        self.cancel_reason: Optional[str] = None
        self._wakers: Set[threading.Event] = set()
        self._lock = threading.Lock()
        # 2026-07-28 input requests (MRTR): what the run waits for, and the client's answer.
        self.inputs_asked = 0
        self.waiting: Optional[JSONObject] = None
        self.state_token: Optional[str] = None
        self.input_ready = False
        self.input_response: Any = None
        self.resumed = threading.Event()

    @property
    def target(self) -> Any:
        """What the request is about (tool name, resource URI or prompt name)."""
        return self.params.get("uri") if self.method == RESOURCES_READ else self.params.get("name")

    def cancel(self, reason: Optional[str]) -> None:
        with self._lock:
            if self.cancelled.is_set():
                return
            self.cancel_reason = reason
            self.cancelled.set()
            wakers = list(self._wakers)
        for event in wakers:
            event.set()

    def add_waker(self, event: threading.Event) -> None:
        """Also set ``event`` when the run is cancelled (at once if it already is)."""
        with self._lock:
            self._wakers.add(event)
            cancelled = self.cancelled.is_set()
        if cancelled:
            event.set()

    def remove_waker(self, event: threading.Event) -> None:
        with self._lock:
            self._wakers.discard(event)

    def switch_to(self, request_id: RequestId, params: JSONObject) -> None:
        """Answer ``request_id`` from now on (a 2026-07-28 retry that brought input)."""
        self.request_id = request_id
        self.meta = _meta_of(params)


class Context:
    """What a fake function can do while it serves a request: the behaviour of
    :class:`mcpsync.testing.Context` (documented there), which adds ``server`` typed as the ``FakeServer``."""

    def __init__(self, invocation: Invocation) -> None:
        self._run = invocation

    def __repr__(self) -> str:
        return f"<Context {self._run.method} id={self._run.request_id!r} era={self._run.era}>"

    # -- what is being served ------------------------------------------------------------

    @property
    def server(self) -> object:
        """The server this request came to (the public class, :class:`mcpsync.testing.Context`, made by the
        FakeServer's connections, types it as the ``FakeServer``)."""
        return self._run.connection.side.owner

    @property
    def request_id(self) -> Optional[RequestId]:
        """The JSON-RPC id being answered (it changes when a 2026-07-28 retry arrives)."""
        return self._run.request_id

    @property
    def method(self) -> str:
        """The method being served (``tools/call``, ``resources/read`` or ``prompts/get``)."""
        return self._run.method

    @property
    def params(self) -> JSONObject:
        """The request's ``params`` (those of the first request, for a retried one)."""
        return self._run.params

    @property
    def meta(self) -> JSONObject:
        """The current request's ``_meta`` (empty when it has none)."""
        return self._run.meta

    @property
    def era(self) -> str:
        """``"legacy"`` (after an ``initialize`` handshake) or ``"modern"`` (2026-07-28 ``_meta``)."""
        return self._run.era

    @property
    def protocol_version(self) -> Optional[str]:
        """The negotiated version (legacy) or the one the request carries (2026-07-28)."""
        return self._run.protocol_version

    @property
    def client_capabilities(self) -> JSONObject:
        """What the client declared: at ``initialize`` (legacy) or on this request (2026-07-28)."""
        if self._run.era == "modern":
            capabilities = self._run.meta.get(CLIENT_CAPABILITIES_KEY)
            return capabilities if isinstance(capabilities, dict) else {}
        return self._run.connection.session.client_capabilities

    @property
    def client_info(self) -> JSONObject:
        """Who the client says it is (``clientInfo``), at ``initialize`` or on this request."""
        if self._run.era == "modern":
            info = self._run.meta.get(CLIENT_INFO_KEY)
            return info if isinstance(info, dict) else {}
        return self._run.connection.session.client_info

    # -- cancellation and time -------------------------------------------------------------

    @property
    def cancelled(self) -> bool:
        """True once the client cancelled this request or the connection closed."""
        return self._run.cancelled.is_set()

    @property
    def cancel_reason(self) -> Optional[str]:
        """Why the request was cancelled (the client's ``reason``), once it is."""
        return self._run.cancel_reason

    def wait_cancelled(self, timeout: Optional[float] = None) -> bool:
        """Block until the request is cancelled (True) or ``timeout`` seconds pass (False)."""
        return self._run.cancelled.wait(timeout)

    def sleep(self, seconds: float) -> bool:
        """Sleep, waking early if the request is cancelled; True if the whole time passed.

        Use this rather than ``time.sleep`` so a closed client or server never
        waits for a slow fake to finish.
        """
        return not self._run.cancelled.wait(seconds)

    def hang(self) -> None:
        """Never answer: block until the client cancels or the connection closes, then end silently."""
        self._run.cancelled.wait()
        raise NoAnswer()

    # -- notifications ------------------------------------------------------------------------

    def progress(self, progress: float, total: Optional[float] = None, message: Optional[str] = None) -> bool:
        """Send ``notifications/progress`` if the client asked for progress; says whether it did."""
        token = self._run.meta.get("progressToken")
        if token is None:
            return False
        params: JSONObject = {"progressToken": token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        return self._run.connection.notify(NOTIFY_PROGRESS, params)

    def log(self, level: str, data: Any, logger: Optional[str] = None) -> bool:
        """Send ``notifications/message`` if the client wants ``level``; says whether it did.

        Legacy: everything unless ``logging/setLevel`` set a higher level.
        2026-07-28: only when the request's ``_meta`` carries a log level at
        or below ``level``.
        """
        if level not in LOG_LEVELS:
            raise ValueError(f"Unknown log level {level!r}; expected one of {', '.join(LOG_LEVELS)}")
        if self._run.era == "modern":
            threshold = self._run.meta.get(LOG_LEVEL_KEY)
            if threshold not in LOG_LEVELS:
                return False
        else:
            threshold = self._run.connection.session.log_level or "debug"
        if LOG_LEVELS.index(level) < LOG_LEVELS.index(str(threshold)):
            return False
        params: JSONObject = {"level": level, "data": data}
        if logger is not None:
            params["logger"] = logger
        return self._run.connection.notify(NOTIFY_MESSAGE, params)

    def notify(self, method: str, params: Optional[JSONObject] = None) -> bool:
        """Send any notification to the client; False if the connection is closed."""
        return self._run.connection.notify(method, params)

    # -- asking the client ----------------------------------------------------------------------

    def sample(self, messages: Union[str, Sequence[Any]], *, max_tokens: int = 256,
               timeout: Optional[float] = None, **params: Any) -> JSONObject:
        """Ask the client's model (``sampling/createMessage``); returns the client's result dict.

        ``messages`` is a string (one user message) or a list of strings and
        ``{"role", "content"}`` dicts; other ``params`` (``systemPrompt``,
        ``modelPreferences``, ...) are sent as given.

        Raises:
            MCPError: the client answered with an error, or did not declare ``sampling``.
            RequestTimeout: a legacy client did not answer within ``timeout``.
            RequestCancelled: the request was cancelled or the client never retried.
        """
        items = [messages] if isinstance(messages, str) else list(messages)
        wire = [_sampling_message(item) for item in items]
        return self._ask(SAMPLING_CREATE_MESSAGE, {"messages": wire, "maxTokens": max_tokens, **params},
                         "sampling", timeout)

    def elicit(self, message: str, schema: Optional[JSONObject] = None, *,
               timeout: Optional[float] = None, **params: Any) -> JSONObject:
        """Ask the user through the client (``elicitation/create``); returns ``{"action", "content"?}``.

        ``schema`` is the ``requestedSchema`` (a flat object schema; by default
        one with no properties, a plain confirmation). Raises like :meth:`sample`.
        """
        requested = schema if schema is not None else {"type": "object", "properties": {}}
        return self._ask(ELICITATION_CREATE, {"message": message, "requestedSchema": requested, **params},
                         "elicitation", timeout)

    def list_roots(self, *, timeout: Optional[float] = None) -> List[JSONObject]:
        """The client's roots (``roots/list``), as ``{"uri", "name"?}`` dicts. Raises like :meth:`sample`."""
        result = self._ask(ROOTS_LIST, {}, "roots", timeout)
        roots = result.get("roots") if isinstance(result, dict) else None
        return [root for root in roots if isinstance(root, dict)] if isinstance(roots, list) else []

    def _ask(self, method: str, params: JSONObject, capability: str, timeout: Optional[float]) -> JSONObject:
        if capability not in self.client_capabilities:
            raise MCPError(MISSING_CLIENT_CAPABILITY,
                           f"The client did not declare the {capability!r} capability needed for {method}",
                           {"requiredCapabilities": {capability: {}}})
        connection = self._run.connection
        if self._run.era == "modern":
            result = connection.ask_for_input(self._run, method, params, timeout)
        else:
            result = connection.request_client(self._run, method, params, timeout)
        if not isinstance(result, dict):
            raise MCPError(rpc.INTERNAL_ERROR, f"The client's answer to {method} is not an object")
        return result


def _sampling_message(item: Any) -> JSONObject:
    if isinstance(item, str):
        return {"role": "user", "content": {"type": "text", "text": item}}
    message: Dict[str, Any] = dict(item)
    if isinstance(message.get("content"), str):
        message["content"] = {"type": "text", "text": message["content"]}
    message.setdefault("role", "user")
    return message


def _meta_of(params: JSONObject) -> JSONObject:
    meta = params.get("_meta")
    return meta if isinstance(meta, dict) else {}


def abandoned() -> RequestCancelled:
    """The error a run gets when its request is gone (cancelled, abandoned or closed)."""
    return RequestCancelled("the request was cancelled or its connection closed")
