"""Transports: how messages reach a server. ``create_transport`` picks one from a config."""

from __future__ import annotations

from typing import Any, Dict

from .base import Transport
from .memory import MemoryTransport
from .stdio import StdioTransport, stdio_from_config

__all__ = ["MemoryTransport", "StdioTransport", "Transport", "create_transport"]

_STDIO_TYPES = {None, "stdio"}
_HTTP_TYPES = {"http", "streamable-http", "streamableHttp", "sse"}


def create_transport(config: Dict[str, Any], **options: Any) -> Transport:
    """Build an unopened transport from a server config dict.

    ``type`` omitted or ``"stdio"`` gives a :class:`StdioTransport` (keys
    ``command``, ``args``, ``env``, ``cwd``, ``timeout`` in milliseconds).
    ``options`` are passed to the transport and win over the config.

    Raises:
        ValueError: the config is incomplete or names an unknown type.
    """
    if not isinstance(config, dict):
        raise ValueError(f"A server config must be a dict, not {type(config).__name__}")
    kind = config.get("type")
    if kind in _STDIO_TYPES:
        return stdio_from_config(config, **options)
    if kind in _HTTP_TYPES:
        raise ValueError(f"Transport type {kind!r} is not available in this version of mcpsync")
    raise ValueError(f"Unknown transport type {kind!r}: expected 'stdio', 'http' or 'sse'")
