"""mcpsync.testing.FakeServer against mcpsync's own client, in memory (mostly the legacy handshake).

The notification tests also run at 2026-07-28, where ``server.client()`` reaches a dual-era fake.
"""

from __future__ import annotations

import base64
import queue
import threading
from typing import Any, Dict, Iterator, List, Optional

import pytest

import mcpsync
from mcpsync import CallToolResult, ImageContent, MCPError, TextContent
from mcpsync.testing import Context, FakeServer


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer("calc", version="3.1.4", instructions="Adds numbers.") as fake:
        @fake.tool()
        def add(a: int, b: int) -> int:
            """Add two integers.

            Longer text that is not part of the description.
            """
            return a + b

        @fake.tool(name="stats", output_schema={"type": "object"})
        def statistics(values: List[float]) -> Dict[str, float]:
            return {"min": min(values), "max": max(values)}

        @fake.resource("memo://today", description="Today's memo")
        def today() -> str:
            return "Buy milk."

        @fake.prompt()
        def greet(name: str, style: str = "short") -> str:
            """Greets someone."""
            return f"Hello, {name}!" if style == "short" else f"Good day to you, {name}."

        yield fake


def test_handshake_answers_like_a_legacy_server(server: FakeServer) -> None:
    with server.client(protocol="legacy") as client:
        assert client.protocol_version == "2025-11-25"
        assert client.server_info is not None
        assert (client.server_info.name, client.server_info.version) == ("calc", "3.1.4")
        assert client.instructions == "Adds numbers."
        assert client.server_capabilities == {
            "tools": {"listChanged": True}, "resources": {"subscribe": True, "listChanged": True},
            "prompts": {"listChanged": True}, "logging": {}, "completions": {}}
        client.ping()
    assert [r.method for r in server.requests] == ["initialize", "ping"]
    assert server.requests[0].era == "legacy" and server.requests[1].protocol_version == "2025-11-25"
    assert server.requests[0].params["clientInfo"]["name"] == "mcpsync"
    assert [n.method for n in server.notifications] == ["notifications/initialized"]


@pytest.mark.parametrize("asked, answered", [
    ("2024-11-05", "2024-11-05"), ("2025-03-26", "2025-03-26"), ("2025-06-18", "2025-06-18"),
    ("2025-11-25", "2025-11-25"), ("1999-01-01", "2025-11-25"), ("2026-07-28", "2025-11-25"),
])
def test_initialize_keeps_a_version_it_speaks_and_offers_its_latest_otherwise(asked: str, answered: str) -> None:
    with FakeServer() as server:
        transport = server.transport()
        with transport:
            result = transport.request("initialize", {"protocolVersion": asked, "capabilities": {},
                                                      "clientInfo": {"name": "t", "version": "0"}})
        assert result["protocolVersion"] == answered
        assert result["serverInfo"] == {"name": "fake-server", "version": "1.0.0"}


def test_tools_are_listed_from_their_signatures_and_docstrings(server: FakeServer) -> None:
    with server.client(protocol="legacy") as client:
        tools = {tool.name: tool for tool in client.list_tools()}
    assert sorted(tools) == ["add", "stats"]
    assert tools["add"].description == "Add two integers."
    assert tools["add"].input_schema == {
        "type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"], "additionalProperties": False}
    assert tools["stats"].output_schema == {"type": "object"}
    assert tools["stats"].input_schema["properties"]["values"] == {"type": "array", "items": {"type": "number"}}


def test_results_take_the_shape_of_what_the_function_returned(server: FakeServer) -> None:
    @server.tool()
    def shapes(kind: str) -> Any:
        return {
            "text": "plain",
            "number": 7,
            "none": None,
            "image": ImageContent({"data": "aGk=", "mimeType": "image/png"}),  # ``type`` is filled in
            "blocks": [TextContent(text="one"), {"type": "text", "text": "two"}],
            "result": CallToolResult(content=[{"type": "text", "text": "custom"}], isError=True),
        }[kind]

    with server.client(protocol="legacy") as client:
        assert client.call_tool("add", {"a": 2, "b": 40}).text == "42"
        stats = client.call_tool("stats", {"values": [3, 1.5, 2]})
        assert stats.structured_content == {"min": 1.5, "max": 3}
        assert stats.text == '{"min": 1.5, "max": 3}'
        assert client.call_tool("shapes", {"kind": "text"}).text == "plain"
        assert client.call_tool("shapes", {"kind": "number"}).text == "7"
        assert client.call_tool("shapes", {"kind": "none"}).content == []
        image = client.call_tool("shapes", {"kind": "image"}).content[0]
        assert isinstance(image, ImageContent) and image.mime_type == "image/png"
        assert client.call_tool("shapes", {"kind": "blocks"}).text == "one\ntwo"
        custom = client.call_tool("shapes", {"kind": "result"})
        assert custom.is_error and custom.text == "custom"


def test_a_tool_that_raises_returns_is_error_and_mcp_error_is_a_json_rpc_error(server: FakeServer) -> None:
    @server.tool()
    def fragile(mode: str) -> str:
        if mode == "fail":
            raise RuntimeError("disk full")
        raise MCPError(-32001, "quota exceeded", {"retry_after": 30})

    with server.client(protocol="legacy") as client:
        failed = client.call_tool("fragile", {"mode": "fail"})
        assert failed.is_error and failed.text == "disk full"
        with pytest.raises(mcpsync.ToolError):
            failed.raise_for_error()
        with pytest.raises(MCPError) as raised:
            client.call_tool("fragile", {"mode": "refuse"})
    assert (raised.value.code, raised.value.message, raised.value.data) == (-32001, "quota exceeded",
                                                                           {"retry_after": 30})


def test_unknown_tools_and_bad_arguments(server: FakeServer) -> None:
    with server.client(protocol="legacy") as client:
        with pytest.raises(MCPError) as raised:
            client.call_tool("subtract", {"a": 1})
        assert raised.value.code == -32602 and "Unknown tool: subtract" in str(raised.value)
        wrong = client.call_tool("add", {"a": "two", "b": 1})
        assert wrong.is_error and wrong.text == (
            "Invalid arguments for tool 'add': argument 'a' should be an integer, got 'two'")
        missing = client.call_tool("add", {"a": 1})
        assert missing.is_error and "missing required argument 'b'" in missing.text
    # Refused before the tool ran: not calls of it, but recorded with the reason.
    assert server.calls("add") == []
    assert server.calls("add", include_refused=True) == [{"a": "two", "b": 1}, {"a": 1}]
    assert [r.refused for r in server.requests if r.method == "tools/call"] == [
        "Unknown tool: subtract", wrong.text, missing.text]


def test_an_explicit_input_schema_replaces_the_signature(server: FakeServer) -> None:
    schema = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
    server.add_tool(lambda **arguments: f"searched {arguments['q']}", name="search", input_schema=schema,
                    description="Search.")
    with server.client(protocol="legacy") as client:
        tool = next(t for t in client.list_tools() if t.name == "search")
        assert tool.input_schema == schema and tool.description == "Search."
        assert client.call_tool("search", {"q": "mcp"}).text == "searched mcp"


@pytest.mark.parametrize("protocol", ["legacy", None], ids=["legacy", "default-2026-07-28"])
def test_adding_a_tool_tells_connected_clients_the_list_changed(server: FakeServer, protocol: Optional[str]) -> None:
    changed = threading.Event()
    with server.client(**({"protocol": protocol} if protocol else {})) as client:
        assert client.modern == (protocol is None)  # 2026-07-28: on a subscriptions/listen stream
        client.on_notification("notifications/tools/list_changed", lambda params: changed.set())
        assert [t.name for t in client.list_tools()] == ["add", "stats"]  # legacy: cached, listChanged was promised

        @server.tool()
        def echo(text: str) -> str:
            return text

        assert changed.wait(5)
        assert [t.name for t in client.list_tools()] == ["add", "stats", "echo"]
        changed.clear()
        server.remove_tool("echo")
        assert changed.wait(5)
        assert [t.name for t in client.list_tools()] == ["add", "stats"]


def test_resources_templates_and_not_found() -> None:
    with FakeServer("files") as server:
        @server.resource("file:///notes.txt", mime_type="text/markdown")
        def notes() -> str:
            return "# Notes"

        @server.resource("file:///logo.png", mime_type="image/png")
        def logo() -> bytes:
            return b"\x89PNG"

        @server.resource_template("users://{user_id}/profile", name="profile", description="A user")
        def profile(user_id: str) -> Dict[str, str]:
            return {"id": user_id}

        with server.client(protocol="legacy") as client:
            assert [(r.uri, r.name, r.mime_type) for r in client.list_resources()] == [
                ("file:///notes.txt", "notes", "text/markdown"), ("file:///logo.png", "logo", "image/png")]
            assert [(t.uri_template, t.name) for t in client.list_resource_templates()] == [
                ("users://{user_id}/profile", "profile")]
            text = client.read_resource("file:///notes.txt").contents[0]
            assert isinstance(text, mcpsync.TextResourceContents)
            assert (text.text, text.mime_type) == ("# Notes", "text/markdown")
            blob = client.read_resource("file:///logo.png").contents[0]
            assert isinstance(blob, mcpsync.BlobResourceContents)
            assert base64.b64decode(blob.blob) == b"\x89PNG"
            assert client.read_resource("users://42/profile").text == '{"id": "42"}'
            with pytest.raises(MCPError) as raised:
                client.read_resource("users://42/settings")
            assert raised.value.code == -32002 and raised.value.data == {"uri": "users://42/settings"}


@pytest.mark.parametrize("protocol", ["legacy", None], ids=["legacy", "default-2026-07-28"])
def test_subscriptions_get_resource_updates(server: FakeServer, protocol: Optional[str]) -> None:
    updates: "queue.Queue[Dict[str, Any]]" = queue.Queue()
    with server.client(**({"protocol": protocol} if protocol else {})) as client:
        assert client.modern == (protocol is None)  # 2026-07-28: a subscriptions/listen stream per URI
        client.on_notification("notifications/resources/updated", updates.put)
        assert server.resource_updated("memo://today") == 0  # nobody subscribed yet
        client.subscribe_resource("memo://today")
        assert server.resource_updated("memo://today") == 1
        assert updates.get(timeout=5)["uri"] == "memo://today"  # 2026-07-28 adds the stream's id in _meta
        client.unsubscribe_resource("memo://today")
        assert server.resource_updated("memo://today") == 0


def test_prompts_render_and_check_their_arguments(server: FakeServer) -> None:
    @server.prompt(name="review", description="Review code")
    def review_prompt(code: str) -> List[Any]:
        return [("assistant", "Paste the code."), {"role": "user", "content": code}]

    with server.client(protocol="legacy") as client:
        prompts = {p.name: p for p in client.list_prompts()}
        assert [(a.name, a.required) for a in prompts["greet"].arguments] == [("name", True), ("style", False)]
        assert prompts["greet"].description == "Greets someone."
        greeting = client.get_prompt("greet", {"name": "Ada"})
        assert greeting.description == "Greets someone."
        assert [(m.role, m.content.text) for m in greeting.messages] == [("user", "Hello, Ada!")]  # type: ignore
        review = client.get_prompt("review", {"code": "x = 1"})
        assert [(m.role, m.content.to_dict()["text"]) for m in review.messages] == [
            ("assistant", "Paste the code."), ("user", "x = 1")]
        with pytest.raises(MCPError, match="Missing required argument 'name'"):
            client.get_prompt("greet", {})
        with pytest.raises(MCPError, match="Unknown argument 'tone'"):
            client.get_prompt("greet", {"name": "Ada", "tone": "warm"})
        with pytest.raises(MCPError, match="Unknown prompt: nope"):
            client.get_prompt("nope")


def test_completions_come_from_a_declared_completer(server: FakeServer) -> None:
    @server.completion("greet")
    def complete_greet(argument: str, value: str) -> List[str]:
        return [name for name in ("Ada", "Alan", "Grace") if name.startswith(value)] if argument == "name" else []

    with server.client(protocol="legacy") as client:
        found = client.complete({"type": "ref/prompt", "name": "greet"}, "name", "A")
        assert found.values == ["Ada", "Alan"]
        assert client.complete({"type": "ref/prompt", "name": "other"}, "x", "").values == []


def test_lists_are_paginated_when_asked() -> None:
    with FakeServer(page_size=2) as server:
        for index in range(5):
            server.add_tool(lambda: None, name=f"tool{index}")
        with server.client(protocol="legacy") as client:
            assert [tool.name for tool in client.list_tools()] == [f"tool{i}" for i in range(5)]
            with pytest.raises(MCPError, match="invalid cursor"):
                client.request("tools/list", {"cursor": "nonsense"})
    cursors = [r.params.get("cursor") for r in server.requests if r.method == "tools/list"]
    assert cursors == [None, "page-2", "page-4", "nonsense"]


def test_methods_of_capabilities_the_server_lacks_are_not_found() -> None:
    with FakeServer() as server:
        server.add_tool(lambda: "ok", name="only")
        with server.client(protocol="legacy") as client:
            with pytest.raises(mcpsync.CapabilityError):
                client.list_prompts()  # the client checks capabilities first
            with pytest.raises(MCPError) as raised:
                client.request("prompts/list")
            assert raised.value.code == -32601
            with pytest.raises(MCPError, match="Method not found: tasks/list"):
                client.request("tasks/list")


def test_explicit_capabilities_replace_the_derived_ones() -> None:
    with FakeServer(capabilities={"tools": {}}) as server:
        server.add_tool(lambda: "ok", name="only")
        with server.client(protocol="legacy") as client:
            assert client.server_capabilities == {"tools": {}}
            with pytest.raises(mcpsync.CapabilityError):
                client.set_logging_level("info")


def test_logging_respects_set_level() -> None:
    # The handshake era on purpose: everything until logging/setLevel, and setLevel itself (2026-07-28 has
    # neither; test_testing_listen.py runs the level the client asks for in both eras).
    messages: "queue.Queue[Dict[str, Any]]" = queue.Queue()
    with FakeServer() as server:
        @server.tool()
        def noisy(ctx: Context) -> str:
            ctx.log("debug", "details")
            ctx.log("error", {"code": 7}, logger="db")
            return "ok"

        with server.client(protocol="legacy", logging_handler=messages.put) as client:
            client.call_tool("noisy")
            assert messages.get(timeout=5) == {"level": "debug", "data": "details"}
            assert messages.get(timeout=5) == {"level": "error", "data": {"code": 7}, "logger": "db"}
            client.set_logging_level("warning")
            client.call_tool("noisy")
            assert messages.get(timeout=5)["level"] == "error"
            with pytest.raises(MCPError, match="unknown log level"):
                client.request("logging/setLevel", {"level": "loud"})
    assert messages.empty()


def test_recording_calls_and_assertions(server: FakeServer) -> None:
    with server.client(protocol="legacy") as client:
        client.call_tool("add", {"a": 1, "b": 2})
        client.call_tool("add", {"a": 3, "b": 4})
    assert server.calls("add") == [{"a": 1, "b": 2}, {"a": 3, "b": 4}]
    assert server.calls("stats") == []
    call = server.wait_for_request("tools/call", tool="add", count=2)
    assert (call.tool, call.arguments, call.connection) == ("add", {"a": 3, "b": 4}, 1)
    assert [r.index for r in server.requests] == list(range(1, len(server.requests) + 1))
    server.assert_tool_called("add")
    server.assert_tool_called("add", a=3)
    server.assert_tool_called("add", a=1, b=2)
    server.assert_tool_not_called("stats")
    with pytest.raises(AssertionError, match=r"Tool 'add' was not called with \{'a': 5\}"):
        server.assert_tool_called("add", a=5)
    with pytest.raises(AssertionError, match=r"Tool 'stats' was not called \(called: \['add'\]\)"):
        server.assert_tool_called("stats")
    with pytest.raises(AssertionError, match="Tool 'add' was called 2 time"):
        server.assert_tool_not_called("add")
    with pytest.raises(AssertionError, match="did not receive 1 prompts/get"):
        server.wait_for_request("prompts/get", timeout=0.01)
    server.reset()
    assert server.requests == [] and server.notifications == [] and server.calls("add") == []


def test_every_client_gets_its_own_connection_and_close_closes_them(server: FakeServer) -> None:
    first = server.client(protocol="legacy", name="first")
    second = server.client(protocol="legacy", name="second")
    first.call_tool("add", {"a": 1, "b": 1})
    second.call_tool("add", {"a": 2, "b": 2})
    assert [r.connection for r in server.requests if r.method == "tools/call"] == [1, 2]
    server.close()
    assert not first.connected and not second.connected
    with pytest.raises(RuntimeError, match="is closed"):
        server.client(protocol="legacy")


def test_connect_accepts_the_transport(server: FakeServer) -> None:
    with mcpsync.connect(server.transport(name="via-connect"), timeout=5) as client:
        assert client.name == "via-connect"
        assert client.call_tool("add", {"a": 20, "b": 22}).text == "42"


def test_unknown_versions_are_refused() -> None:
    with pytest.raises(ValueError, match="Unknown protocol versions"):
        FakeServer(versions=["2030-01-01"])


def test_close_also_closes_transports_left_open() -> None:
    server = FakeServer()
    transport = server.transport()
    transport.open()
    transport.request("ping")
    server.close()
    assert not transport.connected
    with pytest.raises(mcpsync.TransportClosed):
        transport.request("ping")
