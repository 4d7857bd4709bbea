"""One-off JSON-RPC calls over HTTP (:func:`call_mcp`) and reading a whole SSE body (:func:`parse_sse`).

The public home of both names; they live in :mod:`mcpsync.transports.stateless`
with the rest of the HTTP code. See there for when to use them.
"""

from __future__ import annotations

from .transports.stateless import call_mcp, parse_sse

__all__ = ["call_mcp", "parse_sse"]
