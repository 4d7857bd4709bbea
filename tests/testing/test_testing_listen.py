"""FakeServer's notifications reach a client of either era: a legacy session, or 2026-07-28 ``subscriptions/listen``.

The era tests run the same user test against ``server.client()`` (which reaches a dual-era
fake at 2026-07-28) and ``server.client(protocol="legacy")``; the wire tests drive the
modern stream by hand; the last one has the official SDK's client listen to a fake over stdio.
"""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

import pytest

from mcpsync import CancelToken, Client, MCPError, RequestCancelled
from mcpsync.testing import Context, FakeServer
from mcpsync.testing import FakeTransport

from ..conftest import ROOT

MODERN = "2026-07-28"
ERAS = ["legacy", MODERN]
SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"
ACKNOWLEDGED = "notifications/subscriptions/acknowledged"
TOOLS_CHANGED = "notifications/tools/list_changed"
UPDATED = "notifications/resources/updated"


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer("notes") as fake:
        @fake.tool()
        def add(a: int, b: int) -> int:
            return a + b

        @fake.resource("memo://today")
        def today() -> str:
            return "Buy milk."

        yield fake


def connect(server: FakeServer, era: str, **options: Any) -> Client:
    """The modern case is the plain ``server.client()`` a user's test already has."""
    client = server.client(**options) if era == MODERN else server.client(protocol="legacy", **options)
    assert client.modern == (era == MODERN)
    return client


class Inbox:
    """Collects one notification method's params; ``next()`` waits (bounded)."""

    def __init__(self) -> None:
        self._items: "queue.Queue[Any]" = queue.Queue()

    def put(self, item: Any) -> None:
        self._items.put(item)

    def next(self) -> Any:
        return self._items.get(timeout=5)

    @property
    def empty(self) -> bool:
        return self._items.empty()


# -- the same test in both eras ---------------------------------------------------------------------


@pytest.mark.parametrize("era", ERAS)
def test_a_list_changed_handler_hears_of_tools_added_and_removed(server: FakeServer, era: str) -> None:
    changed = Inbox()
    with connect(server, era) as client:
        client.on_notification(TOOLS_CHANGED, changed.put)
        assert [t.name for t in client.list_tools()] == ["add"]
        server.add_tool(lambda text: text, name="echo")
        changed.next()
        assert [t.name for t in client.list_tools()] == ["add", "echo"]
        server.remove_tool("echo")
        changed.next()
        assert [t.name for t in client.list_tools()] == ["add"]
        assert server.notify(TOOLS_CHANGED) == 1
        changed.next()


@pytest.mark.parametrize("era", ERAS)
def test_a_handler_registered_before_the_connect_hears_too(server: FakeServer, era: str) -> None:
    @server.prompt()
    def greet(name: str) -> str:
        return f"Hello, {name}"

    changed = Inbox()
    client = Client(server.transport(), protocol="auto" if era == MODERN else "legacy")
    client.on_notification("notifications/prompts/list_changed", changed.put)
    with client.connect():
        assert client.modern == (era == MODERN)

        @server.prompt()
        def part(name: str) -> str:
            return f"Goodbye, {name}"

        changed.next()
        assert [p.name for p in client.list_prompts()] == ["greet", "part"]


@pytest.mark.parametrize("era", ERAS)
def test_subscribe_resource_gets_updates_until_unsubscribed(server: FakeServer, era: str) -> None:
    updates = Inbox()
    with connect(server, era) as client:
        client.on_notification(UPDATED, updates.put)
        assert server.resource_updated("memo://today") == 0  # nobody subscribed yet
        client.subscribe_resource("memo://today")
        assert server.resource_updated("memo://today") == 1
        assert updates.next()["uri"] == "memo://today"  # a modern one also names its stream in _meta
        assert server.resource_updated("memo://other") == 0
        client.unsubscribe_resource("memo://today")
        assert server.resource_updated("memo://today") == 0
    assert updates.empty


@pytest.mark.parametrize("era", ERAS)
def test_a_subscription_callback_runs_until_it_is_closed(server: FakeServer, era: str) -> None:
    seen = Inbox()
    with connect(server, era) as client:
        with client.subscribe("memo://today", seen.put) as subscription:
            assert subscription.active
            assert server.resource_updated("memo://today") == 1
            assert seen.next() == "memo://today"
        assert server.resource_updated("memo://today") == 0
    assert seen.empty


@pytest.mark.parametrize("era", ERAS)
def test_a_tool_that_declares_a_tool_tells_the_client_while_it_runs(server: FakeServer, era: str) -> None:
    changed, updated = Inbox(), Inbox()

    @server.tool()
    def grow(ctx: Context) -> int:  # on the request's worker thread, while the connection serves on
        ctx.server.add_tool(lambda: "new", name="grown")
        return ctx.server.resource_updated("memo://today")

    with connect(server, era) as client:
        client.on_notification(TOOLS_CHANGED, changed.put)
        with client.subscribe("memo://today", updated.put):
            assert client.call_tool("grow").text == "1"
            changed.next()
            assert updated.next() == "memo://today"
        assert "grown" in [t.name for t in client.list_tools()]


@pytest.mark.parametrize("era", ERAS)
def test_declaring_resources_tells_a_listening_client(server: FakeServer, era: str) -> None:
    changed = Inbox()
    with connect(server, era) as client:
        client.on_notification("notifications/resources/list_changed", changed.put)

        @server.resource("memo://tomorrow")
        def tomorrow() -> str:
            return "Buy bread."

        changed.next()
        assert [r.uri for r in client.list_resources()] == ["memo://today", "memo://tomorrow"]


@pytest.mark.parametrize("era", ERAS)
def test_log_messages_follow_the_level_the_client_asks_for(era: str) -> None:
    messages = Inbox()
    with FakeServer() as server:
        @server.tool()
        def noisy(ctx: Context) -> str:
            ctx.log("debug", "details")
            ctx.log("error", {"code": 7}, logger="db")
            return "ok"

        # Legacy: logging/setLevel at the connect; 2026-07-28: the level in every request's _meta.
        with connect(server, era, log_level="info", logging_handler=messages.put) as client:
            client.call_tool("noisy")
            assert messages.next() == {"level": "error", "data": {"code": 7}, "logger": "db"}
            client.set_logging_level("debug")
            client.call_tool("noisy")
            assert [messages.next()["level"], messages.next()["level"]] == ["debug", "error"]
    assert messages.empty


def test_a_modern_request_without_a_log_level_gets_no_log_messages() -> None:
    messages = Inbox()
    with FakeServer() as server:
        @server.tool()
        def noisy(ctx: Context) -> bool:
            return ctx.log("emergency", "told?")

        with connect(server, MODERN, logging_handler=messages.put) as client:
            assert client.call_tool("noisy").text == "false"  # the spec: MUST NOT without the _meta level
            client.set_logging_level("emergency")
            assert client.call_tool("noisy").text == "true"
            assert messages.next() == {"level": "emergency", "data": "told?"}


def test_every_client_of_either_era_is_told(server: FakeServer) -> None:
    legacy_heard, modern_heard = Inbox(), Inbox()
    with connect(server, "legacy") as legacy, connect(server, MODERN) as modern:
        legacy.on_notification(TOOLS_CHANGED, legacy_heard.put)
        modern.on_notification(TOOLS_CHANGED, modern_heard.put)
        assert server.notify(TOOLS_CHANGED) == 2
        legacy_heard.next()
        assert SUBSCRIPTION_ID in modern_heard.next()["_meta"]


def test_a_modern_client_hears_only_what_it_listens_for(server: FakeServer) -> None:
    heard = Inbox()
    with connect(server, MODERN) as client:
        client.on_notification("*", heard.put)
        assert server.notify(TOOLS_CHANGED) == 0  # no list_changed handler: no stream
        assert server.notify("notifications/custom", {"x": 1}) == 0  # 2026-07-28 has no channel for it
        with connect(server, "legacy") as legacy:
            assert server.notify("notifications/custom", {"x": 1}) == 1  # a legacy session takes anything
            assert legacy.connected
    assert heard.empty


# -- the modern stream on the wire ----------------------------------------------------------------


def meta(**extra: Any) -> Dict[str, Any]:
    return {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {},
            **extra}


class Heard:
    """Every notification a raw transport received, in order; each stream reads its own."""

    def __init__(self) -> None:
        self._messages: List[Tuple[str, Dict[str, Any]]] = []
        self._changed = threading.Condition()

    def __call__(self, method: str, params: Any) -> None:
        with self._changed:
            self._messages.append((method, dict(params or {})))
            self._changed.notify_all()

    def after(self, position: int, stream_id: Any) -> Tuple[int, Tuple[str, Dict[str, Any]]]:
        """The first message past ``position`` stamped with ``stream_id``, and where it is (bounded wait)."""
        with self._changed:
            while True:
                for index in range(position, len(self._messages)):
                    method, params = self._messages[index]
                    if params.get("_meta", {}).get(SUBSCRIPTION_ID) == stream_id:
                        return index + 1, (method, params)
                position = len(self._messages)
                if not self._changed.wait(5):
                    raise AssertionError(f"nothing more on stream {stream_id!r}")


class Listen:
    """One raw ``subscriptions/listen`` request held open on a thread, and what its stream carried."""

    def __init__(self, transport: FakeTransport, server: FakeServer, notifications: Dict[str, Any],
                 heard: Heard, count: int) -> None:
        self.token = CancelToken()
        self._outcome: "queue.Queue[BaseException]" = queue.Queue()
        self._ended: Optional[BaseException] = None
        self._heard = heard
        self._read = 0
        self._thread = threading.Thread(target=self._run, args=(transport, notifications), daemon=True)
        self._thread.start()
        self.id = server.wait_for_request("subscriptions/listen", count=count).id

    def _run(self, transport: FakeTransport, notifications: Dict[str, Any]) -> None:
        try:
            transport.request("subscriptions/listen", {"notifications": notifications, "_meta": meta()},
                              timeout=30, cancel=self.token)
            self._outcome.put(AssertionError("the listen request was answered"))
        except BaseException as exc:
            self._outcome.put(exc)

    def next(self) -> Tuple[str, Dict[str, Any]]:
        """The next message stamped with this stream's id."""
        self._read, message = self._heard.after(self._read, self.id)
        return message

    def close(self) -> BaseException:
        """Cancel the request (once); what it raised."""
        if self._ended is None:
            self.token.cancel("done")
            self._thread.join(5)
            self._ended = self._outcome.get(timeout=5)
        return self._ended


@pytest.fixture
def wire(server: FakeServer) -> Iterator[Callable[..., Listen]]:
    heard = Heard()
    opened: List[Listen] = []
    with server.transport(timeout=10) as transport:
        transport.add_notification_listener(heard)

        def listen(**notifications: Any) -> Listen:
            stream = Listen(transport, server, notifications, heard, len(opened) + 1)
            opened.append(stream)
            return stream

        yield listen
        for stream in opened:
            stream.close()


def test_the_acknowledgement_comes_first_and_every_message_names_the_stream(
        server: FakeServer, wire: Callable[..., Listen]) -> None:
    stream = wire(toolsListChanged=True, resourceSubscriptions=["memo://today"], taskIds=["t-1"])
    assert stream.next() == (ACKNOWLEDGED, {  # taskIds left out: this server runs no tasks
        "notifications": {"toolsListChanged": True, "resourceSubscriptions": ["memo://today"]},
        "_meta": {SUBSCRIPTION_ID: stream.id}})
    assert server.resource_updated("memo://today") == 1
    assert stream.next() == (UPDATED, {"uri": "memo://today", "_meta": {SUBSCRIPTION_ID: stream.id}})
    server.notify(TOOLS_CHANGED, {"_meta": {"note": "kept"}})
    assert stream.next() == (TOOLS_CHANGED, {"_meta": {"note": "kept", SUBSCRIPTION_ID: stream.id}})


def test_each_stream_gets_only_what_its_filter_asks_for(server: FakeServer, wire: Callable[..., Listen]) -> None:
    tools = wire(toolsListChanged=True)
    memo = wire(resourceSubscriptions=["memo://today"])
    assert tools.next()[0] == memo.next()[0] == ACKNOWLEDGED
    server.add_tool(lambda: "x", name="new")
    assert server.resource_updated("memo://today") == 1
    assert memo.next()[0] == UPDATED  # the list_changed went to the other stream only
    assert tools.next()[0] == TOOLS_CHANGED
    assert server.notify("notifications/prompts/list_changed") == 0  # nobody asked for it


def test_a_cancelled_stream_hears_nothing_more_and_is_never_answered(
        server: FakeServer, wire: Callable[..., Listen]) -> None:
    stream = wire(resourceSubscriptions=["memo://today"])
    assert stream.next()[0] == ACKNOWLEDGED
    assert isinstance(stream.close(), RequestCancelled)
    assert server.resource_updated("memo://today") == 0
    (cancel,) = [n for n in server.notifications if n.method == "notifications/cancelled"]
    assert cancel.params["requestId"] == stream.id


def test_the_acknowledgement_leaves_out_what_explicit_capabilities_do_not_promise() -> None:
    heard = Heard()
    with FakeServer(capabilities={"tools": {}, "resources": {"listChanged": True}}) as server, \
            server.transport(timeout=10) as transport:
        transport.add_notification_listener(heard)
        stream = Listen(transport, server, {"toolsListChanged": True, "resourcesListChanged": True,
                                            "resourceSubscriptions": ["memo://today"]}, heard, 1)
        assert stream.next()[1]["notifications"] == {"resourcesListChanged": True}
        assert server.notify(TOOLS_CHANGED) == 0 and server.resource_updated("memo://today") == 0
        stream.close()


@pytest.mark.parametrize("notifications", [None, "all", {"resourceSubscriptions": "memo://today"},
                                           {"resourceSubscriptions": [1]}])
def test_a_malformed_filter_is_invalid_params(server: FakeServer, notifications: Any) -> None:
    with server.transport(timeout=10) as transport:
        with pytest.raises(MCPError) as raised:
            transport.request("subscriptions/listen", {"notifications": notifications, "_meta": meta()})
    assert raised.value.code == -32602


def test_an_unknown_log_level_in_meta_is_invalid_params(server: FakeServer) -> None:
    with server.transport(timeout=10) as transport:
        with pytest.raises(MCPError, match="unknown log level 'loud'") as raised:
            transport.request("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2},
                                             "_meta": meta(**{"io.modelcontextprotocol/logLevel": "loud"})})
    assert raised.value.code == -32602
    server.assert_tool_not_called("add")


def test_a_scripted_fault_applies_to_a_listen_request(server: FakeServer) -> None:
    server.error_at(1, -32603, "listen refused", method="subscriptions/listen")
    with connect(server, MODERN) as client:
        with pytest.raises(MCPError, match="listen refused"):
            client.subscribe("memo://today")
        assert server.resource_updated("memo://today") == 0


# -- the official SDK's client listening to a fake over stdio -------------------------------------

_SERVER_SCRIPT = """\
import sys
sys.path.insert(0, {root!r})
from mcpsync.testing import Context, FakeServer

server = FakeServer("listened")

@server.resource("memo://today")
def today() -> str:
    return "Buy milk."

@server.tool()
def change(ctx: Context) -> str:
    ctx.server.add_tool(lambda: "new", name="added")
    ctx.server.resource_updated("memo://today")
    return "changed"

server.run_stdio()
"""

_DRIVER_SCRIPT = """\
import json, sys
import anyio
from mcp import Client, StdioServerParameters

async def main() -> None:
    params = StdioServerParameters(command=sys.executable, args=[sys.argv[1]])
    out = {{}}
    async with Client(params, mode="auto", read_timeout_seconds=30) as client:
        out["protocol_version"] = client.protocol_version
        async with client.listen(tools_list_changed=True, resource_subscriptions=["memo://today"]) as sub:
            out["honored"] = sub.honored.model_dump(by_alias=True, exclude_none=True)
            await client.call_tool("change", {{}})
            events = []
            with anyio.fail_after(15):
                async for event in sub:
                    events.append(type(event).__name__ + ":" + str(getattr(event, "uri", "")))
                    if len(events) == 2:
                        break
            out["events"] = sorted(events)
    print(json.dumps(out))

anyio.run(main)
"""


def test_the_official_client_listens_to_a_fake_over_stdio(tmp_path: Path) -> None:
    pytest.importorskip("mcp")
    server_script = tmp_path / "listened_server.py"
    server_script.write_text(_SERVER_SCRIPT.format(root=str(ROOT)))
    driver = tmp_path / "listen_driver.py"
    driver.write_text(_DRIVER_SCRIPT.format())
    done = subprocess.run([sys.executable, str(driver), str(server_script)], capture_output=True, text=True,
                          timeout=60, cwd=str(tmp_path))
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["protocol_version"] == MODERN
    assert out["honored"] == {"toolsListChanged": True, "resourceSubscriptions": ["memo://today"]}
    assert out["events"] == ["ResourceUpdated:memo://today", "ToolsListChanged:"]
