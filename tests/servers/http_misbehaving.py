"""Test peer: a stdlib-only MCP HTTP server that misbehaves on purpose (in-process, per test).

``MisbehavingServer(**options).start()`` serves ``127.0.0.1:<ephemeral>``
from a ThreadingHTTPServer. It records every request it gets (method, path,
headers, JSON body, arrival time) and lets a test wait for one.

A minimal MCP core on ``POST /mcp``: ``initialize`` (capabilities tools,
resources.subscribe, logging), ``ping``, ``tools/list`` (echo),
``resources/subscribe``, ``logging/setLevel``; notifications and client
replies get 202. Responses are JSON or SSE (``response=``).

Server options
    response="json"|"sse"      how normal answers are sent
    session=True               initialize hands out Mcp-Session-Id "sess-<n>"; a request
                               with a session id the server does not know gets 404
    status=(code, body, hdrs)  answer every POST with this status (500, 502, 401, 405, ...)
    delete_status=200          the answer to DELETE
    get="405"|"404"|"stream"   GET /mcp: 405, a web framework's HTML 404, or an SSE stream open until stop/expiry
    get_retry_ms=None          a retry field sent first on each GET stream
    legacy=False               2024-11-05 mode: POST /mcp -> 405 (legacy_post_status); GET -> SSE with an
                               endpoint event; POST <endpoint> -> 202, answers on the stream
    endpoint="/messages?sid=1" the endpoint event's data; None: never sent
    redirect_to=None           POST /mcp -> 307 to this URL
    redirect_methods=("POST",) the methods redirect_to applies to (GET, DELETE too)
    redirect_status=307        the redirect's status (301, 302, 303, 307, 308)
    redirect_body=b""          the redirect's body; "endless": 64 KiB every 10 ms until the client hangs up
    hold_notifications=False   (attribute) notification POSTs are never answered
    reject_all_sessions=False  (attribute) any POST carrying a session id gets 404

Tools (tools/call by name)
    echo(text)                 a normal answer
    expire                     forgets the current session after answering (the next request 404s)
    cut                        SSE: a notification, then half an event, then the connection drops
    resume(retry_ms, polls=1)  SSE: a priming event (id, retry, empty data), then the stream ends;
                               GET with Last-Event-ID resumes; after ``polls`` resumptions the
                               answer comes (each earlier GET ends after another priming event)
    silent                     never answered (the handler waits for the server to stop)
    drip                       SSE: one byte of an endless event every 50 ms
    badjson                    a truncated JSON body
    badsse                     SSE data that is not JSON
    big(mb)                    a valid answer of ``mb`` MiB of text (JSON or SSE per ``response``)
    notify                     SSE: notifications/message and a progress, then the answer
"""

from __future__ import annotations

import json
import socket
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

from _http_stub import StubHandler, StubServer
from urllib.parse import urlsplit

Json = Dict[str, Any]


class Record:
    def __init__(self, method: str, path: str, headers: Dict[str, str], body: Any, peer: Any = None) -> None:
        self.peer = peer  # the client's (host, port): one per TCP connection
        self.method = method
        self.path = path
        self.headers = headers
        self.body = body
        self.time = time.monotonic()

    @property
    def rpc_method(self) -> Optional[str]:
        return self.body.get("method") if isinstance(self.body, dict) else None

    def __repr__(self) -> str:
        return f"<{self.method} {self.path} {self.rpc_method or ''} {self.headers.get('mcp-session-id', '')}>"


class MisbehavingServer(StubServer):
    def __init__(self, *, response: str = "json", session: bool = False,
                 status: Optional[Tuple[int, str, Dict[str, str]]] = None, delete_status: int = 200,
                 get: str = "405", get_retry_ms: Optional[int] = None, legacy: bool = False,
                 endpoint: Optional[str] = "/messages?sid=1", redirect_to: Optional[str] = None,
                 legacy_post_status: int = 405, redirect_methods: Tuple[str, ...] = ("POST",),
                 redirect_status: int = 307, redirect_body: Any = b"") -> None:
        self.redirect_body = redirect_body
        self.redirect_methods = redirect_methods
        self.redirect_status = redirect_status
        self.legacy_post_status = legacy_post_status
        self.response = response
        self.session = session
        self.status = status
        self.delete_status = delete_status
        self.get = get
        self.get_retry_ms = get_retry_ms
        self.legacy = legacy
        self.endpoint = endpoint
        self.redirect_to = redirect_to
        self.hold_notifications = False
        self.reject_all_sessions = False
        self.sessions: set = set()
        self.session_count = 0
        self.pending_resumes: Dict[str, Tuple[Json, int]] = {}  # last event id -> (answer, polls left)
        self.legacy_streams: List[Any] = []  # handlers holding a legacy GET stream
        self.get_streams: List[Any] = []
        super().__init__(_Handler, name="test-misbehaving-http", quiet=True)

    # -- records ------------------------------------------------------------------------

    def wait_for(self, predicate: Callable[[Record], bool], timeout: float = 10.0, count: int = 1) -> List[Record]:
        with self.cond:
            ok = self.cond.wait_for(lambda: len([r for r in self.records if predicate(r)]) >= count, timeout)
            found = [r for r in self.records if predicate(r)]
        if not ok:
            raise AssertionError(f"the server did not get the expected request; got {self.records}")
        return found

    def calls(self, rpc_method: str) -> List[Record]:
        with self.cond:
            return [r for r in self.records if r.rpc_method == rpc_method]

    def wait_get_stream(self, timeout: float = 10.0) -> Any:
        """The first open Streamable GET stream, once there is one."""
        with self.cond:
            if not self.cond.wait_for(lambda: bool(self.get_streams), timeout):
                raise AssertionError("no GET stream opened")
            return self.get_streams[0]

    def push(self, message: Json, event_id: Optional[str] = None) -> None:
        """Send ``message`` on every open GET stream (legacy or Streamable)."""
        for handler in list(self.get_streams) + list(self.legacy_streams):
            handler.send_event(message, event_id=event_id)


class _Handler(StubHandler):
    owner: MisbehavingServer
    disable_nagle_algorithm = True

    def setup(self) -> None:
        super().setup()
        self._lock = threading.Lock()

    # -- writing helpers ----------------------------------------------------------------

    def send_json(self, payload: Any, status: int = 200, headers: Optional[Dict[str, str]] = None,
                  raw: Optional[bytes] = None) -> None:
        body = raw if raw is not None else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(body)

    def send_empty(self, status: int, headers: Optional[Dict[str, str]] = None, body: bytes = b"") -> None:
        self.send_response(status)
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if body:
            self.wfile.write(body)

    def start_stream(self, headers: Optional[Dict[str, str]] = None) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()

    def chunk(self, data: bytes) -> None:
        with self._lock:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()

    def end_stream(self) -> None:
        with self._lock:
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()

    def send_event(self, message: Any, event_id: Optional[str] = None, event: Optional[str] = None) -> None:
        text = "" if event is None else f"event: {event}\n"
        if event_id is not None:
            text += f"id: {event_id}\n"
        data = message if isinstance(message, str) else json.dumps(message)
        self.chunk((text + f"data: {data}\n\n").encode())

    def drop(self) -> None:
        """Close the connection abruptly."""
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    # -- requests -----------------------------------------------------------------------

    def _read_body(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            return json.loads(raw) if raw else None
        except ValueError:
            return raw

    def _headers(self) -> Dict[str, str]:
        return {k.lower(): v for k, v in self.headers.items()}

    def _redirected(self, method: str) -> bool:
        owner = self.owner
        if owner.redirect_to is None or method not in owner.redirect_methods \
                or urlsplit(owner.redirect_to).path == urlsplit(self.path).path and \
                urlsplit(owner.redirect_to).port in (None, owner.port):  # the target of a same-origin redirect
            return False
        if owner.redirect_body != "endless":
            self.send_empty(owner.redirect_status, {"Location": owner.redirect_to}, owner.redirect_body)
            return True
        self.send_response(owner.redirect_status)
        self.send_header("Location", owner.redirect_to)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            while not owner.stopping.wait(0.01):  # paced: a client that reads it all must not fill memory
                self.chunk(b"x" * 65536)
        except OSError:
            pass
        self.close_connection = True
        return True

    def do_DELETE(self) -> None:
        self.owner.record(Record("DELETE", self.path, self._headers(), None, self.client_address))
        if self._redirected("DELETE"):
            return
        self.owner.sessions.discard(self.headers.get("Mcp-Session-Id"))
        self.send_empty(self.owner.delete_status)

    def do_GET(self) -> None:
        owner = self.owner
        headers = self._headers()
        owner.record(Record("GET", self.path, headers, None, self.client_address))
        if self._redirected("GET"):
            return None
        if owner.legacy:
            return self._legacy_stream()
        last = headers.get("last-event-id")
        if last is not None and last in owner.pending_resumes:
            return self._resume(last)
        session = headers.get("mcp-session-id")
        if owner.session and session is not None and session not in owner.sessions:
            return self.send_json({"jsonrpc": "2.0", "id": None, "error": {"code": -32600,
                                                                          "message": "Session not found"}}, 404)
        if owner.get == "404":  # what Express answers for a route it lacks
            return self.send_empty(404, {"Content-Type": "text/html; charset=utf-8"},
                                   b"<!DOCTYPE html><html><head><title>Error</title></head>"
                                   b"<body><pre>Cannot GET /mcp</pre></body></html>")
        if owner.get != "stream":
            return self.send_empty(405, {"Allow": "POST, DELETE"})
        self.start_stream()
        if owner.get_retry_ms is not None:
            self.chunk(f"retry: {owner.get_retry_ms}\n\n".encode())
        with owner.cond:
            owner.get_streams.append(self)
            owner.cond.notify_all()
        try:
            while not owner.stopping.wait(0.05):
                if owner.session and session is not None and session not in owner.sessions:
                    break
                if getattr(self, "_closed_by_test", False):
                    break
            self.end_stream()
        except OSError:
            pass
        finally:
            if self in owner.get_streams:
                owner.get_streams.remove(self)
            self.close_connection = True

    def _legacy_stream(self) -> None:
        owner = self.owner
        self.start_stream()
        owner.legacy_streams.append(self)
        try:
            self.chunk(b": welcome\n\n")
            if owner.endpoint is not None:
                self.chunk(f"event: endpoint\ndata: {owner.endpoint}\n\n".encode())
            while not owner.stopping.wait(0.05):
                if getattr(self, "_closed_by_test", False):
                    self.drop()
                    return
                self.chunk(b": keep-alive\n\n")
        except OSError:
            pass
        finally:
            if self in owner.legacy_streams:
                owner.legacy_streams.remove(self)
            self.close_connection = True

    def do_POST(self) -> None:
        owner = self.owner
        body = self._read_body()
        headers = self._headers()
        owner.record(Record("POST", self.path, headers, body, self.client_address))
        if self._redirected("POST"):
            return None
        if owner.status is not None:
            code, text, extra = owner.status
            return self.send_empty(code, extra, text.encode())
        if owner.legacy:
            if self.path.startswith("/messages"):
                self.send_empty(202, body=b"Accepted")
                if isinstance(body, dict) and (body.get("params") or {}).get("name") == "silent":
                    return None  # never answered
                reply = self._answer(body, legacy=True)
                if reply is not None:
                    for stream in list(owner.legacy_streams):
                        stream.send_event(reply, event="message")
                return None
            return self.send_empty(owner.legacy_post_status, {"Allow": "GET"})
        if not isinstance(body, dict):
            return self.send_json({"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}},
                                  400)
        session = headers.get("mcp-session-id")
        if owner.reject_all_sessions and session is not None:
            return self.send_json({"jsonrpc": "2.0", "id": None,
                                   "error": {"code": -32600, "message": "Session not found"}}, 404)
        if owner.session and body.get("method") != "initialize" and session not in owner.sessions:
            if session is None:
                return self.send_json({"jsonrpc": "2.0", "id": None,
                                       "error": {"code": -32600, "message": "Missing session"}}, 400)
            return self.send_json({"jsonrpc": "2.0", "id": None,
                                   "error": {"code": -32600, "message": "Session not found"}}, 404)
        if "id" not in body or "method" not in body:
            if owner.hold_notifications:
                return self.tool_silent(body)
            return self.send_empty(202)
        if body["method"] == "tools/call":
            tool = (body.get("params") or {}).get("name")
            special = getattr(self, f"tool_{tool}", None)
            if special is not None:
                return special(body)
        reply = self._answer(body)
        extra = {}
        if body["method"] == "initialize" and owner.session:
            owner.session_count += 1
            new = f"sess-{owner.session_count}"
            owner.sessions.add(new)
            extra["Mcp-Session-Id"] = new
        self.reply(reply, extra)

    def reply(self, reply: Json, headers: Optional[Dict[str, str]] = None) -> None:
        if self.owner.response == "sse":
            self.start_stream(headers)
            self.send_event(reply)
            self.end_stream()
        else:
            self.send_json(reply, headers=headers)

    def _answer(self, body: Any, legacy: bool = False) -> Optional[Json]:
        if not isinstance(body, dict) or "id" not in body or "method" not in body:
            return None
        method, rid = body["method"], body["id"]
        params = body.get("params") or {}
        if method == "initialize":
            version = "2024-11-05" if legacy else "2025-11-25"
            result: Any = {"protocolVersion": version, "serverInfo": {"name": "misbehaving-http", "version": "0.1"},
                           "capabilities": {"tools": {}, "resources": {"subscribe": True}, "logging": {}}}
        elif method == "tools/list":
            result = {"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}
        elif method == "tools/call":
            args = params.get("arguments") or {}
            if params.get("name") == "big":
                text = "x" * int(float(args.get("mb", 1)) * 1024 * 1024)
            else:
                text = str(args.get("text", ""))
            result = {"content": [{"type": "text", "text": text}]}
        elif method in ("ping", "resources/subscribe", "logging/setLevel"):
            result = {}
        else:
            return {"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": f"Method not found: {method}"}}
        return {"jsonrpc": "2.0", "id": rid, "result": result}

    # -- tools that misbehave --------------------------------------------------------------

    def tool_expire(self, body: Json) -> None:
        self.reply(self._answer(body) or {})
        self.owner.sessions.discard(self.headers.get("Mcp-Session-Id"))

    def tool_cut(self, body: Json) -> None:
        self.start_stream()
        self.send_event({"jsonrpc": "2.0", "method": "notifications/message",
                         "params": {"level": "info", "data": "about to cut"}})
        self.chunk(b'data: {"jsonrpc": "2.0", "id": ')
        self.drop()

    def tool_resume(self, body: Json) -> None:
        args = (body.get("params") or {}).get("arguments") or {}
        retry = int(args.get("retry_ms", 300))
        polls = int(args.get("polls", 1))
        answer = {"jsonrpc": "2.0", "id": body["id"], "result": {"content": [{"type": "text", "text": "resumed"}]}}
        event_id = f"{body['id']}-0"
        self.owner.pending_resumes[event_id] = (answer, polls)
        self.start_stream()
        self.chunk(f"id: {event_id}\nretry: {retry}\ndata:\n\n".encode())
        self.end_stream()
        self.close_connection = True

    def _resume(self, last: str) -> None:
        answer, polls = self.owner.pending_resumes.pop(last)
        self.start_stream()
        if polls > 1:
            base, _, n = last.rpartition("-")
            next_id = f"{base}-{int(n) + 1}"
            self.owner.pending_resumes[next_id] = (answer, polls - 1)
            self.chunk(f"id: {next_id}\ndata:\n\n".encode())
        else:
            self.send_event(answer, event_id=f"{last}-final")
        self.end_stream()

    def tool_silent(self, body: Json) -> None:
        while not self.owner.stopping.wait(0.05):
            try:
                self.connection.settimeout(0.0)
                if self.connection.recv(1, socket.MSG_PEEK) == b"":
                    break  # the client went away
            except (BlockingIOError, InterruptedError):
                pass
            except OSError:
                break
            finally:
                try:
                    self.connection.settimeout(None)
                except OSError:
                    pass
        self.close_connection = True

    def tool_drip(self, body: Json) -> None:
        self.start_stream()
        try:
            self.chunk(b"data: ")
            while not self.owner.stopping.wait(0.05):
                self.chunk(b"d")
        except OSError:
            pass
        self.close_connection = True

    def tool_badjson(self, body: Json) -> None:
        self.send_json(None, raw=b'{"jsonrpc": "2.0", "id": %d, "result": ' % body["id"])

    def tool_badsse(self, body: Json) -> None:
        self.start_stream()
        self.chunk(b"data: {oops, not json\n\n")
        self.end_stream()

    def tool_notify(self, body: Json) -> None:
        self.start_stream()
        self.chunk(b": a comment, ignored\n\n")
        self.send_event({"jsonrpc": "2.0", "method": "notifications/message",
                         "params": {"level": "info", "data": "line one"}})
        token = ((body.get("params") or {}).get("_meta") or {}).get("progressToken")
        if token is not None:
            self.send_event({"jsonrpc": "2.0", "method": "notifications/progress",
                             "params": {"progressToken": token, "progress": 1, "total": 1}})
        # a multi-line data field, CRLF line ends
        answer = json.dumps({"jsonrpc": "2.0", "id": body["id"],
                             "result": {"content": [{"type": "text", "text": "notified"}]}}, indent=1)
        lines = "".join(f"data: {line}\r\n" for line in answer.splitlines())
        self.chunk((lines + "\r\n").encode())
        self.end_stream()


def same_origin(a: str, b: str) -> bool:
    pa, pb = urlsplit(a), urlsplit(b)
    return (pa.scheme, pa.hostname, pa.port) == (pb.scheme, pb.hostname, pb.port)
