#!/usr/bin/env python3
"""Minimal, fast MCP stdio server used by the benchmarks (stdlib only).

Speaks newline-delimited JSON-RPC 2.0 on stdin/stdout and handles requests
one at a time, in arrival order, on a single thread. Supported methods:

* ``initialize``  -> echoes the client's protocolVersion when it is a known
  handshake-era version, otherwise answers with the latest one.
* ``ping``        -> ``{}``
* ``tools/list``  -> a single tool, ``echo``.
* ``tools/call``  -> ``echo`` returns its ``text`` argument as text content.

Anything else that carries an id (including the 2026-era ``server/discover``
probe) gets a -32601 "Method not found" error, which makes clients that probe
first fall back to ``initialize``. Notifications and responses are ignored.
The server exits when stdin reaches EOF.
"""

import json
import sys

SUPPORTED_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
LATEST_VERSION = "2025-11-25"

SERVER_INFO = {"name": "mcpsync-bench-echo", "version": "1.0.0"}

TOOLS_LIST_RESULT = {
    "tools": [
        {
            "name": "echo",
            "description": "Return the given text unchanged.",
            "inputSchema": {
                "type": "object",
                "properties": {"text": {"type": "string"}},
            },
        }
    ]
}

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
_loads = json.loads


def _error(msg_id, code, message):
    return {"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}}


def _result(msg_id, result):
    return {"jsonrpc": "2.0", "id": msg_id, "result": result}


def handle(msg):
    """Return the response object for one message, or None if no reply is due."""
    if not isinstance(msg, dict):
        return _error(None, -32600, "Invalid Request")
    method = msg.get("method")
    if "id" not in msg:
        # Notification (e.g. notifications/initialized, notifications/cancelled)
        # or a response to a server->client request (we never send any).
        if method is None and "result" not in msg and "error" not in msg:
            return _error(None, -32600, "Invalid Request")
        return None
    msg_id = msg["id"]
    if not isinstance(method, str):
        if "result" in msg or "error" in msg:
            return None  # a response; nothing to do
        return _error(msg_id, -32600, "Invalid Request")
    params = msg.get("params")
    if not isinstance(params, dict):
        params = {}

    if method == "tools/call":
        name = params.get("name")
        if name != "echo":
            return _error(msg_id, -32602, "Unknown tool: %r" % (name,))
        args = params.get("arguments")
        text = args.get("text", "") if isinstance(args, dict) else ""
        if not isinstance(text, str):
            text = _dumps(text)
        return _result(msg_id, {"content": [{"type": "text", "text": text}], "isError": False})
    if method == "ping":
        return _result(msg_id, {})
    if method == "tools/list":
        return _result(msg_id, TOOLS_LIST_RESULT)
    if method == "initialize":
        requested = params.get("protocolVersion")
        version = requested if requested in SUPPORTED_VERSIONS else LATEST_VERSION
        return _result(
            msg_id,
            {
                "protocolVersion": version,
                "capabilities": {"tools": {}},
                "serverInfo": SERVER_INFO,
            },
        )
    return _error(msg_id, -32601, "Method not found: %s" % method)


def main():
    readline = sys.stdin.buffer.readline
    out = sys.stdout.buffer
    write = out.write
    flush = out.flush
    while True:
        line = readline()
        if not line:
            break  # EOF: the client closed our stdin
        if line.isspace():
            continue
        try:
            msg = _loads(line)
        except ValueError:
            reply = _error(None, -32700, "Parse error")
        else:
            if isinstance(msg, list):  # JSON-RPC batch (2025-03-26 allowed these)
                if not msg:
                    reply = _error(None, -32600, "Invalid Request")
                else:
                    replies = [r for r in map(handle, msg) if r is not None]
                    reply = replies or None
            else:
                reply = handle(msg)
        if reply is not None:
            write(_dumps(reply).encode("utf-8") + b"\n")
            flush()


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        pass
    except BrokenPipeError:
        # The client went away mid-write; silence the flush at interpreter exit.
        import os

        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
