"""The MCP error codes, in one table, and the one mapping from a JSON-RPC error to its typed exception.

The standard JSON-RPC codes (``-32700`` … ``-32603``) live in :mod:`mcpsync._rpc.jsonrpc`;
the codes MCP adds on top of them are named in :mod:`mcpsync._protocol.codes`; here each becomes its exception class.
:func:`typed` is the only place an :class:`~mcpsync.MCPError` is turned into a subclass, so
every such error keeps its ``http_status`` and is chained to the error it replaces.

Pure functions and constants: no threads, no I/O, nothing blocks.
"""

from __future__ import annotations

from typing import Any, Dict, List, Type

from .._protocol.codes import (
    HEADER_MISMATCH, MISSING_CAPABILITY, RESOURCE_NOT_FOUND, UNSUPPORTED_VERSION, URL_ELICITATION_REQUIRED,
)
from .._rpc.jsonrpc import INVALID_PARAMS
from .._protocol.versions import ALL_VERSIONS
from ..exceptions import (
    MCPError, MissingClientCapability, ResourceNotFound, UnsupportedProtocolVersion, URLElicitationRequired,
)
from ..handlers import ElicitParams

__all__ = [
    "HEADER_MISMATCH", "MISSING_CAPABILITY", "MODERN_HTTP_ERRORS", "RESOURCE_NOT_FOUND", "UNSUPPORTED_VERSION",
    "URL_ELICITATION_REQUIRED", "typed", "version_refused",
]

#: The errors only a modern server sends in an HTTP 400 body (era detection reads them).
MODERN_HTTP_ERRORS = frozenset({UNSUPPORTED_VERSION, MISSING_CAPABILITY, HEADER_MISMATCH, INVALID_PARAMS})

# Codes whose exception type does not depend on the request.
_BY_CODE: Dict[int, Type[MCPError]] = {
    kind.CODE: kind for kind in (MissingClientCapability, URLElicitationRequired)
}


def typed(error: MCPError, *, resource_read: bool = False, modern: bool = False) -> MCPError:
    """``error`` as the exception its code calls for (``error`` itself when it has no type of its own).

    ``resource_read`` says the error answered ``resources/read``: then ``-32002`` or ``-32602`` is
    a :class:`~mcpsync.ResourceNotFound`, in every era (modern servers use ``-32602``, and so do
    TypeScript-SDK servers of the legacy era; the request's one parameter is the URI, so an invalid
    parameter is a URI the server does not have). ``modern`` is kept for callers that pass it.
    The caller raises the result ``from error`` when it is a new object.
    """
    kind = _BY_CODE.get(error.code)
    if kind is None and resource_read and error.code in (RESOURCE_NOT_FOUND, INVALID_PARAMS):
        kind = ResourceNotFound
    if kind is None or isinstance(error, kind):
        return error
    if kind is URLElicitationRequired:
        found: MCPError = URLElicitationRequired(error.code, error.message, error.data,
                                                 elicitations=_elicitations(error.data))
    else:
        found = kind(error.code, error.message, error.data)
    found.http_status = error.http_status
    return found


def _elicitations(data: Any) -> List[ElicitParams]:
    items = data.get("elicitations") if isinstance(data, dict) else None
    return [ElicitParams(item) for item in items if isinstance(item, dict)] if isinstance(items, list) else []


def version_refused(error: MCPError, asked: str) -> UnsupportedProtocolVersion:
    """The :class:`~mcpsync.UnsupportedProtocolVersion` for a ``-32022`` refusal of version ``asked``.

    The text names the version refused, what the server says it supports (its
    ``data.supported``, when it sent one) and what this client speaks. The caller
    raises it ``from error``.
    """
    data = error.data if isinstance(error.data, dict) else {}
    listed = data.get("supported")
    supported = [v for v in listed if isinstance(v, str)] if isinstance(listed, list) else []
    offered = ", ".join(supported) if supported else "none named"
    requested = data.get("requested")
    asked = requested if isinstance(requested, str) and requested else asked
    said = f" ({error.message})" if error.message else ""
    common = [v for v in ALL_VERSIONS if v in supported and v != asked]
    advice = (f"both speak {common[0]}: connect with protocol={common[0]!r} (or 'auto')" if common else
              "use a server (or a server version) that speaks one of these")
    message = (f"The server refused protocol version {asked!r} with -32022{said}; it supports: {offered}; "
               f"this client speaks {', '.join(ALL_VERSIONS)}; {advice}")
    return UnsupportedProtocolVersion(offered, ALL_VERSIONS, message)
