"""Both protocol eras against real peers built with the official ``mcp`` SDK 2.x.

``tests/servers/era_sdk_server.py`` is one MCPServer run two ways: dual-era (as the SDK serves
it: the 2026-07-28 protocol for a client that opens with it) and legacy-only (a server from
before 2026). Over stdio it is spawned per test; over HTTP it runs in uvicorn (http_fixtures),
with JSON or SSE answers. Its sampling, elicitation and roots go through the SDK's own
resolvers, which ask mid-call on a legacy connection and answer ``input_required`` on a modern
one, so the same client handlers are exercised in both eras.
"""

from __future__ import annotations

import json
import threading
from typing import Any, Dict, List

import pytest

import mcpsync
from mcpsync import (
    CancelToken, CreateMessageParams, CreateMessageResult, ElicitParams, ElicitResult, MCPError,
    MissingClientCapability, RequestTimeout, StreamableHTTPTransport, Task, URLElicitationRequired,
)

from ..conftest import LogWatch, server_argv
from ..http_fixtures import _era_sdk_servers, make_era_fixture  # noqa: F401  (fixtures)

MODERN, LEGACY = "2026-07-28", "2025-11-25"
ERAS = {"dual": MODERN, "legacy-only": LEGACY}


def stdio_argv(kind: str) -> List[str]:
    return server_argv("era_sdk_server.py", *(["--legacy-only"] if kind == "legacy-only" else []))


class Handlers:
    """Handlers that answer like a person and a model would, recording what they were asked."""

    def __init__(self) -> None:
        self.sampled: List[CreateMessageParams] = []
        self.elicited: List[ElicitParams] = []
        self.logs: List[Any] = []
        self.logged = threading.Event()

    def sampling(self, params: CreateMessageParams) -> CreateMessageResult:
        self.sampled.append(params)
        return CreateMessageResult("teal", model="test-model")

    def elicitation(self, params: ElicitParams) -> ElicitResult:
        self.elicited.append(params)
        if "Approve" in params.message:
            return ElicitResult.accept({"approved": True})
        return ElicitResult.accept({"answer": "yes"})  # "count" left out: the schema's default is sent

    def logging(self, message: Any) -> None:
        self.logs.append(message)
        self.logged.set()

    def options(self) -> Dict[str, Any]:
        return dict(sampling_handler=self.sampling, elicitation_handler=self.elicitation, roots=["/srv/data"],
                    logging_handler=self.logging, timeout=15)


def watch(client: mcpsync.Client) -> List[str]:
    """The methods ``client`` sends through its transport from now on (wrapped before connecting)."""
    methods: List[str] = []
    transport = client.transport
    request = type(transport).request

    def wrapper(method: str, params: Any = None, **options: Any) -> Any:
        methods.append(method)
        return request(transport, method, params, **options)

    transport.request = wrapper  # type: ignore[method-assign]
    return methods


# -- choosing the era over stdio ---------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["dual", "legacy-only"])
def test_auto_detects_the_era_of_an_sdk_server_over_stdio(kind):
    # The SDK server imports for a second or more, several on a loaded machine: a probe_timeout
    # that outlasts its start keeps this about era detection, not about the silent-server rule
    # (an unanswered probe counts as legacy: tested in test_eras_scripted).
    client = mcpsync.Client(mcpsync.StdioTransport(*_split(stdio_argv(kind))), timeout=15, probe_timeout=30)
    sent = watch(client)
    with client:
        assert client.protocol_version == ERAS[kind]
        assert (client.server_info.name, client.server_info.version) == ("era-sdk-server", "2.0.0")
        assert client.instructions == "Ask in either era."
        assert "tools" in client.server_capabilities
        assert client.call_tool("echo", {"text": kind}).text == kind
    # Modern: the probe was the discovery. Legacy: one refused probe (-32601), then the handshake.
    assert sent[:2] == (["server/discover", "tools/call"] if kind == "dual" else ["server/discover", "initialize"])


def _split(argv: List[str]) -> Any:
    return argv[0], argv[1:]


@pytest.mark.parametrize("protocol, version, first", [("legacy", LEGACY, "initialize"),
                                                      ("modern", MODERN, "server/discover"),
                                                      ("2025-06-18", "2025-06-18", "initialize")])
def test_a_forced_protocol_skips_the_probe_on_a_dual_era_server(protocol, version, first):
    client = mcpsync.Client(mcpsync.StdioTransport(*_split(stdio_argv("dual"))), protocol=protocol, timeout=15)
    sent = watch(client)
    with client:
        assert client.protocol_version == version
        assert client.call_tool("add", {"a": 1, "b": 2}).structured_content == {"result": 3.0}
    assert sent[0] == first and sent.count("server/discover") == (1 if first == "server/discover" else 0)


def test_forcing_modern_on_a_legacy_only_server_raises_its_refusal():
    with pytest.raises(mcpsync.UnsupportedProtocolVersion) as raised:
        mcpsync.connect(stdio_argv("legacy-only"), protocol="modern", timeout=15)
    assert "protocol='auto'" in str(raised.value)  # what to do, and the refusal chained
    assert isinstance(raised.value.__cause__, MCPError) and raised.value.__cause__.code == -32601


# -- every handler, in both eras --------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["dual", "legacy-only"])
def test_sampling_elicitation_roots_and_logging_handlers_serve_both_eras_over_stdio(kind):
    handlers = Handlers()
    with mcpsync.connect(stdio_argv(kind), log_level="info", **handlers.options()) as client:
        assert client.protocol_version == ERAS[kind]
        assert client.call_tool("sample", {"prompt": "A colour?"}).text == "teal"
        asked = handlers.sampled[0]
        assert (asked.text, asked.max_tokens, asked.system_prompt) == ("A colour?", 32, "Be brief.")
        assert asked["messages"][0]["role"] == "user"  # still the wire dict underneath
        assert client.call_tool("ask", {"question": "Go?"}).text == 'accept {"answer": "yes", "count": 7}'
        question = handlers.elicited[0]
        assert (question.mode, question.message, question.server.name) == ("form", "Go?", "era-sdk-server")
        assert client.call_tool("where").text == "file:///srv/data"
        # Three questions in one call: three rounds of input_required on a modern server.
        assert client.call_tool("survey").text == "teal|accept:7|1"
        assert client.call_tool("log", {"message": "from the server"}).text == "logged"
        assert handlers.logged.wait(10)
        assert handlers.logs[0] == {"level": "info", "data": "from the server"}
        assert handlers.logs[0].level == "info" and handlers.logs[0].data == "from the server"


@pytest.mark.parametrize("kind", ["dual", "legacy-only"])
def test_progress_cancellation_resources_prompts_and_url_elicitation_in_both_eras(kind):
    seen: List[Any] = []
    with mcpsync.connect(stdio_argv(kind), timeout=15) as client:
        assert client.call_tool("progress", {"steps": 2}, on_progress=lambda *a: seen.append(a)).text == "done"
        assert seen == [(1, 2, "step 1 of 2"), (2, 2, "step 2 of 2")]
        token = CancelToken()
        threading.Timer(0.3, token.cancel, args=("enough",)).start()
        with pytest.raises(mcpsync.RequestCancelled):
            client.call_tool("block", {"seconds": 10}, cancel=token)
        with pytest.raises(RequestTimeout):
            client.call_tool("block", {"seconds": 10}, timeout=0.3)
        _eventually(lambda: client.call_tool("cancelled").text == "2")  # stdio: notifications/cancelled
        assert client.read_resource("demo://greeting").text == "hello"
        assert client.read_resource("demo://folder/a.txt").text == "file a.txt"
        assert client.get_prompt("greet", {"name": "Ada"}).messages[0].content.text == "Hello, Ada!"
        if kind == "legacy-only":
            with pytest.raises(URLElicitationRequired) as raised:
                client.call_tool("url_login")
            (elicitation,) = raised.value.elicitations
            assert (elicitation.mode, elicitation.url, elicitation.elicitation_id) == (
                "url", "https://login.example.com/start?x=1", "login-1")


def _eventually(check: Any, timeout: float = 10.0) -> None:
    """The server counts a cancellation when its task unwinds, a moment after our call returned."""
    import time

    deadline = time.monotonic() + timeout
    pause = threading.Event()
    while not check():
        assert time.monotonic() < deadline, "timed out"
        pause.wait(0.05)


@pytest.mark.parametrize("kind", ["dual", "legacy-only"])
def test_subscriptions_and_list_changes_in_both_eras(kind):
    updates: List[str] = []
    updated = threading.Event()
    changed = threading.Event()
    client = mcpsync.Client(mcpsync.StdioTransport(*_split(stdio_argv(kind))), timeout=15)
    client.on_notification("notifications/tools/list_changed", lambda params: changed.set())
    with client:
        before = [tool.name for tool in client.list_tools()]
        with client.subscribe("demo://greeting", lambda uri: (updates.append(uri), updated.set())) as subscription:
            assert client.call_tool("touch", {"uri": "demo://greeting"}).text == "touched"
            assert updated.wait(10)
            assert subscription.active
        assert updates == ["demo://greeting"]
        assert client.call_tool("grow").text == "grew"
        assert changed.wait(10)
        assert "grown" in [tool.name for tool in client.list_tools()] and "grown" not in before


# -- tasks -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["dual", "legacy-only"])
def test_tasks_in_both_eras(kind):
    handlers = Handlers()
    with mcpsync.connect(stdio_argv(kind), **handlers.options()) as client:
        task = client.call_tool("square", {"n": 7}, task=True)
        assert isinstance(task, Task) and task.id and task.tool == "square"
        assert task.status() in ("working", "completed")
        assert task.wait(timeout=10) == "completed"
        assert task.result().text == "49"
        approval = client.call_tool("approve_task", {"item": "deploy"}, task=True)
        assert approval.result(timeout=10).text == "deploy: approved"  # the person was asked on the way
        assert handlers.elicited[-1].message == "Approve deploy?"
        doomed = client.call_tool("square", {"n": 3}, task=True)
        doomed.cancel()
        assert doomed.wait(timeout=10) == "cancelled"
        if kind == "legacy-only":
            # taskSupport "required": a plain call runs as a task and waits for it.
            assert client.call_tool("slow_square", {"n": 5}).text == "25"
            assert {info.task_id for info in client.list_tasks()} >= {task.id, approval.id, doomed.id}
            with pytest.raises(mcpsync.CapabilityError, match="taskSupport is 'forbidden'"):
                client.call_tool("echo", {"text": "x"}, task=True)
        else:
            with pytest.raises(MissingClientCapability) as raised:
                client.call_tool("slow_square", {"n": 5})  # the tasks extension was not declared
            assert raised.value.required_capabilities == {"extensions": {"io.modelcontextprotocol/tasks": {}}}
            assert "io.modelcontextprotocol/tasks" in str(raised.value)
            assert client.call_tool("slow_square", {"n": 5}, task=True).result(timeout=10).text == "25"
            quick = client.call_tool("echo", {"text": "at once"}, task=True)  # the server made no task
            assert quick.result().text == "at once" and quick.status() == "completed"
            with pytest.raises(mcpsync.CapabilityError):
                client.list_tasks()
    with mcpsync.connect(stdio_argv(kind), tasks=True, timeout=15) as client:
        if kind == "dual":  # Client(tasks=True): any call may become a task, waited for transparently
            assert client.call_tool("slow_square", {"n": 4}).text == "16"


# -- over HTTP --------------------------------------------------------------------------------------------

era = make_era_fixture("dual-json", "dual-sse", "legacy-sse")
streaming = make_era_fixture("dual-sse", "legacy-sse")


def test_auto_detects_the_era_of_an_sdk_server_over_http(era):
    with mcpsync.connect(era.url("/mcp"), timeout=15) as client:
        assert isinstance(client.transport, StreamableHTTPTransport)
        assert client.protocol_version == (LEGACY if era.mode == "legacy-sse" else MODERN)
        assert (client.transport.session_id is not None) == (era.mode == "legacy-sse")
        assert client.call_tool("echo", {"text": "over http"}).text == "over http"
        assert client.read_resource("demo://greeting").text == "hello"


def test_handlers_serve_both_eras_over_http(streaming):
    handlers = Handlers()
    with mcpsync.connect(streaming.url("/mcp"), log_level="info", **handlers.options()) as client:
        assert client.call_tool("sample", {"prompt": "A colour?"}).text == "teal"
        assert client.call_tool("ask", {"question": "Go?"}).text == 'accept {"answer": "yes", "count": 7}'
        assert client.call_tool("where").text == "file:///srv/data"
        assert client.call_tool("survey").text == "teal|accept:7|1"
        assert client.call_tool("log", {"message": "over http"}).text == "logged"
        assert handlers.logged.wait(10) and handlers.logs[0].data == "over http"
        approval = client.call_tool("approve_task", {"item": "ship"}, task=True)
        assert approval.result(timeout=10).text == "ship: approved"


def test_modern_http_mirrors_x_mcp_header_arguments_and_leaves_out_invalid_tools(era, logs: LogWatch):
    with mcpsync.connect(era.url("/mcp"), timeout=15) as client:
        names = [tool.name for tool in client.list_tools()]
        # The SDK server checks Mcp-Param-Region against the body: a wrong or missing header is -32020.
        assert client.call_tool("route", {"region": "eu-west-1", "query": "q"}).text == "eu-west-1:q"
        assert client.call_tool("route", {"region": "Zürich ", "query": "q"}).text == "Zürich :q"
        modern = client.modern
    assert ("broken_header" in names) == (not modern)
    if modern:
        assert any("Leaving out tool 'broken_header'" in m for m in logs.messages())


def test_cancelling_over_modern_http_closes_the_stream_and_the_server_stops(_era_sdk_servers):
    served = _era_sdk_servers["dual-sse"]
    with mcpsync.connect(served.url("/mcp"), timeout=15) as client:
        before = int(client.call_tool("cancelled").text)
        with pytest.raises(RequestTimeout):
            client.call_tool("block", {"seconds": 10}, timeout=0.5)
        _eventually(lambda: int(client.call_tool("cancelled").text) == before + 1)
    served.wait_idle()


def test_subscriptions_over_modern_http_use_listen_streams(_era_sdk_servers):
    served = _era_sdk_servers["dual-sse"]
    updates: List[str] = []
    updated = threading.Event()
    with mcpsync.connect(served.url("/mcp"), timeout=15) as client:
        subscription = client.subscribe("demo://greeting", lambda uri: (updates.append(uri), updated.set()))
        assert client.call_tool("touch", {"uri": "demo://greeting"}).text == "touched"
        assert updated.wait(10)
        subscription.close()
        assert not subscription.active
        client.subscribe_resource("demo://greeting")  # the older API, same mechanism
        client.unsubscribe_resource("demo://greeting")
    assert updates == ["demo://greeting"]
    served.wait_idle()


def test_the_modern_tool_list_is_cached_for_its_ttl(_era_sdk_servers):
    served = _era_sdk_servers["dual-json"]
    client = mcpsync.Client(StreamableHTTPTransport(served.url("/mcp")), timeout=15)
    sent = watch(client)
    with client:
        first = client.list_tools()
        assert client.list_tools() == first  # ttlMs 60000: from the cache
        client.list_tools(refresh=True)
    assert sent.count("tools/list") == 2
    served.wait_idle()


def test_the_sdk_answers_match_what_the_spec_says_about_json_bodies(_era_sdk_servers):
    served = _era_sdk_servers["dual-json"]
    with mcpsync.connect(served.url("/mcp"), timeout=15) as client:
        with pytest.raises(MCPError) as raised:
            client.request("no/such/method")
        assert (raised.value.code, raised.value.http_status) == (-32601, 404)
        assert json.loads(json.dumps(client.server_capabilities))["tools"]["listChanged"] is True
    served.wait_idle()
