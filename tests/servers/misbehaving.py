#!/usr/bin/env python
"""Test peer: a tiny stdlib-only MCP stdio server that misbehaves on purpose.

Usage: ``python tests/servers/misbehaving.py MODE [--version V]``

The correct core: ``initialize`` is answered with protocolVersion 2025-11-25
(or ``--version V``), capabilities ``{"tools": {}}`` and serverInfo
``{"name": "misbehaving", "version": "0.1"}``; notifications are ignored;
``ping`` -> ``{}``; ``tools/list`` -> the single tool ``echo``;
``tools/call echo {"text": ...}`` -> ``{"content": [{"type": "text", "text": ...}]}``;
unknown methods -> -32601; unknown tools -> -32602; an unparseable line ->
-32700 with id null. Response ids are always the request's id, same JSON type.
Mode-specific tools below are callable but not listed.

Modes
  good             no faults
  garbage          before every response: "this is not json", a line of invalid UTF-8,
                   [1,2,3], "str", {"foo":1} and an empty line
  unknown-ids      before every response: a result for id 999999 and an error for id "bogus"
  huge-line        tool huge(mb=100): answers with one ~100 MB line (written 1 MB at a time),
                   i.e. the only answer to that request; later requests are served normally
  crash            tool crash: 60 lines "stderr line N" + "fatal: crashing now" on stderr, exit 3
  exit-early       writes "cannot start: missing config" to stderr and exits 2 before reading
  silent           tools/call is never answered; every message read is logged to stderr as
                   "RECV <method> <id>" ("-" when absent); notifications/cancelled also
                   logs "CANCELLED <requestId> <reason>"
  stderr-flood     a background thread writes ~20 MB of lines to stderr, then "FLOOD DONE"
  grandchild       spawns a sleeping grandchild python (it inherits stdin/stdout/stderr),
                   writes "GRANDCHILD <pid>" to stderr; tool pid returns that pid as text
  ignore-close     ignores SIGTERM and keeps running after stdin EOF (needs SIGKILL)
  ping-first       on initialize, first sends ping (id "srv-1"), waits for the reply, writes
                   "PONG <reply json>" to stderr, then answers initialize
  server-requests  tool ask: sends roots/list (id "r1"), sampling/createMessage (id 77) and
                   unknown/method (id 78), waits for all three replies, then answers with the
                   JSON of {"r1": reply, "77": reply, "78": reply} (whole reply messages)
  version-old      initialize answers protocolVersion 2024-11-05
  version-bad      initialize answers protocolVersion 1999-01-01
  notify           tool notify: sends notifications/message (info, "hello"),
                   notifications/tools/list_changed and, if the call carried a progressToken,
                   notifications/progress (progress 1, total 1), then answers "notified"
  deaf             tool deaf (listed): answers "deaf", then closes its stdin and keeps running
                   (its stdout open) until it is signalled: the client's next write breaks the pipe
                   while its reader still sees a live server
  echo-id          like good (ids are always echoed verbatim); additionally every request is
                   logged as "ID <method> <id json>" on stderr and tool id returns the JSON of
                   the request id it was called with
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from typing import Any, Dict, List, Optional

Json = Dict[str, Any]

MODES = (
    "good", "garbage", "unknown-ids", "huge-line", "crash", "exit-early", "silent",
    "stderr-flood", "grandchild", "ignore-close", "ping-first", "server-requests",
    "version-old", "version-bad", "notify", "echo-id", "deaf",
)

DEAF_TOOL: Json = {"name": "deaf", "description": "Stop reading stdin.", "inputSchema": {"type": "object"}}

ECHO_TOOL: Json = {
    "name": "echo",
    "description": "Echo the text back.",
    "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
}

GARBAGE_LINES = [b"this is not json\n", b"\xff\xfe\x80 bad\n", b"[1,2,3]\n", b'"str"\n', b'{"foo":1}\n', b"\n"]


def write_raw(data: bytes) -> None:
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()


def send(message: Json) -> None:
    write_raw(json.dumps(message, separators=(",", ":")).encode("utf-8") + b"\n")


def log(text: str) -> None:
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


def show_id(message: Json, key: str = "id") -> str:
    return str(message[key]) if key in message else "-"


def text_result(text: str) -> Json:
    return {"content": [{"type": "text", "text": text}]}


class Server:
    def __init__(self, mode: str, version: str) -> None:
        self.mode = mode
        self.version = version
        self.grandchild_pid: Optional[int] = None

    # ------------------------------------------------------------ wire I/O
    def respond(self, request_id: Any, result: Optional[Json] = None, error: Optional[Json] = None) -> None:
        if self.mode == "garbage":
            for line in GARBAGE_LINES:
                write_raw(line)
        elif self.mode == "unknown-ids":
            send({"jsonrpc": "2.0", "id": 999999, "result": {}})
            send({"jsonrpc": "2.0", "id": "bogus", "error": {"code": -32603, "message": "bogus"}})
        message: Json = {"jsonrpc": "2.0", "id": request_id}
        if error is not None:
            message["error"] = error
        else:
            message["result"] = result if result is not None else {}
        send(message)

    def error(self, request_id: Any, code: int, text: str) -> None:
        self.respond(request_id, error={"code": code, "message": text})

    def read_message(self) -> Any:
        """Return the next JSON message from stdin, or None at EOF."""
        while True:
            line = sys.stdin.buffer.readline()
            if not line:
                return None
            if not line.strip():
                continue
            try:
                message = json.loads(line)
            except ValueError:
                self.error(None, -32700, "Parse error")
                continue
            if self.mode == "silent" and isinstance(message, dict):
                log("RECV %s %s" % (message.get("method", "-"), show_id(message)))
            return message

    def wait_for_replies(self, wanted_ids: List[Any]) -> Dict[str, Json]:
        """Read until replies for all ``wanted_ids`` arrived; serve anything else meanwhile."""
        wanted = {json.dumps(i): i for i in wanted_ids}  # keyed by JSON text: "77" != 77
        replies: Dict[str, Json] = {}
        while len(replies) < len(wanted):
            message = self.read_message()
            if message is None:
                sys.exit(0)
            if isinstance(message, dict) and "method" not in message and json.dumps(message.get("id")) in wanted:
                replies[json.dumps(message["id"])] = message
            else:
                self.handle(message)
        return replies

    # ----------------------------------------------------------- dispatch
    def handle(self, message: Any) -> None:
        if not isinstance(message, dict):
            self.error(None, -32600, "Invalid Request")
            return
        method = message.get("method")
        if method is None:
            return  # a reply nobody is waiting for
        if "id" not in message:
            if method == "notifications/cancelled" and self.mode == "silent":
                params = message.get("params") or {}
                log("CANCELLED %s %s" % (show_id(params, "requestId"), params.get("reason", "-")))
            return  # notifications need no answer
        request_id = message["id"]
        params = message.get("params") or {}
        if self.mode == "echo-id":
            log("ID %s %s" % (method, json.dumps(request_id)))
        if method == "initialize":
            self.initialize(request_id)
        elif method == "ping":
            self.respond(request_id, {})
        elif method == "tools/list":
            self.respond(request_id, {"tools": [ECHO_TOOL, DEAF_TOOL] if self.mode == "deaf" else [ECHO_TOOL]})
        elif method == "tools/call":
            if self.mode != "silent":  # silent: read and ignore
                self.call_tool(request_id, params)
        else:
            self.error(request_id, -32601, "Method not found: %s" % method)

    def initialize(self, request_id: Any) -> None:
        if self.mode == "ping-first":
            send({"jsonrpc": "2.0", "id": "srv-1", "method": "ping"})
            reply = self.wait_for_replies(["srv-1"])[json.dumps("srv-1")]
            log("PONG " + json.dumps(reply))
        self.respond(request_id, {
            "protocolVersion": self.version,
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "misbehaving", "version": "0.1"},
        })

    def call_tool(self, request_id: Any, params: Json) -> None:
        name = params.get("name")
        args = params.get("arguments") or {}
        if name == "echo":
            self.respond(request_id, text_result(str(args.get("text", ""))))
        elif name == "huge" and self.mode == "huge-line":
            self.huge_line(request_id, int(args.get("mb", 100)))
        elif name == "crash" and self.mode == "crash":
            for n in range(1, 61):
                log("stderr line %d" % n)
            log("fatal: crashing now")
            sys.exit(3)
        elif name == "pid" and self.mode == "grandchild":
            self.respond(request_id, text_result(str(self.grandchild_pid)))
        elif name == "ask" and self.mode == "server-requests":
            self.ask(request_id)
        elif name == "notify" and self.mode == "notify":
            send({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "hello"}})
            send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
            token = (params.get("_meta") or {}).get("progressToken")
            if token is not None:
                send({"jsonrpc": "2.0", "method": "notifications/progress",
                      "params": {"progressToken": token, "progress": 1, "total": 1}})
            self.respond(request_id, text_result("notified"))
        elif name == "deaf" and self.mode == "deaf":
            os.close(0)  # first, so a client that has the answer finds nobody reading its pipe
            self.respond(request_id, text_result("deaf"))
            threading.Event().wait()  # until the client's close signals this process
        elif name == "id" and self.mode == "echo-id":
            self.respond(request_id, text_result(json.dumps(request_id)))
        else:
            self.error(request_id, -32602, "Unknown tool: %s" % name)

    def huge_line(self, request_id: Any, megabytes: int) -> None:
        head = '{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"' % json.dumps(request_id)
        write_raw(head.encode("utf-8"))
        chunk = b"x" * (1024 * 1024)
        for _ in range(megabytes):
            write_raw(chunk)
        write_raw(b'"}]}}\n')

    def ask(self, request_id: Any) -> None:
        send({"jsonrpc": "2.0", "id": "r1", "method": "roots/list"})
        send({"jsonrpc": "2.0", "id": 77, "method": "sampling/createMessage", "params": {
            "messages": [{"role": "user", "content": {"type": "text", "text": "Say hi"}}],
            "maxTokens": 16,
        }})
        send({"jsonrpc": "2.0", "id": 78, "method": "unknown/method", "params": {}})
        replies = self.wait_for_replies(["r1", 77, 78])
        by_id = {"r1": replies[json.dumps("r1")], "77": replies["77"], "78": replies["78"]}
        self.respond(request_id, text_result(json.dumps(by_id, sort_keys=True)))

    # ---------------------------------------------------------- main loop
    def serve(self) -> None:
        while True:
            message = self.read_message()
            if message is None:
                break
            self.handle(message)
        if self.mode == "ignore-close":
            log("stdin closed; ignoring it")
            while True:
                time.sleep(1)


def flood_stderr() -> None:
    # os.write, not sys.stderr: a blocked daemon thread must not hold the
    # sys.stderr buffer lock when the interpreter shuts down.
    line = b"y" * 1000
    for n in range(20000):
        os.write(2, b"flood %06d %s\n" % (n, line))
    os.write(2, b"FLOOD DONE\n")


def main() -> None:
    args = sys.argv[1:]
    if not args or args[0] not in MODES:
        sys.stderr.write("usage: misbehaving.py MODE [--version V]\nmodes: %s\n" % ", ".join(MODES))
        sys.exit(64)
    mode = args[0]
    version = {"version-old": "2024-11-05", "version-bad": "1999-01-01"}.get(mode, "2025-11-25")
    if "--version" in args:
        version = args[args.index("--version") + 1]

    if mode == "exit-early":
        log("cannot start: missing config")
        sys.exit(2)
    server = Server(mode, version)
    if mode == "stderr-flood":
        threading.Thread(target=flood_stderr, daemon=True).start()
    elif mode == "grandchild":
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
        server.grandchild_pid = child.pid
        log("GRANDCHILD %d" % child.pid)
    elif mode == "ignore-close":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)

    try:
        server.serve()
    except BrokenPipeError:
        os._exit(1)  # the client went away; nothing left to say


if __name__ == "__main__":
    main()
