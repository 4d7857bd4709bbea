#!/usr/bin/env python
"""Test peer: a small OAuth 2.1 authorization server, stdlib only (PyJWT only to check private_key_jwt).

``AuthorizationServer`` is the behaviour, as a function from a request to a
response, so it can be served at its own origin (``AuthServerThread``: one
``http.server`` thread, HTTP/1.0, so no connection outlives its response) or
mounted at an MCP server's origin (the 2025-03-26 layout). Every knob a test
needs is in ``Settings``; ``reset()`` restores the defaults and forgets all
clients, codes and tokens. It auto-approves every login (the "person" is the
test), and records every request in ``events`` so tests can check what the
client sent.

Endpoints, relative to the issuer (``origin + issuer_path``):
``/authorize`` (GET), ``/token`` (POST form), ``/register`` (POST JSON), and
the metadata at the well-known URL(s) ``Settings.metadata`` picks.

Run by hand: ``python tests/servers/auth_server.py --port 9000``.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import secrets
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any, Dict, List, Optional, Set, Tuple
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit

Response = Tuple[int, Dict[str, str], bytes]


@dataclass
class Settings:
    issuer_path: str = ""                 # "" or e.g. "/tenant"
    metadata: str = "oauth"               # "oauth" (RFC 8414), "oidc" (path inserted), "oidc-appended", "none"
    wrong_issuer: bool = False            # the metadata names another issuer
    pkce_methods: Optional[List[str]] = field(default_factory=lambda: ["S256"])  # None: not listed
    dcr: bool = True                      # a registration endpoint
    cimd: bool = False                    # client ID metadata documents
    auth_methods: List[str] = field(default_factory=lambda: [
        "client_secret_basic", "client_secret_post", "none", "private_key_jwt"])
    scopes_supported: Optional[List[str]] = field(default_factory=lambda: ["mcp", "admin", "offline_access"])
    never_grant: Set[str] = field(default_factory=set)   # asked-for scopes left out of every token
    refresh_tokens: bool = True
    expires_in: int = 3600
    iss_param: str = "yes"                # in the authorization response: "yes", "no", "wrong"
    iss_supported: bool = True            # authorization_response_iss_parameter_supported
    deny: bool = False                    # the person says no (access_denied)
    echo_in_errors: bool = False          # a careless server: echo the refresh token in refresh errors
    refresh_failure: Optional[int] = None  # answer refresh requests with this status (503, 429) and spend nothing
    origin: Optional[str] = None          # serve as another origin (mounted at an MCP server's origin)


@dataclass
class Client:
    client_id: str
    secret: Optional[str]
    auth_method: str
    redirect_uris: List[str]
    public_key: Any = None
    application_type: Optional[str] = None


@dataclass
class Issued:
    client_id: str
    scopes: List[str]
    resource: Optional[str]
    expires_at: float


class AuthorizationServer:
    """The authorization server's behaviour; thread-safe (one lock around all state)."""

    def __init__(self) -> None:
        self.origin = ""
        self.settings = Settings()
        self._lock = threading.Lock()
        self.reset()

    # -- test controls ---------------------------------------------------------------------

    def reset(self) -> None:
        with self._lock:
            self.settings = Settings()
            self.clients: Dict[str, Client] = {}
            self.codes: Dict[str, Dict[str, Any]] = {}
            self.tokens: Dict[str, Issued] = {}
            self.refresh: Dict[str, Issued] = {}
            self.events: List[Dict[str, Any]] = []
            self.issued_secrets: List[str] = []   # every token, code and secret handed out (for leak greps)

    @property
    def issuer(self) -> str:
        return (self.settings.origin or self.origin) + self.settings.issuer_path

    def add_client(self, client_id: str, secret: Optional[str] = None, auth_method: Optional[str] = None,
                   redirect_uris: Optional[List[str]] = None, public_key: Any = None) -> None:
        method = auth_method or ("client_secret_basic" if secret else "private_key_jwt" if public_key else "none")
        with self._lock:
            self.clients[client_id] = Client(client_id, secret, method, list(redirect_uris or []), public_key)
            if secret:
                self.issued_secrets.append(secret)

    def verify(self, token: str) -> Optional[Issued]:
        """For the resource server: what an access token grants, or None if unknown or expired."""
        with self._lock:
            issued = self.tokens.get(token)
        if issued is None or issued.expires_at < time.time():
            return None
        return issued

    def expire_access_tokens(self) -> None:
        with self._lock:
            self.tokens.clear()

    def revoke_refresh_tokens(self) -> None:
        with self._lock:
            self.refresh.clear()

    def count(self, endpoint: str, **match: Any) -> int:
        return len(self.find(endpoint, **match))

    def find(self, endpoint: str, **match: Any) -> List[Dict[str, Any]]:
        with self._lock:
            return [e for e in self.events if e["endpoint"] == endpoint
                    and all(e.get(k) == v or e["params"].get(k) == v for k, v in match.items())]

    # -- requests -----------------------------------------------------------------------------

    def metadata_paths(self) -> List[str]:
        path, kind = self.settings.issuer_path, self.settings.metadata
        if kind == "oauth":
            return [f"/.well-known/oauth-authorization-server{path}"]
        if kind == "oidc":
            return [f"/.well-known/openid-configuration{path}"]
        if kind == "oidc-appended":
            return [f"{path}/.well-known/openid-configuration"]
        return []

    def handle(self, method: str, target: str, headers: Dict[str, str], body: bytes) -> Response:
        parts = urlsplit(target)
        path, query = parts.path, dict(parse_qsl(parts.query, keep_blank_values=True))
        base = self.settings.issuer_path
        if method == "GET" and "/.well-known/" in path:
            self._record("metadata", {"path": path}, headers)
            if path in self.metadata_paths():
                return _json(200, self._metadata())
            return _json(404, {"error": "not_found"})
        if method == "GET" and path == base + "/authorize":
            self._record("authorize", query, headers)
            return self._authorize(query)
        if method == "POST" and path == base + "/token":
            form = dict(parse_qsl(body.decode("utf-8"), keep_blank_values=True))
            return self._token(form, headers)
        if method == "POST" and path == base + "/register" and self.settings.dcr:
            try:
                document = json.loads(body.decode("utf-8"))
            except ValueError:
                return _json(400, {"error": "invalid_client_metadata"})
            self._record("register", document, headers)
            return self._register(document)
        self._record("other", {"path": path}, headers)
        return _json(404, {"error": "not_found"})

    def _record(self, endpoint: str, params: Dict[str, Any], headers: Dict[str, str], **extra: Any) -> None:
        with self._lock:
            self.events.append({"endpoint": endpoint, "params": dict(params),
                                "authorization": headers.get("authorization"),
                                "version": headers.get("mcp-protocol-version"), **extra})

    def _metadata(self) -> Dict[str, Any]:
        s, issuer = self.settings, self.issuer
        document: Dict[str, Any] = {
            "issuer": "https://wrong-issuer.example" if s.wrong_issuer else issuer,
            "authorization_endpoint": issuer + "/authorize", "token_endpoint": issuer + "/token",
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials"],
            "token_endpoint_auth_methods_supported": list(s.auth_methods),
            "client_id_metadata_document_supported": s.cimd,
            "authorization_response_iss_parameter_supported": s.iss_supported,
        }
        if s.dcr:
            document["registration_endpoint"] = issuer + "/register"
        if s.scopes_supported is not None:
            document["scopes_supported"] = list(s.scopes_supported)
        if s.pkce_methods is not None:
            document["code_challenge_methods_supported"] = list(s.pkce_methods)
        return document

    # -- /authorize ------------------------------------------------------------------------------

    def _client_for(self, client_id: str, redirect_uri: str) -> Optional[Client]:
        with self._lock:
            client = self.clients.get(client_id)
        if client is not None:
            return client if redirect_uri in client.redirect_uris else None
        if self.settings.cimd and client_id.startswith(("http://", "https://")):
            with urllib.request.urlopen(client_id, timeout=5) as answer:  # the client's metadata document
                document = json.loads(answer.read().decode("utf-8"))
            if document.get("client_id") != client_id:
                return None
            if not any(_loopback_match(uri, redirect_uri) for uri in document.get("redirect_uris", [])):
                return None
            return Client(client_id, None, "none", [redirect_uri])
        return None

    def _authorize(self, q: Dict[str, str]) -> Response:
        client = self._client_for(q.get("client_id", ""), q.get("redirect_uri", ""))
        if client is None:
            return 400, {"Content-Type": "text/plain"}, b"unknown client or redirect_uri"
        s = self.settings
        answer: Dict[str, str] = {"state": q.get("state", "")}
        if s.iss_param == "yes":
            answer["iss"] = self.issuer
        elif s.iss_param == "wrong":
            answer["iss"] = "https://wrong-issuer.example"
        if s.deny:
            answer.update(error="access_denied", error_description="The user said no")
        elif q.get("response_type") != "code" or q.get("code_challenge_method") != "S256" \
                or not q.get("code_challenge"):
            answer.update(error="invalid_request", error_description="PKCE S256 is required")
        else:
            code = "code_" + secrets.token_urlsafe(24)
            scopes = q["scope"].split() if q.get("scope") else ["mcp"]
            with self._lock:
                self.codes[code] = {"client_id": client.client_id, "redirect_uri": q["redirect_uri"],
                                    "challenge": q["code_challenge"], "scopes": scopes, "resource": q.get("resource")}
                self.issued_secrets.append(code)
            answer["code"] = code
        location = q["redirect_uri"] + ("&" if "?" in q["redirect_uri"] else "?") + urlencode(answer)
        return 302, {"Location": location}, b""

    # -- /token ------------------------------------------------------------------------------------

    def _authenticate(self, form: Dict[str, str], headers: Dict[str, str]) -> Tuple[Optional[Client], str]:
        """(the client, the method it used), or (None, why)."""
        basic = headers.get("authorization", "")
        if basic.lower().startswith("basic "):
            client_id, _, secret = base64.b64decode(basic[6:]).decode("utf-8").partition(":")
            client_id, secret, method = unquote(client_id), unquote(secret), "client_secret_basic"
        elif "client_assertion" in form:
            client_id, secret, method = form.get("client_id", ""), None, "private_key_jwt"
        elif "client_secret" in form:
            client_id, secret, method = form.get("client_id", ""), form["client_secret"], "client_secret_post"
        else:
            client_id, secret, method = form.get("client_id", ""), None, "none"
        with self._lock:
            client = self.clients.get(client_id)
        if client is None and self.settings.cimd and client_id.startswith("http") and method == "none":
            return Client(client_id, None, "none", []), method
        if client is None or client.auth_method != method:
            return None, method
        if method in ("client_secret_basic", "client_secret_post") and secret != client.secret:
            return None, method
        if method == "private_key_jwt" and not self._assertion_ok(client, form):
            return None, method
        return client, method

    def _assertion_ok(self, client: Client, form: Dict[str, str]) -> bool:
        import jwt

        if form.get("client_assertion_type") != "urn:ietf:params:oauth:client-assertion-type:jwt-bearer":
            return False
        try:
            claims = jwt.decode(form["client_assertion"], client.public_key, algorithms=["RS256", "ES256"],
                                audience=self.issuer)
        except jwt.PyJWTError:
            return False
        return claims.get("iss") == client.client_id and claims.get("sub") == client.client_id and "jti" in claims

    def _token(self, form: Dict[str, str], headers: Dict[str, str]) -> Response:
        client, method = self._authenticate(form, headers)
        self._record("token", form, headers, method=method)
        if client is None:
            return _json(401, {"error": "invalid_client",
                               "error_description": f"client authentication failed ({method})"})
        grant = form.get("grant_type")
        if grant == "authorization_code":
            with self._lock:
                code = self.codes.pop(form.get("code", ""), None)
            if code is None or code["client_id"] != client.client_id \
                    or code["redirect_uri"] != form.get("redirect_uri"):
                return _json(400, {"error": "invalid_grant", "error_description": "bad code"})
            if _s256(form.get("code_verifier", "")) != code["challenge"]:
                return _json(400, {"error": "invalid_grant", "error_description": "PKCE verification failed"})
            if not form.get("resource") or form.get("resource") != code["resource"]:
                return _json(400, {"error": "invalid_target", "error_description": "resource missing or changed"})
            return self._issue(client, code["scopes"], form["resource"], refresh=True)
        if grant == "refresh_token" and self.settings.refresh_failure is not None:
            status = self.settings.refresh_failure
            return _json(status, {"error": "temporarily_unavailable" if status == 503 else "slow_down",
                                  "error_description": "try again later"})
        if grant == "refresh_token":
            with self._lock:
                old = self.refresh.pop(form.get("refresh_token", ""), None)
            if old is None or old.client_id != client.client_id:
                text = "unknown refresh token"
                if self.settings.echo_in_errors:
                    text += f" {form.get('refresh_token')}"
                return _json(400, {"error": "invalid_grant", "error_description": text})
            if not form.get("resource"):
                return _json(400, {"error": "invalid_target", "error_description": "resource missing"})
            return self._issue(client, old.scopes, form["resource"], refresh=True)
        if grant == "client_credentials":
            if method == "none":
                return _json(401, {"error": "unauthorized_client"})
            scopes = form["scope"].split() if form.get("scope") else ["mcp"]
            return self._issue(client, scopes, form.get("resource"), refresh=False)
        return _json(400, {"error": "unsupported_grant_type"})

    def _issue(self, client: Client, scopes: List[str], resource: Optional[str], refresh: bool) -> Response:
        s = self.settings
        granted = [scope for scope in scopes if scope not in s.never_grant]
        access = "at_" + secrets.token_urlsafe(24)
        issued = Issued(client.client_id, granted, resource, time.time() + s.expires_in)
        answer: Dict[str, Any] = {"access_token": access, "token_type": "Bearer", "expires_in": s.expires_in,
                                  "scope": " ".join(granted)}
        with self._lock:
            self.tokens[access] = issued
            self.issued_secrets.append(access)
            if refresh and s.refresh_tokens:
                token = "rt_" + secrets.token_urlsafe(24)
                self.refresh[token] = issued
                self.issued_secrets.append(token)
                answer["refresh_token"] = token
        return _json(200, answer)

    # -- /register -----------------------------------------------------------------------------------

    def _register(self, document: Dict[str, Any]) -> Response:
        uris = document.get("redirect_uris")
        if not isinstance(uris, list) or not uris:
            return _json(400, {"error": "invalid_redirect_uri"})
        method = document.get("token_endpoint_auth_method", "client_secret_basic")
        if method not in self.settings.auth_methods:
            return _json(400, {"error": "invalid_client_metadata", "error_description": f"{method} not supported"})
        client_id = "dyn_" + secrets.token_urlsafe(8)
        secret = None if method == "none" else "secret_" + secrets.token_urlsafe(16)
        client = Client(client_id, secret, method, list(uris), application_type=document.get("application_type"))
        with self._lock:
            self.clients[client_id] = client
            if secret:
                self.issued_secrets.append(secret)
        answer = {**document, "client_id": client_id, "token_endpoint_auth_method": method,
                  "client_id_issued_at": int(time.time())}
        if secret:
            answer["client_secret"] = secret
            answer["client_secret_expires_at"] = 0
        return _json(201, answer)


def _s256(verifier: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode("ascii")).digest()).rstrip(b"=").decode("ascii")


def _loopback_match(registered: str, used: str) -> bool:
    """RFC 8252 §7.3: a loopback redirect URI matches with any port."""
    a, b = urlsplit(registered), urlsplit(used)
    if a.hostname in ("127.0.0.1", "localhost") and a.scheme == "http":
        return (a.scheme, a.hostname, a.path) == (b.scheme, b.hostname, b.path)
    return registered == used


def _json(status: int, document: Any) -> Response:
    return status, {"Content-Type": "application/json", "Cache-Control": "no-store"}, json.dumps(document).encode()


class _Handler(BaseHTTPRequestHandler):
    server: "_Server"
    protocol_version = "HTTP/1.0"

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        headers = {k.lower(): v for k, v in self.headers.items()}
        status, extra, payload = self.server.logic.handle(self.command, self.path, headers, body)
        self.send_response(status)
        for name, value in extra.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST = _serve  # noqa: N815

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass


class _Server(HTTPServer):
    logic: AuthorizationServer

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.open_connections = 0  # accepted and not yet closed (the test process counts its fds)
        self.idle = threading.Condition()

    def get_request(self) -> Any:
        accepted = super().get_request()
        with self.idle:
            self.open_connections += 1
        return accepted

    def close_request(self, request: Any) -> None:
        super().close_request(request)
        with self.idle:
            self.open_connections -= 1
            self.idle.notify_all()


class AuthServerThread:
    """Serves an ``AuthorizationServer`` on 127.0.0.1:<ephemeral> from one background thread."""

    def __init__(self, logic: Optional[AuthorizationServer] = None, port: int = 0) -> None:
        self.logic = logic or AuthorizationServer()
        self.httpd = _Server(("127.0.0.1", port), _Handler)
        self.httpd.logic = self.logic
        self.origin = f"http://127.0.0.1:{self.httpd.server_port}"
        self.logic.origin = self.origin
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                       name="test-auth-server", daemon=True)

    def start(self) -> "AuthServerThread":
        self.thread.start()
        return self

    def wait_idle(self, timeout: float = 10.0) -> bool:
        """Block until every connection the server accepted is closed on its side too.

        A client has its whole answer before the server closes its end, so a test that
        counts file descriptors right after a request must wait for this first.
        """
        with self.httpd.idle:
            return self.httpd.idle.wait_for(lambda: self.httpd.open_connections == 0, timeout)

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, default=9000)
    args = parser.parse_args()
    served = AuthServerThread(port=args.port)
    print(f"issuer {served.origin}")
    served.httpd.serve_forever()


if __name__ == "__main__":
    main()
