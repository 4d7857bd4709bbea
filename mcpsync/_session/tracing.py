"""OpenTelemetry trace context in each request's ``_meta`` (SEP-414): ``traceparent``, ``tracestate``, ``baggage``.

When the calling thread has an active OpenTelemetry span, every request the
session sends carries its W3C Trace Context in ``params._meta``, so the server's
spans join the caller's trace. W3C Baggage goes along only when the client was
asked to send it (``Client(send_baggage=True)``): baggage is the application's
own key-value data (a tenant, a user id, a feature flag), often set by code far
from the client, and a server is a third party. The 2026-07-28 spec reserves
these three keys for exactly this; older servers see ordinary ``_meta`` keys.

``opentelemetry-api`` is optional and never imported by ``import mcpsync``:
no span can be active unless the application has loaded ``opentelemetry.context``
itself, so until it has, each request pays one ``sys.modules`` lookup and
nothing else. The W3C propagators are used directly (not the global one the
application may have set to another format), since the spec requires the W3C
formats in these keys. Keys the caller put in ``_meta`` itself win.

Thread safety: pure functions of the calling thread's OpenTelemetry context.
"""

from __future__ import annotations

import sys
from typing import Any, Dict, List, Optional

from .._rpc.jsonrpc import JSONObject

__all__ = ["BAGGAGE", "TRACEPARENT", "TRACESTATE", "trace_context", "with_trace_context"]

TRACEPARENT = "traceparent"
TRACESTATE = "tracestate"
BAGGAGE = "baggage"

_modules = sys.modules
# The W3C propagators (trace context first, then baggage), made on first use once OpenTelemetry is
# loaded (empty: it is not installed whole).
_propagators: Optional[List[Any]] = None


def trace_context(baggage: bool = False) -> Optional[Dict[str, str]]:
    """The calling thread's trace context as ``_meta`` entries; None when no span is active.

    ``traceparent`` and ``tracestate`` always; ``baggage`` only when ``baggage`` is true.
    """
    if "opentelemetry.context" not in _modules:
        return None  # the application has not loaded OpenTelemetry: nothing can be active
    carrier: Dict[str, str] = {}
    propagators = _propagators if _propagators is not None else _load()
    for propagator in propagators if baggage else propagators[:1]:
        propagator.inject(carrier)
    return carrier or None


def with_trace_context(params: Optional[JSONObject], baggage: bool = False) -> Optional[JSONObject]:
    """``params`` with the active trace context in its ``_meta`` (``params`` itself when there is none).

    W3C Baggage is added only when ``baggage`` is true (the client's ``send_baggage``).
    """
    if "opentelemetry.context" not in _modules:  # the hot path: checked here too, to save a call
        return params
    carrier = trace_context(baggage)
    if carrier is None:
        return params
    merged: JSONObject = dict(params or {})
    own = merged.get("_meta")
    merged["_meta"] = {**carrier, **own} if isinstance(own, dict) else carrier
    return merged


def _load() -> List[Any]:
    global _propagators
    try:
        from opentelemetry.baggage.propagation import W3CBaggagePropagator
        from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
    except ImportError:  # a partial install: no propagation rather than a failed request
        found: List[Any] = []
    else:
        found = [TraceContextTextMapPropagator(), W3CBaggagePropagator()]
    _propagators = found  # two threads may both build them: equal, stateless objects
    return found
