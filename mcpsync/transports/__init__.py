"""Transports: how messages reach a server. ``create_transport`` (in :mod:`._factory`, the one place a
target or a config becomes a transport) picks one from a config."""

from __future__ import annotations

from ._factory import create_transport
from .base import Transport
from .memory import MemoryTransport
from .sse import SSETransport
from .stdio import StdioTransport
from .streamable_http import StreamableHTTPTransport

__all__ = ["MemoryTransport", "SSETransport", "StdioTransport", "StreamableHTTPTransport", "Transport",
           "create_transport"]
