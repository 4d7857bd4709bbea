"""The stdio transport and the client against real servers built with the official ``mcp`` SDK.

These tests are about the legacy (handshake) era, so they ask for it; ``test_eras.py`` runs the
2026-07-28 era against the same SDK.

``tests/servers/sdk_server.py`` (MCPServer) and ``tests/servers/sdk_paged_server.py``
(the low-level Server, with paginated lists and subscriptions) are spawned through
``mcpsync.connect`` exactly as a user would. Starting one costs most of a second (the
SDK's imports), so the tests that leave the server as they found it share one module-wide
``sdk_server``; every test that changes a server's state, or tests the connection's
survival, gets its own process.
"""

from __future__ import annotations

import base64
import contextlib
import logging
import queue
import threading
from typing import Any, Callable, Dict, Iterator, List, Optional

import pytest

import mcpsync
from mcpsync import (
    BlobResourceContents,
    CancelToken,
    CapabilityError,
    ImageContent,
    MCPError,
    ProtocolError,
    RequestCancelled,
    RequestTimeout,
    TextContent,
    TextResourceContents,
    ToolError,
    TransportClosed,
)

from ..conftest import server_argv

SERVER_LOGGER = "mcpsync.server.sdk_server"
LATEST = "2025-11-25"


@pytest.fixture(scope="module")
def shared() -> Iterator[mcpsync.Client]:
    """One ``sdk_server`` for every test that leaves it as it found it."""
    with mcpsync.connect(server_argv("sdk_server.py"), protocol="legacy", timeout=15) as client:
        # The dispatcher thread starts on first use; start it now, outside any one
        # test's leak check, so the tests sharing this client see no new threads.
        client.call_tool("progress", {"steps": 1}, on_progress=lambda *args: None)
        yield client


@pytest.fixture
def client() -> Iterator[mcpsync.Client]:
    """A fresh ``sdk_server`` of this test's own."""
    with mcpsync.connect(server_argv("sdk_server.py"), protocol="legacy", timeout=15) as client:
        yield client


@pytest.fixture
def paged() -> Iterator[mcpsync.Client]:
    """A fresh ``sdk_paged_server`` of this test's own."""
    with mcpsync.connect(server_argv("sdk_paged_server.py"), protocol="legacy", timeout=15) as client:
        yield client


@contextlib.contextmanager
def watch_requests(client: mcpsync.Client,
                   on_request: Optional[Callable[[str, Any], None]] = None) -> Iterator[List[Dict[str, Any]]]:
    """Collect ``{"method", "params"}`` of every request ``client`` makes inside the block.

    Every client call goes through its transport's public ``request``, wrapped here for
    the block; ``on_request(method, params)`` runs on the calling thread just before the
    request is sent.
    """
    calls: List[Dict[str, Any]] = []
    transport = client.transport
    request = type(transport).request

    def wrapper(method: str, params: Any = None, **options: Any) -> Any:
        calls.append({"method": method, "params": params})
        if on_request is not None:
            on_request(method, params)
        return request(transport, method, params, **options)

    transport.request = wrapper  # type: ignore[method-assign]
    try:
        yield calls
    finally:
        del transport.request


def requests_of(calls: List[Dict[str, Any]], method: str) -> List[Dict[str, Any]]:
    return [c for c in calls if c["method"] == method]


def record_for(logs: Any, message: str) -> logging.LogRecord:
    logs.wait_for(lambda m: m == message)
    return next(r for r in logs.records if r.getMessage() == message)


# -- the handshake and the connection -----------------------------------------------------


def test_the_handshake_negotiates_the_latest_version_and_reports_the_server_and_its_capabilities():
    with mcpsync.connect(server_argv("sdk_server.py", "--name", "renamed-server"), protocol="legacy") as client:
        assert client.connected
        assert client.protocol_version == LATEST
        assert (client.server_info.name, client.server_info.version) == ("renamed-server", "1.0.0")
        capabilities = client.server_capabilities
        assert {"tools", "resources", "prompts", "logging", "completions"} <= set(capabilities)
        assert capabilities["resources"].get("subscribe") is False
        assert client.instructions is None  # this server gives none
        assert client.name == "sdk_server"  # the label comes from the script, not from serverInfo
        assert client.transport.pid is not None and client.transport.returncode is None


def test_closing_the_client_ends_the_server_and_later_calls_raise_transport_closed():
    with mcpsync.connect(server_argv("sdk_server.py"), protocol="legacy") as client:
        client.ping()
    assert not client.connected
    assert client.transport.returncode is not None
    with pytest.raises(TransportClosed) as info:
        client.call_tool("echo", {"text": "too late"})
    assert str(info.value).startswith("Transport closed")


def test_a_config_dict_starts_the_server_with_its_timeout_in_ms_and_a_name_labels_its_logs(logs):
    argv = server_argv("sdk_server.py")
    config = {"command": argv[0], "args": argv[1:], "timeout": 15000}
    with mcpsync.connect(config, name="My Server") as client:
        assert client.transport.timeout == 15.0
        assert client.name == "My_Server"
        client.call_tool("stderr", {"text": "labelled line\n"})
        assert record_for(logs, "labelled line").name == "mcpsync.server.My_Server"


def test_ping_is_answered(shared):
    assert shared.ping() is None


# -- tools ------------------------------------------------------------------------------


def test_list_tools_returns_every_tool_with_its_description_and_schemas(shared):
    tools = {tool.name: tool for tool in shared.list_tools()}
    assert set(tools) == {"echo", "add", "fail", "progress", "block", "image", "log", "stderr"}
    echo = tools["echo"]
    assert echo.description == "Return the given text unchanged."
    assert echo.input_schema["properties"]["text"]["type"] == "string"
    assert echo.required_arguments == ["text"]
    assert tools["add"].output_schema["properties"]["result"]["type"] == "number"


def test_iter_tools_yields_the_same_tools_as_list_tools(shared):
    assert [tool.name for tool in shared.iter_tools()] == [tool.name for tool in shared.list_tools()]


def test_call_tool_returns_the_tools_text(shared):
    result = shared.call_tool("echo", {"text": "héllo, wörld"})
    assert not result.is_error
    assert result.text == "héllo, wörld"
    assert [type(block) for block in result.content] == [TextContent]


def test_a_tool_with_an_output_schema_returns_structured_content(shared):
    result = shared.call_tool("add", {"a": 2, "b": 40})
    assert result.structured_content == {"result": 42}
    assert not result.is_error and result.text  # the same value, also as text


def test_an_image_tool_returns_a_base64_png_image_block(shared):
    result = shared.call_tool("image")
    [block] = result.content
    assert isinstance(block, ImageContent)
    assert block.mime_type == "image/png"
    assert base64.b64decode(block.data).startswith(b"\x89PNG\r\n\x1a\n")


def test_a_failing_tool_returns_an_error_result_that_raise_for_error_turns_into_tool_error(shared):
    result = shared.call_tool("fail", {"message": "it broke"})
    assert result.is_error
    assert "it broke" in result.text
    with pytest.raises(ToolError) as info:
        result.raise_for_error()
    assert info.value.result is result
    assert "it broke" in str(info.value)
    assert shared.call_tool("echo", {"text": "ok"}).raise_for_error().text == "ok"


def test_an_unknown_tool_is_reported_by_this_server_as_an_error_result(shared):
    result = shared.call_tool("no-such-tool")
    assert result.is_error and "no-such-tool" in result.text


def test_progress_callbacks_arrive_in_order_on_the_dispatcher_before_the_call_returns(shared):
    seen = []
    result = shared.call_tool(
        "progress", {"steps": 5},
        on_progress=lambda *args: seen.append((*args, threading.current_thread().name)),
    )
    assert result.text == "done"
    assert [args[:3] for args in seen] == [(i, 5, f"step {i} of 5") for i in range(1, 6)]
    assert all(args[3].startswith("mcpsync-dispatch[sdk_server]") for args in seen)


def test_sixteen_threads_calling_echo_at_once_each_get_their_own_answer(shared):
    barrier = threading.Barrier(16)
    results: Dict[int, str] = {}
    errors: List[BaseException] = []

    def call(i: int) -> None:
        try:
            barrier.wait(10)
            results[i] = shared.call_tool("echo", {"text": f"caller {i}"}).text
        except BaseException as exc:  # reported below, not lost in the thread
            errors.append(exc)

    threads = [threading.Thread(target=call, args=(i,), name=f"caller-{i}") for i in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(20)
    assert errors == []
    assert results == {i: f"caller {i}" for i in range(16)}


# -- resources ----------------------------------------------------------------------------


def test_list_resources_and_list_resource_templates_describe_what_the_server_offers(shared):
    resources = {r.uri: r for r in shared.list_resources()}
    assert set(resources) == {"demo://greeting", "demo://blob"}
    assert resources["demo://greeting"].name == "greeting"
    assert resources["demo://greeting"].mime_type == "text/plain"
    assert resources["demo://blob"].mime_type == "application/octet-stream"
    [template] = shared.list_resource_templates()
    assert (template.uri_template, template.name) == ("demo://users/{user_id}", "user")


def test_read_resource_returns_text_for_a_static_and_a_templated_uri(shared):
    greeting = shared.read_resource("demo://greeting")
    [contents] = greeting.contents
    assert isinstance(contents, TextResourceContents)
    assert (contents.uri, contents.mime_type, contents.text) == ("demo://greeting", "text/plain", "hello")
    assert greeting.text == "hello"
    assert shared.read_resource("demo://users/42").text == "user 42"


def test_read_resource_returns_binary_contents_as_a_base64_blob(shared):
    [contents] = shared.read_resource("demo://blob").contents
    assert isinstance(contents, BlobResourceContents)
    assert contents.mime_type == "application/octet-stream"
    assert base64.b64decode(contents.blob) == bytes(range(16))


def test_reading_an_unknown_resource_raises_mcp_error_with_the_servers_code_and_data(shared):
    with pytest.raises(MCPError) as info:
        shared.read_resource("demo://nope")
    assert info.value.code == -32602
    assert info.value.data == {"uri": "demo://nope"}
    assert "demo://nope" in str(info.value)


def test_subscribing_where_the_server_offers_no_subscriptions_raises_capability_error(shared):
    with watch_requests(shared) as sent:
        with pytest.raises(CapabilityError):
            shared.subscribe_resource("demo://greeting")
        with pytest.raises(CapabilityError):
            shared.unsubscribe_resource("demo://greeting")
    assert sent == []  # nothing reached the server


# -- prompts, completion, logging -------------------------------------------------------------


def test_list_prompts_reports_each_prompt_and_its_arguments(shared):
    [prompt] = shared.list_prompts()
    assert (prompt.name, prompt.description) == ("greet", "Greet someone by name.")
    assert [(a.name, a.required) for a in prompt.arguments] == [("name", True)]


def test_get_prompt_renders_the_prompt_with_its_arguments(shared):
    result = shared.get_prompt("greet", {"name": "Ada"})
    [message] = result.messages
    assert message.role == "user"
    assert isinstance(message.content, TextContent)
    assert message.content.text == "Hello, Ada!"


def test_complete_returns_the_servers_completions_for_a_prompt_argument(shared):
    ref = {"type": "ref/prompt", "name": "greet"}
    result = shared.complete(ref, "name", "")
    assert (result.values, result.total, result.has_more) == (["alice", "bob", "carol"], 3, False)
    assert shared.complete(ref, "name", "b").values == ["bob"]


def test_set_logging_level_reaches_the_server(shared, logs):
    shared.set_logging_level("debug")
    record = record_for(logs, "LOGLEVEL debug")  # the server echoes the level on its stderr
    assert record.name == SERVER_LOGGER


def test_a_log_message_from_a_tool_arrives_on_the_server_logger_at_its_level(shared, logs):
    assert shared.call_tool("log", {"message": "written by the log tool"}).text == "logged"
    record = record_for(logs, "written by the log tool")
    assert record.name == SERVER_LOGGER
    assert record.levelno == logging.INFO
    # It came as notifications/message (dispatcher thread), not as a stderr line.
    assert record.threadName.startswith("mcpsync-dispatch")


def test_server_stderr_lines_are_logged_at_info_and_kept_in_stderr_tail(shared, logs):
    shared.call_tool("stderr", {"text": "first stderr line\nsecond stderr line\n"})
    first = record_for(logs, "first stderr line")
    second = record_for(logs, "second stderr line")
    assert (first.name, first.levelno) == (SERVER_LOGGER, logging.INFO)
    assert (second.name, second.levelno) == (SERVER_LOGGER, logging.INFO)
    assert second.threadName.startswith("mcpsync-stdio-stderr")
    assert shared.transport.stderr_tail[-2:] == ["first stderr line", "second stderr line"]


# -- timeouts and cancellation ---------------------------------------------------------------


def test_a_timeout_raises_request_timeout_and_the_server_sees_the_cancellation(client, logs):
    with pytest.raises(RequestTimeout) as info:
        client.call_tool("block", {"seconds": 30}, timeout=0.5)
    assert str(info.value) == f"Request timeout after 500ms: MCP server {client.name!r} sent no answer to 'tools/call'"
    assert isinstance(info.value, TimeoutError)
    assert (info.value.method, info.value.timeout) == ("tools/call", 0.5)
    record = record_for(logs, "CANCELLED block")  # written by the server when its task is cancelled
    assert (record.name, record.levelno) == (SERVER_LOGGER, logging.INFO)
    assert client.call_tool("echo", {"text": "still here"}).text == "still here"
    assert client.connected


def test_a_cancel_token_fired_from_another_thread_cancels_the_call_on_the_server(client, logs):
    token = CancelToken()
    block_sent = threading.Event()
    errors: List[BaseException] = []

    def on_request(method: str, params: Any) -> None:
        if method == "tools/call" and params["name"] == "block":
            block_sent.set()

    def cancel_once_the_server_has_the_call() -> None:
        try:
            assert block_sent.wait(10)
            # A round trip sent after the block call: the server has read that and started its task.
            client.call_tool("echo", {"text": "sync"})
        except BaseException as exc:
            errors.append(exc)
        token.cancel("user pressed stop")

    canceller = threading.Thread(target=cancel_once_the_server_has_the_call, name="canceller")
    canceller.start()
    try:
        with watch_requests(client, on_request), pytest.raises(RequestCancelled) as info:
            client.call_tool("block", {"seconds": 30}, cancel=token, timeout=30)
    finally:
        canceller.join(10)
    assert errors == []
    assert info.value.reason == "user pressed stop"
    record_for(logs, "CANCELLED block")
    assert client.call_tool("echo", {"text": "still here"}).text == "still here"
    assert client.connected


# -- the paged server: pagination, caching, subscriptions ----------------------------------------


def test_list_tools_follows_every_cursor_across_the_pages(paged):
    with watch_requests(paged) as sent:
        assert [tool.name for tool in paged.list_tools()] == [f"t{i}" for i in range(7)]
    cursors = [(c["params"] or {}).get("cursor") for c in requests_of(sent, "tools/list")]
    assert len(cursors) == 3
    assert cursors[0] is None and all(isinstance(c, str) and c for c in cursors[1:])
    assert paged.call_tool("t4").text == "t4"


def test_iter_tools_fetches_the_next_page_only_when_it_is_needed(paged):
    with watch_requests(paged) as sent:
        tools = paged.iter_tools()
        assert requests_of(sent, "tools/list") == []
        assert next(tools).name == "t0"
        assert len(requests_of(sent, "tools/list")) == 1
        assert [next(tools).name for _ in range(2)] == ["t1", "t2"]
        assert len(requests_of(sent, "tools/list")) == 1
        assert next(tools).name == "t3"
        assert len(requests_of(sent, "tools/list")) == 2
        assert [tool.name for tool in tools] == ["t4", "t5", "t6"]
        assert len(requests_of(sent, "tools/list")) == 3


def test_resources_and_prompts_are_collected_across_their_pages_too(paged):
    assert [r.uri for r in paged.list_resources()] == [f"demo://r/{i}" for i in range(5)]
    assert paged.read_resource("demo://r/3").text == "resource 3"
    assert [p.name for p in paged.list_prompts()] == ["p0", "p1", "p2", "p3"]
    assert paged.get_prompt("p3").messages[0].content.text == "prompt 3"


def test_a_server_that_repeats_its_cursor_raises_protocol_error_instead_of_looping():
    with mcpsync.connect(server_argv("sdk_paged_server.py", "--loop-cursor"), protocol="legacy", timeout=15) as client:
        with pytest.raises(ProtocolError) as info:
            client.list_tools()
        assert "repeated the cursor 'loop'" in str(info.value)
        with pytest.raises(ProtocolError):
            list(client.iter_tools())
        client.ping()  # the connection is still usable


def test_the_tool_list_is_cached_until_the_server_says_it_changed(paged):
    assert paged.server_capabilities["tools"]["listChanged"] is True
    changed = threading.Event()
    paged.on_notification("notifications/tools/list_changed", lambda params: changed.set())
    with watch_requests(paged) as sent:
        first = paged.list_tools()
        assert len(requests_of(sent, "tools/list")) == 3
        assert paged.list_tools() == first
        assert len(requests_of(sent, "tools/list")) == 3  # served from the cache

        assert paged.call_tool("touch").text == "touched"
        assert changed.wait(10)  # the client's own handler, which drops the cache, ran before ours
        assert paged.list_tools() == first
        assert len(requests_of(sent, "tools/list")) == 6  # fetched again
        paged.list_tools(refresh=True)
        assert len(requests_of(sent, "tools/list")) == 9


def test_a_subscribed_resource_update_reaches_on_notification_until_unsubscribed(paged):
    updates: "queue.Queue[Any]" = queue.Queue()
    paged.on_notification("notifications/resources/updated", updates.put)

    paged.subscribe_resource("demo://r/1")
    assert updates.get(timeout=10)["uri"] == "demo://r/1"  # sent by the server ~50 ms later
    assert paged.call_tool("update", {"uri": "demo://r/1"}).text == "sent"
    assert updates.get(timeout=10)["uri"] == "demo://r/1"

    paged.unsubscribe_resource("demo://r/1")
    assert paged.call_tool("update", {"uri": "demo://r/1"}).text == "not subscribed"


def test_the_paged_server_offers_no_logging_or_completions_so_those_raise_capability_error(paged):
    with pytest.raises(CapabilityError):
        paged.set_logging_level("info")
    with pytest.raises(CapabilityError):
        paged.complete({"type": "ref/prompt", "name": "p0"}, "x", "")
    paged.ping()
