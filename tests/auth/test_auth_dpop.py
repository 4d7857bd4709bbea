"""DPoP (RFC 9449): proofs, key-bound tokens, server nonces, refresh, and the key kept with the tokens.

The peers are two small stdlib servers on 127.0.0.1 (``DPoPWorld``): an
authorization server whose token endpoint wants a DPoP proof and binds its
tokens to the proof's key (``cnf.jkt``), and a protected resource that wants
``Authorization: DPoP`` plus a valid proof (with ``ath``) on every request.
Either may insist on a nonce. Every proof they get is checked in full and
kept, so tests can say what the client sent. The client side is the auth
object on plain ``requests`` calls (it is a ``requests`` auth object).
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import stat
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any, Dict, Iterator, List, Optional, Tuple
from urllib.parse import parse_qsl, urlsplit

import pytest
import requests
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, padding, rsa, utils

import mcpsync
from mcpsync.auth import ClientCredentials, FileTokenStore, MemoryTokenStore, OAuth
from mcpsync.auth._dpop import DPoPKey, Nonces, htu


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


_CURVES = {"P-256": (ec.SECP256R1, hashes.SHA256, 32), "P-384": (ec.SECP384R1, hashes.SHA384, 48),
           "P-521": (ec.SECP521R1, hashes.SHA512, 66)}
_JWS_EC = {"ES256": "P-256", "ES384": "P-384", "ES512": "P-521"}


def verify_signature(header: Dict[str, Any], signing_input: bytes, raw: bytes) -> None:
    """Check a proof's signature with its own ``jwk`` and ``alg``, as a server would (not mcpsync's code)."""
    jwk, alg = header["jwk"], header["alg"]
    number = lambda name: int.from_bytes(_unb64(jwk[name]), "big")  # noqa: E731
    if alg in _JWS_EC:
        assert set(jwk) == {"kty", "crv", "x", "y"}, "the proof must carry the public key only"
        assert jwk["kty"] == "EC" and jwk["crv"] == _JWS_EC[alg]
        curve, digest, size = _CURVES[jwk["crv"]]
        public = ec.EllipticCurvePublicNumbers(number("x"), number("y"), curve()).public_key()
        assert len(raw) == 2 * size
        der = utils.encode_dss_signature(int.from_bytes(raw[:size], "big"), int.from_bytes(raw[size:], "big"))
        public.verify(der, signing_input, ec.ECDSA(digest()))
    elif alg in ("EdDSA", "Ed25519"):
        assert set(jwk) == {"kty", "crv", "x"} and (jwk["kty"], jwk["crv"]) == ("OKP", "Ed25519")
        ed25519.Ed25519PublicKey.from_public_bytes(_unb64(jwk["x"])).verify(raw, signing_input)
    elif alg in ("RS256", "PS256"):
        assert set(jwk) == {"kty", "n", "e"} and jwk["kty"] == "RSA"
        public_rsa = rsa.RSAPublicNumbers(number("e"), number("n")).public_key()
        assert public_rsa.key_size >= 2048
        pad = padding.PKCS1v15() if alg == "RS256" else padding.PSS(mgf=padding.MGF1(hashes.SHA256()),
                                                                    salt_length=32)
        public_rsa.verify(raw, signing_input, pad, hashes.SHA256())
    else:
        raise AssertionError(f"unexpected alg {alg!r}")


def check_proof(proof: str, method: str, url: str, access_token: Optional[str] = None,
                alg: str = "ES256") -> Tuple[Dict[str, Any], Dict[str, Any]]:
    """Verify a DPoP proof as a server would (independently of mcpsync's code); (header, claims)."""
    head, body, signature = proof.split(".")
    header, claims = json.loads(_unb64(head)), json.loads(_unb64(body))
    assert header["typ"] == "dpop+jwt" and header["alg"] == alg
    verify_signature(header, f"{head}.{body}".encode("ascii"), _unb64(signature))
    assert claims["htm"] == method
    parts = urlsplit(url)
    assert claims["htu"] == f"{parts.scheme}://{parts.netloc}{parts.path}"
    assert abs(claims["iat"] - time.time()) < 120 and len(claims["jti"]) >= 16
    if access_token is not None:
        assert claims["ath"] == _b64(hashlib.sha256(access_token.encode("ascii")).digest())
    else:
        assert "ath" not in claims
    return header, claims


def thumbprint(jwk: Dict[str, str]) -> str:
    """RFC 7638: the required members only, in lexical order, no whitespace."""
    required = {"EC": ("crv", "kty", "x", "y"), "OKP": ("crv", "kty", "x"), "RSA": ("e", "kty", "n")}[jwk["kty"]]
    canonical = "{" + ",".join('"%s":"%s"' % (name, jwk[name]) for name in required) + "}"
    return _b64(hashlib.sha256(canonical.encode("ascii")).digest())


@dataclass
class Settings:
    as_nonce: Optional[str] = None        # the token endpoint wants this nonce in the proof
    rs_nonce: Optional[str] = None        # the resource wants this nonce in the proof
    stubborn_as: bool = False             # asks for a (new) nonce every time
    stubborn_rs: bool = False
    dpop_algs: Optional[List[str]] = field(default_factory=lambda: ["ES256"])
    alg: str = "ES256"                    # the alg every proof must be signed with
    token_type: str = "DPoP"
    lifetime: int = 3600


class DPoPWorld:
    """An authorization server and a protected resource that speak DPoP, each on its own 127.0.0.1 port."""

    def __init__(self) -> None:
        self.settings = Settings()
        self.lock = threading.Lock()
        self.tokens: Dict[str, str] = {}      # access token -> jkt
        self.refresh: Dict[str, str] = {}     # refresh token -> jkt
        self.token_requests: List[Dict[str, Any]] = []
        self.resource_requests: List[Dict[str, Any]] = []
        self.jtis: set = set()
        self.servers = [self._serve("as"), self._serve("rs")]
        self.as_origin, self.rs_origin = (f"http://127.0.0.1:{s.server_port}" for s in self.servers)
        self.mcp_url = self.rs_origin + "/mcp"

    def _serve(self, role: str) -> HTTPServer:
        world = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"

            def do_GET(self) -> None:  # noqa: N802
                world.handle(role, self)

            do_POST = do_GET  # noqa: N815

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

        server = HTTPServer(("127.0.0.1", 0), Handler)
        thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True,
                                  name=f"test-dpop-{role}")
        thread.start()
        server.thread = thread  # type: ignore[attr-defined]
        return server

    def stop(self) -> None:
        for server in self.servers:
            server.shutdown()
            server.server_close()
            server.thread.join(10)  # type: ignore[attr-defined]

    # -- the two servers ---------------------------------------------------------------------------

    def handle(self, role: str, h: BaseHTTPRequestHandler) -> None:
        length = int(h.headers.get("Content-Length") or 0)
        body = h.rfile.read(length) if length else b""
        path = urlsplit(h.path).path
        if role == "as":
            status, headers, payload = self.authorization(h, path, body)
        else:
            status, headers, payload = self.resource(h, path)
        data = json.dumps(payload).encode("utf-8")
        h.send_response(status)
        for name, value in {"Content-Type": "application/json", **headers}.items():
            h.send_header(name, value)
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)

    def _fresh(self, claims: Dict[str, Any]) -> None:
        with self.lock:
            assert claims["jti"] not in self.jtis, "a proof was used twice"
            self.jtis.add(claims["jti"])

    def authorization(self, h: BaseHTTPRequestHandler, path: str, body: bytes) -> Tuple[int, Dict[str, str], Any]:
        s = self.settings
        if path == "/.well-known/oauth-authorization-server":
            document = {"issuer": self.as_origin, "token_endpoint": self.as_origin + "/token",
                        "authorization_endpoint": self.as_origin + "/authorize",
                        "code_challenge_methods_supported": ["S256"],
                        "token_endpoint_auth_methods_supported": ["client_secret_basic", "none"]}
            if s.dpop_algs is not None:
                document["dpop_signing_alg_values_supported"] = s.dpop_algs
            return 200, {}, document
        if path == "/authorize":
            query = dict(parse_qsl(urlsplit(h.path).query))
            with self.lock:
                self.token_requests.append({"authorize": query})
            target = f"{query['redirect_uri']}?code=code-{query.get('dpop_jkt', '')}&state={query['state']}"
            return 302, {"Location": target}, {}
        if path != "/token":
            return 404, {}, {"error": "not_found"}
        form = dict(parse_qsl(body.decode("ascii")))
        proof = h.headers.get("DPoP")
        record: Dict[str, Any] = {"form": form, "proof": proof}
        with self.lock:
            self.token_requests.append(record)
        if proof is None:
            return 400, {}, {"error": "invalid_dpop_proof", "error_description": "no proof"}
        header, claims = check_proof(proof, "POST", self.as_origin + "/token", alg=s.alg)
        self._fresh(claims)
        record["claims"] = claims
        if s.as_nonce is not None and (claims.get("nonce") != s.as_nonce or s.stubborn_as):
            if s.stubborn_as:
                s.as_nonce = f"as-nonce-{len(self.token_requests)}"
            return 400, {"DPoP-Nonce": s.as_nonce}, {"error": "use_dpop_nonce"}
        jkt = thumbprint(header["jwk"])
        if form["grant_type"] == "refresh_token":
            with self.lock:
                bound = self.refresh.get(form["refresh_token"])
            if bound != jkt:
                return 400, {}, {"error": "invalid_grant", "error_description": "refresh token bound elsewhere"}
        token, refresh = "at-" + os.urandom(8).hex(), "rt-" + os.urandom(8).hex()
        with self.lock:
            self.tokens[token] = jkt
            self.refresh[refresh] = jkt
        return 200, {"Cache-Control": "no-store"}, {"access_token": token, "token_type": s.token_type,
                                                     "expires_in": s.lifetime, "refresh_token": refresh}

    def resource(self, h: BaseHTTPRequestHandler, path: str) -> Tuple[int, Dict[str, str], Any]:
        s = self.settings
        metadata = self.rs_origin + "/.well-known/oauth-protected-resource/mcp"
        if path == "/.well-known/oauth-protected-resource/mcp":
            return 200, {}, {"resource": self.mcp_url, "authorization_servers": [self.as_origin]}
        authorization = h.headers.get("Authorization") or ""
        proof = h.headers.get("DPoP")
        record: Dict[str, Any] = {"authorization": authorization, "proof": proof, "path": h.path}
        with self.lock:
            self.resource_requests.append(record)
        challenge = f'DPoP algs="ES256", resource_metadata="{metadata}"'
        if not authorization.startswith("DPoP ") or proof is None:
            return 401, {"WWW-Authenticate": challenge}, {"error": "invalid_token"}
        token = authorization[5:]
        header, claims = check_proof(proof, h.command, self.rs_origin + h.path, access_token=token, alg=s.alg)
        self._fresh(claims)
        record["claims"] = claims
        with self.lock:
            bound = self.tokens.get(token)
        if bound is None or bound != thumbprint(header["jwk"]):
            return 401, {"WWW-Authenticate": challenge + ', error="invalid_token"'}, {"error": "invalid_token"}
        if s.rs_nonce is not None and (claims.get("nonce") != s.rs_nonce or s.stubborn_rs):
            if s.stubborn_rs:
                s.rs_nonce = f"rs-nonce-{len(self.resource_requests)}"
            return 401, {"WWW-Authenticate": 'DPoP error="use_dpop_nonce", error_description="nonce needed"',
                         "DPoP-Nonce": s.rs_nonce}, {"error": "use_dpop_nonce"}
        return 200, {}, {"ok": True}


@pytest.fixture
def world() -> Iterator[DPoPWorld]:
    w = DPoPWorld()
    yield w
    w.stop()


def machine(world: DPoPWorld, **options: Any) -> ClientCredentials:
    options.setdefault("store", MemoryTokenStore())
    options.setdefault("dpop", True)
    return ClientCredentials("svc", client_secret="s3cret", **options)


def call(world: DPoPWorld, auth: Any, query: str = "") -> requests.Response:
    response = requests.post(world.mcp_url + query, json={"jsonrpc": "2.0", "id": 1, "method": "ping"}, auth=auth,
                             timeout=15)
    response.close()
    return response


# -- the key and its proofs ---------------------------------------------------------------------------

def test_a_proof_is_a_signed_es256_jwt_with_the_claims_rfc_9449_asks_for():
    key = DPoPKey.generate()
    proof = key.proof("post", "https://Example.com/mcp?x=1#frag", access_token="tok")
    header, claims = check_proof(proof, "POST", "https://example.com/mcp", access_token="tok")
    assert header["jwk"] == key.public_jwk
    assert claims["htu"] == "https://example.com/mcp"  # no query, no fragment
    assert key.thumbprint() == thumbprint(key.public_jwk)
    again = json.loads(_unb64(key.proof("POST", "https://example.com/mcp").split(".")[1]))
    assert again["jti"] != claims["jti"] and "ath" not in again
    assert htu("http://h:8/p/a?q") == "http://h:8/p/a"


def test_the_key_round_trips_through_its_stored_form_and_hides_its_secret():
    key = DPoPKey.generate()
    stored = key.to_jwk()
    assert DPoPKey.from_jwk(stored) == key
    assert stored["d"] not in repr(key) and key.thumbprint() in repr(key)


def test_a_tampered_stored_key_is_not_used():
    """Hostile: a store entry whose public half is not the private key's must not become a signing key."""
    stored, other = DPoPKey.generate().to_jwk(), DPoPKey.generate().to_jwk()
    assert DPoPKey.from_jwk({**stored, "x": other["x"], "y": other["y"]}) is None
    assert DPoPKey.from_jwk({**stored, "crv": "P-384"}) is None
    assert DPoPKey.from_jwk({"kty": "EC", "crv": "P-256"}) is None


def test_nonces_are_kept_per_origin_and_odd_values_are_ignored():
    nonces = Nonces()
    nonces.note("https://a.example/token", {"DPoP-Nonce": "n1"})
    assert nonces.get("https://a.example/other") == "n1" and nonces.get("https://b.example/") is None
    assert nonces.note("https://a.example/", {"DPoP-Nonce": "x" * 5000}) is None
    assert nonces.note("https://a.example/", {"DPoP-Nonce": "bad\r\nvalue"}) is None
    assert nonces.get("https://a.example/") == "n1"


# -- with the servers ----------------------------------------------------------------------------------

def test_tokens_are_dpop_bound_and_every_request_carries_a_fresh_proof(world):
    auth = machine(world)
    assert call(world, auth).status_code == 200
    assert call(world, auth, "?page=2").status_code == 200
    [token_request] = [r for r in world.token_requests if "form" in r]
    assert token_request["proof"] is not None
    served = [r for r in world.resource_requests if r.get("claims")]
    assert len(served) == 2 and all(r["authorization"].startswith("DPoP ") for r in served)
    assert "Bearer" not in "".join(r["authorization"] for r in world.resource_requests)
    assert served[1]["claims"]["htu"] == world.mcp_url  # the query is not part of htu


def test_the_authorization_servers_nonce_is_sent_on_one_retry(world):
    world.settings.as_nonce = "as-n1"
    assert call(world, machine(world)).status_code == 200
    proofs = [r for r in world.token_requests if "form" in r]
    assert len(proofs) == 2 and proofs[1]["claims"]["nonce"] == "as-n1"


def test_an_authorization_server_that_always_wants_a_new_nonce_is_retried_once_only(world):
    """Hostile: a token endpoint answering use_dpop_nonce forever must not make the client loop."""
    world.settings.as_nonce, world.settings.stubborn_as = "as-n1", True
    with pytest.raises(mcpsync.AuthError) as caught:
        call(world, machine(world))
    assert caught.value.error == "use_dpop_nonce"
    assert len([r for r in world.token_requests if "form" in r]) == 2


def test_the_resource_servers_nonce_is_sent_on_one_retry(world):
    world.settings.rs_nonce = "rs-n1"
    auth = machine(world)
    assert call(world, auth).status_code == 200
    assert call(world, auth).status_code == 200  # the nonce is remembered: no second 401
    nonced = [r for r in world.resource_requests if r.get("claims", {}).get("nonce") == "rs-n1"]
    assert len(nonced) == 2
    assert len([r for r in world.resource_requests if r.get("claims")]) == 3


def test_a_resource_server_that_always_wants_a_new_nonce_gets_its_401_after_one_retry(world):
    """Hostile: use_dpop_nonce on every answer from the MCP server is retried once, then handed back."""
    world.settings.rs_nonce, world.settings.stubborn_rs = "rs-n1", True
    response = call(world, machine(world))
    assert response.status_code == 401
    assert len([r for r in world.resource_requests if r.get("claims")]) == 2


def test_refresh_is_dpop_bound_to_the_same_key(world, monkeypatch):
    from mcpsync.auth import _tokens

    auth = OAuth(client_id="app", login=_follow, store=MemoryTokenStore(), dpop=True)
    assert call(world, auth).status_code == 200
    later = time.time() + 3590
    monkeypatch.setattr(_tokens, "clock", lambda: later)
    assert call(world, auth).status_code == 200
    forms = [r for r in world.token_requests if "form" in r]
    assert [r["form"]["grant_type"] for r in forms] == ["authorization_code", "refresh_token"]
    keys = {json.dumps(json.loads(_unb64(r["proof"].split(".")[0]))["jwk"], sort_keys=True) for r in forms}
    assert len(keys) == 1
    [authorize] = [r["authorize"] for r in world.token_requests if "authorize" in r]
    assert authorize["dpop_jkt"] == thumbprint(json.loads(keys.pop()))


def _follow(url: str) -> str:
    response = requests.get(url, allow_redirects=False, timeout=10)
    response.close()
    return response.headers["Location"]


def test_the_key_is_stored_with_the_tokens_in_an_owner_only_file(world, tmp_path):
    path = tmp_path / "tokens.json"
    assert call(world, machine(world, store=FileTokenStore(path), server_url=world.mcp_url)).status_code == 200
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    entries = json.loads(path.read_text())
    [grant] = [v for k, v in entries.items() if k.startswith("tokens ")]
    assert grant["token"]["token_type"] == "DPoP" and set(grant["dpop_key"]) == {"kty", "crv", "x", "y", "d", "alg"}
    # A new process: the stored key and token are used as they are, with no new token request.
    again = machine(world, store=FileTokenStore(path), server_url=world.mcp_url)
    assert call(world, again).status_code == 200
    assert len([r for r in world.token_requests if "form" in r]) == 1
    last = world.resource_requests[-1]
    assert thumbprint(json.loads(_unb64(last["proof"].split(".")[0]))["jwk"]) == thumbprint(grant["dpop_key"])


def test_an_authorization_server_with_no_algorithm_mcpsync_signs_is_refused_before_anything_is_asked(world):
    world.settings.dpop_algs = ["HS256", "none"]  # symmetric and unsigned: RFC 9449 forbids both
    with pytest.raises(mcpsync.AuthError) as caught:
        call(world, machine(world))
    assert caught.value.error == "unsupported_dpop_alg"
    assert "HS256, none" in str(caught.value) and "ES256" in str(caught.value)
    assert [r for r in world.token_requests if "form" in r] == []


def test_a_bearer_answer_to_a_dpop_request_is_used_as_a_bearer_token(world):
    world.settings.token_type = "Bearer"
    call(world, machine(world))
    assert world.resource_requests[-1]["authorization"].startswith("Bearer ")


def test_a_dpop_token_is_refused_when_dpop_was_not_asked_for(world):
    auth = ClientCredentials("svc", client_secret="s3cret", store=MemoryTokenStore())
    with pytest.raises(mcpsync.AuthError) as caught:
        call(world, auth)
    assert caught.value.error in ("invalid_dpop_proof", "unsupported_token_type")


def test_challenges_read_the_bearer_parameters_and_the_dpop_error():
    from mcpsync.auth._challenge import Challenge

    both = Challenge.from_header('DPoP algs="ES256", error="use_dpop_nonce", Bearer resource_metadata="https://x/m"')
    assert both.resource_metadata == "https://x/m" and both.error is None and both.dpop_error == "use_dpop_nonce"
    alone = Challenge.from_header('DPoP error="invalid_token", resource_metadata="https://x/m", scope="a b"')
    assert alone.error == "invalid_token" and alone.scopes == ("a", "b") and alone.dpop_error == "invalid_token"
    assert Challenge.from_header("Basic realm=x") == Challenge()


# -- algorithms other than ES256, chosen from the server's list, and keys of your own ---------------------

def _proof_header(proof: str) -> Dict[str, Any]:
    return json.loads(_unb64(proof.split(".")[0]))


@pytest.mark.parametrize("offered, chosen", [
    (["ES384"], "ES384"), (["ES512"], "ES512"), (["EdDSA"], "EdDSA"), (["Ed25519"], "Ed25519"),
    (["PS256"], "PS256"), (["RS256"], "RS256"),
    (["RS256", "ES384", "ES256"], "ES256"),  # several: the cheapest mcpsync knows, not the first listed
    (["HS256", "PS256", "RS256"], "PS256"),  # a symmetric algorithm is never a DPoP algorithm
])
def test_a_key_is_made_for_an_algorithm_the_authorization_server_lists(world, offered, chosen):
    world.settings.dpop_algs, world.settings.alg = offered, chosen
    auth = machine(world)
    assert call(world, auth).status_code == 200 and call(world, auth).status_code == 200
    proofs = [r["proof"] for r in world.token_requests if "form" in r] + \
        [r["proof"] for r in world.resource_requests if r.get("claims")]
    assert len(proofs) == 3 and {_proof_header(p)["alg"] for p in proofs} == {chosen}  # each checked in full


@pytest.mark.parametrize("alg", ["ES256", "ES384", "ES512", "EdDSA", "Ed25519", "RS256", "PS256"])
def test_every_kind_of_key_signs_verifiable_proofs_and_round_trips_through_the_store(alg):
    key = DPoPKey.generate(alg)
    header, _ = check_proof(key.proof("GET", "https://example.com/mcp", access_token="t"), "GET",
                            "https://example.com/mcp", access_token="t", alg=alg)
    assert header["jwk"] == key.public_jwk and thumbprint(key.public_jwk) == key.thumbprint()
    stored = key.to_jwk()
    again = DPoPKey.from_jwk(stored)
    assert again == key and again.algorithm == alg and repr(again) == repr(key)
    assert stored["d"] not in repr(key)


def test_a_key_of_your_own_is_used_with_an_algorithm_from_the_servers_list(world):
    own = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    world.settings.dpop_algs, world.settings.alg = ["ES256", "PS256"], "PS256"
    auth = machine(world, dpop=own)
    assert call(world, auth).status_code == 200
    proofs = [r["proof"] for r in world.token_requests if "form" in r] + \
        [r["proof"] for r in world.resource_requests if r.get("claims")]
    assert {thumbprint(_proof_header(p)["jwk"]) for p in proofs} == {DPoPKey(own).thumbprint()}


def test_a_key_of_your_own_from_pem_keeps_its_algorithm_in_the_store(world, tmp_path):
    from cryptography.hazmat.primitives import serialization

    pem = ec.generate_private_key(ec.SECP384R1()).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    key = DPoPKey.from_pem(pem)
    assert key.algorithm == "ES384"
    world.settings.dpop_algs, world.settings.alg = ["ES256", "ES384"], "ES384"
    path = tmp_path / "tokens.json"
    assert call(world, machine(world, dpop=key, store=FileTokenStore(path), server_url=world.mcp_url)).status_code == 200
    again = machine(world, store=FileTokenStore(path), server_url=world.mcp_url)  # dpop=True, a new process
    assert call(world, again).status_code == 200
    assert len([r for r in world.token_requests if "form" in r]) == 1
    assert thumbprint(_proof_header(world.resource_requests[-1]["proof"])["jwk"]) == key.thumbprint()


def test_a_key_of_your_own_the_server_cannot_verify_is_refused_before_anything_is_asked(world):
    world.settings.dpop_algs = ["ES256", "EdDSA"]
    with pytest.raises(mcpsync.AuthError) as caught:
        call(world, machine(world, dpop=DPoPKey.generate("PS256")))
    assert caught.value.error == "unsupported_dpop_alg"
    assert "ES256, EdDSA" in str(caught.value) and "signs only RS256, PS256" in str(caught.value)
    assert [r for r in world.token_requests if "form" in r] == []


def test_unusable_keys_are_refused_when_given():
    with pytest.raises(mcpsync.AuthError, match="must be an EC") as small:
        DPoPKey(rsa.generate_private_key(public_exponent=65537, key_size=1024))
    assert small.value.error == "invalid_key"
    with pytest.raises(mcpsync.AuthError, match="must be an EC"):
        DPoPKey(ec.generate_private_key(ec.SECP256K1()))
    with pytest.raises(mcpsync.AuthError, match="cannot sign RS256"):
        DPoPKey.generate("ES256").with_algorithm("RS256")
    with pytest.raises(mcpsync.AuthError, match="not a readable PEM") as unreadable:
        DPoPKey.from_pem(b"-----BEGIN PRIVATE KEY-----\nnope\n-----END PRIVATE KEY-----\n")
    assert "nope" not in str(unreadable.value)
    with pytest.raises(TypeError, match="dpop= takes True, False"):
        ClientCredentials("svc", client_secret="s", dpop="yes", store=MemoryTokenStore())
    assert DPoPKey.from_jwk({**DPoPKey.generate("EdDSA").to_jwk(), "x": DPoPKey.generate("EdDSA").public_jwk["x"]}) \
        is None  # a stored key whose public half is another key's
