"""Test peer: a stdlib-only Streamable HTTP server scripted for the protocol-era edge cases (in-process).

``EraHTTPServer(mode).start()`` serves ``POST /mcp`` on ``127.0.0.1:<ephemeral>`` and
records every request (HTTP method, lower-cased headers, JSON body).

Modes
  empty-400   a legacy server: a POST whose MCP-Protocol-Version is 2026-07-28 gets 400 with an
              empty body; initialize (2025-11-25), tools/list and tools/call echo work as usual
  modern      a 2026-07-28 server (JSON answers; every error with its 4xx status):
                server/discover, tools/list (echo, route with x-mcp-header Region, bad with an
                invalid x-mcp-header, ``naïve tool``, ask_route, block), tools/call:
                  echo(text)      the text
                  route(region, limit, flag)  400 -32020 unless the Mcp-Param-* headers match; the
                                  first call fails with -32020 anyway, as if the schema had just
                                  changed, and later ones until tools/list is called again
                  naïve tool      its name comes back (Mcp-Name must be base64-encoded)
                  block           SSE: an event, then nothing until the client closes the stream
                  flaky           the first call: SSE with one event that has an ``id:``, then the
                                  connection is cut before the response; later calls answer
                                  "answered on try N"
                  broken          every call's stream is cut that way
                  cut_late        the first call's stream is cut 0.3 s after its first event; later
                                  calls stream one event and then wait until the client closes
                  ask_route(region)  400 -32020 unless Mcp-Param-Region matches, on every round;
                                  the first round asks for input (requestState "r1"), the retry
                                  gets "routed to <region> after <answers>"
                subscriptions/listen: the first stream is acknowledged and then cut; later ones are
                acknowledged, send one resources/updated, and stay open until the client closes them
              an unknown method gets 404 -32601; GET and DELETE get 405
  modern-404  like modern, but server/discover is unknown (404 -32601); every result names the
              server in its _meta (serverInfo era-404, version 4)
  empty-ok    a legacy server that answers any method it does not know, server/discover included,
              with an empty success ``{}``; otherwise as empty-400
"""

from __future__ import annotations

import base64
import json
import socket
import threading
from typing import Any, Callable, Dict, List, Optional

from _http_stub import StubHandler, StubServer

Json = Dict[str, Any]
MODERN = "2026-07-28"
TOOLS = [
    {"name": "echo", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}},
    {"name": "route", "inputSchema": {"type": "object", "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"}, "limit": {"type": "integer", "x-mcp-header": "Limit"},
        "flag": {"type": "boolean", "x-mcp-header": "Flag"}}}},
    {"name": "bad", "inputSchema": {"type": "object", "properties": {
        "items": {"type": "array", "items": {"type": "string", "x-mcp-header": "Item"}}}}},
    {"name": "naïve tool", "inputSchema": {"type": "object"}},
    {"name": "ask_route", "inputSchema": {"type": "object", "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"}}}},
    {"name": "block", "inputSchema": {"type": "object", "properties": {"seconds": {"type": "number"}}}},
]


class Record:
    def __init__(self, method: str, headers: Dict[str, str], body: Any) -> None:
        self.method = method
        self.headers = headers
        self.body = body

    @property
    def rpc_method(self) -> Optional[str]:
        return self.body.get("method") if isinstance(self.body, dict) else None

    def __repr__(self) -> str:
        return f"<{self.method} {self.rpc_method}>"


def decode(value: Optional[str]) -> Optional[str]:
    if value is not None and value.startswith("=?base64?") and value.endswith("?="):
        return base64.b64decode(value[len("=?base64?"):-2]).decode("utf-8")
    return value


class EraHTTPServer(StubServer):
    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.relisted = False
        self.route_calls = 0
        self.listens = 0
        self.flaky_calls = 0
        self.stream_closed = threading.Event()
        super().__init__(_Handler, name="test-era-http")

    def calls(self, rpc_method: Optional[str] = None) -> List[Record]:
        with self.cond:
            return [r for r in self.records if rpc_method is None or r.rpc_method == rpc_method]

    def wait_for(self, predicate: Callable[[], bool], timeout: float = 10.0) -> None:
        with self.cond:
            if not self.cond.wait_for(predicate, timeout):
                raise AssertionError(f"the server did not see it; records: {self.records}")


class _Handler(StubHandler):
    owner: EraHTTPServer

    def send(self, status: int, payload: Any = None) -> None:
        body = b"" if payload is None else json.dumps(payload).encode()
        self.send_response(status)
        if payload is not None:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        self.owner.record(Record("GET", {k.lower(): v for k, v in self.headers.items()}, None))
        self.send(405)

    do_DELETE = do_GET

    def do_POST(self) -> None:
        owner = self.owner
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"null")
        headers = {k.lower(): v for k, v in self.headers.items()}
        owner.record(Record("POST", headers, body))
        if "id" not in body:
            return self.send(202)
        modern_header = headers.get("mcp-protocol-version") == MODERN
        if owner.mode == "empty-400":
            return self.send(400) if modern_header else self.legacy(body)
        if owner.mode == "empty-ok":
            return self.legacy(body, unknown_ok=True)
        return self.modern(body, headers)

    def legacy(self, body: Json, unknown_ok: bool = False) -> None:
        rid, method = body["id"], body["method"]
        if method == "initialize":
            result: Json = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                            "serverInfo": {"name": "empty-400", "version": "1"}}
        elif method == "tools/list":
            result = {"tools": TOOLS[:1]}
        elif method == "tools/call":
            result = {"content": [{"type": "text", "text": (body["params"].get("arguments") or {}).get("text")}]}
        elif unknown_ok:
            result = {}
        else:
            return self.send(200, {"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "no"}})
        self.send(200, {"jsonrpc": "2.0", "id": rid, "result": result})

    def fail(self, rid: Any, status: int, code: int, message: str) -> None:
        self.send(status, {"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}})

    def modern(self, body: Json, headers: Dict[str, str]) -> None:
        owner = self.owner
        rid, method, params = body["id"], body["method"], body.get("params") or {}
        if headers.get("mcp-protocol-version") != MODERN or headers.get("mcp-method") != method:
            return self.fail(rid, 400, -32020, "Header mismatch: MCP-Protocol-Version or Mcp-Method")
        signed = {"_meta": {"io.modelcontextprotocol/serverInfo": {"name": "era-404", "version": "4"}}} \
            if owner.mode == "modern-404" else {}
        ok = lambda result: self.send(200, {"jsonrpc": "2.0", "id": rid, "result": {"resultType": "complete",
                                                                                   **signed, **result}})
        if method == "server/discover" and owner.mode == "modern":
            return ok({"supportedVersions": [MODERN], "capabilities": {"tools": {"listChanged": False},
                                                                      "resources": {"subscribe": True}},
                       "ttlMs": 0, "cacheScope": "private"})
        if method == "tools/list":
            owner.relisted = True
            return ok({"tools": TOOLS, "ttlMs": 0, "cacheScope": "private"})
        if method == "subscriptions/listen":
            return self.listen(rid, params)
        if method != "tools/call":
            return self.fail(rid, 404, -32601, f"Method not found: {method}")
        name = params.get("name")
        if decode(headers.get("mcp-name")) != name:
            return self.fail(rid, 400, -32020, "Header mismatch: Mcp-Name")
        arguments = params.get("arguments") or {}
        if name == "route":
            owner.route_calls += 1
            if owner.route_calls == 1 or not owner.relisted:  # as if the tool's schema had just changed
                owner.relisted = False
                return self.fail(rid, 400, -32020, "Header mismatch: Mcp-Param-Region")
            expected = {"mcp-param-region": arguments.get("region"), "mcp-param-limit": arguments.get("limit"),
                        "mcp-param-flag": arguments.get("flag")}
            for header, value in expected.items():
                shown = None if value is None else (("true" if value else "false") if isinstance(value, bool)
                                                    else str(value))
                if decode(headers.get(header)) != shown:
                    return self.fail(rid, 400, -32020, f"Header mismatch: {header}")
            return ok({"content": [{"type": "text", "text": f"routed to {arguments.get('region')}"}]})
        if name == "block":
            return self.block(rid)
        if name == "ask_route":
            if decode(headers.get("mcp-param-region")) != arguments.get("region"):
                return self.fail(rid, 400, -32020, "Header mismatch: Mcp-Param-Region")
            if params.get("requestState") != "r1":
                return ok({"resultType": "input_required", "requestState": "r1", "inputRequests": {
                    "q": {"method": "elicitation/create", "params": {"message": "Sure?", "requestedSchema": {
                        "type": "object", "properties": {"ok": {"type": "boolean"}}}}}}})
            answers = json.dumps(params.get("inputResponses"), sort_keys=True)
            return ok({"content": [{"type": "text", "text": f"routed to {arguments.get('region')} after {answers}"}]})
        if name == "cut_late":
            with owner.cond:
                owner.flaky_calls += 1
                tries = owner.flaky_calls
            if tries == 1:
                owner.stopping.wait(0.3)
                return self.cut(rid)
            return self.block(rid)
        if name in ("flaky", "broken"):
            with owner.cond:
                owner.flaky_calls += 1
                tries = owner.flaky_calls
            if name == "broken" or tries == 1:
                return self.cut(rid)
            return ok({"content": [{"type": "text", "text": f"answered on try {tries}"}]})
        text = name if name == "naïve tool" else str(arguments.get("text"))
        ok({"content": [{"type": "text", "text": text}]})

    def stream(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def event(self, message: Json) -> None:
        data = b"data: " + json.dumps(message).encode() + b"\n\n"
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def listen(self, rid: Any, params: Json) -> None:
        owner = self.owner
        with owner.cond:
            owner.listens += 1
            first = owner.listens == 1
        uris = (params.get("notifications") or {}).get("resourceSubscriptions") or []
        meta = {"io.modelcontextprotocol/subscriptionId": rid}
        self.stream()
        self.event({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
                    "params": {"notifications": {"resourceSubscriptions": uris}, "_meta": meta}})
        if first:  # the stream breaks: no graceful result, so the client listens again
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        self.event({"jsonrpc": "2.0", "method": "notifications/resources/updated",
                    "params": {"uri": uris[0], "_meta": meta}})
        self.wait_for_close()

    def cut(self, rid: Any) -> None:
        """An SSE stream with one event carrying an id (resumable, were this legacy), then cut."""
        self.stream()
        data = (b"id: ev-1\nretry: 10\ndata: " + json.dumps({"jsonrpc": "2.0", "method": "notifications/message",
                "params": {"level": "info", "data": f"working on {rid}"}}).encode() + b"\n\n")
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()
        self.close_connection = True
        self.connection.shutdown(socket.SHUT_RDWR)

    def block(self, rid: Any) -> None:
        self.stream()
        self.event({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "x"}})
        self.wait_for_close()
        self.owner.stream_closed.set()

    def wait_for_close(self) -> None:
        owner = self.owner
        self.connection.settimeout(0.05)
        while not owner.stopping.is_set():
            try:
                if self.connection.recv(1, socket.MSG_PEEK) == b"":
                    break  # the client closed the stream: that is the cancellation
            except socket.timeout:
                continue
            except OSError:
                break
        self.close_connection = True
