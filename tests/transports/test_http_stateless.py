"""call_mcp: one POST, the raw envelope back, a timeout and typed errors."""

from __future__ import annotations


import pytest

import mcpsync
from mcpsync import ConnectError, HTTPStatusError, ProtocolError, RequestTimeout, call_mcp

from ..http_fixtures import _sdk_servers, make_sdk_fixture, mis  # noqa: F401  (fixtures)

stateless = make_sdk_fixture("json-stateless", "sse-stateless")
stateful = make_sdk_fixture("sse-stateful")


def test_call_mcp_returns_the_raw_envelope_from_a_stateless_server(stateless):
    reply = call_mcp(stateless.url, "tools/call", {"name": "echo", "arguments": {"text": "one-off"}})
    assert reply["jsonrpc"] == "2.0" and isinstance(reply["id"], int)
    assert reply["result"]["content"] == [{"type": "text", "text": "one-off"}]
    error = call_mcp(stateless.url, "no/such/method")
    assert error["error"]["code"] == -32601  # a JSON-RPC error is returned, not raised


def test_call_mcp_skips_notifications_on_an_sse_answer(mis):
    server = mis(response="sse")
    reply = call_mcp(server.url(), "tools/call", {"name": "notify"}, headers={"X-Trace": "1"})
    assert reply["result"]["content"][0]["text"] == "notified"
    assert server.records[0].headers["x-trace"] == "1"
    assert server.records[0].headers["accept"] == "application/json, text/event-stream"


def test_call_mcp_on_a_stateful_server_gets_its_400(stateful):
    with pytest.raises(HTTPStatusError, match="HTTP 400") as info:
        call_mcp(stateful.url, "tools/list")
    assert "session" in info.value.body.lower()


def test_call_mcp_typed_errors(mis):
    server = mis(status=(503, "down for maintenance", {}))
    with pytest.raises(HTTPStatusError, match="^HTTP 503: down for maintenance$"):
        call_mcp(server.url(), "ping")
    server.status = None
    with pytest.raises(ProtocolError):
        call_mcp(server.url(), "tools/call", {"name": "badjson"})
    server.response = "sse"
    with pytest.raises(ProtocolError, match="Malformed SSE data"):
        call_mcp(server.url(), "tools/call", {"name": "badsse"})


@pytest.mark.parametrize("tool,response", [("silent", "json"), ("drip", "sse")])
def test_call_mcp_times_out(mis, tool, response):
    server = mis(response=response)
    with pytest.raises(RequestTimeout, match=r"^Request timeout after 400ms: MCP server 'http://127.0.0.1:\d+/mcp' sent no answer to 'tools/call'$"):
        call_mcp(server.url(), "tools/call", {"name": tool}, timeout=0.4)


def test_call_mcp_connection_refused(mis):
    server = mis()
    url = server.url()
    server.stop()
    with pytest.raises(ConnectError):
        call_mcp(url, "ping", timeout=5)


def test_call_mcp_is_exported():
    assert mcpsync.call_mcp is call_mcp and callable(mcpsync.parse_sse)
