#!/usr/bin/env python
"""Test peer: a tiny stdlib-only MCP stdio server that reports its own environment.

Usage: ``python tests/servers/env_server.py``

``initialize`` is answered with protocolVersion 2025-11-25, capabilities
``{"tools": {}}`` and serverInfo ``{"name": "env-server", "version": "0.1"}``;
notifications are ignored; ``ping`` -> ``{}``; ``tools/list`` -> the single
tool ``env``; ``tools/call env`` -> one text block holding the JSON of
``os.environ``; unknown methods -> -32601, unknown tools -> -32602. Exits at EOF.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any, Dict

Json = Dict[str, Any]

ENV_TOOL: Json = {
    "name": "env",
    "description": "Return the server's environment as JSON.",
    "inputSchema": {"type": "object", "properties": {}},
}


def send(message: Json) -> None:
    sys.stdout.buffer.write(json.dumps(message, separators=(",", ":")).encode("utf-8") + b"\n")
    sys.stdout.buffer.flush()


def answer(request_id: Any, result: Json) -> None:
    send({"jsonrpc": "2.0", "id": request_id, "result": result})


def fail(request_id: Any, code: int, text: str) -> None:
    send({"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": text}})


def handle(message: Any) -> None:
    if not isinstance(message, dict) or "method" not in message or "id" not in message:
        return  # notifications and stray replies need no answer
    request_id, method = message["id"], message["method"]
    params = message.get("params") or {}
    if method == "initialize":
        answer(request_id, {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                            "serverInfo": {"name": "env-server", "version": "0.1"}})
    elif method == "ping":
        answer(request_id, {})
    elif method == "tools/list":
        answer(request_id, {"tools": [ENV_TOOL]})
    elif method == "tools/call" and params.get("name") == "env":
        answer(request_id, {"content": [{"type": "text", "text": json.dumps(dict(os.environ))}]})
    elif method == "tools/call":
        fail(request_id, -32602, "Unknown tool: %s" % params.get("name"))
    else:
        fail(request_id, -32601, "Method not found: %s" % method)


def main() -> None:
    for line in sys.stdin.buffer:
        if not line.strip():
            continue
        try:
            message = json.loads(line)
        except ValueError:
            fail(None, -32700, "Parse error")
            continue
        handle(message)


if __name__ == "__main__":
    main()
