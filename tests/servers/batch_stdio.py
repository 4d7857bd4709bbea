"""Test peer: a stdlib-only stdio MCP server (2025-11-25) that counts what batch calls do to it.

Tools (``tools/call``):

``work {"tag": t, "delay_ms": d, "fail": false}``
    answers text ``t`` after ``d`` ms (a timer thread answers, so calls overlap); with ``fail``
    it answers a JSON-RPC error -32000 ``"failed <t>"`` instead, after the same delay. The
    server counts the calls in flight (received, not yet answered or cancelled) and keeps the
    highest count, and the arrival time (its monotonic clock) of each call.
``once {"key": k, "slow_ms": d}`` (no annotations) / ``once_safe`` (``idempotentHint``) /
``once_read`` (``readOnlyHint``)
    counts an execution of ``k``; the first execution of each ``k`` answers after ``d`` ms,
    later ones at once (text ``"<k> <n>"``, n the execution number). With ``"crash_once": path``
    and no file at ``path``, the call creates the file (proof that it ran) and the server exits at
    once, without answering.
``stats {"expect_cancelled": n, "wait_ms": w}``
    waits up to ``w`` ms for ``n`` notifications/cancelled, then answers the JSON of
    {"calls", "max_in_flight", "cancelled", "cancelled_ids", "executions": {k: n}, "arrivals": [...]}.

A cancelled call is not answered (its in-flight count ends at the cancellation).
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from typing import Any, Dict, List

Json = Dict[str, Any]

VERSION = "2025-11-25"
_SCHEMA = {"type": "object"}
TOOLS = [
    {"name": "work", "inputSchema": _SCHEMA},
    {"name": "once", "inputSchema": _SCHEMA},
    {"name": "once_safe", "inputSchema": _SCHEMA, "annotations": {"idempotentHint": True}},
    {"name": "once_read", "inputSchema": _SCHEMA, "annotations": {"readOnlyHint": True}},
    {"name": "stats", "inputSchema": _SCHEMA, "annotations": {"readOnlyHint": True}},
]

_write = threading.Lock()


def send(message: Json) -> None:
    data = json.dumps(message) + "\n"
    with _write:
        sys.stdout.write(data)
        sys.stdout.flush()


class Server:
    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.in_flight: Dict[Any, bool] = {}
        self.max_in_flight = 0
        self.calls = 0
        self.cancelled = 0
        self.cancelled_ids: List[Any] = []
        self.executions: Dict[str, int] = {}
        self.arrivals: List[float] = []

    def serve(self) -> None:
        for line in sys.stdin:
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if isinstance(message, dict) and "method" in message:
                self.handle(message)

    def handle(self, message: Json) -> None:
        method, request_id, params = message["method"], message.get("id"), message.get("params") or {}
        if method == "notifications/cancelled":
            with self.cond:
                self.cancelled += 1
                self.cancelled_ids.append(params.get("requestId"))
                self.in_flight.pop(params.get("requestId"), None)
                self.cond.notify_all()
            return
        if request_id is None:
            return
        if method == "initialize":
            send({"jsonrpc": "2.0", "id": request_id, "result": {
                "protocolVersion": VERSION, "capabilities": {"tools": {}},
                "serverInfo": {"name": "batch-stdio", "version": "1"}}})
        elif method == "ping":
            send({"jsonrpc": "2.0", "id": request_id, "result": {}})
        elif method == "tools/list":
            send({"jsonrpc": "2.0", "id": request_id, "result": {"tools": TOOLS}})
        elif method == "tools/call":
            self.call(request_id, params.get("name"), params.get("arguments") or {})
        else:
            send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": "Method not found"}})

    def call(self, request_id: Any, name: Any, args: Json) -> None:
        if name == "work":
            with self.cond:
                self.calls += 1
                self.arrivals.append(time.monotonic())
                self.in_flight[request_id] = True
                self.max_in_flight = max(self.max_in_flight, len(self.in_flight))
            tag = str(args.get("tag", ""))
            if args.get("fail"):
                reply: Json = {"jsonrpc": "2.0", "id": request_id,
                               "error": {"code": -32000, "message": f"failed {tag}"}}
            else:
                reply = {"jsonrpc": "2.0", "id": request_id,
                         "result": {"content": [{"type": "text", "text": tag}]}}
            self.later(float(args.get("delay_ms", 0)), request_id, reply)
        elif name in ("once", "once_safe", "once_read"):
            key = str(args.get("key", ""))
            marker = args.get("crash_once")
            if marker and not os.path.exists(marker):  # ran (the marker says so), then the server dies
                with open(marker, "w"):
                    pass
                os._exit(3)
            with self.cond:
                count = self.executions[key] = self.executions.get(key, 0) + 1
                self.in_flight[request_id] = True
            reply = {"jsonrpc": "2.0", "id": request_id,
                     "result": {"content": [{"type": "text", "text": f"{key} {count}"}]}}
            self.later(float(args.get("slow_ms", 0)) if count == 1 else 0.0, request_id, reply)
        elif name == "stats":
            expect = int(args.get("expect_cancelled", 0))
            deadline = time.monotonic() + float(args.get("wait_ms", 0)) / 1000.0
            with self.cond:
                while self.cancelled < expect and time.monotonic() < deadline:
                    self.cond.wait(deadline - time.monotonic())
                stats = {"calls": self.calls, "max_in_flight": self.max_in_flight, "cancelled": self.cancelled,
                         "cancelled_ids": self.cancelled_ids, "executions": self.executions,
                         "arrivals": self.arrivals}
                text = json.dumps(stats)
            send({"jsonrpc": "2.0", "id": request_id, "result": {"content": [{"type": "text", "text": text}]}})
        else:
            send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32602, "message": "Unknown tool"}})

    def later(self, delay_ms: float, request_id: Any, reply: Json) -> None:
        def fire() -> None:
            with self.cond:
                if self.in_flight.pop(request_id, None) is None:
                    return  # cancelled: not answered
            send(reply)

        if delay_ms <= 0:
            fire()
        else:
            timer = threading.Timer(delay_ms / 1000.0, fire)
            timer.daemon = True
            timer.start()


if __name__ == "__main__":
    Server().serve()
