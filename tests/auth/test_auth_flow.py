"""The authorization code flow end to end: client identity, client authentication, scopes, step-up, refresh.

Real servers (see auth_fixtures); the test "person" approves by following the
authorization URL with requests.
"""

from __future__ import annotations

import json
import logging
import os
import stat
import threading
import time

import pytest
import requests

import mcpsync
from mcpsync.auth import _tokens

from ..auth_fixtures import _auth_servers, stack  # noqa: F401  (fixtures)


def echo(client, text="hi"):
    return client.call_tool("echo", {"text": text}).text


# -- client identity ------------------------------------------------------------------------------

@pytest.mark.parametrize("supported, used", [
    (["client_secret_basic", "client_secret_post"], "client_secret_basic"),
    (["client_secret_post", "none"], "client_secret_post"),
])
def test_pre_registered_client_with_a_secret(stack, supported, used):
    stack.authorization.settings.auth_methods = supported
    stack.authorization.add_client("app", secret="s3cret-value", auth_method=used,
                                   redirect_uris=["http://127.0.0.1:47011/callback"])
    auth = stack.oauth(client_id="app", client_secret="s3cret-value",
                       redirect_uri="http://127.0.0.1:47011/callback")
    with stack.connect(auth) as client:
        assert echo(client) == "hi"
    [token] = stack.authorization.find("token")
    assert token["method"] == used
    assert stack.authorization.count("register") == 0
    assert stack.person.params()["client_id"] == "app"


def test_pre_registered_public_client(stack):
    stack.authorization.add_client("public-app", redirect_uris=["http://127.0.0.1:47012/callback"])
    auth = stack.oauth(client_id="public-app", redirect_uri="http://127.0.0.1:47012/callback")
    with stack.connect(auth) as client:
        assert echo(client) == "hi"
    assert stack.authorization.find("token")[0]["method"] == "none"


def test_client_id_metadata_document_when_the_server_supports_it(stack):
    document_url = stack.gate.origin + "/client.json"
    stack.gate.settings.client_document = {"client_id": document_url, "client_name": "mcpsync tests",
                                           "redirect_uris": ["http://127.0.0.1/callback"]}
    stack.authorization.settings.cimd = True
    with stack.connect(stack.oauth(client_metadata_url=document_url)) as client:
        assert echo(client) == "hi"
    assert stack.person.params()["client_id"] == document_url
    assert stack.authorization.count("register") == 0
    assert stack.authorization.find("token")[0]["method"] == "none"


def test_metadata_document_url_is_skipped_where_unsupported(stack):
    with stack.connect(stack.oauth(client_metadata_url=stack.gate.origin + "/client.json")) as client:
        assert echo(client) == "hi"
    [registration] = stack.authorization.find("register")
    assert registration["params"]["application_type"] == "native"
    assert registration["params"]["redirect_uris"] == [stack.person.params()["redirect_uri"]]
    assert registration["params"]["grant_types"] == ["authorization_code", "refresh_token"]


def test_dynamic_registration_is_reused_from_the_store(stack):
    store = mcpsync.MemoryTokenStore()
    with stack.connect(stack.oauth(store=store)) as client:
        echo(client)
    stack.authorization.expire_access_tokens()
    stack.authorization.revoke_refresh_tokens()
    with stack.connect(stack.oauth(store=store)) as client:
        echo(client)
    assert stack.person.logins == 2
    assert stack.authorization.count("register") == 1
    assert stack.person.params(0)["client_id"] == stack.person.params(1)["client_id"]


def test_confidential_dynamic_registration(stack):
    stack.authorization.settings.auth_methods = ["client_secret_post"]
    with stack.connect(stack.oauth()) as client:
        echo(client)
    assert stack.authorization.find("register")[0]["params"]["token_endpoint_auth_method"] == "client_secret_post"
    assert stack.authorization.find("token")[0]["method"] == "client_secret_post"


def test_no_way_to_identify_the_client_is_a_clear_error(stack):
    stack.authorization.settings.dcr = False
    with pytest.raises(mcpsync.AuthError) as caught:
        stack.connect(stack.oauth())
    assert caught.value.error == "registration_unsupported"
    assert "client_id=" in str(caught.value)


# -- scopes -------------------------------------------------------------------------------------------

def test_scopes_from_the_challenge_win(stack):
    stack.gate.settings.challenge_scope = "mcp files:read"
    with stack.connect(stack.oauth()) as client:
        echo(client)
    assert stack.person.params()["scope"] == "mcp files:read offline_access"


def test_scopes_from_the_metadata_otherwise(stack):
    stack.gate.settings.prm_scopes = ["mcp", "extra"]
    with stack.connect(stack.oauth()) as client:
        echo(client)
    assert stack.person.params()["scope"] == "mcp extra offline_access"


def test_no_scope_at_all_when_nobody_names_one(stack):
    stack.gate.settings.prm_scopes = None
    with stack.connect(stack.oauth()) as client:
        echo(client)
    assert "scope" not in stack.person.params()


def test_offline_access_only_when_the_server_offers_it(stack):
    stack.authorization.settings.scopes_supported = ["mcp", "admin"]
    with stack.connect(stack.oauth()) as client:
        echo(client)
    assert stack.person.params()["scope"] == "mcp"


def test_step_up_asks_for_the_union_of_scopes(stack):
    stack.gate.settings.tool_scopes = {"add": "admin"}
    with stack.connect(stack.oauth()) as client:
        assert echo(client) == "hi"
        assert client.call_tool("add", {"a": 1, "b": 2}).structured_content == {"result": 3}
        assert echo(client) == "hi"  # the new token still carries the first scopes
    assert stack.person.logins == 2
    assert stack.person.params(1)["scope"].split() == ["mcp", "offline_access", "admin"]
    assert [r["status"] for r in stack.gate.requests if r["status"] == 403] == [403]


def test_step_up_without_a_scope_hint_uses_the_metadata_scopes(stack):
    stack.gate.settings.tool_scopes = {"add": "admin"}
    stack.gate.settings.step_up_hint = False
    stack.gate.settings.prm_scopes = ["mcp", "admin"]
    stack.gate.settings.challenge_scope = "mcp"
    with stack.connect(stack.oauth()) as client:
        assert client.call_tool("add", {"a": 1, "b": 2}).structured_content == {"result": 3}
    assert set(stack.person.params(1)["scope"].split()) == {"mcp", "admin", "offline_access"}


def test_step_up_gives_up_after_three_authorizations_in_all(stack):
    stack.gate.settings.tool_scopes = {"add": "admin"}
    stack.authorization.settings.never_grant = {"admin"}
    with stack.connect(stack.oauth()) as client:
        with pytest.raises(mcpsync.AuthError) as caught:
            client.call_tool("add", {"a": 1, "b": 2})
        assert caught.value.error == "insufficient_scope"
        assert "after 3 authorization(s)" in str(caught.value)
        assert stack.person.logins == 3  # the first login and two step-ups: 3 in all
        assert echo(client) == "hi"  # the connection is still usable


def test_the_authorization_limit_is_configurable(stack):
    stack.gate.settings.tool_scopes = {"add": "admin"}
    stack.authorization.settings.never_grant = {"admin"}
    with stack.connect(stack.oauth(max_authorizations=1)) as client:
        with pytest.raises(mcpsync.AuthError, match="max_authorizations=1"):
            client.call_tool("add", {"a": 1, "b": 2})
    assert stack.person.logins == 1
    with pytest.warns(DeprecationWarning, match="max_authorizations"):
        legacy = stack.oauth(max_step_ups=1)
    assert legacy.max_authorizations == 2
    with pytest.raises(ValueError, match="at least 1"):
        stack.oauth(max_authorizations=0)


def test_a_403_for_scopes_already_held_does_not_authorize_again(stack, monkeypatch):
    """Hostile: a server that keeps asking for a scope the token has must not make the client log in again."""
    original = stack.gate._check

    def refuse_add(authorization, endpoint, body):
        problem = original(authorization, endpoint, body)
        if problem is None and b'"tools/call"' in body and b'"add"' in body:
            return 403, 'Bearer error="insufficient_scope", scope="mcp"'  # "mcp" is granted already
        return problem

    monkeypatch.setattr(stack.gate, "_check", refuse_add)
    with stack.connect(stack.oauth()) as client:
        with pytest.raises(mcpsync.AuthError) as caught:
            client.call_tool("add", {"a": 1, "b": 2})
        assert caught.value.error == "insufficient_scope"
        assert "already holds" in str(caught.value)
        assert echo(client) == "hi"
    assert stack.person.logins == 1


# -- refresh ---------------------------------------------------------------------------------------------

def test_a_401_is_answered_with_a_refresh(stack):
    with stack.connect(stack.oauth()) as client:
        echo(client)
        stack.authorization.expire_access_tokens()
        assert echo(client, "again") == "again"
    assert stack.person.logins == 1
    [refresh] = stack.authorization.find("token", grant_type="refresh_token")
    assert refresh["params"]["resource"] == stack.mcp_url


def test_tokens_are_refreshed_before_they_expire(stack, monkeypatch):
    with stack.connect(stack.oauth()) as client:
        echo(client)
        later = time.time() + 3590  # within the last minute of the hour the token lives
        monkeypatch.setattr(_tokens, "clock", lambda: later)
        assert echo(client, "later") == "later"
    assert stack.authorization.count("token", grant_type="refresh_token") == 1
    assert [r for r in stack.gate.requests if r["status"] == 401 and r["authorization"]] == []


def test_a_failed_refresh_falls_back_to_a_new_login(stack):
    with stack.connect(stack.oauth()) as client:
        echo(client)
        stack.authorization.expire_access_tokens()
        stack.authorization.revoke_refresh_tokens()
        assert echo(client, "again") == "again"
    assert stack.person.logins == 2
    assert stack.authorization.count("token", grant_type="refresh_token") == 1


def test_concurrent_401s_start_one_login(stack):
    with stack.connect(stack.oauth()) as client:
        echo(client)
        stack.authorization.expire_access_tokens()
        stack.authorization.revoke_refresh_tokens()
        barrier = threading.Barrier(8)
        results, errors = [], []

        def call(i):
            barrier.wait()
            try:
                results.append(echo(client, str(i)))
            except Exception as exc:  # collected for the assertion below
                errors.append(exc)

        threads = [threading.Thread(target=call, args=(i,)) for i in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
    assert errors == [] and sorted(results) == [str(i) for i in range(8)]
    assert stack.person.logins == 2


# -- storage and explicit login -------------------------------------------------------------------------

def test_a_new_process_reuses_stored_tokens_without_discovery(stack, tmp_path):
    path = tmp_path / "tokens.json"
    with stack.connect(stack.oauth(store=mcpsync.FileTokenStore(path))) as client:
        echo(client)
    stack.gate.requests.clear()
    with stack.connect(stack.oauth(store=mcpsync.FileTokenStore(path))) as client:
        echo(client)
    assert stack.person.logins == 1
    assert all(r["status"] in (None, "passed") for r in stack.gate.requests)
    assert not [r for r in stack.gate.requests if r["path"].startswith("/.well-known")]
    stored = json.loads(path.read_text())
    issuer = stack.authorization.issuer
    assert set(stored) == {f"tokens {issuer} {stack.mcp_url}", f"client {issuer}", f"server {stack.mcp_url}"}
    if os.name == "posix":
        assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_stored_tokens_of_another_client_are_not_used(stack):
    store = mcpsync.MemoryTokenStore()
    with stack.connect(stack.oauth(store=store)) as client:
        echo(client)
    stack.authorization.add_client("app", redirect_uris=["http://127.0.0.1:47013/callback"])
    auth = stack.oauth(store=store, client_id="app", redirect_uri="http://127.0.0.1:47013/callback")
    with stack.connect(auth) as client:
        echo(client)
    assert stack.person.logins == 2
    assert stack.person.params(1)["client_id"] == "app"


def test_login_before_connecting_and_logout(stack):
    auth = stack.oauth()
    auth.login(stack.mcp_url)
    assert stack.person.logins == 1
    auth.login()  # a usable token is held: nothing to do
    assert stack.person.logins == 1
    stack.gate.requests.clear()
    with stack.connect(auth) as client:
        echo(client)
    assert all(r["status"] in (None, "passed") for r in stack.gate.requests)
    auth.login(force=True)
    assert stack.person.logins == 2
    auth.logout()
    assert "no token" in repr(auth)
    with stack.connect(auth) as client:
        echo(client)
    assert stack.person.logins == 3


def test_logout_from_a_new_process_forgets_the_stored_tokens(stack):
    store = mcpsync.MemoryTokenStore()
    with stack.connect(stack.oauth(store=store)) as client:
        echo(client)
    stack.oauth(store=store, server_url=stack.mcp_url).logout()
    with stack.connect(stack.oauth(store=store)) as client:
        echo(client)
    assert stack.person.logins == 2


def test_prepare_logs_in_only_when_the_server_asks(stack):
    auth = stack.oauth()
    auth.prepare(stack.mcp_url)
    assert stack.person.logins == 1
    open_auth = stack.oauth()
    open_auth.prepare(stack.as_origin + "/anything")  # answers 404, not 401
    assert stack.person.logins == 1 and "no token" in repr(open_auth)


# -- where tokens go --------------------------------------------------------------------------------------

def test_the_token_goes_only_to_the_mcp_origin_and_only_in_the_header(stack):
    auth = stack.oauth()
    with stack.connect(auth) as client:
        echo(client)
    tokens = [s for s in stack.secrets() if s.startswith("at_")]
    assert tokens
    for record in stack.gate.requests:
        assert not any(token in record["query"] or token in record["path"] for token in tokens)
    assert any(r["authorization"] == f"Bearer {tokens[0]}" for r in stack.gate.requests)
    requests.get(stack.as_origin + "/elsewhere", auth=auth, timeout=10).close()
    [other] = stack.authorization.find("other")
    assert other["authorization"] is None
    for event in stack.authorization.events:
        assert not (event["authorization"] or "").lower().startswith("bearer")


def test_plain_requests_can_use_the_auth_object(stack):
    auth = stack.oauth(server_url=stack.mcp_url)
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "plain", "version": "0"}}}
    with requests.Session() as session:
        response = session.post(stack.mcp_url, json=body, auth=auth, timeout=10,
                                headers={"Accept": "application/json, text/event-stream"})
        assert response.status_code == 200, response.text
        assert [r.status_code for r in response.history] == [401]
        response.close()
    assert stack.person.logins == 1


def test_no_token_in_logs_errors_or_reprs(stack, logs, caplog, monkeypatch):
    caplog.set_level(logging.DEBUG)
    stack.gate.settings.tool_scopes = {"add": "admin"}
    stack.authorization.settings.echo_in_errors = True  # a careless server puts the refresh token in its error
    store = mcpsync.MemoryTokenStore()
    auth = stack.oauth(store=store)
    texts = []
    with stack.connect(auth) as client:
        echo(client)
        client.call_tool("add", {"a": 1, "b": 1})                 # step-up
        stack.authorization.expire_access_tokens()
        echo(client)                                              # refresh on 401
        later = time.time() + 3590
        monkeypatch.setattr(_tokens, "clock", lambda: later)
        echo(client)                                              # refresh before expiry
        monkeypatch.setattr(_tokens, "clock", time.time)
        stack.authorization.expire_access_tokens()
        stack.authorization.revoke_refresh_tokens()
        echo(client)                                              # failed refresh (echoed token), new login
        texts += [repr(auth), repr(store), repr(auth._grant), repr(auth._grant.client), repr(auth._grant.token)]
    stack.authorization.settings.wrong_issuer = True
    with pytest.raises(mcpsync.AuthError) as caught:
        stack.connect(stack.oauth(server_url=stack.mcp_url))
    texts.append(str(caught.value))
    auth._grant = None
    texts += [record.getMessage() for record in caplog.records] + logs.messages()
    secrets = [s for s in stack.secrets() if len(s) > 8]
    assert len(secrets) >= 8
    leaked = [(secret[:6], text[:120]) for text in texts for secret in secrets if secret in text]
    assert leaked == []
    assert any("refresh" in m.lower() and "failed" in m.lower() for m in logs.messages())
