"""SEP-2352: the MCP server moves to another authorization server; the client follows, keeping credentials apart.

The gate (the protected MCP server) is switched to a second test
authorization server while a client holds tokens from the first: its tokens
are then refused with 401 and its protected resource metadata, at the same
URL, names the new issuer.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Iterator

import pytest

import mcpsync
from mcpsync.auth._tokens import client_key, tokens_key

from ..auth_fixtures import _auth_servers, stack  # noqa: F401  (fixtures)

sys.path.insert(0, str(Path(__file__).parent.parent / "servers"))
from auth_server import AuthServerThread  # noqa: E402


@pytest.fixture
def second_server() -> Iterator[AuthServerThread]:
    server = AuthServerThread().start()
    yield server
    server.wait_idle()
    server.stop()


def test_a_changed_authorization_server_is_discovered_and_registered_with(stack, second_server, monkeypatch):
    store = mcpsync.MemoryTokenStore()
    old, new = stack.authorization, second_server.logic
    with stack.connect(stack.oauth(store=store)) as client:
        assert client.call_tool("echo", {"text": "before"}).text == "before"
        first_client = stack.person.params(0)["client_id"]
        monkeypatch.setattr(stack.gate, "authorization", new)  # same metadata URL, another issuer in it
        assert client.call_tool("echo", {"text": "after"}).text == "after"
    assert new.count("register") == 1, "the client must register anew with the new authorization server"
    assert stack.person.logins == 2
    assert stack.person.urls[-1].startswith(new.issuer)
    assert stack.person.params(-1)["client_id"] != first_client
    assert all(e["params"].get("client_id") != first_client for e in new.events)
    # Each server's client and tokens are kept under its own issuer.
    assert store.load(client_key(old.issuer)) is not None and store.load(client_key(new.issuer)) is not None
    assert store.load(tokens_key(old.issuer, stack.mcp_url)) is not None
    assert store.load(tokens_key(new.issuer, stack.mcp_url)) is not None


def test_a_401_with_an_unchanged_authorization_server_still_refreshes(stack):
    with stack.connect(stack.oauth()) as client:
        client.call_tool("echo", {"text": "hi"})
        stack.authorization.expire_access_tokens()
        assert client.call_tool("echo", {"text": "again"}).text == "again"
    assert stack.person.logins == 1
    assert stack.authorization.count("token", grant_type="refresh_token") == 1
