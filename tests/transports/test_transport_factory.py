"""The transport factory (issue 21): one module turns a target or a config into a transport, and the
options each transport takes are read from its constructor, not listed by hand."""

from __future__ import annotations

import inspect

import pytest

import mcpsync
from mcpsync._protocol.transports import TYPE_NAMES
from mcpsync.config import ServerConfig
from mcpsync.transports import SSETransport, StdioTransport, StreamableHTTPTransport, create_transport
from mcpsync.transports._factory import CLASSES, TRANSPORT_OPTIONS, config_type, options_of, transport_for


def test_every_keyword_option_of_every_transport_is_a_connect_option() -> None:
    """A new keyword on a transport's constructor (or on the HTTP base its ``**options`` reach) is a
    ``connect()`` option at once: nobody keeps a list."""
    from mcpsync.transports._http import HTTPTransportBase

    for cls in (StdioTransport, StreamableHTTPTransport, SSETransport, HTTPTransportBase):
        keyword = {p.name for p in inspect.signature(cls.__init__).parameters.values()
                   if p.kind is inspect.Parameter.KEYWORD_ONLY}
        assert keyword <= TRANSPORT_OPTIONS, (cls, keyword - TRANSPORT_OPTIONS)
    assert {"env", "headers", "pool_size", "legacy_fallback", "timeout"} <= TRANSPORT_OPTIONS
    assert "cwd" in options_of(StdioTransport) and "cwd" not in options_of(SSETransport)


def test_a_config_key_a_transport_does_not_declare_is_not_passed_on() -> None:
    transport = create_transport({"command": "python", "args": ["x.py"], "cwd": "/tmp", "headers": {"a": "b"}})
    assert isinstance(transport, StdioTransport)
    assert transport.cwd == "/tmp"


def test_every_config_type_name_becomes_its_transport() -> None:
    for name, kind in TYPE_NAMES.items():
        config = {"type": name, "command": "python"} if kind == "stdio" else {"type": name, "url": "http://127.0.0.1:1/mcp"}
        transport = create_transport(config, timeout=1.0)
        assert isinstance(transport, CLASSES[kind])
        assert config_type(transport) == kind


def test_a_config_timeout_is_milliseconds() -> None:
    transport = create_transport({"url": "http://127.0.0.1:1/mcp", "timeout": 2500})
    assert transport.timeout == 2.5


def test_a_server_config_and_a_connect_target_meet_in_the_factory() -> None:
    config = ServerConfig("files", command="python", args=["server.py"])
    transport = create_transport(config.transport_config(), name="files")
    assert isinstance(transport, StdioTransport) and transport.name == "files"
    built, client_options = transport_for(["python", "server.py"], {"cwd": "/tmp", "client_info": {"name": "x"}})
    assert isinstance(built, StdioTransport) and client_options == {"client_info": {"name": "x"}}


def test_an_unknown_type_is_refused() -> None:
    with pytest.raises(ValueError, match="Unknown transport type 'carrier-pigeon'"):
        create_transport({"type": "carrier-pigeon", "url": "http://x"})
    with pytest.raises(mcpsync.ConfigError):
        transport_for({"type": "carrier-pigeon", "url": "http://x"}, {})


def test_the_legacy_fallback_is_the_factorys_decision_not_the_transports() -> None:
    """Only a Streamable HTTP transport built to offer it, whose first POST was refused, falls back
    (end to end: tests/transports/test_http_legacy.py)."""
    from mcpsync.exceptions import HTTPStatusError
    from mcpsync.transports._factory import fallback_for

    refused = HTTPStatusError("404 Not Found", status_code=404)
    stdio = create_transport({"command": "python"})
    http = create_transport({"url": "http://127.0.0.1:1/mcp"})
    assert isinstance(http, StreamableHTTPTransport) and http.legacy_fallback and not http.first_post_refused
    assert fallback_for(stdio, RuntimeError("x")) is None
    assert fallback_for(http, refused) is None  # the first POST was never refused
    assert not hasattr(StdioTransport, "fallback_for") and not hasattr(StreamableHTTPTransport, "fallback_for")
