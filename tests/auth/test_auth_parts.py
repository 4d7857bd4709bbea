"""The authorization pieces that need no server: challenges, URLs, PKCE, tokens, stores, errors."""

from __future__ import annotations

import json
import os
import pickle
import stat
import subprocess
import sys

import pytest

import mcpsync
from mcpsync.auth._challenge import Challenge, parse_challenges
from mcpsync.auth._pkce import challenge_s256, new_state, new_verifier
from mcpsync.auth._tokens import Token, default_token_path
from mcpsync.auth._urls import (
    authorization_server_urls, canonical_resource, check_url, covers, protected_resource_urls,
)


# -- WWW-Authenticate ---------------------------------------------------------------------------

def test_bearer_challenge_parameters_are_read():
    header = ('Bearer realm="mcp", error="insufficient_scope", scope="files:read files:write", '
              'resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp"')
    challenge = Challenge.from_header(header)
    assert challenge.error == "insufficient_scope"
    assert challenge.scopes == ("files:read", "files:write")
    assert challenge.resource_metadata == "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"


def test_the_bearer_challenge_is_found_among_others():
    header = 'Basic realm="x", Bearer error=invalid_token, resource_metadata="https://a.example/m", DPoP algs="ES256"'
    assert parse_challenges(header)[0] == ("basic", {"realm": "x"})
    challenge = Challenge.from_header(header)
    assert challenge.error == "invalid_token" and challenge.resource_metadata == "https://a.example/m"
    assert challenge.scopes is None


def test_token68_quotes_escapes_and_garbage_do_not_confuse_the_parser():
    assert parse_challenges("Basic dXNlcjpwYXNz==, Bearer scope=\"a \\\"b\\\"\"") == [
        ("basic", {}), ("bearer", {"scope": 'a "b"'})]
    assert Challenge.from_header("Bearer") == Challenge()
    assert Challenge.from_header(None) == Challenge()
    assert Challenge.from_header('Bearer ,,, =x, @@, error="e"').error == "e"


# -- URLs ---------------------------------------------------------------------------------------------

def test_canonical_resource_uri():
    assert canonical_resource("HTTPS://MCP.Example.com:443/mcp/") == "https://mcp.example.com/mcp"
    assert canonical_resource("http://127.0.0.1:8000/mcp?x=1#frag") == "http://127.0.0.1:8000/mcp"
    assert canonical_resource("https://example.com") == "https://example.com"
    assert canonical_resource("http://[::1]:80/a") == "http://[::1]/a"


def test_metadata_resource_must_be_the_server_or_its_parent():
    assert covers("https://example.com/mcp", "https://EXAMPLE.com/mcp/")
    assert covers("https://example.com", "https://example.com/mcp")
    assert covers("https://example.com/api", "https://example.com/api/mcp")
    assert not covers("https://example.com/api", "https://example.com/apix")
    assert not covers("https://example.com/other", "https://example.com/mcp")
    assert not covers("https://evil.example/mcp", "https://example.com/mcp")
    assert not covers("http://example.com/mcp", "https://example.com/mcp")


def test_protected_resource_metadata_urls_path_aware_then_root():
    assert protected_resource_urls("https://example.com/public/mcp") == [
        "https://example.com/.well-known/oauth-protected-resource/public/mcp",
        "https://example.com/.well-known/oauth-protected-resource"]
    assert protected_resource_urls("https://example.com/") == [
        "https://example.com/.well-known/oauth-protected-resource"]


def test_authorization_server_metadata_urls_in_the_spec_order():
    assert authorization_server_urls("https://auth.example.com/tenant1") == [
        "https://auth.example.com/.well-known/oauth-authorization-server/tenant1",
        "https://auth.example.com/.well-known/openid-configuration/tenant1",
        "https://auth.example.com/tenant1/.well-known/openid-configuration"]
    assert authorization_server_urls("https://auth.example.com") == [
        "https://auth.example.com/.well-known/oauth-authorization-server",
        "https://auth.example.com/.well-known/openid-configuration"]


@pytest.mark.parametrize("url", ["javascript:alert(1)", "data:text/html,x", "file:///etc/passwd",
                                 "vbscript:x", "http://auth.example.com/authorize", "https://user:pw@a.example/x",
                                 "https:///nohost", None, 42])
def test_unsafe_urls_are_refused(url):
    with pytest.raises(mcpsync.AuthError) as caught:
        check_url(url, "authorization endpoint")
    assert caught.value.error == "unsafe_url"
    assert "pw" not in str(caught.value)


def test_https_and_loopback_http_are_allowed():
    for url in ("https://a.example/x", "http://127.0.0.1:9/x", "http://localhost/x", "http://[::1]:8/x"):
        assert check_url(url, "x") == url


# -- PKCE -------------------------------------------------------------------------------------------------

def test_pkce_s256_matches_rfc7636_appendix_b():
    verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
    assert challenge_s256(verifier) == "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
    verifier = new_verifier()
    assert 43 <= len(verifier) <= 128 and new_verifier() != verifier
    assert len(new_state()) >= 32


# -- tokens and stores ------------------------------------------------------------------------------------

def test_token_repr_hides_the_secrets():
    token = Token("secret-access-token", expires_at=100.0, refresh_token="secret-refresh", scope="mcp", lifetime=50)
    assert "secret" not in repr(token) and "redacted" in repr(token)
    assert Token.from_dict(json.loads(json.dumps(token.to_dict()))) == token


def test_token_renewal_starts_near_the_end_of_its_life():
    token = Token("t", expires_at=1000.0, lifetime=3600)
    assert not token.expiring(939.0) and token.expiring(941.0) and not token.expired(999.0)
    short = Token("t", expires_at=1000.0, lifetime=30)  # a 30 s token is renewed 3 s before, not at once
    assert not short.expiring(996.0) and short.expiring(997.5)
    assert not Token("t").expiring(1e12)


def test_memory_store_copies_values():
    store = mcpsync.MemoryTokenStore()
    value = {"a": [1]}
    store.save("k", value)
    value["a"].append(2)
    assert store.load("k") == {"a": [1]}
    store.delete("k")
    store.delete("k")
    assert store.load("k") is None


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
def test_file_store_is_owner_only_and_survives_a_new_instance(tmp_path):
    path = tmp_path / "config" / "mcpsync" / "tokens.json"
    store = mcpsync.FileTokenStore(path)
    store.save("tokens https://as.example https://mcp.example/mcp", {"token": {"access_token": "x"}})
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    again = mcpsync.FileTokenStore(str(path))
    assert again.load("tokens https://as.example https://mcp.example/mcp") == {"token": {"access_token": "x"}}
    again.delete("tokens https://as.example https://mcp.example/mcp")
    assert json.loads(path.read_text()) == {}
    assert not [p for p in path.parent.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
def test_file_store_tightens_a_file_readable_by_others(tmp_path, logs):
    path = tmp_path / "tokens.json"
    path.write_text(json.dumps({"k": {"v": 1}}))
    os.chmod(path, 0o644)
    assert mcpsync.FileTokenStore(path).load("k") == {"v": 1}
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    logs.wait_for(lambda m: "readable by others" in m)


def test_file_store_survives_a_corrupt_file_and_reports_an_unwritable_one(tmp_path, logs):
    path = tmp_path / "tokens.json"
    path.write_text("{not json")
    store = mcpsync.FileTokenStore(path)
    assert store.load("k") is None
    logs.wait_for(lambda m: "Ignoring the token file" in m and "moved aside, not overwritten" in m)
    blocked = mcpsync.FileTokenStore(tmp_path / "file-not-dir" / "tokens.json")
    (tmp_path / "file-not-dir").write_text("")
    with pytest.raises(mcpsync.AuthError) as caught:
        blocked.save("k", {})
    assert caught.value.error == "token_store"


def test_default_token_path_is_in_the_user_config_dir(monkeypatch, tmp_path):
    if sys.platform.startswith("linux"):
        monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
        assert default_token_path() == tmp_path / "mcpsync" / "tokens.json"
    assert mcpsync.FileTokenStore().path == default_token_path()


# -- errors and the public surface ------------------------------------------------------------------------

def test_auth_error_is_in_the_tree_and_pickles():
    error = mcpsync.AuthError("nope", error="access_denied")
    assert isinstance(error, mcpsync.MCPSyncError)
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is mcpsync.AuthError and str(copy) == "nope" and copy.error == "access_denied"


def test_auth_classes_are_requests_auth_objects_loaded_lazily():
    code = ("import sys, mcpsync; assert 'requests' not in sys.modules; "
            "import requests.auth; assert issubclass(mcpsync.OAuth, requests.auth.AuthBase); "
            "assert issubclass(mcpsync.ClientCredentials, requests.auth.AuthBase); "
            "assert issubclass(mcpsync.FileTokenStore, mcpsync.TokenStore); print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    assert out.stdout.strip() == "ok", out.stderr


def test_options_are_checked_when_the_auth_object_is_made():
    with pytest.raises(ValueError):
        mcpsync.OAuth(client_secret="s")
    with pytest.raises(ValueError):
        mcpsync.OAuth(login="carrier-pigeon")
    with pytest.raises(ValueError):
        mcpsync.OAuth(client_metadata_url="https://app.example/")
    with pytest.raises(mcpsync.AuthError):
        mcpsync.OAuth(client_metadata_url="http://app.example/client.json")
    with pytest.raises(ValueError):
        mcpsync.ClientCredentials("id")
    with pytest.raises(ValueError):
        mcpsync.ClientCredentials("id", client_secret="s", private_key="k")
    auth = mcpsync.OAuth("https://mcp.example.com/mcp", store=mcpsync.MemoryTokenStore())
    with pytest.raises(ValueError):
        auth.login("https://other.example.com/mcp")
    assert repr(auth) == "<OAuth 'https://mcp.example.com/mcp' no token>"


def test_private_key_jwt_without_pyjwt_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "jwt", None)
    with pytest.raises(mcpsync.AuthError) as caught:
        mcpsync.ClientCredentials("svc", private_key="-----BEGIN PRIVATE KEY-----")
    assert caught.value.error == "missing_dependency"
    assert "pip install 'mcpsync[oauth-jwt]'" in str(caught.value)


def test_server_error_texts_are_shortened_and_redacted():
    from mcpsync.auth._errors import server_error

    error = server_error("Refreshing the access token at https://as.example", 400,
                         {"error": "invalid_grant", "error_description": "bad token rt_SECRET123 " + "x" * 500},
                         ["rt_SECRET123"])
    assert error.error == "invalid_grant"
    assert "rt_SECRET123" not in str(error) and "[redacted]" in str(error)
    assert str(error).startswith("Refreshing the access token at https://as.example failed: HTTP 400: invalid_grant: ")
    assert len(str(error)) < 450
    assert server_error("Registration", 500, "<html>", []).error == "server_error"


def test_expires_in_is_read_leniently():
    assert Token.from_response({"access_token": "a", "expires_in": "60"}, now=0).expires_at == 60
    for odd in (None, "soon", -5, 0, True, "inf", [1]):
        assert Token.from_response({"access_token": "a", "expires_in": odd}, now=0).expires_at is None
