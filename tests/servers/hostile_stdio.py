#!/usr/bin/env python
"""Test peer: a stdlib-only MCP stdio server that attacks its client, one way per mode.

Usage: ``python tests/servers/hostile_stdio.py MODE [--version V] [--crash-after N] [--count N]``

The correct core, as in ``misbehaving.py``: ``initialize`` (protocolVersion
2025-11-25 or ``--version V``, capabilities ``{"tools": {}}``), ``ping`` ->
``{}``, ``tools/list`` -> ``echo`` (and ``work``, ``stats``, ``crash`` in
``stress``); unknown methods -> -32601. Response ids are echoed verbatim
unless the mode says otherwise. In every mode but
``stress`` the hostile part happens when ``tools/call`` is received; ``ping``
stays correct, so a test can show the client is still usable afterwards.

Modes (what happens on ``tools/call``)
  deep-nesting        a line of 200,000 nested arrays, then a response for the call's id whose
                      result is nested 200,000 deep, then the real answer ("right")
  result-and-error    one response carrying both "result" and "error"
  string-id           a response with the id as a JSON string ("wrong"), then the real one ("right")
  duplicate           the answer ("first"), the same answer again ("second"), and an answer for
                      the next id (id + 1, "early") before the client has sent that request
  answer-notifications  every notification the client sends is answered with a result and an
                      error whose id is null, and one whose id is 0; calls are answered normally
  batch               (use --version 2025-03-26) an empty array line, then one JSON array holding
                      a notifications/message, the answer and the number 5
  nan                 responses for the call's id holding NaN, Infinity and -Infinity, then the
                      real answer ("right")
  notification-flood  ``--count`` (default 50,000) notifications/message, then the answer ("done")
  request-flood       ``--count`` (default 1,000) sampling/createMessage requests (ids "s<n>"), sent
                      without waiting, then notifications/message "sent" (info); reads until every
                      one is answered, then answers the call with
                      the JSON of {"results": n, "errors": n, "codes": {code: n}}
  stop-reading        after the handshake, never reads stdin again (sleeps until killed)
  garbage-bytes       20,000 lines of seeded random bytes (every byte value but newline), then
                      the answer ("right")
  printenv            the answer's text is the JSON of os.environ
  huge-pages          (on ``tools/list``, not ``tools/call``) pages of one tool each whose description
                      is 1 MiB, ``--count`` pages (default 80: more than 64 MiB in all), each with a
                      ``nextCursor`` but the last
  stress              concurrent work (below)

``stress``: ``tools/call work {"tag": t, "delay_ms": d}`` answers text ``t`` after ``d`` ms
(answers are written by a timer thread, so many calls overlap; a cancelled call is still
answered, late). ``tools/call stats {"expect_cancelled": n, "wait_ms": w}`` waits up to ``w``
ms until at least ``n`` notifications/cancelled arrived, then answers the JSON of
{"cancelled": n, "calls": n, "ids": [the requestId of each cancellation, in arrival order]}.
``tools/call crash`` exits with code 3 at once.
``--crash-after N``: exit with code 3 on receiving the N-th ``work`` call.
``--version 2026-07-28``: the modern era: ``server/discover`` describes the server,
``initialize`` gets -32022, and a request whose ``_meta`` lacks the version gets -32602.
"""

from __future__ import annotations

import heapq
import json
import os
import random
import sys
import threading
import time
from typing import Any, Dict, List, Optional, Tuple

Json = Dict[str, Any]
MODERN = "2026-07-28"

MODES = (
    "deep-nesting", "result-and-error", "string-id", "duplicate", "answer-notifications", "batch", "nan",
    "notification-flood", "request-flood", "stop-reading", "garbage-bytes", "printenv", "stress",
    "huge-pages",
)

ECHO_TOOL: Json = {"name": "echo", "inputSchema": {"type": "object"}}
STRESS_TOOLS = [{"name": name, "inputSchema": {"type": "object"}} for name in ("work", "stats", "crash")]

_write_lock = threading.Lock()


def write_raw(data: bytes) -> None:
    with _write_lock:
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()


def send(message: Any) -> None:
    write_raw(json.dumps(message, separators=(",", ":")).encode("utf-8") + b"\n")


def text_result(text: str) -> Json:
    return {"content": [{"type": "text", "text": text}]}


def answer(request_id: Any, text: str) -> None:
    send({"jsonrpc": "2.0", "id": request_id, "result": text_result(text)})


def read_message() -> Any:
    while True:
        line = sys.stdin.buffer.readline()
        if not line:
            return None
        if line.strip():
            try:
                return json.loads(line)
            except ValueError:
                send({"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}})


class Server:
    def __init__(self, mode: str, version: str, count: Optional[int], crash_after: Optional[int]) -> None:
        self.mode = mode
        self.version = version
        self.count = count
        self.crash_after = crash_after
        # stress
        self.cond = threading.Condition()
        self.due: List[Tuple[float, int, Any, str]] = []
        self.sequence = 0
        self.cancelled = 0
        self.cancelled_ids: List[Any] = []
        self.calls = 0

    def serve(self) -> None:
        if self.mode == "stress":
            threading.Thread(target=self.timer, daemon=True).start()
        while True:
            message = read_message()
            if message is None:
                return
            self.handle(message)

    def handle(self, message: Any) -> None:
        if not isinstance(message, dict) or "method" not in message:
            return
        method = message["method"]
        params = message.get("params") or {}
        if "id" not in message:
            self.notification(method, params)
            return
        request_id = message["id"]
        if self.version == MODERN and not self.modern_request(request_id, method, params):
            return
        if method == "initialize":
            send({"jsonrpc": "2.0", "id": request_id, "result": {
                "protocolVersion": self.version, "capabilities": {"tools": {}},
                "serverInfo": {"name": "hostile-stdio", "version": "0.1"}}})
        elif method == "ping":
            send({"jsonrpc": "2.0", "id": request_id, "result": {}})
        elif method == "tools/list" and self.mode == "huge-pages":
            page = int(params.get("cursor") or 0)
            result: Json = {"tools": [{"name": f"t{page}", "description": "x" * 2 ** 20,
                                       "inputSchema": {"type": "object"}}]}
            if page + 1 < (self.count or 80):
                result["nextCursor"] = str(page + 1)
            send({"jsonrpc": "2.0", "id": request_id, "result": result})
        elif method == "tools/list":
            tools = [ECHO_TOOL] + (STRESS_TOOLS if self.mode == "stress" else [])
            send({"jsonrpc": "2.0", "id": request_id, "result": {"tools": tools}})
        elif method == "tools/call":
            getattr(self, "call_" + self.mode.replace("-", "_"))(request_id, params)
        else:
            send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": "Method not found"}})

    def modern_request(self, request_id: Any, method: str, params: Json) -> bool:
        """2026-07-28: answer the era's own requests; False when the request was answered here."""
        if method == "initialize":
            send({"jsonrpc": "2.0", "id": request_id, "error": {
                "code": -32022, "message": "this server speaks 2026-07-28 only",
                "data": {"supported": [MODERN], "requested": params.get("protocolVersion")}}})
            return False
        meta = params.get("_meta") or {}
        if meta.get("io.modelcontextprotocol/protocolVersion") != MODERN:
            send({"jsonrpc": "2.0", "id": request_id, "error": {
                "code": -32602, "message": "params._meta is missing the protocol version"}})
            return False
        if method == "server/discover":
            send({"jsonrpc": "2.0", "id": request_id, "result": {
                "supportedVersions": [MODERN], "capabilities": {"tools": {}},
                "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "hostile-stdio", "version": "0.1"}}}})
            return False
        return True

    def notification(self, method: str, params: Json) -> None:
        if self.mode == "answer-notifications":
            send({"jsonrpc": "2.0", "id": None, "result": {}})
            send({"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "that was a notification"}})
            send({"jsonrpc": "2.0", "id": 0, "result": {"content": [{"type": "text", "text": "misrouted"}]}})
        elif method == "notifications/initialized" and self.mode == "stop-reading":
            while True:
                time.sleep(3600)
        elif method == "notifications/cancelled":
            with self.cond:
                self.cancelled += 1
                self.cancelled_ids.append(params.get("requestId"))
                self.cond.notify_all()

    # -- the hostile answers --------------------------------------------------------------

    def call_deep_nesting(self, request_id: Any, params: Json) -> None:
        depth = 200_000
        write_raw(b"[" * depth + b"]" * depth + b"\n")
        head = '{"jsonrpc":"2.0","id":%s,"result":' % json.dumps(request_id)
        write_raw(head.encode() + b"[" * depth + b"]" * depth + b"}\n")
        answer(request_id, "right")

    def call_result_and_error(self, request_id: Any, params: Json) -> None:
        send({"jsonrpc": "2.0", "id": request_id, "result": text_result("wrong"),
              "error": {"code": -32603, "message": "also wrong"}})

    def call_string_id(self, request_id: Any, params: Json) -> None:
        answer(json.dumps(request_id), "wrong")
        answer(request_id, "right")

    def call_duplicate(self, request_id: Any, params: Json) -> None:
        answer(request_id, "first")
        answer(request_id, "second")
        answer(request_id + 1, "early")

    def call_answer_notifications(self, request_id: Any, params: Json) -> None:
        answer(request_id, "right")

    def call_batch(self, request_id: Any, params: Json) -> None:
        write_raw(b"[]\n")
        send([{"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "in a batch"}},
              {"jsonrpc": "2.0", "id": request_id, "result": text_result("right")},
              5])

    def call_nan(self, request_id: Any, params: Json) -> None:
        for constant in ("NaN", "Infinity", "-Infinity"):
            write_raw(b'{"jsonrpc":"2.0","id":%s,"result":{"value":%s}}\n' % (json.dumps(request_id).encode(),
                                                                              constant.encode()))
        answer(request_id, "right")

    def call_notification_flood(self, request_id: Any, params: Json) -> None:
        line = json.dumps({"jsonrpc": "2.0", "method": "notifications/message",
                           "params": {"level": "debug", "data": "flood"}}).encode() + b"\n"
        count = self.count or 50_000
        batch = 1000
        for _ in range(count // batch):
            write_raw(line * batch)
        write_raw(line * (count % batch))
        answer(request_id, "done")

    def call_request_flood(self, request_id: Any, params: Json) -> None:
        count = self.count or 1000
        pending = {"s%d" % n for n in range(count)}
        for n in range(count):
            send({"jsonrpc": "2.0", "id": "s%d" % n, "method": "sampling/createMessage", "params": {
                "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 1}})
        send({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "sent"}})
        results = errors = 0
        codes: Dict[str, int] = {}
        while pending:
            message = read_message()
            if message is None:
                return
            if isinstance(message, dict) and "method" not in message and message.get("id") in pending:
                pending.discard(message["id"])
                if "error" in message:
                    errors += 1
                    code = str(message["error"].get("code"))
                    codes[code] = codes.get(code, 0) + 1
                else:
                    results += 1
            else:
                self.handle(message)
        answer(request_id, json.dumps({"results": results, "errors": errors, "codes": codes}))

    def call_stop_reading(self, request_id: Any, params: Json) -> None:
        answer(request_id, "unreachable")

    def call_garbage_bytes(self, request_id: Any, params: Json) -> None:
        rng = random.Random(8)
        alphabet = bytes(b for b in range(256) if b != 10)
        lines = []
        for _ in range(20_000):
            length = rng.choice((0, 1, 2, 5, 17, 100, 1000))
            lines.append(bytes(rng.choice(alphabet) for _ in range(length)) + b"\n")
        write_raw(b"".join(lines))
        answer(request_id, "right")

    def call_printenv(self, request_id: Any, params: Json) -> None:
        answer(request_id, json.dumps(dict(os.environ)))

    # -- stress ---------------------------------------------------------------------------

    def call_stress(self, request_id: Any, params: Json) -> None:
        name = params.get("name")
        args = params.get("arguments") or {}
        if name == "work":
            self.calls += 1
            if self.crash_after is not None and self.calls >= self.crash_after:
                os._exit(3)
            delay = float(args.get("delay_ms", 0)) / 1000.0
            tag = str(args.get("tag", ""))
            if delay <= 0:
                answer(request_id, tag)
                return
            with self.cond:
                self.sequence += 1
                heapq.heappush(self.due, (time.monotonic() + delay, self.sequence, request_id, tag))
                self.cond.notify_all()
        elif name == "stats":
            expect = int(args.get("expect_cancelled", 0))
            deadline = time.monotonic() + float(args.get("wait_ms", 0)) / 1000.0
            with self.cond:
                while self.cancelled < expect and time.monotonic() < deadline:
                    self.cond.wait(deadline - time.monotonic())
                stats = {"cancelled": self.cancelled, "calls": self.calls, "ids": self.cancelled_ids}
            answer(request_id, json.dumps(stats))
        elif name == "crash":
            os._exit(3)
        else:
            send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32602, "message": "Unknown tool"}})

    def timer(self) -> None:
        while True:
            with self.cond:
                while not self.due or self.due[0][0] > time.monotonic():
                    self.cond.wait(None if not self.due else self.due[0][0] - time.monotonic())
                ready = []
                now = time.monotonic()
                while self.due and self.due[0][0] <= now:
                    ready.append(heapq.heappop(self.due))
            for _, _, request_id, tag in ready:
                answer(request_id, tag)


def option(args: List[str], name: str) -> Optional[str]:
    return args[args.index(name) + 1] if name in args else None


def main() -> None:
    args = sys.argv[1:]
    if not args or args[0] not in MODES:
        sys.stderr.write("usage: hostile_stdio.py MODE [--version V] [--count N] [--crash-after N]\n"
                         "modes: %s\n" % ", ".join(MODES))
        sys.exit(64)
    count, crash_after = option(args, "--count"), option(args, "--crash-after")
    server = Server(args[0], option(args, "--version") or "2025-11-25",
                    int(count) if count else None, int(crash_after) if crash_after else None)
    try:
        server.serve()
    except BrokenPipeError:
        os._exit(1)  # the client went away


if __name__ == "__main__":
    main()
