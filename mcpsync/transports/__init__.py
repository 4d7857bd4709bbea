"""Transports: how messages reach a server. ``create_transport`` (in :mod:`._factory`, the one place a
target or a config becomes a transport) picks one from a config."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._factory import create_transport
from .base import Transport
from .memory import MemoryTransport
from .stdio import StdioTransport

if TYPE_CHECKING:
    from .sse import SSETransport
    from .streamable_http import StreamableHTTPTransport

__all__ = ["MemoryTransport", "SSETransport", "StdioTransport", "StreamableHTTPTransport", "Transport",
           "create_transport"]

# The HTTP transports load on first use: `import mcpsync` (and a stdio script) never needs them.
_LAZY = {"SSETransport": ".sse", "StreamableHTTPTransport": ".streamable_http"}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value
