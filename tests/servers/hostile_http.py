#!/usr/bin/env python
"""Test peer: a stdlib-only MCP HTTP server that attacks its client, one way per mode (run as a child process).

Usage: ``python tests/servers/hostile_http.py MODE [--response json|sse] [--count N] [--mb N]
[--tls CERT KEY] [--require-header NAME:VALUE]``

Serves 127.0.0.1 on an ephemeral port, prints ``PORT <n>`` on stdout, and
exits when its stdin closes (so a test ends it by closing the pipe).

The correct core (every mode): Streamable HTTP on ``/mcp``: ``initialize``
(protocolVersion 2025-11-25, or 2025-03-26 in ``batch`` mode; hands out
``Mcp-Session-Id: s<n>``), ``ping``, ``tools/list`` (echo), notifications and
client replies -> 202, ``DELETE`` -> 200, ``GET`` -> 405; answers as JSON or
SSE (``--response``). The legacy HTTP+SSE transport on ``/sse``: the stream
sends ``endpoint`` ``/messages?session=<n>``; POSTs there get 202 and their
answers come on that stream. With ``--require-header NAME:VALUE`` every
request without that header value gets 401 with a ``WWW-Authenticate``
challenge. ``/stats`` (GET) answers the JSON of the counters below.

Modes (what ``tools/call`` gets; ``echo`` behaves normally in ``normal`` and ``stress``)
  normal               echo(text) answers text
  stress               work(tag, delay_ms) answers text ``tag`` after ``delay_ms`` (the handler sleeps);
                       stats(expect_cancelled, wait_ms) waits up to wait_ms for that many
                       notifications/cancelled, then answers {"cancelled": n, "calls": n, "ids": [requestIds]}
  huge-content-length  JSON headers claiming Content-Length 10**15, 10 bytes of body, then the
                       connection stays open (until the client goes away)
  short-body           Content-Length 1000, 10 bytes, then the connection is closed
  wrong-content-type   a valid JSON-RPC answer labelled Content-Type text/html
  no-content-type      a valid JSON-RPC answer with no Content-Type at all
  gzip-bomb            Content-Encoding gzip: a body that inflates to ``--mb`` MiB (default 256) of
                       spaces, as JSON (--response json) or as one SSE event (--response sse)
  sse-endless          an event stream of keep-alive comments every 20 ms, never an answer
  sse-flood            an event stream of ``--count`` (default 20,000) notifications/message, then the answer
  request-flood        an event stream of ``--count`` (default 600) sampling/createMessage requests, then
                       notifications/message "sent"; the answer (the JSON of {"results": n, "errors": n})
                       once every one was replied to
  duplicate            an event stream: the answer ("first"), again ("second"), an answer for id + 1
  result-and-error     a JSON answer carrying both result and error
  string-id            JSON: the answer with the id as a string; SSE: that ("wrong"), then the real one ("right")
  nan                  a JSON answer holding NaN
  deep-nesting         a JSON answer whose result is nested 100,000 deep
  batch                JSON: an array holding a notifications/message and the answer
  answer-notifications every notification POST is answered 200 with a JSON-RPC response (id null)
"""

from __future__ import annotations

import json
import os
import socket
import ssl
import sys
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, List, Optional
from urllib.parse import parse_qs, urlsplit

Json = Dict[str, Any]

MODES = (
    "normal", "stress", "huge-content-length", "short-body", "wrong-content-type", "no-content-type",
    "gzip-bomb", "sse-endless", "sse-flood", "request-flood", "duplicate", "result-and-error", "string-id",
    "nan", "deep-nesting", "batch", "answer-notifications",
)


class State:
    def __init__(self, mode: str, response: str, count: Optional[int], mb: int,
                 required: Optional[tuple]) -> None:
        self.mode = mode
        self.response = response
        self.count = count
        self.mb = mb
        self.required = required
        self.cond = threading.Condition()
        self.sessions = 0
        self.cancelled = 0
        self.cancelled_ids: List[Any] = []
        self.calls = 0
        self.deletes = 0
        self.legacy: Dict[str, "Handler"] = {}
        self.replies: Dict[Any, Json] = {}
        self._bomb: Dict[str, bytes] = {}

    def bomb(self, kind: str) -> bytes:
        """A gzip body inflating to ``mb`` MiB: JSON text, or one SSE event."""
        with self.cond:
            if kind not in self._bomb:
                compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
                head = b"data: " if kind == "sse" else b'{"jsonrpc": "2.0", "id": 2, "result": "'
                parts = [compressor.compress(head)]
                block = b" " * (1 << 20)
                for _ in range(self.mb):
                    parts.append(compressor.compress(block))
                parts.append(compressor.compress(b"\n\n" if kind == "sse" else b'"}'))
                parts.append(compressor.flush())
                self._bomb[kind] = b"".join(parts)
            return self._bomb[kind]


STATE: State


def text_result(text: str) -> Json:
    return {"content": [{"type": "text", "text": text}]}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet
        pass

    # -- writing --------------------------------------------------------------------------------

    def send_body(self, status: int, body: bytes, content_type: Optional[str] = "application/json",
                  headers: Optional[Dict[str, str]] = None) -> None:
        self.send_response(status)
        if content_type is not None:
            self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(body)

    def send_json(self, message: Any, headers: Optional[Dict[str, str]] = None) -> None:
        self.send_body(200, json.dumps(message).encode(), headers=headers)

    def start_stream(self, headers: Optional[Dict[str, str]] = None) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self._write_lock = threading.Lock()

    def chunk(self, data: bytes) -> None:
        with self._write_lock:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()

    def event(self, message: Any, event: Optional[str] = None) -> None:
        head = f"event: {event}\n" if event else ""
        data = message if isinstance(message, str) else json.dumps(message)
        self.chunk((head + f"data: {data}\n\n").encode())

    def end_stream(self) -> None:
        self.chunk(b"")

    def reply(self, message: Json, headers: Optional[Dict[str, str]] = None) -> None:
        if STATE.response == "sse":
            self.start_stream(headers)
            self.event(message)
            self.end_stream()
        else:
            self.send_json(message, headers)

    def client_gone(self) -> bool:
        try:
            self.connection.settimeout(0.0)
            try:
                return self.connection.recv(1, socket.MSG_PEEK) == b""
            finally:
                self.connection.settimeout(None)
        except (BlockingIOError, InterruptedError, ssl.SSLWantReadError):
            return False
        except OSError:
            return True

    # -- requests -------------------------------------------------------------------------------

    def authorised(self) -> bool:
        if STATE.required is None:
            return True
        name, value = STATE.required
        if self.headers.get(name) == value:
            return True
        self.send_body(401, b'{"error": "unauthorized"}',
                       headers={"WWW-Authenticate": 'Bearer realm="hostile", error="invalid_token"'})
        return False

    def read_body(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            return json.loads(raw) if raw else None
        except ValueError:
            return None

    def do_DELETE(self) -> None:
        with STATE.cond:
            STATE.deletes += 1
        self.send_body(200, b"")

    def do_GET(self) -> None:
        path = urlsplit(self.path).path
        if path == "/stats":
            with STATE.cond:
                stats = {"cancelled": STATE.cancelled, "calls": STATE.calls, "sessions": STATE.sessions,
                         "deletes": STATE.deletes}
            return self.send_json(stats)
        if not self.authorised():
            return None
        if path == "/sse":
            return self.legacy_stream()
        return self.send_body(405, b"", headers={"Allow": "POST, DELETE"})

    def legacy_stream(self) -> None:
        with STATE.cond:
            STATE.sessions += 1
            session = str(STATE.sessions)
            STATE.legacy[session] = self
        self.start_stream()
        try:
            self.chunk(f"event: endpoint\ndata: /messages?session={session}\n\n".encode())
            while not self.client_gone():
                time.sleep(0.02)
        except OSError:
            pass
        finally:
            with STATE.cond:
                STATE.legacy.pop(session, None)
            self.close_connection = True

    def do_POST(self) -> None:
        body = self.read_body()
        if not self.authorised():
            return None
        parts = urlsplit(self.path)
        if parts.path == "/messages":
            session = (parse_qs(parts.query).get("session") or [""])[0]
            self.send_body(202, b"")
            stream = STATE.legacy.get(session)
            answer = self.answer(body, legacy=True)
            if stream is not None and answer is not None:
                try:
                    stream.event(answer, event="message")
                except OSError:
                    pass
            return None
        if not isinstance(body, dict) or "method" not in body:
            if isinstance(body, dict) and "id" in body:  # a reply to one of our requests
                with STATE.cond:
                    STATE.replies[body["id"]] = body
                    STATE.cond.notify_all()
            return self.send_body(202, b"")
        if "id" not in body:
            self.notification(body)
            return None
        if body["method"] == "tools/call":
            return self.tool_call(body)
        extra = {}
        if body["method"] == "initialize":
            with STATE.cond:
                STATE.sessions += 1
                extra["Mcp-Session-Id"] = f"s{STATE.sessions}"
        answer = self.answer(body)
        assert answer is not None
        self.reply(answer, extra)

    def notification(self, body: Json) -> None:
        if body.get("method") == "notifications/cancelled":
            with STATE.cond:
                STATE.cancelled += 1
                STATE.cancelled_ids.append((body.get("params") or {}).get("requestId"))
                STATE.cond.notify_all()
        if STATE.mode == "answer-notifications":
            self.send_json({"jsonrpc": "2.0", "id": None, "result": {}})
        else:
            self.send_body(202, b"")

    def answer(self, body: Any, legacy: bool = False) -> Optional[Json]:
        if not isinstance(body, dict) or "id" not in body or "method" not in body:
            return None
        method, rid = body["method"], body["id"]
        if method == "initialize":
            version = "2024-11-05" if legacy else ("2025-03-26" if STATE.mode == "batch" else "2025-11-25")
            result: Json = {"protocolVersion": version, "capabilities": {"tools": {}},
                            "serverInfo": {"name": "hostile-http", "version": "0.1"}}
        elif method == "tools/list":
            result = {"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}
        elif method == "tools/call":
            args = (body.get("params") or {}).get("arguments") or {}
            result = text_result(str(args.get("text", args.get("tag", ""))))
        elif method == "ping":
            result = {}
        else:
            return {"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "Method not found"}}
        return {"jsonrpc": "2.0", "id": rid, "result": result}

    # -- tools/call, per mode ----------------------------------------------------------------------

    def tool_call(self, body: Json) -> None:
        params = body.get("params") or {}
        if STATE.mode == "stress":
            return self.stress(body, params.get("name"), params.get("arguments") or {})
        if STATE.mode in ("normal", "answer-notifications") or params.get("name") != "echo":
            return self.reply(self.answer(body) or {})
        getattr(self, "mode_" + STATE.mode.replace("-", "_"))(body)

    def stress(self, body: Json, name: Any, args: Json) -> None:
        if name == "work":
            with STATE.cond:
                STATE.calls += 1
            delay = float(args.get("delay_ms", 0)) / 1000.0
            if delay > 0:
                time.sleep(delay)
            return self.reply(self.answer(body) or {})
        if name == "stats":
            expect = int(args.get("expect_cancelled", 0))
            deadline = time.monotonic() + float(args.get("wait_ms", 0)) / 1000.0
            with STATE.cond:
                while STATE.cancelled < expect and time.monotonic() < deadline:
                    STATE.cond.wait(deadline - time.monotonic())
                stats = {"cancelled": STATE.cancelled, "calls": STATE.calls, "ids": STATE.cancelled_ids}
            return self.reply({"jsonrpc": "2.0", "id": body["id"], "result": text_result(json.dumps(stats))})
        return self.reply(self.answer(body) or {})

    def mode_huge_content_length(self, body: Json) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(10 ** 15))
        self.end_headers()
        self.wfile.write(b'{"jsonrpc"')
        self.wfile.flush()
        while not self.client_gone():
            time.sleep(0.02)
        self.close_connection = True

    def mode_short_body(self, body: Json) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "1000")
        self.end_headers()
        self.wfile.write(b'{"jsonrpc"')
        self.wfile.flush()
        self.close_connection = True

    def mode_wrong_content_type(self, body: Json) -> None:
        self.send_body(200, json.dumps(self.answer(body)).encode(), content_type="text/html")

    def mode_no_content_type(self, body: Json) -> None:
        self.send_body(200, json.dumps(self.answer(body)).encode(), content_type=None)

    def mode_gzip_bomb(self, body: Json) -> None:
        sse = STATE.response == "sse"
        payload = STATE.bomb("sse" if sse else "json")
        self.send_body(200, payload, content_type="text/event-stream" if sse else "application/json",
                       headers={"Content-Encoding": "gzip"})

    def mode_sse_endless(self, body: Json) -> None:
        self.start_stream()
        try:
            while True:
                self.chunk(b": keep-alive\n\n")
                time.sleep(0.02)
        except OSError:
            pass
        self.close_connection = True

    def mode_sse_flood(self, body: Json) -> None:
        self.start_stream()
        event = b'data: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"debug","data":"x"}}\n\n'
        count = STATE.count or 20_000
        for start in range(0, count, 500):
            self.chunk(event * min(500, count - start))
        self.event(self.answer(body) or {})
        self.end_stream()

    def mode_request_flood(self, body: Json) -> None:
        count = STATE.count or 600
        self.start_stream()
        ids = [f"s{body['id']}-{n}" for n in range(count)]
        for request_id in ids:
            self.event({"jsonrpc": "2.0", "id": request_id, "method": "sampling/createMessage",
                        "params": {"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
                                   "maxTokens": 1}})
        self.event({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "sent"}})
        with STATE.cond:
            STATE.cond.wait_for(lambda: all(i in STATE.replies for i in ids), 60)
            replies = [STATE.replies.get(i) for i in ids]
        results = sum(1 for r in replies if r is not None and "result" in r)
        errors = sum(1 for r in replies if r is not None and "error" in r)
        self.event({"jsonrpc": "2.0", "id": body["id"],
                    "result": text_result(json.dumps({"results": results, "errors": errors}))})
        self.end_stream()

    def mode_duplicate(self, body: Json) -> None:
        self.start_stream()
        rid = body["id"]
        self.event({"jsonrpc": "2.0", "id": rid, "result": text_result("first")})
        self.event({"jsonrpc": "2.0", "id": rid, "result": text_result("second")})
        self.event({"jsonrpc": "2.0", "id": rid + 1, "result": text_result("early")})
        self.end_stream()

    def mode_result_and_error(self, body: Json) -> None:
        self.send_json({"jsonrpc": "2.0", "id": body["id"], "result": text_result("wrong"),
                        "error": {"code": -32603, "message": "also wrong"}})

    def mode_string_id(self, body: Json) -> None:
        rid = body["id"]
        wrong = {"jsonrpc": "2.0", "id": str(rid), "result": text_result("wrong")}
        if STATE.response == "sse":
            self.start_stream()
            self.event(wrong)
            self.event({"jsonrpc": "2.0", "id": rid, "result": text_result("right")})
            self.end_stream()
        else:
            self.send_json(wrong)

    def mode_nan(self, body: Json) -> None:
        self.send_body(200, b'{"jsonrpc": "2.0", "id": %d, "result": {"value": NaN}}' % body["id"])

    def mode_deep_nesting(self, body: Json) -> None:
        depth = 100_000
        self.send_body(200, b'{"jsonrpc": "2.0", "id": %d, "result": ' % body["id"] + b"[" * depth
                       + b"]" * depth + b"}")

    def mode_batch(self, body: Json) -> None:
        self.send_json([{"jsonrpc": "2.0", "method": "notifications/message",
                         "params": {"level": "info", "data": "in a batch"}},
                        {"jsonrpc": "2.0", "id": body["id"], "result": text_result("right")}])


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # clients that drop connections on purpose are the point


def option(args: List[str], name: str, count: int = 1) -> Optional[List[str]]:
    if name not in args:
        return None
    start = args.index(name) + 1
    return args[start:start + count]


def main() -> None:
    global STATE
    args = sys.argv[1:]
    if not args or args[0] not in MODES:
        sys.stderr.write(__doc__ or "")
        sys.exit(64)
    response = (option(args, "--response") or ["json"])[0]
    count = option(args, "--count")
    mb = option(args, "--mb")
    required = option(args, "--require-header")
    STATE = State(args[0], response, int(count[0]) if count else None, int(mb[0]) if mb else 256,
                  tuple(required[0].split(":", 1)) if required else None)
    server = Server(("127.0.0.1", 0), Handler)
    tls = option(args, "--tls", 2)
    if tls:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(tls[0], tls[1])
        server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    sys.stdout.write(f"PORT {server.server_address[1]}\n")
    sys.stdout.flush()
    sys.stdin.buffer.read()  # until the test closes the pipe
    os._exit(0)


if __name__ == "__main__":
    main()
