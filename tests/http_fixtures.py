"""Fixtures for the HTTP tests: real servers on 127.0.0.1 ephemeral ports, started and stopped cleanly.

* :class:`UvicornThread` serves an ASGI app (the official SDK's apps) with
  uvicorn in a background thread; the bound port is read from its sockets.
* The stdlib misbehaving server (``tests/servers/http_misbehaving.py``) runs
  per test.

Module-scoped uvicorn servers start before a test's leak snapshot (pytest sets
up wider-scoped fixtures first), and the per-test fixture waits, on teardown,
until the server has closed every connection the test opened, so the
``no_leaks`` check sees neither the server's threads nor its sockets.
"""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path
from typing import Any, Iterator, Optional

import pytest

from .conftest import require_sdk

sys.path.insert(0, str(Path(__file__).parent / "servers"))



def _sdk(module: str) -> Any:
    """A test server module built on the official SDK, imported in this process (its ASGI app
    runs here under uvicorn); where the SDK cannot be installed (Python 3.9, a free-threaded
    build) the test using it is skipped with that reason."""
    require_sdk()
    return __import__(module)


class UvicornThread:
    """One ASGI app served by uvicorn on 127.0.0.1:<ephemeral> in a daemon thread."""

    def __init__(self, app: Any, name: str = "uvicorn") -> None:
        import uvicorn

        started = threading.Event()

        class Server(uvicorn.Server):
            async def startup(self, sockets: Any = None) -> None:
                await super().startup(sockets=sockets)
                started.set()

        config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="on",
                                timeout_graceful_shutdown=1, ws="none")
        self.server = Server(config)
        self._started = started
        self.thread = threading.Thread(target=self.server.run, name=f"test-{name}", daemon=True)
        self.port = 0

    def start(self) -> "UvicornThread":
        self.thread.start()
        if not self._started.wait(15):
            raise RuntimeError("uvicorn did not start")
        self.port = self.server.servers[0].sockets[0].getsockname()[1]
        return self

    def url(self, path: str = "") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def connections(self) -> int:
        return len(self.server.server_state.connections)

    def wait_idle(self, timeout: float = 10.0) -> None:
        """Block until the server holds no connection (our client closed them all)."""
        deadline = time.monotonic() + timeout
        pause = threading.Event()
        while self.connections() and time.monotonic() < deadline:
            pause.wait(0.01)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(15)


class SDKServer:
    """The official-SDK test server in one mode, as a test sees it."""

    def __init__(self, mode: str, served: UvicornThread) -> None:
        self.mode = mode
        self.served = served
        self.url = served.url(_sdk("http_sdk_server").url_path(mode))

    @property
    def legacy(self) -> bool:
        return self.mode == "legacy-sse"


_servers: dict = {}


def sdk_server_for(mode: str) -> SDKServer:
    if mode not in _servers:
        _servers[mode] = UvicornThread(_sdk("http_sdk_server").make_app(mode), name=mode).start()
    return SDKServer(mode, _servers[mode])


def stop_sdk_servers() -> None:
    for served in _servers.values():
        served.stop()
    _servers.clear()


@pytest.fixture(scope="session")
def _sdk_servers() -> Iterator[Any]:
    """Every mode's server, started (and warmed up) before any test's leak snapshot."""
    for mode in _sdk("http_sdk_server").MODES:
        sdk_server_for(mode)
    yield sdk_server_for
    stop_sdk_servers()


def make_sdk_fixture(*modes: str) -> Any:
    """A function-scoped, mode-parametrised fixture: the SDK server, waited idle after the test."""

    @pytest.fixture(params=modes)
    def fixture(request: pytest.FixtureRequest, _sdk_servers: Any) -> Iterator[SDKServer]:
        server = _sdk_servers(request.param)
        yield server
        server.served.wait_idle()

    return fixture


#: The both-eras SDK server (tests/servers/era_sdk_server.py): dual-era with JSON or SSE answers,
#: and a legacy-only one (SSE, stateful, so it can send its own requests).
ERA_MODES = {"dual-json": {"json_response": True}, "dual-sse": {}, "legacy-sse": {"legacy_only": True}}
_era_servers: dict = {}


@pytest.fixture(scope="session")
def _era_sdk_servers() -> Iterator[Any]:
    """Every era server mode, started before any test's leak snapshot."""
    for mode, options in ERA_MODES.items():
        _era_servers[mode] = UvicornThread(_sdk("era_sdk_server").make_app(**options), name=f"era-{mode}").start()
    yield _era_servers
    for served in _era_servers.values():
        served.stop()
    _era_servers.clear()


def make_era_fixture(*modes: str) -> Any:
    """A function-scoped fixture over ``modes``: the served era server, waited idle after the test."""

    @pytest.fixture(params=modes)
    def fixture(request: pytest.FixtureRequest, _era_sdk_servers: Any) -> Iterator[UvicornThread]:
        served = _era_sdk_servers[request.param]
        served.mode = request.param
        yield served
        served.wait_idle()

    return fixture


def misbehaving(**options: Any) -> Any:
    from http_misbehaving import MisbehavingServer

    return MisbehavingServer(**options)


def find_thread(prefix: str) -> Optional[threading.Thread]:
    for thread in threading.enumerate():
        if thread.name.startswith(prefix):
            return thread
    return None


@pytest.fixture
def mis() -> Iterator[Any]:
    """A factory of misbehaving stdlib HTTP servers, all stopped after the test."""
    from http_misbehaving import MisbehavingServer

    servers: list = []

    def make(**options: Any) -> Any:
        server = MisbehavingServer(**options).start()
        servers.append(server)
        return server

    yield make
    for server in servers:
        server.stop()
