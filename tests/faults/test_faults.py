"""Network faults between the client and an HTTP server, through tests/faults/proxy.py (``-m faults``).

For each fault and transport: the call ends by its deadline with the right result or the one
typed error, the tool never reaches the server twice, and the client works again once the fault
ends (the leak fixture checks no thread, socket or descriptor is left). The table of outcomes is
in docs/reliability.md.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Tuple

import pytest

import mcpsync
from mcpsync import Manager, ReconnectPolicy

from ..conftest import require_sdk, until
from ..rpc.test_delivery import Uvicorn
from .proxy import FaultProxy

sys.path.insert(0, str(Path(__file__).parent.parent / "servers"))

require_sdk()
import era_sdk_server  # noqa: E402

pytestmark = pytest.mark.faults

PATIENT = ReconnectPolicy(initial_delay=0.05, max_delay=0.2, jitter=0.0, max_attempts=1000, window=60)

#: name: (app, URL path, config type, client protocol)
TRANSPORTS: Dict[str, Tuple[Callable[[], Any], str, Any, Any]] = {
    "http-legacy": (lambda: era_sdk_server.make_app(json_response=True, legacy_only=True), "/mcp", None, "legacy"),
    "http-modern": (lambda: era_sdk_server.make_app(json_response=True), "/mcp", None, None),
    "sse": (lambda: era_sdk_server.build_server().sse_app(), "/sse", "sse", "legacy"),
}


#: fault: how the proxy is switched to it. Open connections are dropped first (a dead server's are
#: gone), except under a stall, which holds them.
FAULTS: Dict[str, Callable[[FaultProxy], Any]] = {
    "stall": lambda proxy: proxy.stall(trigger=None),  # every connection at once, open ones too
    "blackhole": lambda proxy: proxy.black_hole().drop(),
    "cut": lambda proxy: proxy.cut(20, trigger=None, body=False).drop(),  # 20 bytes of each connection's answer
    "reset": lambda proxy: proxy.reject().drop(),  # each new connection is reset at once
    "refused": lambda proxy: proxy.refuse(links="close"),
}


def calls(proxy: FaultProxy) -> int:
    """How many tools/call requests reached the server."""
    return proxy.requests(b'"tools/call"')


@pytest.fixture(params=sorted(TRANSPORTS))
def behind_proxy(request: pytest.FixtureRequest, make_proxy: Callable[[int], FaultProxy]
                 ) -> Iterator[Tuple[FaultProxy, Dict[str, Any], Dict[str, Any]]]:
    app, path, kind, protocol = TRANSPORTS[request.param]
    server = Uvicorn(app())
    try:
        proxy = make_proxy(server.port)
        config: Dict[str, Any] = {"url": proxy.url(path)}
        if kind:
            config["type"] = kind
        yield proxy, config, ({"protocol": protocol} if protocol else {})
    finally:
        server.stop()


def echo_ok(client: Any, text: str = "x") -> None:
    assert client.call_tool("echo", {"text": text}, timeout=10).text == text


def test_latency_only_slows_calls_down(behind_proxy: Tuple[FaultProxy, Dict[str, Any], Dict[str, Any]]) -> None:
    proxy, config, options = behind_proxy
    with mcpsync.connect(dict(config, name="web"), **options) as client:
        proxy.latency(0.05)
        echo_ok(client, "slow")
        proxy.heal()
        echo_ok(client)


@pytest.mark.parametrize("fault", ["stall", "blackhole"])
def test_a_server_that_goes_silent_ends_the_call_by_its_deadline(
        behind_proxy: Tuple[FaultProxy, Dict[str, Any], Dict[str, Any]], fault: str) -> None:
    proxy, config, options = behind_proxy
    with mcpsync.connect(dict(config, name="web"), **options) as client:
        echo_ok(client)
        seen = calls(proxy)
        FAULTS[fault](proxy)
        with pytest.raises((mcpsync.RequestTimeout, mcpsync.TransportClosed)) as caught:
            client.call_tool("echo", {"text": "lost"}, timeout=1.0)
        # Ended by its own deadline (or, legacy HTTP+SSE, by its dropped event stream), not by another.
        assert isinstance(caught.value, mcpsync.TransportClosed) or caught.value.timeout == 1.0
        assert calls(proxy) <= seen + 1
        proxy.heal().drop()
        # Works again; or, for legacy HTTP+SSE, closed (its event stream was dropped: a Manager reconnects it).
        until(lambda: not client.connected or _works(client), 20)


@pytest.mark.parametrize("fault", ["cut", "reset", "refused"])
def test_a_broken_connection_fails_the_call_with_the_one_family_and_the_client_recovers(
        behind_proxy: Tuple[FaultProxy, Dict[str, Any], Dict[str, Any]], fault: str) -> None:
    proxy, config, options = behind_proxy
    with mcpsync.connect(dict(config, name="web"), **options) as client:
        echo_ok(client)
        seen = calls(proxy)
        FAULTS[fault](proxy)
        with pytest.raises(mcpsync.TransportClosed) as caught:
            client.call_tool("echo", {"text": "lost"}, timeout=10)
        error = caught.value
        assert "urllib3" not in str(error) and "('" not in str(error)
        if fault == "refused" and config.get("type") != "sse":
            assert not error.may_have_reached_server and calls(proxy) == seen
        assert calls(proxy) <= seen + 1, "sent twice"
        proxy.heal()
        until(lambda: not client.connected or _works(client), 20)


@pytest.mark.parametrize("fault", ["cut", "reset", "refused", "blackhole"])
def test_a_manager_rides_out_a_fault_and_serves_again(
        behind_proxy: Tuple[FaultProxy, Dict[str, Any], Dict[str, Any]], fault: str) -> None:
    proxy, config, options = behind_proxy
    with Manager({"mcpServers": {"web": config}}, cache=False, reconnect=PATIENT, client_options=options) as manager:
        assert manager.call_tool("mcp_web_echo", {"text": "a"}).text == "a"
        seen = calls(proxy)
        FAULTS[fault](proxy)
        errors: List[BaseException] = []
        try:
            manager.call_tool("mcp_web_echo", {"text": "b"}, timeout=2)
        except (mcpsync.TransportClosed, mcpsync.RequestTimeout, mcpsync.ServerNotConnected) as exc:
            errors.append(exc)
        assert calls(proxy) <= seen + 1, "sent twice"
        proxy.heal().drop()
        until(lambda: _manager_works(manager), 30)


def _works(client: Any) -> bool:
    try:
        echo_ok(client, "again")
        return True
    except mcpsync.MCPSyncError:
        return False


def _manager_works(manager: Manager) -> bool:
    try:
        return manager.call_tool("mcp_web_echo", {"text": "back"}, timeout=5).text == "back"
    except mcpsync.MCPSyncError:
        return False
