"""Fixtures for the authorization tests: the test authorization server, protected SDK servers, a test "person".

Per test module (started before any test's leak snapshot, stopped after the
module): the stdlib authorization server (``tests/servers/auth_server.py``)
on its own origin, the SDK server behind the configurable ``Gate``, and an
SDK server using the SDK's own auth support, each on 127.0.0.1 ephemeral
ports. The function-scoped ``stack`` fixture resets every setting and record
before the test, and after it waits until the servers hold no connection
the test opened.
"""

from __future__ import annotations

import socket
import sys
import threading
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List
from urllib.parse import parse_qsl, urlsplit

import pytest
import requests

sys.path.insert(0, str(Path(__file__).parent / "servers"))

import mcpsync  # noqa: E402
from auth_server import AuthorizationServer, AuthServerThread  # noqa: E402
from .conftest import require_sdk  # noqa: E402

require_sdk()
from protected_sdk_server import Gate, make_native_app  # noqa: E402

from .http_fixtures import UvicornThread  # noqa: E402


class BoundUvicorn(UvicornThread):
    """A UvicornThread whose port is known before the app is built (the app may need its own URL)."""

    def __init__(self, build: Callable[[str], Any], name: str) -> None:
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.bind(("127.0.0.1", 0))
        self.origin = f"http://127.0.0.1:{self._sock.getsockname()[1]}"
        super().__init__(build(self.origin), name=name)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self._sock]},
                                       name=f"test-{name}", daemon=True)


class Person:
    """The test's person: follows the authorization URL (the test server approves at once), returns the redirect."""

    def __init__(self) -> None:
        self.urls: List[str] = []
        self._lock = threading.Lock()

    def __call__(self, url: str) -> str:
        with self._lock:
            self.urls.append(url)
        response = requests.get(url, allow_redirects=False, timeout=10)
        response.close()
        assert response.status_code == 302, (response.status_code, response.text)
        return response.headers["Location"]

    @property
    def logins(self) -> int:
        with self._lock:
            return len(self.urls)

    def params(self, index: int = -1) -> Dict[str, str]:
        """The query parameters of one authorization URL the client built."""
        with self._lock:
            return dict(parse_qsl(urlsplit(self.urls[index]).query))


class Stack:
    """What one auth test works with."""

    def __init__(self, authorization: AuthorizationServer, as_origin: str, gate: Gate, native_origin: str) -> None:
        self.authorization = authorization
        self.as_origin = as_origin
        self.gate = gate
        self.mcp_url = gate.origin + "/mcp"
        self.sse_url = gate.origin + "/sse"
        self.native_url = native_origin + "/mcp"
        self.person = Person()

    def oauth(self, **options: Any) -> "mcpsync.OAuth":
        """An OAuth with a memory store and the test person, unless the test says otherwise."""
        options.setdefault("store", mcpsync.MemoryTokenStore())
        options.setdefault("login", self.person)
        return mcpsync.OAuth(**options)

    def connect(self, auth: Any, url: str = "", **options: Any) -> "mcpsync.Client":
        options.setdefault("timeout", 15)
        return mcpsync.connect(url or self.mcp_url, auth=auth, **options)

    def secrets(self) -> List[str]:
        """Every token, code and client secret the authorization server handed out."""
        return list(self.authorization.issued_secrets)


@pytest.fixture(scope="module")
def _auth_servers() -> Iterator[Dict[str, Any]]:
    authorization = AuthorizationServer()
    as_thread = AuthServerThread(authorization).start()
    gate = Gate(authorization)
    gate_server = BoundUvicorn(lambda origin: gate, "auth-gate").start()
    gate.origin = gate_server.origin
    native = BoundUvicorn(lambda origin: make_native_app(authorization, origin), "auth-native").start()
    yield {"authorization": authorization, "as": as_thread, "gate": gate, "gate_server": gate_server,
           "native": native}
    native.stop()
    gate_server.stop()
    as_thread.stop()


@pytest.fixture
def stack(_auth_servers: Dict[str, Any]) -> Iterator[Stack]:
    servers = _auth_servers
    servers["authorization"].reset()
    servers["gate"].reset()
    yield Stack(servers["authorization"], servers["as"].origin, servers["gate"], servers["native"].origin)
    servers["gate_server"].wait_idle()
    servers["native"].wait_idle()
    servers["as"].wait_idle()
