"""Headless jobs: the client credentials grant with a client secret or a private_key_jwt assertion."""

from __future__ import annotations

import time

import pytest

import mcpsync
from mcpsync.auth import _tokens

from ..auth_fixtures import _auth_servers, stack  # noqa: F401  (fixtures)


def key_pair(kind):
    from cryptography.hazmat.primitives.asymmetric import ec, rsa
    from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat

    if kind == "RS256":
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    else:
        key = ec.generate_private_key(ec.SECP256R1())
    pem = key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()).decode()
    return pem, key.public_key()


def grants(stack):
    return stack.authorization.find("token", grant_type="client_credentials")


@pytest.mark.parametrize("supported, used", [
    (["client_secret_basic", "client_secret_post"], "client_secret_basic"),
    (["client_secret_post"], "client_secret_post"),
])
def test_client_secret(stack, supported, used):
    stack.authorization.settings.auth_methods = supported
    stack.authorization.add_client("svc", secret="svc-secret-1", auth_method=used)
    auth = mcpsync.ClientCredentials("svc", client_secret="svc-secret-1", scopes=["mcp", "reports"])
    with stack.connect(auth) as client:
        assert client.call_tool("echo", {"text": "job"}).text == "job"
    [grant] = grants(stack)
    assert grant["method"] == used
    assert grant["params"]["resource"] == stack.mcp_url
    assert grant["params"]["scope"] == "mcp reports"
    assert "svc-secret-1" not in repr(auth)
    assert stack.person.logins == 0


@pytest.mark.parametrize("algorithm", ["RS256", "ES256"])
def test_private_key_jwt(stack, algorithm):
    pem, public = key_pair(algorithm)
    stack.authorization.add_client("signer", public_key=public)
    auth = mcpsync.ClientCredentials("signer", private_key=pem, key_id="k1", algorithm=algorithm)
    with stack.connect(auth) as client:
        client.ping()
    [grant] = grants(stack)
    assert grant["method"] == "private_key_jwt"
    assert grant["params"]["client_assertion_type"] == "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
    import jwt

    header = jwt.get_unverified_header(grant["params"]["client_assertion"])
    claims = jwt.decode(grant["params"]["client_assertion"], public, algorithms=[algorithm],
                        audience=stack.authorization.issuer)
    assert header["kid"] == "k1" and claims["iss"] == claims["sub"] == "signer"


def test_private_key_jwt_where_the_server_does_not_take_it(stack):
    pem, public = key_pair("ES256")
    stack.authorization.settings.auth_methods = ["client_secret_basic"]
    stack.authorization.add_client("signer", public_key=public)
    with pytest.raises(mcpsync.AuthError) as caught:
        stack.connect(mcpsync.ClientCredentials("signer", private_key=pem, algorithm="ES256"))
    assert caught.value.error == "unsupported_auth_method"


def test_a_key_that_cannot_sign(stack):
    stack.authorization.add_client("signer", public_key=None)
    with pytest.raises(mcpsync.AuthError) as caught:
        stack.connect(mcpsync.ClientCredentials("signer", private_key="not a key"))
    assert caught.value.error == "invalid_key" and "not a key" not in str(caught.value)


def test_a_wrong_secret_is_refused(stack):
    stack.authorization.add_client("svc", secret="right-secret")
    with pytest.raises(mcpsync.AuthError) as caught:
        stack.connect(mcpsync.ClientCredentials("svc", client_secret="wrong-secret"))
    assert caught.value.error == "invalid_client"
    assert "wrong-secret" not in str(caught.value)


def test_a_new_token_before_expiry_and_after_a_401(stack, monkeypatch):
    stack.authorization.add_client("svc", secret="svc-secret-2")
    with stack.connect(mcpsync.ClientCredentials("svc", client_secret="svc-secret-2")) as client:
        client.ping()
        later = time.time() + 3590
        monkeypatch.setattr(_tokens, "clock", lambda: later)
        client.ping()
        assert len(grants(stack)) == 2
        assert not [r for r in stack.gate.requests if r["status"] == 401 and r["authorization"]]
        monkeypatch.setattr(_tokens, "clock", time.time)
        stack.authorization.expire_access_tokens()
        client.ping()
        assert len(grants(stack)) == 3


def test_client_credentials_step_up(stack):
    stack.gate.settings.tool_scopes = {"add": "admin"}
    stack.authorization.add_client("svc", secret="svc-secret-3")
    with stack.connect(mcpsync.ClientCredentials("svc", client_secret="svc-secret-3")) as client:
        assert client.call_tool("add", {"a": 2, "b": 2}).structured_content == {"result": 4}
    assert [g["params"].get("scope") for g in grants(stack)] == ["mcp", "mcp admin"]
