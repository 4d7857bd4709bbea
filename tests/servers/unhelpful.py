#!/usr/bin/env python
"""Test peer: stdlib-only stdio servers whose failures a user must be able to act on.

Usage: ``python tests/servers/unhelpful.py MODE``

Modes
  banner          writes a banner line and then, for every line it reads, a log line on stdout
                  (never JSON-RPC); it answers nothing
  banner-good     writes the banner line first, then serves like a correct legacy server
                  (initialize, tools/list with no tools, ping); tools/call is never answered
  refuse          answers every request with -32022 and no data
  refuse-listing  answers every request with -32022, data.supported ["2099-01-01"]
"""

from __future__ import annotations

import json
import sys

BANNER = "Weather server 1.4 starting on stdio, reading config from ./weather.toml " + "." * 200


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def main() -> None:
    mode = sys.argv[1]
    if mode.startswith("banner"):
        print(BANNER, flush=True)
    for line in sys.stdin:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if mode == "banner":
            print(f"received {message.get('method')}", flush=True)
            continue
        if "id" not in message or "method" not in message:
            continue
        if mode.startswith("refuse"):
            error = {"code": -32022, "message": "Unsupported protocol version"}
            if mode == "refuse-listing":
                error["data"] = {"supported": ["2099-01-01"]}
            send({"jsonrpc": "2.0", "id": message["id"], "error": error})
        elif message["method"] == "initialize":
            send({"jsonrpc": "2.0", "id": message["id"], "result": {
                "protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                "serverInfo": {"name": "unhelpful", "version": "0"}}})
        elif message["method"] == "tools/list":
            send({"jsonrpc": "2.0", "id": message["id"], "result": {"tools": []}})
        elif message["method"] == "ping":
            send({"jsonrpc": "2.0", "id": message["id"], "result": {}})
        elif message["method"] != "tools/call":
            send({"jsonrpc": "2.0", "id": message["id"],
                  "error": {"code": -32601, "message": "Method not found"}})


if __name__ == "__main__":
    main()
