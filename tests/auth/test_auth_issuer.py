"""A configured secret goes only to its own authorization server (issue 13, item 4).

The hostile move: the MCP server's metadata names another authorization
server (a second test server on 127.0.0.1 that also knows the client id,
ready to collect whatever is sent), either from the start (against a pinned
``issuer=``) or after the client has used its secret with the real one (an
"authorization server migration"). The secret must never reach it: the
client refuses with ``issuer_not_allowed`` before any token request. A
client without a secret of the user's (dynamic registration) still follows a
migration (``test_auth_migration.py``).
"""

from __future__ import annotations

import base64
import sys
from pathlib import Path
from typing import Iterator

import pytest

import mcpsync
from mcpsync.auth import WorkloadIdentity

from ..auth_fixtures import _auth_servers, stack  # noqa: F401  (fixtures)

sys.path.insert(0, str(Path(__file__).parent.parent / "servers"))
from auth_server import AuthServerThread  # noqa: E402

SECRET = "pre-registered-secret-4711"
REDIRECT = "http://127.0.0.1:47021/callback"


@pytest.fixture
def hostile() -> Iterator[AuthServerThread]:
    """A second authorization server that knows the client id too (and would happily take its secret)."""
    server = AuthServerThread().start()
    server.logic.add_client("app", secret="anything", redirect_uris=[REDIRECT])
    server.logic.add_client("svc", secret="anything")
    yield server
    server.wait_idle()
    server.stop()


def secret_seen_by(server: AuthServerThread) -> bool:
    basic = "Basic " + base64.b64encode(f"app:{SECRET}".encode()).decode()
    basic_svc = "Basic " + base64.b64encode(f"svc:{SECRET}".encode()).decode()
    return any(e["authorization"] in (basic, basic_svc) or SECRET in str(e["params"]) for e in server.logic.events)


def echo(client, text="hi"):
    return client.call_tool("echo", {"text": text}).text


def test_a_pinned_issuer_refuses_another_one_before_the_secret_is_sent(stack):
    stack.authorization.add_client("app", secret=SECRET, redirect_uris=[REDIRECT])
    auth = stack.oauth(client_id="app", client_secret=SECRET, redirect_uri=REDIRECT,
                       issuer="https://login.example.com")
    with pytest.raises(mcpsync.AuthError) as caught:
        stack.connect(auth)
    error = caught.value
    assert error.error == "issuer_not_allowed"
    text = str(error)
    assert "'https://login.example.com'" in text and repr(stack.authorization.issuer) in text
    assert f"issuer={stack.authorization.issuer!r}" in text and SECRET not in text
    assert stack.authorization.count("token") == 0 and stack.person.logins == 0


def test_the_pinned_issuer_works_and_is_picked_among_several(stack, hostile):
    stack.gate.settings.authorization_servers = [hostile.logic.issuer, stack.authorization.issuer]
    stack.authorization.add_client("app", secret=SECRET, redirect_uris=[REDIRECT])
    auth = stack.oauth(client_id="app", client_secret=SECRET, redirect_uri=REDIRECT,
                       issuer=stack.authorization.issuer + "/")  # a trailing slash is forgiven
    with stack.connect(auth) as client:
        assert echo(client) == "hi"
    assert hostile.logic.events == []


def test_a_bound_secret_is_not_sent_to_the_server_a_migration_names(stack, hostile, monkeypatch):
    stack.authorization.add_client("app", secret=SECRET, redirect_uris=[REDIRECT])
    auth = stack.oauth(client_id="app", client_secret=SECRET, redirect_uri=REDIRECT)
    with stack.connect(auth) as client:
        assert echo(client) == "hi"
        monkeypatch.setattr(stack.gate, "authorization", hostile.logic)  # the metadata now names the other one
        with pytest.raises(mcpsync.AuthError) as caught:
            echo(client, "after the move")
    error = caught.value
    assert error.error == "issuer_not_allowed"
    assert "migration" in str(error) and repr(stack.authorization.issuer) in str(error)
    assert f"issuer={hostile.logic.issuer!r}" in str(error)
    assert not secret_seen_by(hostile)
    assert hostile.logic.count("token") == 0 and stack.person.logins == 1


def test_the_binding_is_remembered_by_the_next_process(stack, hostile, monkeypatch, tmp_path):
    path = tmp_path / "tokens.json"
    stack.authorization.add_client("svc", secret=SECRET)
    with stack.connect(mcpsync.ClientCredentials("svc", client_secret=SECRET,
                                                 store=mcpsync.FileTokenStore(path))) as client:
        assert echo(client) == "hi"
    monkeypatch.setattr(stack.gate, "authorization", hostile.logic)
    later = mcpsync.ClientCredentials("svc", client_secret=SECRET, store=mcpsync.FileTokenStore(path))
    with pytest.raises(mcpsync.AuthError) as caught:
        stack.connect(later)
    assert caught.value.error == "issuer_not_allowed"
    assert "first used with" in str(caught.value)
    assert not secret_seen_by(hostile) and hostile.logic.count("token") == 0
    # The user says the move is genuine: pinning the new issuer lets the secret go there.
    moved = mcpsync.ClientCredentials("svc", client_secret=SECRET, store=mcpsync.FileTokenStore(path),
                                      issuer=hostile.logic.issuer)
    with pytest.raises(mcpsync.AuthError) as caught:
        stack.connect(moved)
    assert caught.value.error == "invalid_client"  # it got there (and the other server knows another secret)


def test_client_credentials_pin(stack):
    stack.authorization.add_client("svc", secret=SECRET)
    with stack.connect(mcpsync.ClientCredentials("svc", client_secret=SECRET,
                                                 issuer=stack.authorization.issuer)) as client:
        assert echo(client) == "hi"
    with pytest.raises(mcpsync.AuthError) as caught:
        stack.connect(mcpsync.ClientCredentials("svc", client_secret=SECRET, issuer="https://as.example"))
    assert caught.value.error == "issuer_not_allowed"
    assert stack.authorization.count("token") == 1


def test_a_workload_token_is_bound_to_its_first_issuer(stack, hostile, monkeypatch, tmp_path):
    token_file = tmp_path / "token"
    token_file.write_text("workload-identity-token-value")
    store = mcpsync.MemoryTokenStore()
    with pytest.raises(mcpsync.AuthError):  # the test server has no JWT bearer grant; the first issuer is known now
        stack.connect(WorkloadIdentity(token_file, client_id="svc", store=store))
    monkeypatch.setattr(stack.gate, "authorization", hostile.logic)
    with pytest.raises(mcpsync.AuthError) as caught:
        stack.connect(WorkloadIdentity(token_file, client_id="svc", store=store))
    assert caught.value.error == "issuer_not_allowed"
    assert hostile.logic.count("token") == 0


def test_a_bad_pinned_issuer_is_a_value_error():
    with pytest.raises(ValueError):
        mcpsync.OAuth(issuer="http://login.example.com")  # plain http off loopback
    with pytest.raises(ValueError):
        mcpsync.ClientCredentials("svc", client_secret="x", issuer="javascript:alert(1)")
