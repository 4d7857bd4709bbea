"""Discovery against real servers: every protected resource and authorization server metadata variant.

The MCP servers are the official SDK's (behind the test Gate, and one with the
SDK's own auth support); the authorization server is the project's stdlib
one. The "person" follows the authorization URL with requests.
"""

from __future__ import annotations

import pytest

import mcpsync

from ..auth_fixtures import _auth_servers, stack  # noqa: F401  (fixtures)

PRM = "/.well-known/oauth-protected-resource"


def gate_paths(stack):
    return [r["path"] for r in stack.gate.requests]


def metadata_paths(stack):
    return [e["params"]["path"] for e in stack.authorization.find("metadata")]


def assert_works(stack, auth, url=""):
    with stack.connect(auth, url) as client:
        assert client.call_tool("echo", {"text": "hi"}).text == "hi"
    assert stack.person.logins == 1


# -- protected resource metadata ------------------------------------------------------------------

def test_metadata_url_from_the_challenge_is_used(stack):
    stack.gate.settings.prm = "header"  # served only where the header says
    assert_works(stack, stack.oauth())
    assert "/meta/resource.json" in gate_paths(stack)
    assert not [p for p in gate_paths(stack) if p.startswith(PRM)]


def test_path_aware_well_known_url_without_a_header(stack):
    stack.gate.settings.header_metadata = False
    assert_works(stack, stack.oauth())
    assert [p for p in gate_paths(stack) if p.startswith(PRM)] == [PRM + "/mcp"]


def test_root_well_known_url_after_the_path_aware_one(stack):
    stack.gate.settings.prm, stack.gate.settings.header_metadata = "root", False
    assert_works(stack, stack.oauth())
    assert [p for p in gate_paths(stack) if p.startswith(PRM)] == [PRM + "/mcp", PRM]


def test_metadata_for_a_parent_resource_is_accepted(stack):
    stack.gate.settings.prm, stack.gate.settings.resource = "root", stack.gate.origin
    assert_works(stack, stack.oauth())
    assert stack.person.params()["resource"] == stack.gate.origin


def test_a_mismatched_resource_is_refused(stack):
    stack.gate.settings.resource = stack.gate.origin + "/other"
    with pytest.raises(mcpsync.AuthError) as caught:
        stack.connect(stack.oauth())
    assert caught.value.error == "resource_mismatch"
    assert "/other" in str(caught.value) and "refusing" in str(caught.value)
    assert stack.person.logins == 0 and stack.authorization.count("token") == 0


def test_metadata_of_another_origin_is_refused(stack):
    stack.gate.settings.resource = "https://mcp.evil.example/mcp"
    with pytest.raises(mcpsync.AuthError, match="resource_mismatch|not for the MCP server"):
        stack.connect(stack.oauth())


# -- authorization server metadata ------------------------------------------------------------------

@pytest.mark.parametrize("kind, issuer_path, expected", [
    ("oauth", "", ["/.well-known/oauth-authorization-server"]),
    ("oidc", "", ["/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"]),
    ("oauth", "/tenant", ["/.well-known/oauth-authorization-server/tenant"]),
    ("oidc", "/tenant", ["/.well-known/oauth-authorization-server/tenant",
                         "/.well-known/openid-configuration/tenant"]),
    ("oidc-appended", "/tenant", ["/.well-known/oauth-authorization-server/tenant",
                                  "/.well-known/openid-configuration/tenant",
                                  "/tenant/.well-known/openid-configuration"]),
])
def test_authorization_server_metadata_in_the_spec_order(stack, kind, issuer_path, expected):
    stack.authorization.settings.metadata = kind
    stack.authorization.settings.issuer_path = issuer_path
    assert_works(stack, stack.oauth())
    assert metadata_paths(stack) == expected
    assert stack.person.urls[0].startswith(stack.as_origin + issuer_path + "/authorize?")


def test_a_wrong_issuer_in_the_metadata_is_refused(stack):
    stack.authorization.settings.wrong_issuer = True
    with pytest.raises(mcpsync.AuthError) as caught:
        stack.connect(stack.oauth())
    assert caught.value.error == "issuer_mismatch"
    assert "wrong-issuer.example" in str(caught.value)
    assert stack.person.logins == 0


def test_no_authorization_server_metadata_is_a_clear_error(stack):
    stack.authorization.settings.metadata = "none"
    with pytest.raises(mcpsync.AuthError) as caught:
        stack.connect(stack.oauth())
    assert caught.value.error == "discovery_failed"


# -- 2025-03-26 servers without protected resource metadata -------------------------------------------

def test_legacy_server_with_metadata_at_its_origin(stack):
    stack.gate.settings.prm, stack.gate.settings.legacy_as = "none", True
    stack.authorization.settings.origin = stack.gate.origin
    assert_works(stack, stack.oauth())
    metadata = stack.authorization.find("metadata")
    assert metadata[0]["params"]["path"] == "/.well-known/oauth-authorization-server"
    assert metadata[0]["version"] == "2025-03-26"
    assert stack.person.urls[0].startswith(stack.gate.origin + "/authorize?")
    assert stack.person.params()["resource"] == stack.mcp_url


def test_legacy_server_without_metadata_uses_the_default_endpoints(stack):
    stack.gate.settings.prm, stack.gate.settings.legacy_as = "none", True
    stack.authorization.settings.origin = stack.gate.origin
    stack.authorization.settings.metadata = "none"
    assert_works(stack, stack.oauth())
    assert stack.authorization.count("register") == 1
    assert stack.person.urls[0].startswith(stack.gate.origin + "/authorize?")
    assert stack.authorization.count("token") == 1


# -- the authorization response ----------------------------------------------------------------------

def test_a_wrong_iss_in_the_authorization_response_is_refused(stack):
    stack.authorization.settings.iss_param = "wrong"
    with pytest.raises(mcpsync.AuthError) as caught:
        stack.connect(stack.oauth())
    assert caught.value.error == "issuer_mismatch"
    assert stack.authorization.count("token") == 0


def test_a_missing_iss_is_refused_only_when_the_server_promised_one(stack):
    stack.authorization.settings.iss_param = "no"
    with pytest.raises(mcpsync.AuthError, match="no iss parameter"):
        stack.connect(stack.oauth())
    stack.authorization.settings.iss_supported = False
    assert stack.person.logins == 1
    with stack.connect(stack.oauth()) as client:
        client.ping()


@pytest.mark.parametrize("methods", [None, ["plain"]])
def test_no_s256_pkce_support_is_refused(stack, methods):
    stack.authorization.settings.pkce_methods = methods
    with pytest.raises(mcpsync.AuthError) as caught:
        stack.connect(stack.oauth())
    assert caught.value.error == "pkce_unsupported"
    assert stack.person.logins == 0


def test_the_request_carries_pkce_state_and_resource(stack):
    assert_works(stack, stack.oauth())
    params = stack.person.params()
    assert params["code_challenge_method"] == "S256" and len(params["code_challenge"]) == 43
    assert len(params["state"]) >= 32
    assert params["resource"] == stack.mcp_url
    token = stack.authorization.find("token")[0]["params"]
    assert token["resource"] == stack.mcp_url and token["code_verifier"]


# -- other servers ---------------------------------------------------------------------------------------

def test_the_sdk_own_bearer_auth(stack):
    assert_works(stack, stack.oauth(), stack.native_url)
    assert stack.person.params()["scope"] == "mcp offline_access"


def test_the_legacy_sse_transport_streams_after_login(stack):
    auth = stack.oauth()
    transport = mcpsync.SSETransport(stack.sse_url, auth=auth, timeout=15)
    with mcpsync.Client(transport) as client:
        assert client.call_tool("echo", {"text": "over sse"}).text == "over sse"
    assert stack.person.logins == 1
    assert stack.person.params()["resource"] == stack.sse_url
    posts = [r for r in stack.gate.requests if r["method"] == "POST"]
    assert posts and all(r["status"] == "passed" for r in posts)
