"""Every client method over HTTP against the official SDK's server, in each transport mode.

Modes: Streamable HTTP with JSON and with SSE responses, stateful and
stateless, and the legacy HTTP+SSE transport. Servers run in uvicorn on
127.0.0.1 ephemeral ports (see http_fixtures).
"""

from __future__ import annotations

import threading

import pytest

import mcpsync
from mcpsync import (
    CancelToken, MCPError, RequestCancelled, RequestTimeout, SSETransport, StreamableHTTPTransport,
)

from ..http_fixtures import _sdk_servers, make_sdk_fixture  # noqa: F401  (fixtures)

ALL = ("json-stateful", "sse-stateful", "json-stateless", "sse-stateless", "legacy-sse")
sdk = make_sdk_fixture(*ALL)


def open_client(server, **options):
    """A client speaking the legacy (handshake) era these tests are about; test_eras.py covers 2026-07-28."""
    options.setdefault("protocol", "legacy")
    transport_options = {k: options.pop(k) for k in ("timeout",) if k in options}
    cls = SSETransport if server.legacy else StreamableHTTPTransport
    return mcpsync.Client(cls(server.url, **transport_options), **options)


def streams(server):
    """Whether the server streams notifications with its answers (not with plain JSON answers)."""
    return not server.mode.startswith("json")


def test_every_client_method_works(sdk):
    with open_client(sdk) as client:
        assert client.protocol_version == "2025-11-25"
        assert client.server_info.name == "http-sdk-server"
        client.ping()
        names = [tool.name for tool in client.list_tools()]
        assert {"echo", "add", "fail", "progress", "block"} <= set(names)
        assert [t.name for t in client.iter_tools()] == names
        assert client.call_tool("echo", {"text": "héllo"}).text == "héllo"
        added = client.call_tool("add", {"a": 2, "b": 3.5})
        assert added.structured_content == {"result": 5.5}
        failed = client.call_tool("fail", {"message": "nope"})
        assert failed.is_error and "nope" in failed.text
        assert {r.uri for r in client.list_resources()} >= {"demo://greeting", "demo://blob"}
        assert [t.uri_template for t in client.list_resource_templates()] == ["demo://users/{user_id}"]
        assert client.read_resource("demo://greeting").contents[0].text == "hello"
        blob = client.read_resource("demo://blob").contents[0]
        assert blob.blob and blob.mime_type == "application/octet-stream"
        client.subscribe_resource("demo://greeting")
        client.unsubscribe_resource("demo://greeting")
        assert [p.name for p in client.list_prompts()] == ["greet"]
        prompt = client.get_prompt("greet", {"name": "Ada"})
        assert prompt.messages[0].content.text == "Hello, Ada!"
        completion = client.complete({"type": "ref/prompt", "name": "greet"}, "name", "a")
        assert completion.values == ["alice"]
        client.set_logging_level("debug")
        with pytest.raises(MCPError) as info:
            client.request("no/such/method")
        assert info.value.code == -32601


def test_sessions_exist_only_on_stateful_streamable_servers(sdk):
    with open_client(sdk) as client:
        if sdk.legacy:
            assert isinstance(client.transport, SSETransport) and client.transport.endpoint.startswith(
                sdk.served.url("/messages/"))
        elif sdk.mode.endswith("stateful"):
            assert client.transport.session_id
        else:
            assert client.transport.session_id is None


def test_progress_arrives_before_the_result(sdk):
    seen = []
    with open_client(sdk) as client:
        result = client.call_tool("progress", {"steps": 3}, on_progress=lambda *a: seen.append(a))
    assert result.text == "done"
    if streams(sdk):
        assert seen == [(1, 3, "step 1 of 3"), (2, 3, "step 2 of 3"), (3, 3, "step 3 of 3")]
    else:
        assert seen == []  # a JSON answer carries no notifications


def test_a_timeout_returns_promptly_and_the_client_goes_on(sdk):
    with open_client(sdk) as client:
        with pytest.raises(RequestTimeout, match=r"timeout after 300ms: MCP server '\S+' sent no answer to 'tools/call'$"):
            client.call_tool("block", {"seconds": 3}, timeout=0.3)
        assert client.call_tool("echo", {"text": "after"}).text == "after"


def test_a_cancel_returns_promptly_as_request_cancelled(sdk):
    token = CancelToken()
    outcome = []
    with open_client(sdk) as client:
        def call():
            try:
                client.call_tool("block", {"seconds": 3}, cancel=token)
            except BaseException as exc:
                outcome.append(exc)

        thread = threading.Thread(target=call)
        thread.start()
        timer = threading.Timer(0.2, token.cancel, args=("stop",))
        timer.start()
        thread.join(5)
        timer.join()
        assert isinstance(outcome[0], RequestCancelled) and outcome[0].reason == "stop"
        assert client.call_tool("echo", {"text": "next"}).text == "next"


def test_sixteen_threads_at_once(sdk):
    results, errors = {}, []
    with open_client(sdk) as client:
        barrier = threading.Barrier(16)

        def work(n):
            try:
                barrier.wait(5)
                for i in range(4):
                    results[(n, i)] = client.call_tool("echo", {"text": f"{n}-{i}"}).text
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(n,)) for n in range(16)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
    assert errors == []
    assert results == {(n, i): f"{n}-{i}" for n in range(16) for i in range(4)}


def test_log_notifications_reach_the_logging_handler(sdk):
    logged = []
    with open_client(sdk, logging_handler=logged.append) as client:
        assert client.call_tool("log", {"message": "from the server"}).text == "logged"
    if streams(sdk):
        assert logged == [{"level": "info", "data": "from the server"}]


server_requests = make_sdk_fixture("sse-stateful", "legacy-sse")


def test_sampling_and_elicitation_requests_are_answered_while_the_call_waits(server_requests):
    asked = []

    def sampling(params):
        asked.append(params["messages"][0]["content"]["text"])
        return {"role": "assistant", "content": {"type": "text", "text": "sampled!"}, "model": "test"}

    def elicitation(params):
        return {"action": "accept", "content": {"answer": "42"}}

    with open_client(server_requests, sampling_handler=sampling, elicitation_handler=elicitation) as client:
        assert client.call_tool("sample", {"prompt": "write a haiku"}).text == "sampled!"
        assert client.call_tool("ask", {"question": "meaning?"}).text == 'accept {"answer": "42"}'
    assert asked == ["write a haiku"]


with_back_channel = make_sdk_fixture("json-stateful", "sse-stateful", "legacy-sse")


def test_roots_requests_are_answered(with_back_channel):
    with open_client(with_back_channel, roots=["/srv/data"]) as client:
        assert client.call_tool("roots").text == "file:///srv/data"
        if isinstance(client.transport, StreamableHTTPTransport):
            assert client.transport.listening  # handlers registered: the GET stream is open


def test_unsolicited_notifications_arrive_on_the_listener(with_back_channel):
    updates = []
    arrived = threading.Event()

    def on_update(params):
        updates.append(params)
        arrived.set()

    client = open_client(with_back_channel)
    client.on_notification("notifications/resources/updated", on_update)
    with client:
        client.subscribe_resource("demo://greeting")
        assert client.call_tool("touch", {"uri": "demo://greeting"}).text == "touched"
        assert arrived.wait(10)
    assert updates == [{"uri": "demo://greeting"}]


def test_connect_by_url_picks_the_right_transport(sdk):
    with mcpsync.connect(sdk.url) as client:
        expected = SSETransport if sdk.legacy else StreamableHTTPTransport
        assert isinstance(client.transport, expected)
        assert client.call_tool("echo", {"text": "auto"}).text == "auto"
