"""A call runs at most once, and a connection lost under it raises one family of errors.

Every case has the same shape: a slow tool is started, the server goes away with the call
in flight, and comes back. The call must end with one :class:`mcpsync.TransportClosed`
(a :class:`mcpsync.ConnectionLost`) saying the server may have received it, and the tool
must have reached a server exactly once: mcpsync sends a request again only when no byte
of it left (the delivery ledger, ``mcpsync/_rpc/delivery.py``).

Peers: the TypeScript SDK's ``server-everything`` (really killed and restarted on the same
port), the official ``mcp`` SDK's server in every HTTP flavour behind ``tests/faults/proxy.py``
(which counts the ``tools/call`` requests that reach the server, and plays the server's death:
every connection closed, connects refused), and a FakeServer over stdio killed with SIGKILL
(it counts its runs in a file).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

import pytest

import mcpsync
from mcpsync import Manager, ReconnectPolicy

from ..conftest import LogWatch, call_in_thread, require_sdk, until
from ..faults.proxy import FaultProxy
from ..npm_peers import everything_http, free_port

SERVERS = Path(__file__).parent.parent / "servers"
sys.path.insert(0, str(SERVERS))

require_sdk()
import era_sdk_server  # noqa: E402

PATIENT = ReconnectPolicy(initial_delay=0.05, max_delay=0.2, jitter=0.0, max_attempts=1000, window=60)
TS_TOOL = b'"trigger-long-running-operation"'


def calls(proxy: FaultProxy, marker: bytes = b'"tools/call"') -> int:
    """How many requests carrying ``marker`` the proxy delivered to the server (what it may have run)."""
    return proxy.requests(marker)


def assert_lost_once(outcome: Dict[str, Any]) -> mcpsync.TransportClosed:
    """The call ended with the one family, saying it may have run, with no library repr in its text."""
    assert "result" not in outcome, f"the call was answered: it ran again somewhere ({outcome['result']})"
    error = outcome["error"]
    assert isinstance(error, mcpsync.TransportClosed), repr(error)
    assert error.may_have_reached_server is True
    assert not error.unsent
    text = str(error)
    assert "urllib3" not in text and "('" not in text and "HTTPConnection" not in text, text
    assert docs_outcome(error) == "lost; may have run"
    return error


def docs_outcome(error: BaseException) -> str:
    """Run the ``except`` chain of docs/errors.md on a call that raises ``error``; what it concluded."""
    text = (Path(__file__).parent.parent.parent / "docs" / "errors.md").read_text()
    start = text.index("```python\ntry:\n    result = client.call_tool(")
    block = text[start + len("```python\n"):text.index("```", start + 3)]

    class Raising:
        def call_tool(self, *_args: Any, **_kwargs: Any) -> Any:
            raise error

    scope: Dict[str, Any] = {"mcpsync": mcpsync, "client": Raising()}
    exec(compile(block, "docs/errors.md", "exec"), scope)  # noqa: S102 - our own docs
    return str(scope["outcome"])


# -- HTTP servers behind the fault proxy ------------------------------------------------------------


class Uvicorn:
    """An ASGI app under uvicorn on 127.0.0.1 (any port), in a thread."""

    def __init__(self, app: Any) -> None:
        import uvicorn

        started = threading.Event()

        class Server(uvicorn.Server):
            async def startup(self, sockets: Any = None) -> None:
                await super().startup(sockets=sockets)
                started.set()

        config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="critical", lifespan="on",
                                timeout_graceful_shutdown=0, ws="none")
        self.server = Server(config)
        self.thread = threading.Thread(target=self.server.run, name="test-uvicorn", daemon=True)
        self.thread.start()
        if not started.wait(15):
            raise RuntimeError("uvicorn did not start")
        self.port = int(self.server.servers[0].sockets[0].getsockname()[1])

    def stop(self) -> None:
        self.server.should_exit = True
        self.server.force_exit = True
        self.thread.join(15)


def sdk(app: Callable[[], Any]) -> Callable[[], Tuple[int, Callable[[], None]]]:
    def start() -> Tuple[int, Callable[[], None]]:
        server = Uvicorn(app())
        return server.port, server.stop

    return start


def era_modern() -> Tuple[int, Callable[[], None]]:
    from http_era import EraHTTPServer

    server = EraHTTPServer("modern").start()
    return server.port, server.stop


#: name: (start a server: its port and its stop, the path of the URL, the config's type, the client's protocol)
FLAVOURS: Dict[str, Tuple[Callable[[], Tuple[int, Callable[[], None]]], str, Optional[str], Optional[str]]] = {
    "http-legacy-json": (sdk(lambda: era_sdk_server.make_app(json_response=True, legacy_only=True)), "/mcp", None,
                         "legacy"),
    "http-legacy-sse": (sdk(lambda: era_sdk_server.make_app(json_response=False, legacy_only=True)), "/mcp", None,
                        "legacy"),
    "http-modern-json": (sdk(lambda: era_sdk_server.make_app(json_response=True)), "/mcp", None, None),
    "http-modern-sse": (sdk(lambda: era_sdk_server.make_app(json_response=False)), "/mcp", None, None),
    # a modern server whose response stream has begun (one event) when the server dies
    "http-modern-sse-started": (era_modern, "/mcp", None, None),
    "sse": (sdk(lambda: era_sdk_server.build_server().sse_app()), "/sse", "sse", "legacy"),
}


@pytest.fixture
def proxied() -> Iterator[Callable[[str], Tuple[FaultProxy, Dict[str, Any]]]]:
    """``make(flavour)``: a server of that flavour behind a FaultProxy, and its server config."""
    stops: List[Callable[[], None]] = []

    def make(flavour: str) -> Tuple[FaultProxy, Dict[str, Any]]:
        start, path, kind, _protocol = FLAVOURS[flavour]
        port, stop = start()
        stops.append(stop)
        proxy = FaultProxy(port).start()
        stops.append(proxy.stop)
        config: Dict[str, Any] = {"url": proxy.url(path)}
        if kind is not None:
            config["type"] = kind
        return proxy, config

    yield make
    for stop in reversed(stops):
        stop()


def client_options(flavour: str, began: threading.Event) -> Dict[str, Any]:
    """The client's options for ``flavour``; ``began`` is set once the call's response stream has begun
    where the server streams an event first (the scripted modern server's block), at once elsewhere."""
    protocol = FLAVOURS[flavour][3]
    options: Dict[str, Any] = {"protocol": protocol} if protocol else {}
    if flavour == "http-modern-sse-started":
        options["logging_handler"] = lambda _message: began.set()  # block's one event is a log message
    else:
        began.set()
    return options


def resent_as_the_spec_requires(flavour: str, logs: LogWatch) -> None:
    """Where the stream had begun (2026-07-28), the call was sent once more (the spec's resend) and refused."""
    if flavour == "http-modern-sse-started":
        assert any("sending the request again with a new id" in text for text in logs.messages("mcpsync")), \
            logs.messages("mcpsync")[-10:]


@pytest.mark.parametrize("flavour", sorted(FLAVOURS))
def test_a_managed_http_call_whose_server_dies_is_not_sent_again(
        proxied: Callable[[str], Tuple[FaultProxy, Dict[str, Any]]], flavour: str, logs: LogWatch) -> None:
    proxy, config = proxied(flavour)
    began = threading.Event()
    with Manager({"mcpServers": {"web": config}}, cache=False, reconnect=PATIENT,
                 client_options=client_options(flavour, began)) as manager:
        assert manager.call_tool("mcp_web_echo", {"text": "before"}).text == "before"
        before = calls(proxy)
        thread, outcome = call_in_thread(lambda: manager.call_tool("mcp_web_block", {"seconds": 30}, timeout=30))
        try:
            until(lambda: calls(proxy) == before + 1)  # the request reached the server
            assert began.wait(10), "the response stream did not begin"
            proxy.refuse(links="close")  # the server dies: its connections end, connects are refused
            # It stays down until the call has ended: a call that waited for the reconnect instead
            # of failing at once would end in ServerNotConnected or its own RequestTimeout, never
            # in the lost family asserted below (an order, not a wall time).
            thread.join(60)
        finally:
            proxy.heal()  # and comes back
            thread.join(30)
        assert not thread.is_alive()
        assert_lost_once(outcome)
        assert calls(proxy) == before + 1, "the call reached the server twice"
        resent_as_the_spec_requires(flavour, logs)
        until(lambda: manager.server_status("web").state == "connected", 20)
        assert manager.call_tool("mcp_web_echo", {"text": "after"}).text == "after"


@pytest.mark.parametrize("flavour", sorted(FLAVOURS))
def test_a_client_call_whose_server_dies_raises_the_one_family(
        proxied: Callable[[str], Tuple[FaultProxy, Dict[str, Any]]], flavour: str, logs: LogWatch) -> None:
    proxy, config = proxied(flavour)
    began = threading.Event()
    with mcpsync.connect(dict(config, name="web"), **client_options(flavour, began)) as client:
        assert client.call_tool("echo", {"text": "before"}).text == "before"
        before = calls(proxy)
        thread, outcome = call_in_thread(lambda: client.call_tool("block", {"seconds": 30}, timeout=30))
        try:
            until(lambda: calls(proxy) == before + 1)
            assert began.wait(10), "the response stream did not begin"
            proxy.refuse(links="close")
        finally:
            thread.join(30)
        assert_lost_once(outcome)
        assert calls(proxy) == before + 1
        resent_as_the_spec_requires(flavour, logs)


# -- the TypeScript SDK's server-everything, really killed and restarted ----------------------------


def test_server_everything_killed_mid_call_through_a_manager_runs_the_tool_once() -> None:
    """The case found: a 4 s tool, the server killed 1 s in and restarted on the same port. The manager
    used to send the call again to the new process (a failed resume was taken for "never sent")."""
    port = free_port()
    proxy = FaultProxy(port).start()
    try:
        outcome: Dict[str, Any] = {}
        thread: Optional[threading.Thread] = None
        progressed = threading.Event()
        with everything_http(port=port):
            manager = Manager({"mcpServers": {"ev": {"url": proxy.url()}}}, cache=False, reconnect=PATIENT)
            try:
                manager.connect_all(60)
                [tool] = [t for t in manager.tools() if t.name == "trigger-long-running-operation"]
                thread, outcome = call_in_thread(lambda: manager.call_tool(
                    tool.qualified_name, {"duration": 4, "steps": 4}, timeout=30,
                    on_progress=lambda *_args: progressed.set()))
                assert progressed.wait(20), "no progress from the tool"  # 1 s in: it runs, its stream has ids
                # while it is down, connects are refused, as to a dead port; the open ones end with the server
                proxy.refuse(links="keep")
            except BaseException:
                manager.close()
                raise
        try:  # killed (the context's end)
            until(lambda: "error" in outcome or manager.server_status("ev").state == "reconnecting", 20)
            proxy.heal()
            with everything_http(port=port):  # restarted on the same port
                assert thread is not None
                thread.join(30)
                error = assert_lost_once(outcome)
                assert calls(proxy, TS_TOOL) == 1, "the tool call reached a server twice"
                assert "may have run" in str(error) or isinstance(error, mcpsync.ConnectionLost)
                until(lambda: manager.server_status("ev").state == "connected", 30)
                assert manager.call_tool(tool.qualified_name, {"duration": 0, "steps": 1}, timeout=30)
        finally:
            manager.close()
    finally:
        proxy.stop()


# -- stdio: a FakeServer killed with SIGKILL -------------------------------------------------------


def test_a_managed_stdio_call_whose_server_is_killed_is_not_sent_again(tmp_path: Path) -> None:
    count = tmp_path / "runs"
    config = {"command": sys.executable, "args": [str(SERVERS / "counting_stdio.py"), str(count)]}
    with Manager({"mcpServers": {"local": config}}, cache=False, reconnect=PATIENT) as manager:
        assert manager.call_tool("mcp_local_echo", {"text": "up"}).text == "up"
        pid = manager.client("local").transport.pid
        assert pid is not None
        thread, outcome = call_in_thread(lambda: manager.call_tool("mcp_local_slow", {"seconds": 30}, timeout=30))
        try:
            until(lambda: count.exists() and count.read_text().count("slow") == 1)
            os.kill(pid, signal.SIGKILL)
        finally:
            thread.join(30)
        error = assert_lost_once(outcome)
        assert error.returncode == -signal.SIGKILL
        until(lambda: manager.server_status("local").state == "connected", 20)
        assert manager.call_tool("mcp_local_echo", {"text": "back"}).text == "back"
        assert count.read_text().count("slow") == 1, "the tool ran twice"



def test_server_everything_killed_mid_call_fails_a_plain_client_call_as_may_have_run() -> None:
    """Its stream has event ids, so the client tries to resume it; the refused resume is not "never sent"
    (it used to raise a bare ConnectError, which a manager takes for a request that never left)."""
    port = free_port()
    progressed = threading.Event()
    proxy = FaultProxy(port).start()
    try:
        with everything_http(port=port):
            client = mcpsync.connect({"name": "ev", "url": proxy.url()})
            thread, outcome = call_in_thread(lambda: client.call_tool(
                "trigger-long-running-operation", {"duration": 4, "steps": 4}, timeout=30,
                on_progress=lambda *_args: progressed.set()))
            try:
                assert progressed.wait(20), "no progress from the tool"
                proxy.refuse(links="keep")
            except BaseException:
                client.close()
                raise
        with client:  # killed: the stream breaks, and its resume is refused
            thread.join(30)
            error = assert_lost_once(outcome)
            assert isinstance(error, mcpsync.ConnectionLost)
            assert calls(proxy, TS_TOOL) == 1
    finally:
        proxy.stop()


def test_a_client_call_whose_stdio_server_is_killed_raises_the_one_family(tmp_path: Path) -> None:
    count = tmp_path / "runs"
    with mcpsync.connect([sys.executable, str(SERVERS / "counting_stdio.py"), str(count)]) as client:
        pid = client.transport.pid
        assert pid is not None
        thread, outcome = call_in_thread(lambda: client.call_tool("slow", {"seconds": 30}, timeout=30))
        try:
            until(lambda: count.exists() and count.read_text().count("slow") == 1)
            os.kill(pid, signal.SIGKILL)
        finally:
            thread.join(30)
        error = assert_lost_once(outcome)
        assert isinstance(error, mcpsync.ConnectionLost) and error.returncode == -signal.SIGKILL


# -- the reconnect budget is per outage --------------------------------------------------------------


def test_a_reconnect_that_stays_up_gives_the_next_outage_its_whole_budget(tmp_path: Path) -> None:
    """Outage 1: three failed attempts, then one that works. Outage 2 gets four attempts again (it used to
    be given up after one: the first outage's attempts, the successful one among them, still counted)."""
    down, starts = tmp_path / "down", tmp_path / "starts"
    config = {"command": sys.executable, "args": [str(SERVERS / "outage_stdio.py"), str(tmp_path)]}
    policy = ReconnectPolicy(initial_delay=0.01, max_delay=0.02, jitter=0.0, max_attempts=4, window=60,
                             stable_after=0.0)

    def started() -> int:
        return starts.read_text().count("start") if starts.exists() else 0

    def outage(failures: int) -> None:
        before = started()
        down.touch()
        pid = manager.client("srv").transport.pid
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        until(lambda: started() >= before + failures, 20)  # that many attempts found it down
        down.unlink()
        until(lambda: manager.server_status("srv").state in ("connected", "failed"), 20)

    with Manager({"mcpServers": {"srv": config}}, cache=False, reconnect=policy) as manager:
        outage(3)
        status = manager.server_status("srv")
        assert status.state == "connected", status.last_error
        assert manager.call_tool("mcp_srv_echo", {"text": "one"}).text == "one"
        outage(3)  # the old count was 4 (3 failures and the success): the first failure gave up
        status = manager.server_status("srv")
        assert status.state == "connected", status.last_error
        assert manager.call_tool("mcp_srv_echo", {"text": "two"}).text == "two"


def test_a_server_that_crashes_right_after_each_reconnect_is_still_given_up(tmp_path: Path) -> None:
    """With the default ``stable_after``, a connection that drops at once does not end the outage."""
    config = {"command": sys.executable, "args": [str(SERVERS / "slow_start.py"), "--exit-after-list"]}
    policy = ReconnectPolicy(initial_delay=0.01, max_delay=0.02, jitter=0.0, max_attempts=3, window=60)
    with Manager({"mcpServers": {"flaky": config}}, cache=False, reconnect=policy) as manager:
        assert manager.wait_until(lambda status: status["flaky"].state == "failed", 30)
        with pytest.raises(mcpsync.ServerNotConnected, match="gave up reconnecting after 3 attempts"):
            manager.call_tool("mcp_flaky_echo")
