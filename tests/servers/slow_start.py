#!/usr/bin/env python
"""Test peer: a stdlib-only MCP stdio server that can be slow to start, crash, or change its tools.

Usage: ``python tests/servers/slow_start.py [options]``

Options
  --delay S          sleep S seconds before answering anything (a slow start)
  --list-delay S     sleep S seconds before answering each tools/list (a slow tool listing)
  --wait-for PATH    answer nothing until PATH exists (a start the test controls)
  --tools a,b,c      the tools listed (default: echo); each returns its ``text`` argument
  --name NAME        serverInfo name (default: slow-start)
  --exit-after-list  exit (code 4) right after answering tools/list
  --fail-after-start write "failing on purpose" to stderr and exit (code 5) once started
  --marker PATH      append one line "started <pid>" to PATH when the process starts

Stdin is read from the start on a thread, so the server exits at once when its
stdin closes, even while it is still "starting". Capabilities:
``{"tools": {"listChanged": true}}``; the protocol version asked for is accepted.

Listed tools return their ``text`` argument ("echo") or "<tool>:<text>" (any other name),
except the special tools below, which work whether listed or not:
  whoami           returns the --name
  pid              returns the process id as text
  crash            writes "crashing" to stderr and exits with code 3
  add_tool(name)   adds a tool to the list, sends notifications/tools/list_changed, returns "added"
  progress(steps)  sends progress 1..steps for the call's progressToken, returns "done"
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import sys
import threading
import time
from typing import Any, Dict, List, Optional

Json = Dict[str, Any]


def send(message: Json) -> None:
    sys.stdout.write(json.dumps(message, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def tool_entry(name: str) -> Json:
    return {"name": name, "description": f"Return the text ({name}).",
            "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}}


def text_result(text: str) -> Json:
    return {"content": [{"type": "text", "text": text}]}


def read_stdin(lines: "queue.Queue[Optional[bytes]]", eof: threading.Event) -> None:
    for line in sys.stdin.buffer:
        lines.put(line)
    lines.put(None)
    eof.set()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--delay", type=float, default=0.0)
    parser.add_argument("--list-delay", type=float, default=0.0)
    parser.add_argument("--wait-for")
    parser.add_argument("--tools", default="echo")
    parser.add_argument("--name", default="slow-start")
    parser.add_argument("--exit-after-list", action="store_true")
    parser.add_argument("--fail-after-start", action="store_true")
    parser.add_argument("--marker")
    options = parser.parse_args()
    if options.marker:
        with open(options.marker, "a") as marker:
            marker.write(f"started {os.getpid()}\n")
    tools: List[str] = [t for t in options.tools.split(",") if t]
    lines: "queue.Queue[Optional[bytes]]" = queue.Queue()
    eof = threading.Event()
    threading.Thread(target=read_stdin, args=(lines, eof), daemon=True).start()

    start_at = time.monotonic() + options.delay
    while time.monotonic() < start_at or (options.wait_for and not os.path.exists(options.wait_for)):
        if eof.wait(0.01):
            os._exit(0)  # stdin closed while starting
    if options.fail_after_start:
        sys.stderr.write("failing on purpose\n")
        sys.stderr.flush()
        os._exit(5)

    while True:
        line = lines.get()
        if line is None:
            return
        if not line.strip():
            continue
        message = json.loads(line)
        method, request_id = message.get("method"), message.get("id")
        if request_id is None or method is None:
            continue
        params = message.get("params") or {}
        if method == "initialize":
            send({"jsonrpc": "2.0", "id": request_id, "result": {
                "protocolVersion": params.get("protocolVersion", "2025-06-18"),
                "capabilities": {"tools": {"listChanged": True}},
                "serverInfo": {"name": options.name, "version": "1.0"}}})
        elif method == "ping":
            send({"jsonrpc": "2.0", "id": request_id, "result": {}})
        elif method == "tools/list":
            time.sleep(options.list_delay)
            send({"jsonrpc": "2.0", "id": request_id, "result": {"tools": [tool_entry(t) for t in tools]}})
            if options.exit_after_list:
                sys.stdout.flush()
                os._exit(4)
        elif method == "tools/call":
            name, args = params.get("name"), params.get("arguments") or {}
            if name == "whoami":
                send({"jsonrpc": "2.0", "id": request_id, "result": text_result(options.name)})
            elif name == "pid":
                send({"jsonrpc": "2.0", "id": request_id, "result": text_result(str(os.getpid()))})
            elif name == "crash":
                sys.stderr.write("crashing\n")
                sys.stderr.flush()
                os._exit(3)
            elif name == "add_tool":
                tools.append(str(args.get("name")))
                send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
                send({"jsonrpc": "2.0", "id": request_id, "result": text_result("added")})
            elif name == "progress":
                token = (params.get("_meta") or {}).get("progressToken")
                steps = int(args.get("steps", 3))
                for step in range(1, steps + 1):
                    if token is not None:
                        send({"jsonrpc": "2.0", "method": "notifications/progress",
                              "params": {"progressToken": token, "progress": step, "total": steps,
                                         "message": f"step {step}"}})
                    time.sleep(0.05)
                send({"jsonrpc": "2.0", "id": request_id, "result": text_result("done")})
            elif name in tools:
                text = str(args.get("text", ""))
                send({"jsonrpc": "2.0", "id": request_id,
                      "result": text_result(text if name == "echo" else f"{name}:{text}")})
            else:
                send({"jsonrpc": "2.0", "id": request_id,
                      "error": {"code": -32602, "message": f"Unknown tool: {name}"}})
        else:
            send({"jsonrpc": "2.0", "id": request_id,
                  "error": {"code": -32601, "message": f"Method not found: {method}"}})


if __name__ == "__main__":
    try:
        main()
    except BrokenPipeError:
        os._exit(1)
