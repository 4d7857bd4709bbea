"""Transports: how messages reach a server. ``create_transport`` picks one from a config."""

from __future__ import annotations

from typing import Any, Dict

from . import _seam
from .base import Transport
from .memory import MemoryTransport
from .sse import SSETransport
from .stdio import StdioTransport, stdio_from_config
from .streamable_http import StreamableHTTPTransport

__all__ = ["MemoryTransport", "SSETransport", "StdioTransport", "StreamableHTTPTransport", "Transport",
           "create_transport"]

_STDIO_TYPES = {None, "stdio"}
_STREAMABLE_TYPES = {"http", "streamable-http", "streamableHttp"}
_HTTP_CONFIG_KEYS = ("headers", "name", "token", "verify")


def create_transport(config: Dict[str, Any], **options: Any) -> Transport:
    """Build an unopened transport from a server config dict.

    ``type`` omitted or ``"stdio"`` gives a :class:`StdioTransport` (keys
    ``command``, ``args``, ``env``, ``cwd``, ``timeout`` in milliseconds).
    ``"http"``, ``"streamable-http"`` or ``"streamableHttp"`` gives a
    :class:`StreamableHTTPTransport` and ``"sse"`` an :class:`SSETransport`
    (keys ``url``, ``headers``, ``token``, ``verify``, ``timeout`` in
    milliseconds). A ``url`` without a ``type`` gives a Streamable HTTP
    transport that offers the legacy HTTP+SSE fallback during the handshake.
    ``options`` are passed to the transport and win over the config.

    Raises:
        ValueError: the config is incomplete or names an unknown type.
    """
    return _seam.hand_over(_build(config, options))


def _build(config: Dict[str, Any], options: Dict[str, Any]) -> Transport:
    if not isinstance(config, dict):
        raise ValueError(f"A server config must be a dict, not {type(config).__name__}")
    kind = config.get("type")
    if kind is None and "url" in config and "command" not in config:
        options.setdefault("legacy_fallback", True)
        return _http_from_config(StreamableHTTPTransport, config, options)
    if kind in _STDIO_TYPES:
        return stdio_from_config(config, **options)
    if kind in _STREAMABLE_TYPES:
        return _http_from_config(StreamableHTTPTransport, config, options)
    if kind == "sse":
        return _http_from_config(SSETransport, config, options)
    raise ValueError(f"Unknown transport type {kind!r}: expected 'stdio', 'http' or 'sse'")


def _http_from_config(cls: Any, config: Dict[str, Any], options: Dict[str, Any]) -> Transport:
    url = config.get("url")
    if not isinstance(url, str) or not url:
        raise ValueError(f"An HTTP server config needs a 'url' string (type {config.get('type')!r})")
    if "timeout" in config and "timeout" not in options:
        options["timeout"] = float(config["timeout"]) / 1000.0
    for key in _HTTP_CONFIG_KEYS:
        if key in config and key not in options:
            options[key] = config[key]
    transport: Transport = cls(url, **options)
    return transport
