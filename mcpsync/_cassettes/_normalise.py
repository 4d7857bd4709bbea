"""What makes two recordings of one conversation equal files, and two messages comparable.

Request ids the client chose are numbered 1, 2, 3... per connection in the order they were
sent (responses, progress tokens and cancellations follow their request); trace context in
``_meta`` is dropped; timestamps in notifications (log lines, say) become :data:`TIMESTAMP`.
Session ids travel in headers, which a cassette never holds. Results are kept as they came:
they are what a replay answers.
"""

from __future__ import annotations

import re
from typing import Any, Dict, Optional

__all__ = ["TIMESTAMP", "IdMap", "comparable", "strip_meta"]

TIMESTAMP = "<timestamp>"
_ISO = re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?$")
_TRACE_KEYS = ("traceparent", "tracestate", "baggage")


class IdMap:
    """The client's request ids of one connection, renumbered in order of first appearance."""

    def __init__(self) -> None:
        self._ids: Dict[Any, int] = {}

    def new(self, live: Any) -> int:
        number = self._ids[live] = len(self._ids) + 1
        return number

    def get(self, live: Any) -> Optional[int]:
        return self._ids.get(live) if isinstance(live, (int, str)) and not isinstance(live, bool) else None


def strip_meta(params: Any) -> Any:
    """``params`` without trace context in ``_meta`` (a new dict when something was dropped)."""
    if not isinstance(params, dict):
        return params
    meta = params.get("_meta")
    if isinstance(meta, dict) and any(key in meta for key in _TRACE_KEYS):
        meta = {k: v for k, v in meta.items() if k not in _TRACE_KEYS}
        params = dict(params)
        if meta:
            params["_meta"] = meta
        else:
            del params["_meta"]
    return params


def timestamps(value: Any) -> Any:
    """``value`` with ISO-8601 timestamp strings replaced by :data:`TIMESTAMP`."""
    if isinstance(value, dict):
        return {k: timestamps(v) for k, v in value.items()}
    if isinstance(value, list):
        return [timestamps(v) for v in value]
    if isinstance(value, str) and len(value) < 40 and _ISO.match(value):
        return TIMESTAMP
    return value


#: Left out of comparisons: they name the client, and an upgrade of mcpsync must not make
#: every cassette a mismatch (the capabilities, which change what a server does, are compared).
_CLIENT_INFO = ("clientInfo", "io.modelcontextprotocol/clientInfo")


_UNCOMPARED_META = ("progressToken", *_CLIENT_INFO)


def comparable(params: Any) -> Any:
    """``params`` as a recording is compared with: trace context, the progress token and the
    client's name and version left out."""
    params = strip_meta(params)
    if not isinstance(params, dict):
        return params
    if "clientInfo" in params:
        params = {k: v for k, v in params.items() if k != "clientInfo"}
    meta = params.get("_meta")
    if isinstance(meta, dict) and any(key in meta for key in _UNCOMPARED_META):
        params = _with_meta(params, {k: v for k, v in meta.items() if k not in _UNCOMPARED_META})
    return params


def _with_meta(params: Dict[str, Any], meta: Dict[str, Any]) -> Dict[str, Any]:
    """A copy of ``params`` with ``meta`` as its ``_meta`` (in its place), or without one when it is empty."""
    params = dict(params)
    if meta:
        params["_meta"] = meta
    else:
        del params["_meta"]
    return params
