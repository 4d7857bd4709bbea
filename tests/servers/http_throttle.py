"""Test peer: a stdlib-only MCP HTTP server (2025-11-25, JSON answers) that throttles tool calls.

``ThrottleServer(refuse=[(429, "1"), (503, None)], fail_after_run=0).start()`` serves
``http://127.0.0.1:<port>/mcp`` in this process. The first ``len(refuse)`` ``tools/call`` POSTs
are refused with those statuses (and that ``Retry-After`` value, when not None) before anything
runs; the next ``fail_after_run`` calls run (counted) and then answer HTTP 500. Every other
``tools/call`` runs and answers text ``"ran <n>"``.

Tools: ``work`` (no annotations) and ``read`` (``readOnlyHint``).

Recorded, under ``lock``: ``posts`` (every tools/call POST, with its time on this process's
monotonic clock and the status it got) and ``executions`` (calls that ran).
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, List, Optional, Tuple

VERSION = "2025-11-25"
TOOLS = [{"name": "work", "inputSchema": {"type": "object"}},
         {"name": "read", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": True}}]


class ThrottleServer:
    def __init__(self, refuse: List[Tuple[int, Optional[str]]] = (), fail_after_run: int = 0) -> None:  # type: ignore[assignment]
        self.refuse = list(refuse)
        self.fail_after_run = fail_after_run
        self.lock = threading.Lock()
        self.posts: List[Tuple[float, int]] = []
        self.executions = 0
        self._httpd: Optional[ThreadingHTTPServer] = None
        self._thread: Optional[threading.Thread] = None

    @property
    def url(self) -> str:
        assert self._httpd is not None
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/mcp"

    def start(self) -> "ThrottleServer":
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                message = json.loads(self.rfile.read(length) or b"{}")
                owner.handle(self, message)

            def do_GET(self) -> None:  # noqa: N802
                self.reply(405, b"")

            def do_DELETE(self) -> None:  # noqa: N802
                self.reply(200, b"")

            def reply(self, status: int, body: bytes, headers: Optional[Dict[str, str]] = None) -> None:
                self.send_response(status)
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="http-throttle", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join()

    def __enter__(self) -> "ThrottleServer":
        return self.start()

    def __exit__(self, *exc_info: Any) -> None:
        self.stop()

    def handle(self, handler: Any, message: Dict[str, Any]) -> None:
        method, request_id = message.get("method"), message.get("id")
        if request_id is None:
            handler.reply(202, b"")
            return
        if method == "initialize":
            result: Dict[str, Any] = {"protocolVersion": VERSION, "capabilities": {"tools": {}},
                                      "serverInfo": {"name": "http-throttle", "version": "1"}}
        elif method == "tools/list":
            result = {"tools": TOOLS}
        elif method == "tools/call":
            with self.lock:
                if self.refuse:
                    status, after = self.refuse.pop(0)
                    self.posts.append((time.monotonic(), status))
                    headers = {"Retry-After": after} if after is not None else {}
                    handler.reply(status, b"busy", {"Content-Type": "text/plain", **headers})
                    return
                self.executions += 1
                ran = self.executions
                if self.fail_after_run:
                    self.fail_after_run -= 1
                    self.posts.append((time.monotonic(), 500))
                    handler.reply(500, b"broke after running", {"Content-Type": "text/plain"})
                    return
                self.posts.append((time.monotonic(), 200))
            result = {"content": [{"type": "text", "text": f"ran {ran}"}]}
        elif method == "ping":
            result = {}
        else:
            body = json.dumps({"jsonrpc": "2.0", "id": request_id,
                               "error": {"code": -32601, "message": "Method not found"}}).encode()
            handler.reply(200, body, {"Content-Type": "application/json"})
            return
        body = json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}).encode()
        handler.reply(200, body, {"Content-Type": "application/json"})
