"""A restarted HTTP server is recovered: a lost session is started anew, a down server is reconnected.

Real peers: the official ``mcp`` SDK's Streamable HTTP server under uvicorn (stopped, then
started again on the same port, as a restart does), and ``tests/servers/ts_session_http.py``,
which answers an unknown session with 400 "No valid session ID provided" as TypeScript-SDK
servers do (others answer 404).
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List

import pytest

import mcpsync
from mcpsync import Manager, ReconnectPolicy
from mcpsync.transports import StreamableHTTPTransport

from ..conftest import call_in_thread, require_sdk, until

sys.path.insert(0, str(Path(__file__).parent.parent / "servers"))

require_sdk()
import era_sdk_server  # noqa: E402
import ts_session_http  # noqa: E402
from ts_session_http import SessionServer  # noqa: E402

#: Quick and patient: a restart in a test takes well under the burst limit.
PATIENT = ReconnectPolicy(initial_delay=0.05, max_delay=0.2, jitter=0.0, max_attempts=1000, window=60)


class Uvicorn:
    """The SDK's legacy-era server under uvicorn on 127.0.0.1:``port`` (0: any), in a thread."""

    def __init__(self, port: int = 0) -> None:
        import uvicorn

        started = threading.Event()

        class Server(uvicorn.Server):
            async def startup(self, sockets: Any = None) -> None:
                await super().startup(sockets=sockets)
                started.set()

        config = uvicorn.Config(era_sdk_server.make_app(json_response=True, legacy_only=True), host="127.0.0.1",
                                port=port, log_level="critical", lifespan="on", timeout_graceful_shutdown=0, ws="none")
        self.server = Server(config)
        self.thread = threading.Thread(target=self.server.run, name="test-uvicorn-restart", daemon=True)
        self.thread.start()
        if not started.wait(15):
            raise RuntimeError("uvicorn did not start")
        self.port = self.server.servers[0].sockets[0].getsockname()[1]

    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def stop(self) -> None:
        self.server.should_exit = True
        self.server.force_exit = True
        self.thread.join(15)


@pytest.fixture
def restartable() -> Iterator[Callable[..., Any]]:
    """``start(kind, port=0)``: a server of ``kind`` ("sdk" or "ts"); every one is stopped after the test."""
    running: List[Any] = []

    def start(kind: str, port: int = 0) -> Any:
        server = Uvicorn(port) if kind == "sdk" else SessionServer(port).start()
        running.append(server)
        return server

    yield start
    for server in running:
        server.stop()


def state_is(name: str, state: str) -> Callable[[Dict[str, Any]], bool]:
    return lambda status: status[name].state == state


# -- a plain Client -------------------------------------------------------------------------------


def test_a_client_starts_a_new_session_when_a_restarted_server_answers_400_for_the_old_one(
        restartable: Callable[..., Any]) -> None:
    first = restartable("ts")
    with mcpsync.Client(StreamableHTTPTransport(first.url())) as client:
        assert client.call_tool("echo", {"text": "before"}).text == "before"
        first.stop()
        # While it is down the call fails at once: nothing was sent, and the error says why.
        with pytest.raises(mcpsync.ConnectError, match="nothing is listening"):
            client.call_tool("echo", {"text": "down"})
        second = restartable("ts", first.port)
        assert client.call_tool("echo", {"text": "after"}).text == "after"
        # The stale session got 400; a new session was started and the call sent again, once.
        assert second.methods() == ["tools/call", "initialize", "notifications/initialized", "tools/call"]
        assert second.seen[0][2] == 400 and second.seen[0][1] is not None  # the old session id, refused


def test_a_400_that_does_not_name_the_session_is_an_ordinary_error(restartable: Callable[..., Any]) -> None:
    server = restartable("ts")
    with mcpsync.Client(StreamableHTTPTransport(server.url())) as client:
        with pytest.raises(mcpsync.HTTPStatusError) as caught:
            client.call_tool("bad")
        assert not isinstance(caught.value, mcpsync.SessionExpired)
        assert server.methods().count("initialize") == 1  # no new session for it


def test_a_client_recovers_from_an_sdk_server_restart(restartable: Callable[..., Any]) -> None:
    first = restartable("sdk")
    with mcpsync.Client(StreamableHTTPTransport(first.url()), protocol="legacy") as client:
        assert client.call_tool("echo", {"text": "before"}).text == "before"
        first.stop()
        restartable("sdk", first.port)
        assert client.call_tool("echo", {"text": "after"}).text == "after"


def other_tools(monkeypatch: pytest.MonkeyPatch) -> None:
    """The next SessionServer started (the "restarted" one) lists echo, tick and fresh: no more bad."""
    names = ("echo", "tick", "fresh")
    tools = [{"name": name, "description": name, "inputSchema": {"type": "object"}} for name in names]
    monkeypatch.setattr(ts_session_http, "TOOLS", tools)


def test_a_renewed_session_drops_the_cached_lists_and_tells_the_callbacks(
        restartable: Callable[..., Any], monkeypatch: pytest.MonkeyPatch) -> None:
    first = restartable("ts")
    renewed: List[str] = []
    with mcpsync.Client(StreamableHTTPTransport(first.url())) as client:
        remove = client.on_session_renewed(lambda: renewed.append(threading.current_thread().name))
        client.on_session_renewed(lambda: 1 / 0)  # one that raises is logged; the renewal goes on
        with pytest.raises(TypeError, match=r"called as callback\(\)"):
            client.on_session_renewed(lambda params: None)  # refused where it is given, not when called
        assert [tool.name for tool in client.list_tools()] == ["echo", "bad", "tick"]
        first.stop()
        other_tools(monkeypatch)
        second = restartable("ts", first.port)
        assert client.call_tool("echo", {"text": "after"}).text == "after"
        assert renewed == [threading.current_thread().name]  # told on the thread that renewed it
        assert [tool.name for tool in client.list_tools()] == ["echo", "tick", "fresh"]  # not the old session's
        remove()
        second.stop()
        restartable("ts", first.port)
        assert client.call_tool("echo", {"text": "again"}).text == "again"
        assert len(renewed) == 1  # removed: not told of the second renewal


# -- a Manager ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["sdk", "ts"])
def test_a_managed_server_that_goes_down_is_reconnecting_and_a_call_waits_for_its_restart(
        restartable: Callable[..., Any], kind: str) -> None:
    first = restartable(kind)
    config = {"mcpServers": {"web": {"url": first.url()}}}
    with Manager(config, cache=False, reconnect=PATIENT, client_options={"protocol": "legacy"}) as manager:
        assert manager.call_tool("mcp_web_echo", {"text": "before"}).text == "before"
        first.stop()
        # The call finds the server gone before anything was sent: it waits for the reconnect.
        thread, outcome = call_in_thread(lambda: manager.call_tool("mcp_web_echo", {"text": "after"}, timeout=60))
        try:
            assert manager.wait_until(state_is("web", "reconnecting"), 30)
            assert "nothing is listening" in (manager.server_status("web").last_error or "")
            assert "result" not in outcome
            restartable(kind, first.port)
        finally:
            thread.join(60)
        assert "error" not in outcome, outcome.get("error")
        assert outcome["result"].text == "after"
        status = manager.server_status("web")
        assert status.state == "connected" and status.reconnects >= 1


def test_a_managed_server_restarted_between_calls_gets_a_new_session(restartable: Callable[..., Any]) -> None:
    first = restartable("ts")
    config = {"mcpServers": {"web": {"url": first.url()}}}
    with Manager(config, cache=False, reconnect=PATIENT) as manager:
        assert manager.call_tool("mcp_web_tick").text == "1"
        first.stop()
        second = restartable("ts", first.port)
        assert manager.call_tool("mcp_web_tick").text == "1"  # the new server ran it, once
        assert second.calls == {"tick": 1}
        assert manager.server_status("web").state == "connected"


def test_a_managed_server_that_stays_down_fails_by_the_reconnect_policy(restartable: Callable[..., Any]) -> None:
    server = restartable("ts")
    policy = ReconnectPolicy(initial_delay=0.01, max_delay=0.02, jitter=0.0, max_attempts=2, window=60)
    with Manager({"mcpServers": {"web": {"url": server.url()}}}, cache=False, reconnect=policy) as manager:
        assert manager.call_tool("mcp_web_echo", {"text": "x"}).text == "x"
        server.stop()
        with pytest.raises(mcpsync.ServerNotConnected, match="gave up reconnecting after 2 attempts"):
            manager.call_tool("mcp_web_echo", {"text": "y"}, timeout=30)
        assert manager.server_status("web").state == "failed"
        with pytest.raises(mcpsync.ServerNotConnected, match="gave up reconnecting"):
            manager.call_tool("mcp_web_echo", {"text": "z"})


def test_a_call_the_server_may_have_seen_is_not_sent_twice(restartable: Callable[..., Any]) -> None:
    server = restartable("ts")
    with Manager({"mcpServers": {"web": {"url": server.url()}}}, cache=False, reconnect=PATIENT) as manager:
        assert manager.call_tool("mcp_web_tick").text == "1"
        with pytest.raises(mcpsync.HTTPStatusError):
            manager.call_tool("mcp_web_bad")  # answered (400): an error, never a reason to resend
        assert server.methods().count("initialize") == 1
        until(lambda: manager.server_status("web").state == "connected")


def test_a_managed_server_whose_listener_stream_finds_it_gone_is_reconnecting_without_a_call(
        restartable: Callable[..., Any]) -> None:
    first = restartable("sdk")
    config = {"mcpServers": {"web": {"url": first.url()}}}
    with Manager(config, cache=False, reconnect=PATIENT, client_options={"protocol": "legacy"}) as manager:
        manager.wait(30)
        until(lambda: manager.client("web").transport.listening)  # the GET stream for list_changed
        first.stop()
        assert manager.wait_until(state_is("web", "reconnecting"), 30)
        restartable("sdk", first.port)
        assert manager.wait_until(state_is("web", "connected"), 30)
        assert manager.call_tool("mcp_web_echo", {"text": "back"}).text == "back"
        assert manager.server_status("web").reconnects >= 1


def test_a_managed_server_restarted_with_other_tools_shows_them_after_the_next_call(
        restartable: Callable[..., Any], monkeypatch: pytest.MonkeyPatch) -> None:
    first = restartable("ts")
    config = {"mcpServers": {"web": {"url": first.url()}}}

    def names() -> List[str]:
        return sorted(tool.qualified_name for tool in manager.tools())

    with Manager(config, cache=False, reconnect=PATIENT) as manager:
        assert names() == ["mcp_web_bad", "mcp_web_echo", "mcp_web_tick"]
        first.stop()
        other_tools(monkeypatch)
        second = restartable("ts", first.port)
        assert manager.call_tool("mcp_web_echo", {"text": "after"}).text == "after"  # a new session, in place
        until(lambda: names() == ["mcp_web_echo", "mcp_web_fresh", "mcp_web_tick"])
        assert manager.tool("mcp_web_fresh").name == "fresh"
        assert second.methods().count("tools/list") == 1
        status = manager.server_status("web")
        assert (status.state, status.reconnects, status.tools) == ("connected", 0, 3)  # no reconnect was needed
