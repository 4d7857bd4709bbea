"""Client behaviour (handshake, capabilities, handlers, caching, routing), against the in-memory ScriptedPeer.

What a real server cannot be made to do on demand (pick an old protocol version,
refuse a capability, page with an empty cursor, ask for roots) is scripted here;
the same methods against the official SDK's servers are in ``test_stdio_sdk.py``.
"""

from __future__ import annotations

import gc
import logging
import os
import queue
import threading
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional

import pytest

import mcpsync
from mcpsync import (
    CallToolResult,
    CapabilityError,
    Client,
    MCPError,
    ProtocolError,
    RequestTimeout,
    TransportClosed,
    UnsupportedProtocolVersion,
    __version__,
)

from ..peer import Responder, ScriptedPeer

LATEST = "2025-11-25"
SERVER_LOGGER = "mcpsync.server.memory"
ALL_CAPABILITIES = {
    "tools": {}, "resources": {"subscribe": True}, "prompts": {}, "logging": {}, "completions": {},
}


def initialize_result(version: str = LATEST, capabilities: Optional[Dict[str, Any]] = None,
                      **extra: Any) -> Dict[str, Any]:
    return {
        "protocolVersion": version,
        "capabilities": ALL_CAPABILITIES if capabilities is None else capabilities,
        "serverInfo": {"name": "scripted-server", "version": "9.9"},
        **extra,
    }


def scripted(responders: Optional[Dict[str, Responder]] = None, **initialize: Any) -> ScriptedPeer:
    """A ScriptedPeer that answers ``initialize`` with ``initialize_result(**initialize)``."""
    responders = dict(responders or {})
    result = initialize_result(**initialize)
    responders.setdefault("initialize", lambda peer, message: peer.result(message, result))
    return ScriptedPeer(responders)


@pytest.fixture
def peer() -> Iterator[ScriptedPeer]:
    with scripted() as peer:
        yield peer


def sent(peer: ScriptedPeer, method: str) -> List[Dict[str, Any]]:
    """The messages of ``method`` the client wrote (requests and notifications)."""
    return [m for m in peer.log if m.get("method") == method]


def pages(*pages: Dict[str, Any], key: str = "tools") -> Responder:
    """Answer a list request with the page its cursor names (None → the first)."""
    by_cursor = {page.pop("cursor", None): page for page in pages}

    def respond(peer: ScriptedPeer, message: Dict[str, Any]) -> None:
        cursor = (message.get("params") or {}).get("cursor")
        peer.result(message, by_cursor[cursor])

    return respond


def tools_page(*names: str, next_cursor: Optional[str] = None, cursor: Optional[str] = None) -> Dict[str, Any]:
    page: Dict[str, Any] = {"tools": [{"name": n, "inputSchema": {"type": "object"}} for n in names]}
    if next_cursor is not None:
        page["nextCursor"] = next_cursor
    if cursor is not None:
        page["cursor"] = cursor
    return page


def server_request(peer: ScriptedPeer, request_id: str, method: str, params: Any = None) -> Dict[str, Any]:
    """Send a server-to-client request and return the client's reply."""
    message: Dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    peer.transport.feed(message)
    return peer.wait_for(lambda m: m.get("id") == request_id and "method" not in m)


def notify_and_wait(client: Client, peer: ScriptedPeer, method: str, params: Any = None) -> None:
    """Send a notification and return once the client's dispatcher has handled it."""
    done = threading.Event()
    remove = client.on_notification(method, lambda _params: done.set())
    peer.notify(method, params)
    assert done.wait(5)
    remove()


# -- the handshake ---------------------------------------------------------------------------


def test_the_handshake_asks_for_the_latest_version_and_then_sends_initialized(peer):
    with Client(peer.transport, client_info={"title": "My App"}) as client:
        assert client.connected
    initialize, initialized = peer.log[0], peer.log[1]
    assert initialize["method"] == "initialize"
    assert initialize["params"] == {
        "protocolVersion": LATEST,
        "capabilities": {},
        "clientInfo": {"name": "mcpsync", "version": __version__, "title": "My App"},
    }
    assert initialized == {"jsonrpc": "2.0", "method": "notifications/initialized"}


def test_the_handshake_keeps_the_servers_version_info_capabilities_and_instructions():
    extra = {"instructions": "Call echo first.", "serverInfo": {"name": "s", "version": "2", "title": "S"}}
    with scripted(**extra) as peer, Client(peer.transport) as client:
        assert client.protocol_version == LATEST
        assert (client.server_info.name, client.server_info.version, client.server_info.title) == ("s", "2", "S")
        assert client.server_capabilities == ALL_CAPABILITIES
        assert client.instructions == "Call echo first."


def test_a_ping_from_the_server_during_the_handshake_is_answered():
    def initialize(peer, message):
        peer.transport.feed({"jsonrpc": "2.0", "id": "early", "method": "ping"})
        peer.wait_for(lambda m: m.get("id") == "early")
        peer.result(message, initialize_result())

    with scripted({"initialize": initialize}) as peer, Client(peer.transport) as client:
        assert client.connected
        assert [m for m in peer.log if m.get("id") == "early"] == [{"jsonrpc": "2.0", "id": "early", "result": {}}]


@pytest.mark.parametrize("version", ["2025-06-18", "2025-03-26", "2024-11-05"])
def test_an_older_protocol_version_chosen_by_the_server_is_accepted(version):
    with scripted(version=version) as peer, Client(peer.transport) as client:
        assert client.protocol_version == version
        client.ping()


def test_an_unsupported_protocol_version_raises_and_closes_the_transport():
    with scripted(version="1999-01-01") as peer:
        client = Client(peer.transport)
        with pytest.raises(UnsupportedProtocolVersion) as info:
            client.connect()
        assert info.value.offered == "1999-01-01"
        assert LATEST in info.value.supported and "2024-11-05" in info.value.supported
        assert not client.connected and not peer.transport.connected
        assert sent(peer, "notifications/initialized") == []
        with pytest.raises(TransportClosed):
            client.ping()


def test_an_initialize_error_raises_mcp_error_and_closes_the_transport():
    refuse = {"initialize": lambda peer, message: peer.error(message, -32600, "go away")}
    with scripted(refuse) as peer:
        with pytest.raises(MCPError) as info:
            Client(peer.transport).connect()
        assert (info.value.code, info.value.message) == (-32600, "go away")
        assert not peer.transport.connected


@pytest.mark.parametrize("options, expected", [
    ({}, {}),
    ({"roots": []}, {"roots": {"listChanged": True}}),
    ({"sampling_handler": lambda params: {}}, {"sampling": {}}),
    ({"elicitation_handler": lambda params: {}}, {"elicitation": {}}),
    ({"roots": ["/srv"], "sampling_handler": lambda params: {}, "elicitation_handler": lambda params: {}},
     {"roots": {"listChanged": True}, "sampling": {}, "elicitation": {}}),
], ids=["none", "roots", "sampling", "elicitation", "all"])
def test_capabilities_are_advertised_only_for_the_handlers_given(peer, options, expected):
    with Client(peer.transport, **options):
        pass
    assert peer.log[0]["params"]["capabilities"] == expected


# -- connect() and the client's lifecycle -------------------------------------------------------


@pytest.mark.parametrize("target", ["python server.py", [], ["python", 3], 42, None],
                         ids=["string", "empty-list", "non-string-arg", "int", "none"])
def test_connect_rejects_a_target_that_is_not_an_argv_list_config_or_transport(target):
    with pytest.raises(ValueError) as info:
        mcpsync.connect(target)
    if isinstance(target, str):
        assert "list of arguments" in str(info.value)


def test_connect_refuses_transport_options_for_a_ready_transport(peer):
    with pytest.raises(ValueError):
        mcpsync.connect(peer.transport, cwd="/tmp")
    assert peer.log == []


def test_connect_accepts_a_ready_transport_and_mixes_in_client_options(peer):
    with mcpsync.connect(peer.transport, roots=[]) as client:
        assert client.connected
        assert peer.log[0]["params"]["capabilities"] == {"roots": {"listChanged": True}}


def test_a_client_used_before_connect_raises_transport_closed(peer):
    client = Client(peer.transport)
    with pytest.raises(TransportClosed) as info:
        client.ping()
    assert "connect()" in str(info.value)
    with pytest.raises(TransportClosed):
        client.request("tools/list")
    assert peer.log == []


def test_a_tool_call_before_connect_raises_transport_closed_not_capability_error(peer):
    client = Client(peer.transport)
    with pytest.raises(TransportClosed):
        client.call_tool("echo", {"text": "hi"})


def test_a_closed_client_cannot_be_reconnected_and_its_calls_raise_transport_closed(peer):
    client = Client(peer.transport).connect()
    client.close()
    client.close()  # idempotent
    assert not client.connected
    with pytest.raises(TransportClosed):
        client.call_tool("echo")
    with pytest.raises(TransportClosed):
        client.connect()


def test_the_client_timeout_is_the_default_for_every_request(peer):
    peer.hold("tools/call")
    with Client(peer.transport, timeout=0.05) as client:
        with pytest.raises(RequestTimeout) as info:
            client.call_tool("slow")
        assert str(info.value) == f"Request timeout after 50ms: MCP server {client.name!r} sent no answer to 'tools/call'"


def test_the_timeout_text_names_the_timeout_in_whole_milliseconds(peer):
    peer.hold("tools/call")
    with Client(peer.transport) as client:
        with pytest.raises(RequestTimeout) as info:
            client.call_tool("slow", timeout=1.001)
        assert str(info.value).startswith("Request timeout after 1001ms: ")


def test_an_unclosed_client_warns_with_resource_warning_when_collected_and_closes_its_transport(peer):
    client = Client(peer.transport).connect()
    with pytest.warns(ResourceWarning, match="unclosed"):
        del client
        gc.collect()
    assert not peer.transport.connected


# -- capabilities --------------------------------------------------------------------------------

CALLS = {
    "list_tools": ("tools", lambda c: c.list_tools()),
    "iter_tools": ("tools", lambda c: list(c.iter_tools())),
    "call_tool": ("tools", lambda c: c.call_tool("echo", {"text": "hi"})),
    "list_resources": ("resources", lambda c: c.list_resources()),
    "list_resource_templates": ("resources", lambda c: c.list_resource_templates()),
    "read_resource": ("resources", lambda c: c.read_resource("demo://x")),
    "subscribe_resource": ("resources", lambda c: c.subscribe_resource("demo://x")),
    "unsubscribe_resource": ("resources", lambda c: c.unsubscribe_resource("demo://x")),
    "list_prompts": ("prompts", lambda c: c.list_prompts()),
    "get_prompt": ("prompts", lambda c: c.get_prompt("p", {"a": "1"})),
    "complete": ("completions", lambda c: c.complete({"type": "ref/prompt", "name": "p"}, "a", "")),
    "set_logging_level": ("logging", lambda c: c.set_logging_level("info")),
}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_a_method_raises_capability_error_before_sending_when_the_server_lacks_its_capability(name):
    capability, call = CALLS[name]
    without = {k: v for k, v in ALL_CAPABILITIES.items() if k != capability}
    with scripted(capabilities=without) as peer, Client(peer.transport) as client:
        before = len(peer.log)
        with pytest.raises(CapabilityError) as info:
            call(client)
        assert capability in str(info.value)
        assert len(peer.log) == before  # nothing was sent
        client.ping()


@pytest.mark.parametrize("name", sorted(CALLS))
def test_a_method_sends_its_request_when_the_server_offers_its_capability(name):
    with scripted(capabilities=ALL_CAPABILITIES) as peer, Client(peer.transport) as client:
        before = len(peer.log)
        CALLS[name][1](client)
        assert len(peer.log) > before


def test_subscribing_needs_the_subscribe_sub_capability():
    with scripted(capabilities={"resources": {}}) as peer, Client(peer.transport) as client:
        with pytest.raises(CapabilityError) as info:
            client.subscribe_resource("demo://x")
        assert "resources.subscribe" in str(info.value)
        client.list_resources()  # resources themselves are offered


def test_complete_needs_no_capability_on_2024_11_05_which_had_none_for_it():
    with scripted(version="2024-11-05", capabilities={"prompts": {}}) as peer, Client(peer.transport) as client:
        client.complete({"type": "ref/prompt", "name": "p"}, "a", "x", context={"b": "2"})
        [request] = sent(peer, "completion/complete")
        assert request["params"] == {"ref": {"type": "ref/prompt", "name": "p"},
                                     "argument": {"name": "a", "value": "x"}, "context": {"arguments": {"b": "2"}}}


def test_set_logging_level_rejects_an_unknown_level_with_value_error(peer):
    with Client(peer.transport) as client:
        with pytest.raises(ValueError):
            client.set_logging_level("verbose")
        assert sent(peer, "logging/setLevel") == []


# -- server-to-client requests: roots, sampling, elicitation --------------------------------------


def test_roots_list_is_answered_from_the_roots_given_with_paths_as_file_uris(peer, tmp_path):
    project = tmp_path / "project"
    roots = [str(project), "relative/dir", "file:///srv/data", {"uri": "file:///named", "name": "Named"}]
    with Client(peer.transport, roots=roots):
        reply = server_request(peer, "r1", "roots/list")
    assert reply["result"] == {"roots": [
        {"uri": project.as_uri()},
        {"uri": Path(os.path.abspath("relative/dir")).as_uri()},
        {"uri": "file:///srv/data"},
        {"uri": "file:///named", "name": "Named"},
    ]}


def test_a_home_relative_root_is_expanded():
    with scripted() as peer, Client(peer.transport, roots=["~/project"]):
        reply = server_request(peer, "r1", "roots/list")
    assert reply["result"] == {"roots": [{"uri": (Path.home() / "project").as_uri()}]}


def test_roots_given_as_a_callable_are_read_at_each_request_and_a_change_can_be_announced(peer):
    current = ["/a"]
    with Client(peer.transport, roots=lambda: list(current)) as client:
        assert server_request(peer, "r1", "roots/list")["result"] == {"roots": [{"uri": "file:///a"}]}
        current.append("/b")
        client.send_roots_list_changed()
        assert server_request(peer, "r2", "roots/list")["result"] == {
            "roots": [{"uri": "file:///a"}, {"uri": "file:///b"}]}
    assert len(sent(peer, "notifications/roots/list_changed")) == 1


def test_without_roots_or_handlers_server_requests_get_method_not_found(peer):
    with Client(peer.transport):
        for i, method in enumerate(["roots/list", "sampling/createMessage", "elicitation/create", "x/y"]):
            reply = server_request(peer, f"q{i}", method, {})
            assert reply["error"]["code"] == -32601


def test_the_sampling_handlers_result_is_returned_to_the_server(peer):
    calls = []

    def sample(params):
        calls.append((params, threading.current_thread().name))
        return {"role": "assistant", "model": "m1", "content": {"type": "text", "text": "hi there"}}

    params = {"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 5}
    with Client(peer.transport, sampling_handler=sample):
        reply = server_request(peer, "s1", "sampling/createMessage", params)
    assert reply["result"] == {"role": "assistant", "model": "m1", "content": {"type": "text", "text": "hi there"}}
    [(got, thread)] = calls
    assert got == params
    assert thread.startswith("mcpsync-worker")


def test_the_elicitation_handlers_result_is_returned_and_an_mcp_error_it_raises_is_the_answer(peer):
    def elicit(params):
        if params["message"] == "refuse":
            raise MCPError(-1, "user said no")
        return {"action": "accept", "content": {"name": "Ada"}}

    with Client(peer.transport, elicitation_handler=elicit):
        ok = server_request(peer, "e1", "elicitation/create", {"message": "name?", "requestedSchema": {}})
        refused = server_request(peer, "e2", "elicitation/create", {"message": "refuse", "requestedSchema": {}})
    assert ok["result"] == {"action": "accept", "content": {"name": "Ada"}}
    assert refused["error"] == {"code": -1, "message": "user said no"}


def test_a_handler_may_return_a_typed_result_which_is_sent_in_its_wire_form(peer):
    result = CallToolResult({"content": [{"type": "text", "text": "typed"}]})
    with Client(peer.transport, sampling_handler=lambda params: result):
        reply = server_request(peer, "s1", "sampling/createMessage", {})
    assert reply["result"] == {"content": [{"type": "text", "text": "typed"}]}


def test_a_handler_that_raises_is_logged_and_answered_with_an_internal_error(peer, logs):
    def broken(params):
        raise RuntimeError("handler bug")

    with Client(peer.transport, sampling_handler=broken) as client:
        reply = server_request(peer, "s1", "sampling/createMessage", {})
        assert reply["error"]["code"] == -32603
        client.ping()  # the connection is unharmed
    assert any("raised" in m for m in logs.messages("mcpsync.engine"))


def test_a_handler_may_call_the_client_while_the_server_waits_for_its_answer():
    responders = {"tools/list": pages(tools_page("a", "b"))}
    with scripted(responders) as peer:
        holder: Dict[str, Client] = {}

        def sample(params):
            names = [t.name for t in holder["client"].list_tools()]
            return {"role": "assistant", "model": "m", "content": {"type": "text", "text": ",".join(names)}}

        with Client(peer.transport, sampling_handler=sample) as client:
            holder["client"] = client
            reply = server_request(peer, "s1", "sampling/createMessage", {})
        assert reply["result"]["content"]["text"] == "a,b"


def test_the_server_can_ping_the_client(peer):
    with Client(peer.transport):
        assert server_request(peer, "p1", "ping")["result"] == {}


# -- list caching ------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["tools", "resources", "prompts"])
def test_a_list_is_cached_only_when_the_server_declares_list_changed(kind):
    call = {"tools": Client.list_tools, "resources": Client.list_resources, "prompts": Client.list_prompts}[kind]
    method = f"{kind}/list"
    listing = {method: lambda peer, message: peer.result(message, {kind: [{"name": "x", "uri": "demo://x"}]})}
    for list_changed, requests in [(True, 1), (False, 3)]:
        capabilities = {kind: {"listChanged": list_changed}}
        with scripted(listing, capabilities=capabilities) as peer, Client(peer.transport) as client:
            first = call(client)
            assert call(client) == first
            assert call(client) == first
            assert len(sent(peer, method)) == requests, f"listChanged={list_changed}"


def test_a_cached_list_is_a_fresh_list_each_time():
    responders = {"tools/list": pages(tools_page("a"))}
    with scripted(responders, capabilities={"tools": {"listChanged": True}}) as peer:
        with Client(peer.transport) as client:
            first = client.list_tools()
            first.clear()
            assert [t.name for t in client.list_tools()] == ["a"]


def test_a_list_changed_notification_drops_only_its_own_cached_list():
    responders = {
        "tools/list": lambda peer, message: peer.result(message, {"tools": [{"name": "t"}]}),
        "prompts/list": lambda peer, message: peer.result(message, {"prompts": [{"name": "p"}]}),
    }
    capabilities = {"tools": {"listChanged": True}, "prompts": {"listChanged": True}}
    with scripted(responders, capabilities=capabilities) as peer, Client(peer.transport) as client:
        client.list_tools()
        client.list_prompts()
        notify_and_wait(client, peer, "notifications/tools/list_changed")
        client.list_tools()
        client.list_prompts()
        assert len(sent(peer, "tools/list")) == 2
        assert len(sent(peer, "prompts/list")) == 1
        client.list_prompts(refresh=True)
        assert len(sent(peer, "prompts/list")) == 2


def test_a_list_changed_notification_that_arrived_before_a_response_is_applied_when_the_call_returns():
    gate = threading.Event()

    def change_the_tools(peer, message):
        peer.notify("notifications/busy")  # its handler is slow: the dispatcher is behind
        peer.notify("notifications/tools/list_changed")
        peer.result(message, {"content": [{"type": "text", "text": "changed"}]})

    responders = {"tools/list": pages(tools_page("a")), "tools/call": change_the_tools}
    with scripted(responders, capabilities={"tools": {"listChanged": True}}) as peer:
        with Client(peer.transport) as client:
            client.on_notification("notifications/busy", lambda params: gate.wait(5))
            try:
                client.list_tools()
                assert client.call_tool("change").text == "changed"
                client.list_tools()
                assert len(sent(peer, "tools/list")) == 2
            finally:
                gate.set()


def test_a_list_changed_notification_during_a_paginated_fetch_is_not_lost():
    processed = threading.Event()

    def tools_list(peer, message):
        cursor = (message.get("params") or {}).get("cursor")
        if cursor is None:
            peer.result(message, tools_page("old-1", next_cursor="2"))
        else:
            peer.notify("notifications/tools/list_changed")  # the list changes between the pages
            assert processed.wait(5)
            peer.result(message, tools_page("new-2"))

    with scripted({"tools/list": tools_list}, capabilities={"tools": {"listChanged": True}}) as peer:
        with Client(peer.transport) as client:
            client.on_notification("notifications/tools/list_changed", lambda params: processed.set())
            client.list_tools()
            processed.clear()
            client.list_tools()  # must not be served from a cache filled before the change was seen
            assert len(sent(peer, "tools/list")) == 4


# -- pagination ---------------------------------------------------------------------------------


def test_a_repeated_cursor_raises_protocol_error_instead_of_looping():
    responders = {"tools/list": pages(tools_page("a", next_cursor="c1"),
                                      tools_page("b", next_cursor="c2", cursor="c1"),
                                      tools_page("c", next_cursor="c1", cursor="c2"))}
    with scripted(responders) as peer, Client(peer.transport) as client:
        with pytest.raises(ProtocolError) as info:
            client.list_tools()
        assert "repeated the cursor 'c1'" in str(info.value)
        assert len(sent(peer, "tools/list")) == 3
        client.ping()


def test_an_empty_string_cursor_is_followed_not_taken_for_the_end():
    responders = {"tools/list": pages(tools_page("a", next_cursor=""), tools_page("b", cursor=""))}
    with scripted(responders) as peer, Client(peer.transport) as client:
        assert [t.name for t in client.list_tools()] == ["a", "b"]
        assert [m.get("params") for m in sent(peer, "tools/list")] == [None, {"cursor": ""}]


def test_a_null_next_cursor_ends_the_list():
    responders = {"tools/list": pages({**tools_page("a"), "nextCursor": None})}
    with scripted(responders) as peer, Client(peer.transport) as client:
        assert [t.name for t in client.list_tools()] == ["a"]


def test_a_page_without_its_list_raises_protocol_error():
    responders = {"tools/list": lambda peer, message: peer.result(message, {"tools": "not a list"})}
    with scripted(responders) as peer, Client(peer.transport) as client:
        with pytest.raises(ProtocolError):
            client.list_tools()


# -- notifications and server log messages ------------------------------------------------------


def test_on_notification_calls_the_handlers_for_its_method_and_star_for_every_method(peer):
    seen: "queue.Queue[Any]" = queue.Queue()
    with Client(peer.transport) as client:
        remove = client.on_notification("notifications/resources/updated", lambda p: seen.put(("updated", p)))
        client.on_notification("*", lambda p: seen.put(("any", p)))
        peer.notify("notifications/resources/updated", {"uri": "demo://a"})
        peer.notify("notifications/other", {"n": 1})
        got = [seen.get(timeout=5) for _ in range(3)]
        assert got == [("updated", {"uri": "demo://a"}), ("any", {"uri": "demo://a"}), ("any", {"n": 1})]
        remove()
        remove()  # harmless twice
        notify_and_wait(client, peer, "notifications/resources/updated", {"uri": "demo://b"})
        assert seen.get(timeout=5) == ("any", {"uri": "demo://b"})
        assert seen.empty()


def test_a_raising_notification_handler_is_logged_and_the_other_handlers_still_run(peer, logs):
    with Client(peer.transport) as client:
        client.on_notification("notifications/x", lambda p: 1 / 0)
        notify_and_wait(client, peer, "notifications/x")
    assert any("Handler for notifications/x raised" in m for m in logs.messages("mcpsync.client"))


@pytest.mark.parametrize("level, expected", [
    ("debug", logging.DEBUG), ("info", logging.INFO), ("notice", logging.INFO), ("warning", logging.WARNING),
    ("error", logging.ERROR), ("critical", logging.CRITICAL), ("alert", logging.CRITICAL),
    ("emergency", logging.CRITICAL), ("no-such-level", logging.INFO),
])
def test_a_server_log_message_goes_to_the_server_logger_at_the_mapped_level(peer, logs, level, expected):
    with Client(peer.transport):
        peer.notify("notifications/message", {"level": level, "logger": "db", "data": f"message at {level}"})
        logs.wait_for(lambda m: m == f"[db] message at {level}")
    [record] = [r for r in logs.records if r.getMessage() == f"[db] message at {level}"]
    assert record.name == SERVER_LOGGER
    assert record.levelno == expected


def test_a_server_log_message_without_a_logger_name_is_logged_as_its_data(peer, logs):
    with Client(peer.transport):
        peer.notify("notifications/message", {"level": "info", "data": {"rows": 3}})
        logs.wait_for(lambda m: m == "{'rows': 3}")


def test_a_logging_handler_receives_server_log_messages_instead_of_the_logger(peer, logs):
    got: "queue.Queue[Any]" = queue.Queue()
    with Client(peer.transport, logging_handler=got.put):
        peer.notify("notifications/message", {"level": "error", "data": "to the handler"})
        assert got.get(timeout=5) == {"level": "error", "data": "to the handler"}
    assert not [r for r in logs.records if r.name == SERVER_LOGGER]


def test_a_raising_logging_handler_does_not_stop_the_notification_handlers(peer):
    got: "queue.Queue[Any]" = queue.Queue()

    def broken(params):
        raise RuntimeError("logging handler bug")

    with Client(peer.transport, logging_handler=broken) as client:
        client.on_notification("notifications/message", got.put)
        peer.notify("notifications/message", {"level": "info", "data": "x"})
        notify_and_wait(client, peer, "notifications/after")  # the dispatcher is past the message
        assert got.get_nowait() == {"level": "info", "data": "x"}
