#!/usr/bin/env python
"""Test peer: a stdlib-only MCP stdio server that strains its client's memory, nesting and pipes.

Usage: ``python tests/servers/flood_stdio.py MODE [--count N] [--size BYTES] [--depth N]``

It answers ``initialize`` (2025-11-25, capabilities ``{"tools": {}}``), ``ping``
(``{}``) and ``tools/list`` correctly, except where the mode says otherwise; the
hostile part happens on ``tools/call`` (any tool name).

Modes
  big-notifications  on ``tools/call``: ``--count`` (default 800) notifications/message whose
                     ``data`` is ``--size`` (default 512 KiB) bytes of text, then the answer "done"
  big-requests       on ``tools/call``: ``--count`` (default 300) sampling/createMessage requests
                     (ids "b<n>") of ``--size`` bytes each, without waiting; then it reads until each
                     is answered and answers the call with the JSON of {"results": n, "errors": n}
  deaf-flood         on ``tools/call flood``: stops reading stdin, sends ``--count`` (default
                     20,000) ``ping`` requests (ids "p<n>") and answers the call with "done", then
                     reads again; ``tools/call stats`` answers the JSON of {"answered": n} (how many
                     of its pings were answered so far)
  deep-schema        ``tools/list`` holds a tool "deep" whose inputSchema is ``--depth`` (default 250)
                     JSON levels deep (the whole message 4 more); ``tools/call`` answers "right"
  no-description     ``tools/list`` holds a tool "bare" with no description and one "told" whose
                     description is "Has one."; ``prompts/list`` likewise a prompt "bare" and one
                     "told"
  spawn-helper       at start, starts a helper process (a Python sleeping for an hour) and writes
                     ``HELPER <pid>`` on stderr; answers ``tools/call`` with the helper's pid
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from typing import Any, Dict, List, Optional

Json = Dict[str, Any]
MODES = ("big-notifications", "big-requests", "deaf-flood", "deep-schema", "no-description", "spawn-helper")

_write_lock = threading.Lock()


def write_raw(data: bytes) -> None:
    with _write_lock:
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()


def send(message: Any) -> None:
    write_raw(json.dumps(message, separators=(",", ":")).encode("utf-8") + b"\n")


def answer(request_id: Any, text: str) -> None:
    send({"jsonrpc": "2.0", "id": request_id, "result": {"content": [{"type": "text", "text": text}]}})


def read_message() -> Any:
    while True:
        line = sys.stdin.buffer.readline()
        if not line:
            return None
        if line.strip():
            try:
                return json.loads(line)
            except ValueError:
                continue


def nested_schema(depth: int) -> Json:
    """A schema ``depth`` JSON levels deep (itself included): arrays of arrays of ... objects."""
    schema: Json = {"type": "object"}
    for _ in range(depth - 1):
        schema = {"type": "array", "items": schema}
    return schema


class Server:
    def __init__(self, mode: str, count: Optional[int], size: Optional[int], depth: Optional[int]) -> None:
        self.mode = mode
        self.count = count
        self.size = size or 512 * 1024
        self.depth = depth or 250
        self.answered_pings = 0
        self.helper: Optional["subprocess.Popen[bytes]"] = None

    def serve(self) -> None:
        if self.mode == "spawn-helper":
            self.helper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
            sys.stderr.write("HELPER %d\n" % self.helper.pid)
            sys.stderr.flush()
        while True:
            message = read_message()
            if message is None:
                return
            self.handle(message)

    def tools(self) -> List[Json]:
        if self.mode == "deep-schema":
            return [{"name": "deep", "description": "Too deep.", "inputSchema": nested_schema(self.depth)}]
        if self.mode == "no-description":
            return [{"name": "bare", "inputSchema": {"type": "object"}},
                    {"name": "told", "description": "Has one.", "inputSchema": {"type": "object"}}]
        return [{"name": "echo", "description": "Echo.", "inputSchema": {"type": "object"}}]

    def handle(self, message: Any) -> None:
        if not isinstance(message, dict):
            return
        if "method" not in message:  # an answer to one of our requests
            if str(message.get("id", "")).startswith("p") and "result" in message:
                self.answered_pings += 1
            return
        method = message["method"]
        if "id" not in message:
            return
        request_id = message["id"]
        if method == "initialize":
            send({"jsonrpc": "2.0", "id": request_id, "result": {
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {}, **({"prompts": {}} if self.mode == "no-description" else {})},
                "serverInfo": {"name": "flood-stdio", "version": "0.1"}}})
        elif method == "ping":
            send({"jsonrpc": "2.0", "id": request_id, "result": {}})
        elif method == "tools/list":
            send({"jsonrpc": "2.0", "id": request_id, "result": {"tools": self.tools()}})
        elif method == "prompts/list" and self.mode == "no-description":
            send({"jsonrpc": "2.0", "id": request_id, "result": {"prompts": [
                {"name": "bare"}, {"name": "told", "description": "Has one."}]}})
        elif method == "tools/call":
            params = message.get("params") or {}
            getattr(self, "call_" + self.mode.replace("-", "_"))(request_id, params.get("name"))
        else:
            send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": "Method not found"}})

    def call_big_notifications(self, request_id: Any, tool: Any) -> None:
        line = json.dumps({"jsonrpc": "2.0", "method": "notifications/message",
                           "params": {"level": "info", "data": "n" * self.size}}).encode() + b"\n"
        for _ in range(self.count or 800):
            write_raw(line)
        answer(request_id, "done")

    def call_big_requests(self, request_id: Any, tool: Any) -> None:
        count = self.count or 300
        pending = {"b%d" % n for n in range(count)}
        text = "r" * self.size
        for n in range(count):
            send({"jsonrpc": "2.0", "id": "b%d" % n, "method": "sampling/createMessage", "params": {
                "messages": [{"role": "user", "content": {"type": "text", "text": text}}], "maxTokens": 1}})
        results = errors = 0
        while pending:
            message = read_message()
            if message is None:
                return
            if isinstance(message, dict) and "method" not in message and message.get("id") in pending:
                pending.discard(message["id"])
                if "error" in message:
                    errors += 1
                else:
                    results += 1
            else:
                self.handle(message)
        answer(request_id, json.dumps({"results": results, "errors": errors}))

    def call_deaf_flood(self, request_id: Any, tool: Any) -> None:
        if tool == "stats":
            answer(request_id, json.dumps({"answered": self.answered_pings}))
            return
        lines = [json.dumps({"jsonrpc": "2.0", "id": "p%d" % n, "method": "ping"}).encode() + b"\n"
                 for n in range(self.count or 20_000)]
        write_raw(b"".join(lines))  # nothing is read from stdin until all of it is out
        answer(request_id, "done")

    def call_deep_schema(self, request_id: Any, tool: Any) -> None:
        answer(request_id, "right")

    def call_no_description(self, request_id: Any, tool: Any) -> None:
        answer(request_id, "right")

    def call_spawn_helper(self, request_id: Any, tool: Any) -> None:
        answer(request_id, str(self.helper.pid if self.helper is not None else 0))


def option(args: List[str], name: str) -> Optional[int]:
    return int(args[args.index(name) + 1]) if name in args else None


def main() -> None:
    args = sys.argv[1:]
    if not args or args[0] not in MODES:
        sys.stderr.write("usage: flood_stdio.py MODE [--count N] [--size BYTES] [--depth N]\nmodes: %s\n"
                         % ", ".join(MODES))
        sys.exit(64)
    server = Server(args[0], option(args, "--count"), option(args, "--size"), option(args, "--depth"))
    try:
        server.serve()
    except BrokenPipeError:
        pass


if __name__ == "__main__":
    main()
