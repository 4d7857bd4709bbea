"""Test peer: a stdlib-only Streamable HTTP server that keeps sessions the way TypeScript-SDK servers do.

``SessionServer(port=0).start()`` serves ``POST /mcp`` on ``127.0.0.1``. Like the
usual TypeScript-SDK server code (a map from session id to transport), a request
that is not ``initialize`` and carries no session id the server knows is answered
``400`` with the JSON-RPC error ``-32000 "Bad Request: No valid session ID provided"``
(not 404). ``stop()`` ends the server the way a process exit does: the listening
socket and every open connection are closed, and the sessions are forgotten; a new
``SessionServer(port=old.port)`` is the restarted server, on the same port.

Legacy protocol only (2025-06-18 and earlier ``initialize``); JSON answers; GET is
405 (no listener stream); DELETE forgets the session.

Tools
    echo(text)     returns ``text``
    bad            answered 400 with a body that says nothing of the session
    tick           counts its calls (see ``calls``), returns the count
"""

from __future__ import annotations

import json
import threading
import uuid
from typing import Any, Dict, List, Optional

from _http_stub import StubHandler, StubServer

Json = Dict[str, Any]

NO_SESSION = {"jsonrpc": "2.0", "error": {"code": -32000, "message": "Bad Request: No valid session ID provided"},
              "id": None}
VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26")
TOOLS = [{"name": name, "description": name, "inputSchema": {"type": "object"}} for name in ("echo", "bad", "tick")]


class SessionServer(StubServer):
    def __init__(self, port: int = 0) -> None:
        self.sessions: set = set()
        self.seen: List[tuple] = []  # (method, session id sent or None, status answered)
        self.calls: Dict[str, int] = {}
        self.lock = threading.Lock()
        super().__init__(_Handler, name="test-ts-session-http", quiet=True, port=port)

    def methods(self) -> List[str]:
        with self.lock:
            return [method for method, _, _ in self.seen]

    def stop(self) -> None:
        """End like a process: stop listening, cut every connection, forget the sessions."""
        super().stop()
        with self.lock:
            self.sessions.clear()


class _Handler(StubHandler):
    owner: SessionServer

    def send_json(self, status: int, message: Optional[Json], headers: Optional[Dict[str, str]] = None) -> None:
        body = json.dumps(message).encode() if message is not None else b""
        self.send_response(status)
        if message is not None:
            self.send_header("Content-Type", "application/json")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        self.send_json(405, None, {"Allow": "POST, DELETE"})

    def do_DELETE(self) -> None:
        state = self.owner
        with state.lock:
            state.sessions.discard(self.headers.get("Mcp-Session-Id"))
        self.send_json(200, None)

    def do_POST(self) -> None:
        state = self.owner
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"null")
        method = body.get("method") if isinstance(body, dict) else None
        sent = self.headers.get("Mcp-Session-Id")
        with state.lock:
            known = sent in state.sessions
        if method == "initialize" and sent is None:
            session = uuid.uuid4().hex
            with state.lock:
                state.sessions.add(session)
                state.seen.append((method, None, 200))
            asked = body["params"].get("protocolVersion")
            result = {"protocolVersion": asked if asked in VERSIONS else VERSIONS[1],
                      "capabilities": {"tools": {}}, "serverInfo": {"name": "ts-like", "version": "1"}}
            self.send_json(200, {"jsonrpc": "2.0", "id": body["id"], "result": result}, {"Mcp-Session-Id": session})
            return
        if not known:
            with state.lock:
                state.seen.append((method, sent, 400))
            self.send_json(400, NO_SESSION)
            return
        with state.lock:
            state.seen.append((method, sent, 200))
        if "id" not in body:  # a notification or an answer
            self.send_json(202, None)
            return
        if method == "tools/call" and body["params"].get("name") == "bad":
            self.send_json(400, {"jsonrpc": "2.0", "id": body["id"],
                                 "error": {"code": -32602, "message": "Invalid arguments for tool bad"}})
            return
        self.send_json(200, {"jsonrpc": "2.0", "id": body["id"], **self.answer(method, body.get("params") or {})})

    def answer(self, method: Optional[str], params: Json) -> Json:
        if method == "ping":
            return {"result": {}}
        if method == "tools/list":
            return {"result": {"tools": TOOLS}}
        if method == "tools/call" and params.get("name") == "echo":
            text = str((params.get("arguments") or {}).get("text", ""))
            return {"result": {"content": [{"type": "text", "text": text}]}}
        if method == "tools/call" and params.get("name") == "tick":
            state = self.owner
            with state.lock:
                state.calls["tick"] = state.calls.get("tick", 0) + 1
                count = state.calls["tick"]
            return {"result": {"content": [{"type": "text", "text": str(count)}]}}
        return {"error": {"code": -32601, "message": f"Method not found: {method}"}}
