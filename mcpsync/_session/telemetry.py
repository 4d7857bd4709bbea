"""OpenTelemetry spans and metrics for what a client sends, as the semantic conventions for MCP describe them.

Every request (``tools/call``, ``initialize``, ``server/discover``, ``ping``, ...) and every
notification the client sends goes through :func:`request` or :func:`notify`. When the
application has set an OpenTelemetry tracer provider, each is a ``CLIENT`` span named
``"{mcp.method.name} {target}"`` (the tool or prompt name; the method alone otherwise),
made current while the message is sent, so the ``traceparent`` that
:mod:`mcpsync._session.tracing` puts into ``params._meta`` is this span's and the
server's span becomes its child. When it has set a meter provider, each also records
``mcp.client.operation.duration``; :func:`session_ended` records
``mcp.client.session.duration``.

The conventions followed are those of open-telemetry/semantic-conventions-genai,
``docs/gen-ai/mcp.md`` (status "Development", commit 0393513 of its main branch; the
attributes from the general conventions it links, v1.41.1): span name, kind and
attributes of the MCP client span, the two client histograms with their advisory bucket
boundaries, and "Recording MCP transport" (stdio: ``network.transport=pipe``; HTTP:
``tcp`` and ``network.protocol.name=http``). ``error.type`` is the JSON-RPC error code
for an error response (also in ``rpc.response.status_code``, the status description
being the error's message), ``tool_error`` for a ``CallToolResult`` with ``isError``,
``timeout`` for a request that timed out, and otherwise the failure's class name
(``mcpsync.exceptions.TransportClosed``, ...). The opt-in attributes (tool arguments and
results; the resource URI on metrics) are not recorded.

Cost: ``opentelemetry`` is never imported here. Until the application has loaded it,
each message pays one ``sys.modules`` lookup; loaded with no provider set, one provider
lookup per message (the tracer and instruments are made once per provider and kept).
A client built with ``telemetry=False`` makes no spans and records nothing (the
application's own trace context still goes into ``_meta``). A fault in OpenTelemetry
never fails a request: the request goes out untraced.

Thread safety: any thread; the cached instruments are replaced whole (a race builds them twice).
"""

from __future__ import annotations

import sys
import time
from typing import Any, Callable, Dict, Optional, Protocol, Tuple
from urllib.parse import urlsplit

from .._log import getLogger
from .._protocol.methods import (
    INITIALIZE, NOTIFY_RESOURCES_UPDATED, PROMPTS_GET, RESOURCES_READ, RESOURCES_SUBSCRIBE,
    RESOURCES_UNSUBSCRIBE, TOOLS_CALL,
)
from .._rpc.jsonrpc import JSONObject, RequestId
from .._rpc.options import CallOptions
from .._version import __version__
from ..exceptions import MCPError, RequestTimeout, TransportClosed
from ..transports.base import Transport
from ..transports.stdio import StdioTransport
from .meta import PROTOCOL_VERSION
from .tracing import with_trace_context

__all__ = ["SCOPE", "Traced", "notify", "request", "session_ended"]

log = getLogger("mcpsync.client")

#: The instrumentation scope the spans and metrics are reported under.
SCOPE = "mcpsync"
#: The advisory bucket boundaries the conventions give both histograms, in seconds.
_BUCKETS = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300]
#: The attributes of a span that also go on ``mcp.client.operation.duration`` (the others,
#: a session id, a request id, a resource URI, are too many-valued for a metric).
_METRIC_KEYS = ("mcp.method.name", "error.type", "gen_ai.prompt.name", "gen_ai.tool.name", "rpc.response.status_code",
                "gen_ai.operation.name", "mcp.protocol.version", "network.protocol.name", "network.transport",
                "server.address", "server.port")
#: The attributes known only once the answer is in (set on the span as it ends).
_LATE_KEYS = ("error.type", "rpc.response.status_code", "mcp.protocol.version")
#: The requests and notifications whose ``uri`` parameter is ``mcp.resource.uri``.
_URI_METHODS = frozenset({RESOURCES_READ, RESOURCES_SUBSCRIBE, RESOURCES_UNSUBSCRIBE,
                          NOTIFY_RESOURCES_UPDATED})

_modules = sys.modules


class Traced(Protocol):
    """What the functions here need of a session (see :class:`~mcpsync._session.session.Session`)."""

    transport: Transport
    send_baggage: bool
    telemetry: bool
    protocol_version: Optional[str]


class _Instruments:
    """The tracer and histograms of one pair of providers (None where that provider is not set)."""

    __slots__ = ("tracer_provider", "meter_provider", "tracer", "operation", "session", "any")

    def __init__(self, tracer_provider: Any, meter_provider: Any, tracer: Any, operation: Any, session: Any) -> None:
        self.tracer_provider = tracer_provider
        self.meter_provider = meter_provider
        self.tracer = tracer
        self.operation = operation
        self.session = session
        self.any = tracer is not None or operation is not None


_current: Optional[_Instruments] = None


def request(session: Traced, method: str, params: Optional[JSONObject], options: CallOptions) -> Any:
    """``session.transport.request``, with the trace context in ``_meta``, as a span and a duration
    when the application set OpenTelemetry up (see the module docs).

    Raises:
        as ``Transport.request`` (recorded on the span first).
    """
    if session.telemetry and "opentelemetry.context" in _modules:
        found = _instruments()
        if found is not None:
            return _operation(found, session, method, params, options)
    return session.transport.request(method, with_trace_context(params, session.send_baggage), options=options)


def notify(session: Traced, method: str, params: Optional[JSONObject] = None) -> None:
    """``session.transport.notify``, as a span and a duration when OpenTelemetry is set up; then the
    span's trace context goes into the notification's ``_meta`` too.

    Raises:
        as ``Transport.notify``.
    """
    if session.telemetry and "opentelemetry.context" in _modules:
        found = _instruments()
        if found is not None:
            _operation(found, session, method, params, None)
            return
    session.transport.notify(method, params)


def session_ended(session: Traced, seconds: float, lost: bool = False) -> None:
    """Record ``mcp.client.session.duration`` (``seconds`` from connect to close), when a meter provider is set.

    ``lost``: the connection ended before the close (the server exited, the stream broke): the
    session ended with an error, ``error.type`` ``mcpsync.exceptions.TransportClosed``.
    """
    if not (session.telemetry and "opentelemetry.context" in _modules):
        return
    found = _instruments()
    if found is None or found.session is None:
        return
    attributes = _peer(session.transport)
    if session.protocol_version is not None:
        attributes["mcp.protocol.version"] = session.protocol_version
    if lost:
        attributes["error.type"] = _class_name(TransportClosed)
    try:
        found.session.record(seconds, attributes)
    except Exception:  # a fault in the SDK must not fail a close
        log.debug("Could not record mcp.client.session.duration", exc_info=True)


def _operation(found: _Instruments, session: Traced, method: str, params: Optional[JSONObject],
               options: Optional[CallOptions]) -> Any:
    """Send one request (``options`` given) or notification inside its span; record its duration."""
    transport = session.transport
    attributes = _attributes(session, method, params)
    span, token = _start(found, method, attributes, transport)
    if span is not None and options is not None:
        options = options._replace(on_request_id=_noting(span, options.on_request_id))
    failure: Optional[Tuple[str, Optional[str], Optional[str]]] = None
    started = time.monotonic()
    try:
        if options is None:  # a notification carries a trace context only when it is a span of its own
            transport.notify(method, with_trace_context(params, session.send_baggage) if span is not None else params)
            return None
        result = transport.request(method, with_trace_context(params, session.send_baggage), options=options)
        failure = _noted(method, result, attributes)
        return result
    except BaseException as exc:
        failure = _failure(exc)
        raise
    finally:
        _finish(found, span, token, attributes, failure, time.monotonic() - started, transport)


def _noted(method: str, result: Any, attributes: Dict[str, Any]) -> Optional[Tuple[str, Optional[str], Optional[str]]]:
    """What an answer tells the operation: a tool's error result is its failure, ``initialize``'s its version."""
    if not isinstance(result, dict):
        return None
    if method == TOOLS_CALL and result.get("isError") is True:
        return ("tool_error", None, None)
    if method == INITIALIZE and isinstance(result.get("protocolVersion"), str):
        attributes["mcp.protocol.version"] = result["protocolVersion"]
    return None


def _start(found: _Instruments, method: str, attributes: Dict[str, Any], transport: Transport) -> Tuple[Any, Any]:
    """The operation's span, started and made current (with its context token); (None, None) without a tracer."""
    tracer = found.tracer
    if tracer is None:
        return None, None
    try:
        trace = _modules["opentelemetry.trace"]
        context = _modules["opentelemetry.context"]
        target = attributes.get("gen_ai.tool.name") or attributes.get("gen_ai.prompt.name")
        spanned = dict(attributes)
        session_id = getattr(transport, "session_id", None)
        if isinstance(session_id, str):
            spanned["mcp.session.id"] = session_id
        span = tracer.start_span(f"{method} {target}" if target else method, kind=trace.SpanKind.CLIENT,
                                 attributes=spanned)
        return span, context.attach(trace.set_span_in_context(span))
    except Exception:  # a fault in the SDK: the request goes out untraced
        log.debug("Could not start a span for %s", method, exc_info=True)
        return None, None


def _finish(found: _Instruments, span: Any, token: Any, attributes: Dict[str, Any],
            failure: Optional[Tuple[str, Optional[str], Optional[str]]], seconds: float, transport: Transport) -> None:
    """End the span (status, error and late attributes) and record the duration."""
    if failure is not None:
        attributes["error.type"] = failure[0]
        if failure[1] is not None:
            attributes["rpc.response.status_code"] = failure[1]
    try:
        if span is not None:
            _end_span(span, token, attributes, failure, transport)
        if found.operation is not None:
            found.operation.record(seconds, {key: attributes[key] for key in _METRIC_KEYS if key in attributes})
    except Exception:  # a fault in the SDK must not fail a request that succeeded
        log.debug("Could not end the span or record the duration", exc_info=True)


def _end_span(span: Any, token: Any, attributes: Dict[str, Any],
              failure: Optional[Tuple[str, Optional[str], Optional[str]]], transport: Transport) -> None:
    """Leave the span's context, give a recording span its late attributes and error status, end it."""
    _modules["opentelemetry.context"].detach(token)
    if span.is_recording():
        late: Dict[str, Any] = {key: attributes[key] for key in _LATE_KEYS if key in attributes}
        session_id = getattr(transport, "session_id", None)  # HTTP: known once initialize is answered
        if isinstance(session_id, str):
            late["mcp.session.id"] = session_id
        span.set_attributes(late)
        if failure is not None:
            trace = _modules["opentelemetry.trace"]
            span.set_status(trace.Status(trace.StatusCode.ERROR, failure[2]))
    span.end()


def _attributes(session: Traced, method: str, params: Optional[JSONObject]) -> Dict[str, Any]:
    """The attributes one operation's span and histogram share, as known before it is sent."""
    attributes = _peer(session.transport)
    attributes["mcp.method.name"] = method
    if params:
        attributes.update(_target(method, params))
    version = session.protocol_version
    if version is None and params:  # a modern handshake: the version asked for is in the envelope
        meta = params.get("_meta")
        version = meta.get(PROTOCOL_VERSION) if isinstance(meta, dict) else None
    if isinstance(version, str):
        attributes["mcp.protocol.version"] = version
    return attributes


def _target(method: str, params: JSONObject) -> Dict[str, Any]:
    """The attributes naming what an operation acts on: the tool called, the prompt got, the resource's URI."""
    name = params.get("name")
    if method == TOOLS_CALL and isinstance(name, str):
        return {"gen_ai.tool.name": name, "gen_ai.operation.name": "execute_tool"}
    if method == PROMPTS_GET and isinstance(name, str):
        return {"gen_ai.prompt.name": name}
    if method in _URI_METHODS and isinstance(params.get("uri"), str):
        return {"mcp.resource.uri": params["uri"]}
    return {}


def _peer(transport: Transport) -> Dict[str, Any]:
    """The transport's attributes: ``network.*`` and, over HTTP, ``server.address`` and ``server.port``."""
    if isinstance(transport, StdioTransport):
        return {"network.transport": "pipe"}
    from ..transports._http import HTTPTransportBase  # here: `import mcpsync` loads no HTTP transport

    if not isinstance(transport, HTTPTransportBase):
        return {}  # in memory: no network
    attributes: Dict[str, Any] = {"network.transport": "tcp", "network.protocol.name": "http"}
    try:
        parts = urlsplit(transport.url)
        port = parts.port or {"http": 80, "https": 443}.get(parts.scheme)
    except ValueError:  # a URL the transport itself will refuse
        return attributes
    if parts.hostname:
        attributes["server.address"] = parts.hostname
        if port is not None:
            attributes["server.port"] = port
    return attributes


def _failure(exc: BaseException) -> Tuple[str, Optional[str], Optional[str]]:
    """``(error.type, rpc.response.status_code, status description)`` of a failed operation."""
    if isinstance(exc, MCPError):
        return str(exc.code), str(exc.code), exc.message
    if isinstance(exc, RequestTimeout):
        return "timeout", None, None
    return _class_name(type(exc)), None, None


def _class_name(kind: type) -> str:
    return f"{kind.__module__}.{kind.__qualname__}"


def _noting(span: Any, then: Optional[Callable[[RequestId], None]]) -> Callable[[RequestId], None]:
    """An ``on_request_id`` that puts the id on ``span`` (``jsonrpc.request.id``), then calls ``then``."""
    def note(request_id: RequestId) -> None:
        try:
            span.set_attribute("jsonrpc.request.id", str(request_id))
        except Exception:
            log.debug("Could not set jsonrpc.request.id", exc_info=True)
        if then is not None:
            then(request_id)
    return note


def _instruments() -> Optional[_Instruments]:
    """The tracer and histograms of the providers the application set; None when it set neither."""
    trace = _modules.get("opentelemetry.trace")
    metrics = _modules.get("opentelemetry.metrics")
    try:
        tracer_provider = trace.get_tracer_provider() if trace is not None else None
        meter_provider = metrics.get_meter_provider() if metrics is not None else None
    except Exception:
        return None
    found = _current
    if found is None or found.tracer_provider is not tracer_provider or found.meter_provider is not meter_provider:
        found = _build(trace, tracer_provider, metrics, meter_provider)
    return found if found.any else None


def _build(trace: Any, tracer_provider: Any, metrics: Any, meter_provider: Any) -> _Instruments:
    """Make (and keep) the tracer and histograms of these providers; a provider not set gives None."""
    global _current
    tracer = operation = session = None
    try:
        if tracer_provider is not None and not isinstance(
                tracer_provider, (trace.ProxyTracerProvider, trace.NoOpTracerProvider)):
            tracer = tracer_provider.get_tracer(SCOPE, __version__)
        # The API's stand-in until a provider is set is private: known by its class name.
        if meter_provider is not None and not isinstance(meter_provider, metrics.NoOpMeterProvider) \
                and type(meter_provider).__name__ != "_ProxyMeterProvider":
            meter = meter_provider.get_meter(SCOPE, __version__)
            operation = _histogram(meter, "mcp.client.operation.duration",
                                   "The duration of the MCP request or notification as observed on the sender "
                                   "from the time it was sent until the response or ack is received.")
            session = _histogram(meter, "mcp.client.session.duration",
                                 "The duration of the MCP session as observed on the MCP client.")
    except Exception:
        log.debug("Could not set up OpenTelemetry instruments", exc_info=True)
        tracer = operation = session = None
    found = _Instruments(tracer_provider, meter_provider, tracer, operation, session)
    _current = found
    return found


def _histogram(meter: Any, name: str, description: str) -> Any:
    try:
        return meter.create_histogram(name, unit="s", description=description,
                                      explicit_bucket_boundaries_advisory=_BUCKETS)
    except TypeError:  # an API before 1.23 takes no advisory boundaries
        return meter.create_histogram(name, unit="s", description=description)
