"""The JWT bearer grant from someone else's token: WorkloadIdentity (SEP-1933) and EnterpriseAuth (SEP-990).

Peers: one stdlib server on 127.0.0.1 (``Peers``) playing three parts at
three paths: the protected MCP resource, its authorization server (JWT bearer
grant only) and an enterprise IdP (RFC 8693 token exchange). They record what
they got; the identity tokens are unsigned test JWTs (the servers here check
what the client sends, not who signed it).
"""

from __future__ import annotations

import base64
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any, Dict, Iterator, List, Optional, Tuple
from urllib.parse import parse_qsl, urlsplit

import pytest
import requests

import mcpsync
from mcpsync.auth import EnterpriseAuth, MemoryTokenStore, WorkloadIdentity
from mcpsync.auth import _tokens

JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
ID_JAG = "urn:ietf:params:oauth:token-type:id-jag"


def jwt(sub: str, lifetime: float = 600.0, **claims: Any) -> str:
    def part(data: Dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()
    return f"{part({'alg': 'ES256', 'typ': 'JWT'})}.{part({'sub': sub, 'exp': time.time() + lifetime, **claims})}.c2ln"


class Peers:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.token_requests: List[Dict[str, Any]] = []
        self.idp_requests: List[Dict[str, Any]] = []
        self.valid: Dict[str, str] = {}  # access token -> the assertion it was issued for
        self.refuse: Optional[str] = None  # the AS answers this OAuth error
        self.idp_answer: Optional[Dict[str, Any]] = None  # the IdP answers this instead of an ID-JAG
        world = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"

            def do_GET(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                status, headers, payload = world.handle(self, self.rfile.read(length) if length else b"")
                data = json.dumps(payload).encode()
                self.send_response(status)
                for name, value in {"Content-Type": "application/json", **headers}.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_POST = do_GET  # noqa: N815

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

        self.server = HTTPServer(("127.0.0.1", 0), Handler)
        self.origin = f"http://127.0.0.1:{self.server.server_port}"
        self.issuer = self.origin + "/as"
        self.mcp_url = self.origin + "/mcp"
        self.idp_token_endpoint = self.origin + "/idp/token"
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05},
                                       daemon=True, name="test-assertion-peers")
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(10)

    def handle(self, h: BaseHTTPRequestHandler, body: bytes) -> Tuple[int, Dict[str, str], Any]:
        path = urlsplit(h.path).path
        form = dict(parse_qsl(body.decode()))
        if path == "/.well-known/oauth-protected-resource/mcp":
            return 200, {}, {"resource": self.mcp_url, "authorization_servers": [self.issuer]}
        if path == "/.well-known/oauth-authorization-server/as":
            return 200, {}, {"issuer": self.issuer, "token_endpoint": self.issuer + "/token",
                             "grant_types_supported": [JWT_BEARER],
                             "token_endpoint_auth_methods_supported": ["client_secret_basic", "none"]}
        if path == "/as/token":
            with self.lock:
                self.token_requests.append({"form": form, "authorization": h.headers.get("Authorization")})
            if form.get("grant_type") != JWT_BEARER or not form.get("assertion"):
                return 400, {}, {"error": "unsupported_grant_type"}
            if self.refuse:
                return 400, {}, {"error": self.refuse, "error_description": "refused by the test"}
            token = f"at-{len(self.token_requests)}"
            with self.lock:
                self.valid[token] = form["assertion"]
            return 200, {}, {"access_token": token, "token_type": "Bearer", "expires_in": 3600}
        if path == "/idp/token":
            with self.lock:
                self.idp_requests.append({"form": form, "authorization": h.headers.get("Authorization")})
            if self.idp_answer is not None:
                return 200, {}, self.idp_answer
            if form.get("subject_token", "").startswith("bad"):
                return 400, {}, {"error": "invalid_grant", "error_description": f"bad subject {form['subject_token']}"}
            return 200, {}, {"access_token": jwt("alice", aud=form.get("audience")), "issued_token_type": ID_JAG,
                             "token_type": "N_A"}
        if path == "/mcp":
            authorization = h.headers.get("Authorization") or ""
            if authorization.startswith("Bearer ") and authorization[7:] in self.valid:
                return 200, {}, {"ok": True}
            metadata = self.origin + "/.well-known/oauth-protected-resource/mcp"
            return 401, {"WWW-Authenticate": f'Bearer resource_metadata="{metadata}"'}, {"error": "invalid_token"}
        return 404, {}, {"error": "not_found"}


@pytest.fixture
def peers() -> Iterator[Peers]:
    p = Peers()
    yield p
    p.stop()


def call(peers: Peers, auth: Any) -> int:
    response = requests.get(peers.mcp_url, auth=auth, timeout=15)
    response.close()
    return response.status_code


# -- workload identity ------------------------------------------------------------------------------

def test_the_workload_token_file_is_read_again_when_a_new_token_is_needed(peers, tmp_path, monkeypatch):
    path = tmp_path / "token"
    first, second = jwt("pod", lifetime=7200), jwt("pod-rotated", lifetime=7200)
    path.write_text(first + "\n")
    auth = WorkloadIdentity(path, store=MemoryTokenStore())
    assert call(peers, auth) == 200
    path.write_text(second)  # the platform rotated it
    later = time.time() + 3590
    monkeypatch.setattr(_tokens, "clock", lambda: later)
    assert call(peers, auth) == 200
    assert [r["form"]["assertion"] for r in peers.token_requests] == [first, second]
    assert all(r["form"]["grant_type"] == JWT_BEARER and r["form"]["resource"] == peers.mcp_url
               for r in peers.token_requests)


def test_a_callable_source_and_a_client_id(peers):
    calls: List[int] = []

    def current() -> str:
        calls.append(1)
        return jwt("ci-job")

    auth = WorkloadIdentity(token=current, client_id="ci-deployer", scopes=["deploy"], store=MemoryTokenStore())
    assert call(peers, auth) == 200
    [request] = peers.token_requests
    assert request["form"]["client_id"] == "ci-deployer" and request["form"]["scope"] == "deploy"
    assert calls == [1]


def test_an_expired_workload_token_is_never_sent(peers):
    """Hostile: a stale platform token must fail here, clearly, instead of being presented to the server."""
    auth = WorkloadIdentity(token=jwt("pod", lifetime=-3600), store=MemoryTokenStore())
    with pytest.raises(mcpsync.AuthError) as caught:
        call(peers, auth)
    assert caught.value.error == "identity_token_expired" and "renew it at its source" in str(caught.value)
    assert peers.token_requests == []


def test_a_refused_workload_token_is_raised_without_a_retry_or_another_grant(peers):
    peers.refuse = "invalid_grant"
    auth = WorkloadIdentity(token=jwt("pod"), store=MemoryTokenStore())
    with pytest.raises(mcpsync.AuthError) as caught:
        call(peers, auth)
    assert caught.value.error == "invalid_grant"
    assert len(peers.token_requests) == 1


def test_a_missing_token_file_names_the_file(peers, tmp_path):
    auth = WorkloadIdentity(tmp_path / "absent", store=MemoryTokenStore())
    with pytest.raises(mcpsync.AuthError, match="absent") as caught:
        call(peers, auth)
    assert caught.value.error == "identity_token_unavailable"
    with pytest.raises(ValueError):
        WorkloadIdentity()
    with pytest.raises(ValueError):
        WorkloadIdentity(tmp_path / "x", token="y")


# -- enterprise-managed authorization ------------------------------------------------------------------

def enterprise(peers: Peers, **options: Any) -> EnterpriseAuth:
    options.setdefault("id_token", jwt("alice", aud="my-app"))
    return EnterpriseAuth("mcp-client", client_secret="as-secret", idp_token_endpoint=peers.idp_token_endpoint,
                          idp_client_id="my-app", store=MemoryTokenStore(), **options)


def test_the_id_token_is_exchanged_for_an_id_jag_and_redeemed(peers):
    id_token = jwt("alice", aud="my-app")
    assert call(peers, enterprise(peers, id_token=id_token, scopes=["files"])) == 200
    [exchange] = peers.idp_requests
    assert exchange["form"] == {
        "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange", "requested_token_type": ID_JAG,
        "subject_token": id_token, "subject_token_type": "urn:ietf:params:oauth:token-type:id_token",
        "audience": peers.issuer, "resource": peers.mcp_url, "scope": "files", "client_id": "my-app"}
    [redeem] = peers.token_requests
    assert redeem["form"]["grant_type"] == JWT_BEARER and redeem["form"]["resource"] == peers.mcp_url
    assert json.loads(base64.urlsafe_b64decode(redeem["form"]["assertion"].split(".")[1] + "=="))["aud"] == \
        peers.issuer
    assert redeem["authorization"] == "Basic " + base64.b64encode(b"mcp-client:as-secret").decode()


def test_an_idp_answer_that_is_not_an_id_jag_is_not_presented(peers):
    """Hostile: an IdP that hands back some other token must not have it sent to the authorization server."""
    peers.idp_answer = {"access_token": "an-access-token-for-the-idp",
                        "issued_token_type": "urn:ietf:params:oauth:token-type:access_token"}
    with pytest.raises(mcpsync.AuthError) as caught:
        call(peers, enterprise(peers))
    assert caught.value.error == "invalid_response" and "ID-JAG" in str(caught.value)
    assert peers.token_requests == []


def test_an_idp_refusal_is_raised_without_the_id_token_in_it(peers):
    with pytest.raises(mcpsync.AuthError) as caught:
        call(peers, enterprise(peers, id_token="bad-id-token-0123456789abcdef"))
    assert caught.value.error == "invalid_grant"
    assert "bad subject" in str(caught.value) and "0123456789abcdef" not in str(caught.value)


def test_the_id_token_callable_is_asked_again_for_each_new_token(peers, monkeypatch):
    tokens = iter([jwt("alice", lifetime=7200), jwt("alice", lifetime=9000)])
    auth = enterprise(peers, id_token=lambda: next(tokens))
    assert call(peers, auth) == 200
    later = time.time() + 3590
    monkeypatch.setattr(_tokens, "clock", lambda: later)
    assert call(peers, auth) == 200
    assert len({r["form"]["subject_token"] for r in peers.idp_requests}) == 2
    with pytest.raises(ValueError):
        EnterpriseAuth("c", idp_token_endpoint="ftp://idp.example/token", id_token="x")
