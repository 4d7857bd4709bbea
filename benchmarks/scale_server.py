#!/usr/bin/env python3
"""The cheap stdlib MCP server behind ``scale.py``: stdio by default, HTTP with ``--http PORT_FILE``.

Tools (``tools/call``):

* ``echo``: returns its ``text`` argument, at once.
* ``big``: returns a text of ``bytes`` ASCII characters (the encoded answer is
  cached per size, so the server's own cost stays small).
* ``hold``: no answer yet; the request id is kept (stdio only).
* ``held``: how many requests are being held, at once.
* ``release``: answers every held request (one write), then this one with the count.

``tools/list`` lists those five and ``--tools N - 5`` more tools, each with a
description and a small input schema, named ``<name>_<index>`` so two servers
never share a tool name. Stdio requests are handled one at a time on one
thread; the HTTP server (``/json`` answers JSON, ``/sse`` answers one SSE
event) runs a thread per connection and binds 127.0.0.1 on an ephemeral port,
which it writes to ``PORT_FILE``. Either way the server exits when its parent
goes away (stdin EOF, or a watchdog that sees the parent change), so a killed
benchmark leaves nothing behind.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from typing import Any, Dict, List, Optional

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


class Tools:
    def __init__(self, name: str, count: int) -> None:
        self.name = name
        plain = {"type": "object", "properties": {}}
        tools: List[Dict[str, Any]] = [
            {"name": "echo", "description": "Return the given text unchanged.",
             "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}},
            {"name": "big", "description": "Return a text of the given number of bytes.",
             "inputSchema": {"type": "object", "properties": {"bytes": {"type": "integer"}}}},
            {"name": "hold", "description": "Answer only when release is called.", "inputSchema": plain},
            {"name": "held", "description": "How many calls are held.", "inputSchema": plain},
            {"name": "release", "description": "Answer every held call.", "inputSchema": plain},
        ]
        for i in range(max(0, count - len(tools))):
            tools.append({
                "name": "%s_%05d" % (name, i),
                "description": "Tool number %d of server %s: looks something up and returns it as text." % (i, name),
                "inputSchema": {"type": "object", "properties": {
                    "query": {"type": "string", "description": "what to look up"},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 100}}, "required": ["query"]},
            })
        self.list_result = {"tools": tools}
        self.big: Dict[int, bytes] = {}
        self.held: List[Any] = []

    def big_result(self, size: int) -> bytes:
        """The encoded ``result`` object for a ``big`` call of ``size`` characters."""
        if size not in self.big:
            self.big.clear()  # one size at a time: the server stays small
            # built as bytes, not through json: the server's own cost stays small beside the client's
            self.big[size] = b'{"content":[{"type":"text","text":"' + b"x" * size + b'"}],"isError":false}'
        return self.big[size]


def _reply(rid: Any, result: Any) -> bytes:
    return _dumps({"jsonrpc": "2.0", "id": rid, "result": result}).encode()


def _error(rid: Any, code: int, message: str) -> bytes:
    return _dumps({"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}}).encode()


def answer(tools: Tools, msg: Any) -> Optional[List[bytes]]:
    """The encoded lines to send for one message (None: nothing, e.g. a notification or a held call)."""
    if not isinstance(msg, dict) or "id" not in msg or not isinstance(msg.get("method"), str):
        return None
    rid, method = msg["id"], msg["method"]
    params: Dict[str, Any] = msg["params"] if isinstance(msg.get("params"), dict) else {}
    if method == "tools/call":
        name = params.get("name")
        args: Dict[str, Any] = params["arguments"] if isinstance(params.get("arguments"), dict) else {}
        if name == "echo":
            return [_reply(rid, {"content": [{"type": "text", "text": str(args.get("text", ""))}], "isError": False})]
        if name == "big":
            body = tools.big_result(int(args.get("bytes", 0)))
            return [b'{"jsonrpc":"2.0","id":%s,"result":%s}' % (_dumps(rid).encode(), body)]
        if name == "hold":
            tools.held.append(rid)
            return None
        if name == "held":
            return [_reply(rid, {"content": [{"type": "text", "text": str(len(tools.held))}], "isError": False})]
        if name == "release":
            held, tools.held = tools.held, []
            done = {"content": [{"type": "text", "text": "released"}], "isError": False}
            lines = [_reply(h, done) for h in held]
            lines.append(_reply(rid, {"content": [{"type": "text", "text": str(len(held))}], "isError": False}))
            return lines
        return [_error(rid, -32602, "Unknown tool: %r" % (name,))]
    if method == "tools/list":
        return [_reply(rid, tools.list_result)]
    if method == "ping":
        return [_reply(rid, {})]
    if method == "initialize":
        version = params.get("protocolVersion")
        if version not in ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"):
            version = "2025-11-25"
        return [_reply(rid, {"protocolVersion": version, "capabilities": {"tools": {}},
                             "serverInfo": {"name": tools.name, "version": "1"}})]
    return [_error(rid, -32601, "Method not found: %s" % method)]


def _watch_parent() -> None:
    """Exit as soon as the process that started us is gone (it was killed, or it forgot us)."""
    parent = os.getppid()

    def watch() -> None:
        while True:
            time.sleep(0.5)
            if os.getppid() != parent:
                os._exit(0)

    threading.Thread(target=watch, daemon=True).start()


def serve_stdio(tools: Tools) -> None:
    readline = sys.stdin.buffer.readline
    out = sys.stdout.buffer
    while True:
        line = readline()
        if not line:
            return
        if line.isspace():
            continue
        try:
            msg = json.loads(line)
        except ValueError:
            lines: Optional[List[bytes]] = [_error(None, -32700, "Parse error")]
        else:
            lines = answer(tools, msg)
        if lines:
            if len(lines) == 1:
                out.write(lines[0])
                out.write(b"\n")
            else:
                out.write(b"\n".join(lines) + b"\n")
            out.flush()


def serve_http(tools: Tools, port_file: str) -> None:
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True

        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            self.wfile.write(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")

        def do_DELETE(self) -> None:
            self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            with lock:
                lines = answer(tools, json.loads(body))
            if not lines:
                self.wfile.write(b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n")
                return
            data = lines[0]
            if self.path.startswith("/sse"):
                payload = b"event: message\ndata: " + data + b"\n\n"
                head = (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
                        b"Mcp-Session-Id: scale\r\nTransfer-Encoding: chunked\r\n\r\n")
                self.wfile.write(head + b"%x\r\n" % len(payload))
                self.wfile.write(payload)
                self.wfile.write(b"\r\n0\r\n\r\n")
                return
            head = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"
                    b"Mcp-Session-Id: scale\r\n\r\n" % len(data))
            if len(data) < 65536:
                self.wfile.write(head + data)  # one write: no Nagle/delayed-ACK stall between head and body
            else:
                self.wfile.write(head)
                self.wfile.write(data)

    class Server(ThreadingHTTPServer):
        daemon_threads = True
        request_queue_size = 1024

        def handle_error(self, request: Any, client_address: Any) -> None:
            pass

    httpd = Server(("127.0.0.1", 0), Handler)
    with open(port_file + ".tmp", "w") as f:
        f.write(str(httpd.server_address[1]))
    os.replace(port_file + ".tmp", port_file)
    httpd.serve_forever(poll_interval=0.2)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--name", default="scale")
    p.add_argument("--tools", type=int, default=1, help="how many tools tools/list returns (at least the five above)")
    p.add_argument("--http", metavar="PORT_FILE", help="serve HTTP on 127.0.0.1 instead of stdio")
    args = p.parse_args()
    _watch_parent()
    tools = Tools(args.name, args.tools)
    if args.http:
        serve_http(tools, args.http)
    else:
        serve_stdio(tools)


if __name__ == "__main__":
    try:
        main()
    except (KeyboardInterrupt, BrokenPipeError):
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except OSError:
            pass
