#!/usr/bin/env python
"""Test peer: official-SDK MCP servers that require bearer tokens from the test authorization server.

Two builds:

* ``Gate``: the SDK server of ``http_sdk_server`` (Streamable HTTP at
  ``/mcp``, SSE responses; the legacy HTTP+SSE transport at ``/sse``) behind a
  small ASGI layer that checks tokens with an ``AuthorizationServer`` and is
  reconfigured per test through ``GateSettings``: where the protected resource
  metadata is (named by the 401 header, at the path-aware or the root
  well-known URL, or nowhere), what it says (``resource``, scopes,
  authorization servers), which tools need extra scopes (403 step-up), and
  whether the authorization server is mounted at this origin (the 2025-03-26
  layout). It records every request it sees in ``requests``.
* ``make_native_app``: an SDK server using the SDK's own auth support
  (``AuthSettings``, a ``TokenVerifier``, ``RequireAuthMiddleware`` and its
  protected resource metadata route), unchanged.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Dict, List, Optional, Set

import http_sdk_server
from auth_server import AuthorizationServer

Scope = Dict[str, Any]
Receive = Callable[[], Awaitable[Dict[str, Any]]]
Send = Callable[[Dict[str, Any]], Awaitable[None]]

PRM = "/.well-known/oauth-protected-resource"
HEADER_PRM = "/meta/resource.json"


@dataclass
class GateSettings:
    prm: str = "path"                     # "header" (only at HEADER_PRM), "path", "root", "none"
    header_metadata: bool = True          # put resource_metadata= in the 401 challenge
    resource: Optional[str] = None        # what the metadata says (default: the endpoint's URL)
    authorization_servers: Optional[List[str]] = None   # default: [the authorization server's issuer]
    prm_scopes: Optional[List[str]] = field(default_factory=lambda: ["mcp"])
    challenge_scope: Optional[str] = None  # scope= in the 401 challenge
    required: Set[str] = field(default_factory=lambda: {"mcp"})
    tool_scopes: Dict[str, str] = field(default_factory=dict)   # tool name -> extra scope it needs (403)
    step_up_hint: bool = True             # scope= in the 403 challenge
    legacy_as: bool = False               # serve the authorization server at this origin too
    client_document: Optional[Dict[str, Any]] = None   # served at /client.json (CIMD)


class Gate:
    """The ASGI layer in front of the SDK apps; see the module docstring."""

    def __init__(self, authorization: AuthorizationServer) -> None:
        self.authorization = authorization
        self.origin = ""
        self.settings = GateSettings()
        self.requests: List[Dict[str, Any]] = []
        self._lock = threading.Lock()
        sdk = http_sdk_server.build_server("protected-sdk-server")
        self.streamable = sdk.streamable_http_app(json_response=False, stateless_http=False)
        self.legacy = http_sdk_server.build_server("protected-sdk-server").sse_app()

    def reset(self) -> None:
        with self._lock:
            self.settings = GateSettings()
            self.requests = []

    def resource_for(self, endpoint: str) -> str:
        return self.settings.resource or self.origin + endpoint

    def _prm(self, endpoint: str) -> Dict[str, Any]:
        s = self.settings
        document: Dict[str, Any] = {"resource": self.resource_for(endpoint),
                                    "authorization_servers": s.authorization_servers or [self.authorization.issuer],
                                    "bearer_methods_supported": ["header"]}
        if s.prm_scopes is not None:
            document["scopes_supported"] = list(s.prm_scopes)
        return document

    def _prm_url(self, endpoint: str) -> Optional[str]:
        kind = self.settings.prm
        if kind == "header":
            return self.origin + HEADER_PRM
        if kind == "path":
            return self.origin + PRM + endpoint
        if kind == "root":
            return self.origin + PRM
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.streamable(scope, receive, send)
            return
        if scope["type"] != "http":
            return
        path, method = scope["path"], scope["method"]
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        query = scope.get("query_string", b"").decode("latin-1")
        record = {"method": method, "path": path, "query": query, "authorization": headers.get("authorization"),
                  "status": None}
        with self._lock:
            self.requests.append(record)
        s = self.settings
        endpoint = "/sse" if path.startswith(("/sse", "/messages")) else "/mcp"
        if path.startswith("/.well-known/oauth-protected-resource") or path == HEADER_PRM:
            wanted = {"header": [HEADER_PRM], "path": [PRM + "/mcp", PRM + "/sse"], "root": [PRM]}.get(s.prm, [])
            if path in wanted:
                await _send_json(send, 200, self._prm(path[len(PRM):] if s.prm == "path" else "/mcp"))
            else:
                await _send_json(send, 404, {"error": "not_found"})
            return
        if path == "/client.json" and s.client_document is not None:
            await _send_json(send, 200, s.client_document)
            return
        body = b""
        if method == "POST":
            body = await _read_body(receive)
        if s.legacy_as and not path.startswith(("/mcp", "/sse", "/messages")):
            target = path + (f"?{query}" if query else "")
            status, extra, payload = self.authorization.handle(method, target, headers, body)
            await _send(send, status, extra, payload)
            return
        problem = self._check(headers.get("authorization"), endpoint, body)
        record["status"] = problem[0] if problem is not None else "passed"
        if problem is not None:
            status, challenge = problem
            await _send_json(send, status, {"error": "unauthorized"}, {"WWW-Authenticate": challenge})
            return
        app = self.legacy if endpoint == "/sse" else self.streamable
        await app(scope, _replay(body, receive) if method == "POST" else receive, send)

    def _check(self, authorization: Optional[str], endpoint: str, body: bytes) -> Optional[tuple]:
        """None when the request may pass, else (status, WWW-Authenticate)."""
        s = self.settings
        params = ['realm="mcp"']
        metadata = self._prm_url(endpoint)
        if metadata is not None and (s.header_metadata or s.prm == "header"):
            params.append(f'resource_metadata="{metadata}"')
        token = authorization[7:] if authorization and authorization.lower().startswith("bearer ") else None
        issued = self.authorization.verify(token) if token else None
        if issued is None or issued.resource != self.resource_for(endpoint):
            if token:
                params.insert(1, 'error="invalid_token"')
            if s.challenge_scope:
                params.append(f'scope="{s.challenge_scope}"')
            return 401, "Bearer " + ", ".join(params)
        needed = set(s.required) - set(issued.scopes)
        tool_scope = _tool_scope(body, s.tool_scopes)
        if tool_scope is not None and tool_scope not in issued.scopes:
            needed.add(tool_scope)
        if needed:
            params.insert(1, 'error="insufficient_scope"')
            if s.step_up_hint:
                params.append(f'scope="{" ".join(sorted(needed))}"')
            return 403, "Bearer " + ", ".join(params)
        return None


def _tool_scope(body: bytes, tool_scopes: Dict[str, str]) -> Optional[str]:
    if not body or not tool_scopes:
        return None
    try:
        message = json.loads(body)
    except ValueError:
        return None
    if isinstance(message, dict) and message.get("method") == "tools/call":
        return tool_scopes.get(str((message.get("params") or {}).get("name")))
    return None


async def _read_body(receive: Receive) -> bytes:
    chunks = []
    while True:
        message = await receive()
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            return b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    sent = False

    async def replayed() -> Dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed


async def _send(send: Send, status: int, headers: Dict[str, str], payload: bytes) -> None:
    raw = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()]
    raw.append((b"content-length", str(len(payload)).encode()))
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": payload})


async def _send_json(send: Send, status: int, document: Any, headers: Optional[Dict[str, str]] = None) -> None:
    await _send(send, status, {"Content-Type": "application/json", **(headers or {})}, json.dumps(document).encode())


# -- the SDK's own auth support ------------------------------------------------------------------

def make_native_app(authorization: AuthorizationServer, origin: str) -> Any:
    """An SDK MCP server at ``origin + "/mcp"`` protected by the SDK's own bearer auth (scope ``mcp``)."""
    from mcp.server.auth.provider import AccessToken
    from mcp.server.auth.settings import AuthSettings
    from mcp.server.mcpserver import MCPServer

    class Verifier:
        async def verify_token(self, token: str) -> Optional[AccessToken]:
            issued = authorization.verify(token)
            if issued is None:
                return None
            return AccessToken(token=token, client_id=issued.client_id, scopes=issued.scopes,
                               expires_at=int(issued.expires_at), resource=issued.resource)

    settings = AuthSettings(issuer_url=authorization.issuer, resource_server_url=f"{origin}/mcp",
                            required_scopes=["mcp"], validate_token_resource=True)
    server = MCPServer("native-auth-server", version="1.0.0", log_level="WARNING", auth=settings,
                       token_verifier=Verifier())

    @server.tool(description="Return the given text unchanged.")
    async def echo(text: str) -> str:
        return text

    return server.streamable_http_app(json_response=False)

