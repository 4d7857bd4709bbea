"""mcpsync.testing.FakeServer under the 2026-07-28 protocol: no handshake, ``_meta`` on every request.

These tests send the modern requests themselves over the server's in-memory
transport; tests/testing/test_testing_listen.py has the notification streams.
"""

from __future__ import annotations

import queue
import threading
from typing import Any, Dict, Iterator, List, Optional

import pytest

import mcpsync
from mcpsync import MCPError, RequestCancelled
from mcpsync.testing import Context, FakeServer
from mcpsync.testing import FakeTransport

MODERN = "2026-07-28"
VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
INFO_KEY = "io.modelcontextprotocol/clientInfo"
SERVER_INFO = {"io.modelcontextprotocol/serverInfo": {"name": "modern", "version": "1.0.0"}}


def meta(capabilities: Optional[Dict[str, Any]] = None, **extra: Any) -> Dict[str, Any]:
    return {VERSION_KEY: MODERN, CAPABILITIES_KEY: capabilities or {}, INFO_KEY: {"name": "t", "version": "0"},
            **extra}


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer("modern", instructions="Use add.", input_timeout=10) as fake:
        @fake.tool()
        def add(a: int, b: int) -> int:
            return a + b

        @fake.tool()
        def confirm(ctx: Context, action: str) -> str:
            answer = ctx.elicit(f"{action}?", {"type": "object", "properties": {"ok": {"type": "boolean"}}})
            return f"{action}: {answer['action']} (answered on request {ctx.request_id})"

        yield fake


@pytest.fixture
def transport(server: FakeServer) -> Iterator[FakeTransport]:
    with server.transport(timeout=10) as opened:
        yield opened


def test_discover_describes_the_server(transport: FakeTransport) -> None:
    result = transport.request("server/discover", {"_meta": meta()})
    assert result == {
        # listChanged as in the legacy era: the changes come on a subscriptions/listen stream
        "supportedVersions": [MODERN], "capabilities": {"tools": {"listChanged": True}, "logging": {},
                                                        "completions": {}},
        "instructions": "Use add.", "resultType": "complete", "_meta": SERVER_INFO, "ttlMs": 0,
        "cacheScope": "public"}


def test_requests_are_served_without_a_handshake(server: FakeServer, transport: FakeTransport) -> None:
    listed = transport.request("tools/list", {"_meta": meta()})
    assert [tool["name"] for tool in listed["tools"]] == ["add", "confirm"]
    assert (listed["resultType"], listed["ttlMs"], listed["cacheScope"]) == ("complete", 0, "public")
    called = transport.request("tools/call", {"name": "add", "arguments": {"a": 2, "b": 40}, "_meta": meta()})
    assert called == {"content": [{"type": "text", "text": "42"}], "resultType": "complete", "_meta": SERVER_INFO}
    assert [(r.method, r.era, r.protocol_version) for r in server.requests] == [
        ("tools/list", "modern", MODERN), ("tools/call", "modern", MODERN)]
    assert server.notifications == []  # no notifications/initialized in this era


@pytest.mark.parametrize("method", ["server/discover", "tools/list"])
def test_a_request_missing_a_required_meta_field_is_invalid(transport: FakeTransport, method: str) -> None:
    with pytest.raises(MCPError) as raised:
        transport.request(method, {})
    assert raised.value.code == -32602 and VERSION_KEY in raised.value.message
    with pytest.raises(MCPError) as raised:
        transport.request(method, {"_meta": {"progressToken": 1}})
    assert raised.value.code == -32602
    with pytest.raises(MCPError) as raised:
        transport.request(method, {"_meta": {VERSION_KEY: MODERN}})
    assert raised.value.code == -32602 and CAPABILITIES_KEY in raised.value.message


def test_after_a_handshake_a_modern_method_still_needs_its_meta(transport: FakeTransport) -> None:
    transport.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                     "clientInfo": {"name": "t", "version": "0"}})
    with pytest.raises(MCPError) as raised:
        transport.request("server/discover", {})
    assert raised.value.code == -32602
    with pytest.raises(MCPError) as raised:
        transport.request("tasks/list", {})
    assert raised.value.code == -32601


@pytest.mark.parametrize("version", ["2027-01-01", "2025-11-25"])
def test_an_unsupported_version_lists_the_supported_ones(transport: FakeTransport, version: str) -> None:
    with pytest.raises(MCPError) as raised:
        transport.request("server/discover", {"_meta": {**meta(), VERSION_KEY: version}})
    assert raised.value.code == -32022
    assert raised.value.data == {"supported": [MODERN, "2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"],
                                 "requested": version}


@pytest.mark.parametrize("method", ["ping", "initialize", "logging/setLevel", "resources/subscribe"])
def test_methods_removed_in_2026_are_not_found(transport: FakeTransport, method: str) -> None:
    with pytest.raises(MCPError) as raised:
        transport.request(method, {"_meta": meta()})
    assert raised.value.code == -32601


def test_a_dual_era_connection_serves_both_eras(server: FakeServer, transport: FakeTransport) -> None:
    transport.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                     "clientInfo": {"name": "t", "version": "0"}})
    legacy = transport.request("tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}})
    modern = transport.request("tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}, "_meta": meta()})
    assert "resultType" not in legacy and modern["resultType"] == "complete"
    assert [r.protocol_version for r in server.requests] == ["2025-06-18", "2025-06-18", MODERN]


def test_progress_and_logs_follow_the_request_meta(server: FakeServer, transport: FakeTransport) -> None:
    @server.tool()
    def work(ctx: Context) -> str:
        ctx.progress(1, 2, "half")
        ctx.log("info", "working")
        ctx.log("debug", "details")
        return "done"

    logs: "queue.Queue[Dict[str, Any]]" = queue.Queue()
    transport.add_notification_listener(
        lambda method, params: logs.put(params or {}) if method == "notifications/message" else None)
    progress: List[Any] = []
    transport.request("tools/call", {"name": "work", "_meta": meta()}, on_progress=lambda *a: progress.append(a))
    assert progress == [(1, 2, "half")]
    transport.request("tools/call", {"name": "work", "_meta": meta(**{"io.modelcontextprotocol/logLevel": "info"})})
    assert logs.get(timeout=5) == {"level": "info", "data": "working"}
    transport.request("tools/call", {"name": "add", "arguments": {"a": 0, "b": 0}, "_meta": meta()})
    assert logs.empty()  # no log level on the first call: nothing; "debug" was below "info"


def test_resource_not_found_is_invalid_params(server: FakeServer, transport: FakeTransport) -> None:
    server.resource("memo://a")(lambda: "a")
    assert transport.request("resources/read", {"uri": "memo://a", "_meta": meta()})["contents"] == [
        {"uri": "memo://a", "mimeType": "text/plain", "text": "a"}]
    with pytest.raises(MCPError) as raised:
        transport.request("resources/read", {"uri": "memo://b", "_meta": meta()})
    assert raised.value.code == -32602


# -- the server's own requests become input_required results (MRTR) -----------------------------


def test_elicitation_is_an_input_required_result_and_the_retry_finishes_the_call(
        server: FakeServer, transport: FakeTransport) -> None:
    params = {"name": "confirm", "arguments": {"action": "deploy"}}
    first = transport.request("tools/call", {**params, "_meta": meta({"elicitation": {}})})
    assert first["resultType"] == "input_required"
    assert first["inputRequests"] == {"elicitation-1": {"method": "elicitation/create", "params": {
        "message": "deploy?", "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}}}}}
    state = first["requestState"]
    assert isinstance(state, str) and state
    final = transport.request("tools/call", {**params, "_meta": meta({"elicitation": {}}), "requestState": state,
                                             "inputResponses": {"elicitation-1": {"action": "accept"}}})
    retry = server.requests[-1]
    assert final["resultType"] == "complete"
    assert final["content"][0]["text"] == f"deploy: accept (answered on request {retry.id})"
    assert retry.retry and not server.requests[0].retry
    assert server.calls("confirm") == [{"action": "deploy"}]  # one call, two requests


def test_several_inputs_take_several_rounds(server: FakeServer, transport: FakeTransport) -> None:
    @server.tool()
    def survey(ctx: Context) -> Dict[str, Any]:
        sampled = ctx.sample("Suggest a name")
        roots = ctx.list_roots()
        return {"name": sampled["content"]["text"], "roots": [root["uri"] for root in roots]}

    capabilities = {"sampling": {}, "roots": {}}
    params: Dict[str, Any] = {"name": "survey", "_meta": meta(capabilities)}
    first = transport.request("tools/call", params)
    assert list(first["inputRequests"]) == ["sampling-1"]
    second = transport.request("tools/call", {**params, "requestState": first["requestState"], "inputResponses": {
        "sampling-1": {"role": "assistant", "model": "m", "content": {"type": "text", "text": "Ada"}}}})
    assert second["inputRequests"] == {"roots-2": {"method": "roots/list", "params": {}}}
    final = transport.request("tools/call", {**params, "requestState": second["requestState"], "inputResponses": {
        "roots-2": {"roots": [{"uri": "file:///srv"}]}}})
    assert final["structuredContent"] == {"name": "Ada", "roots": ["file:///srv"]}


def test_a_retry_without_the_input_is_asked_again(transport: FakeTransport) -> None:
    params = {"name": "confirm", "arguments": {"action": "wipe"}, "_meta": meta({"elicitation": {}})}
    first = transport.request("tools/call", params)
    again = transport.request("tools/call", {**params, "requestState": first["requestState"], "inputResponses": {}})
    assert again["resultType"] == "input_required"
    assert (again["inputRequests"], again["requestState"]) == (first["inputRequests"], first["requestState"])
    final = transport.request("tools/call", {**params, "requestState": first["requestState"],
                                             "inputResponses": {"elicitation-1": {"action": "decline"}}})
    assert final["content"][0]["text"].startswith("wipe: decline")


def test_bad_request_state_is_invalid_params(server: FakeServer, transport: FakeTransport) -> None:
    with pytest.raises(MCPError, match="unknown or expired requestState") as raised:
        transport.request("tools/call", {"name": "confirm", "arguments": {"action": "x"}, "_meta": meta(),
                                         "requestState": "forged"})
    assert raised.value.code == -32602
    first = transport.request("tools/call", {"name": "confirm", "arguments": {"action": "x"},
                                             "_meta": meta({"elicitation": {}})})
    with pytest.raises(MCPError, match="belongs to another request"):
        transport.request("tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}, "_meta": meta(),
                                         "requestState": first["requestState"]})


def test_asking_for_an_undeclared_capability_is_an_error(transport: FakeTransport) -> None:
    with pytest.raises(MCPError) as raised:
        transport.request("tools/call", {"name": "confirm", "arguments": {"action": "x"}, "_meta": meta()})
    assert raised.value.code == -32021
    assert raised.value.data == {"requiredCapabilities": {"elicitation": {}}}


def test_a_run_whose_client_never_retries_is_cancelled() -> None:
    outcome: "queue.Queue[str]" = queue.Queue()
    with FakeServer(input_timeout=0.2) as server:
        @server.tool()
        def confirm(ctx: Context) -> str:
            try:
                ctx.elicit("Sure?")
            except RequestCancelled:
                outcome.put("abandoned")
                raise
            return "confirmed"

        with server.transport() as transport:
            first = transport.request("tools/call", {"name": "confirm", "_meta": meta({"elicitation": {}})})
            assert outcome.get(timeout=5) == "abandoned"
            with pytest.raises(MCPError, match="unknown or expired requestState"):
                transport.request("tools/call", {"name": "confirm", "_meta": meta({"elicitation": {}}),
                                                 "requestState": first["requestState"],
                                                 "inputResponses": {"elicitation-1": {"action": "accept"}}})


def test_closing_the_connection_ends_a_waiting_run(server: FakeServer) -> None:
    ended = threading.Event()

    @server.tool()
    def confirm_twice(ctx: Context) -> str:
        try:
            ctx.elicit("Sure?")
            return "yes"
        finally:
            ended.set()

    with server.transport() as transport:
        transport.request("tools/call", {"name": "confirm_twice", "_meta": meta({"elicitation": {}})})
    assert ended.is_set()  # the close joined the run's thread


# -- servers that speak one era only ---------------------------------------------------------------


def test_a_legacy_only_server_does_not_know_discover() -> None:
    with FakeServer(versions=["2025-06-18", "2025-11-25"]) as server:
        server.add_tool(lambda: "ok", name="only")
        with server.transport() as transport:
            with pytest.raises(MCPError) as raised:
                transport.request("server/discover", {"_meta": meta()})
            assert raised.value.code == -32601
            with pytest.raises(MCPError, match="Server not initialized"):
                transport.request("tools/list", {"_meta": meta()})
        with server.client() as client:
            assert client.protocol_version == "2025-11-25"
            assert client.call_tool("only").text == "ok"


def test_a_modern_only_server_refuses_the_handshake_naming_its_versions() -> None:
    with FakeServer(versions=[MODERN]) as server:
        with pytest.raises(mcpsync.UnsupportedProtocolVersion) as raised:
            server.client(protocol="legacy")
    refusal = raised.value.__cause__
    assert isinstance(refusal, MCPError) and refusal.code == -32022
    assert refusal.data == {"supported": [MODERN], "requested": "2025-11-25"}
    assert f"connect with protocol={MODERN!r}" in str(raised.value)
