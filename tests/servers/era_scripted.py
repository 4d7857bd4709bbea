#!/usr/bin/env python
"""Test peer: a stdlib-only stdio server scripted for the protocol-era edge cases.

Usage: ``python tests/servers/era_scripted.py MODE``

Every mode logs each request it reads to stderr as ``RECV <method> <id json>``.

Legacy modes (they serve ``initialize`` with 2025-11-25, ``tools/list`` -> echo, ``tools/call echo``;
``tools/call meta`` returns the JSON of the request's ``_meta``):
  legacy-32601      the server/discover probe is answered -32601 (unknown method)
  legacy-32602      the probe is answered -32602 (invalid params)
  legacy-silent     unknown requests are never answered (the probe waits out its timeout)
  legacy-late       the probe is answered -32601, but only once initialize arrives (the client moved on)
  legacy-list       the probe gets -32022 whose supported list names 2027-01-01 and 2025-06-18
                    only; initialize then negotiates 2025-06-18
  unsupported       the probe gets -32022 naming only 2027-01-01; initialize gets -32602

Modern modes (no initialize; server/discover -> supportedVersions [2026-07-28], tools, resources):
  modern            initialize gets -32022 naming 2026-07-28; tools:
                      echo(text)          a plain result
                      ask3()              input_required three times: elicitation, sampling, roots;
                                          each retry must echo requestState exactly and carry a new id
                      loop()              input_required for ever (the client gives up)
                      weird()             a result with resultType "weird"
                      task_anyway()       resultType "task" although the request declared no tasks
                      meta()              returns the JSON of the request's _meta
                      url_login()         input_required with a URL-mode elicitation (no
                                          elicitationId, as 2026 has none) and requestState
                                          "login-7"; the retry gets {"state", "answers"} back
                    resources/read of missing://x -> -32602;
                    subscriptions/listen -> acknowledged, then a resources/updated for a
                    sub-resource (<uri>/child) of the first subscribed uri, then open until cancelled
  modern-refuse-once  as modern, but the first server/discover is refused with -32022 although its
                    supported list names the very version asked for (2026-07-28)
"""

from __future__ import annotations

import json
import sys
import threading
from typing import Any, Dict

Json = Dict[str, Any]
MODERN = "2026-07-28"
VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
SUBSCRIPTION_KEY = "io.modelcontextprotocol/subscriptionId"
ECHO = {"name": "echo", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}}

write_lock = threading.Lock()


def send(message: Json) -> None:
    with write_lock:
        sys.stdout.write(json.dumps(message, separators=(",", ":")) + "\n")
        sys.stdout.flush()


def result(rid: Any, value: Json) -> None:
    send({"jsonrpc": "2.0", "id": rid, "result": value})


def error(rid: Any, code: int, text: str, data: Any = None) -> None:
    payload: Json = {"code": code, "message": text}
    if data is not None:
        payload["data"] = data
    send({"jsonrpc": "2.0", "id": rid, "error": payload})


def log(text: str) -> None:
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


def text(value: str) -> Json:
    return {"content": [{"type": "text", "text": value}]}


class Legacy:
    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.unanswered_probe: Any = None

    def handle(self, method: str, rid: Any, params: Json) -> None:
        if method == "server/discover":
            return self.probe(rid)
        if method == "initialize" and self.unanswered_probe is not None:
            # Late for certain: the client sent initialize, so it gave up on the probe. (A timer
            # would race the client's own on a loaded machine.)
            error(self.unanswered_probe, -32601, "Method not found: server/discover")
            self.unanswered_probe = None
            log("LATE ANSWER SENT")
        if method == "initialize":
            asked = params.get("protocolVersion")
            if self.mode == "unsupported":
                return error(rid, -32602, "Unsupported protocol version", {"supported": ["2027-01-01"]})
            version = "2025-06-18" if self.mode == "legacy-list" else "2025-11-25"
            log(f"INITIALIZE asked {asked}")
            return result(rid, {"protocolVersion": version, "capabilities": {"tools": {}},
                                "serverInfo": {"name": f"scripted-{self.mode}", "version": "1"}})
        if method == "tools/list":
            return result(rid, {"tools": [ECHO]})
        if method == "tools/call" and params.get("name") == "meta":
            return result(rid, text(json.dumps(params.get("_meta"), sort_keys=True)))
        if method == "tools/call":
            return result(rid, text(str((params.get("arguments") or {}).get("text", ""))))
        if method == "ping":
            return result(rid, {})
        if self.mode != "legacy-silent":
            error(rid, -32601, f"Method not found: {method}")

    def probe(self, rid: Any) -> None:
        if self.mode == "legacy-32601":
            error(rid, -32601, "Method not found: server/discover")
        elif self.mode == "legacy-32602":
            error(rid, -32602, "Invalid params: the server is not initialized")
        elif self.mode == "legacy-late":
            self.unanswered_probe = rid  # answered when initialize comes
        elif self.mode == "legacy-list":
            error(rid, -32022, "Unsupported protocol version", {"supported": ["2027-01-01", "2025-06-18"],
                                                                 "requested": MODERN})
        elif self.mode == "unsupported":
            error(rid, -32022, "Unsupported protocol version", {"supported": ["2027-01-01"], "requested": MODERN})
        # legacy-silent: no answer at all


class Modern:
    def __init__(self, refusals: int = 0) -> None:
        self.listens: Dict[Any, threading.Event] = {}
        self.refusals = refusals

    def handle(self, method: str, rid: Any, params: Json) -> None:
        meta = params.get("_meta") or {}
        if method == "initialize":  # as the SDK answers a handshake on a modern connection
            return error(rid, -32022, "this server speaks 2026-07-28 only; no initialize",
                         {"supported": [MODERN], "requested": params.get("protocolVersion")})
        if meta.get(VERSION_KEY) != MODERN:
            return error(rid, -32602, "params._meta is missing the protocol version")
        if method == "server/discover" and self.refusals > 0:
            self.refusals -= 1
            return error(rid, -32022, "Unsupported protocol version", {"supported": [MODERN], "requested": MODERN})
        if method == "server/discover":
            return result(rid, {"resultType": "complete", "supportedVersions": [MODERN], "ttlMs": 0,
                                "cacheScope": "public", "instructions": "scripted",
                                "capabilities": {"tools": {}, "resources": {"subscribe": True}},
                                "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "scripted-modern",
                                                                                "version": "3"}}})
        if method == "tools/list":
            return result(rid, {"resultType": "complete", "tools": [ECHO]})
        if method == "tools/call":
            return self.call(rid, params)
        if method == "resources/read":
            return error(rid, -32602, f"Resource not found: {params.get('uri')}")
        if method == "subscriptions/listen":
            return self.listen(rid, params)
        error(rid, -32601, f"Method not found: {method}")

    def call(self, rid: Any, params: Json) -> None:
        name = params.get("name")
        if name == "echo":
            return result(rid, {"resultType": "complete", **text(str((params.get("arguments") or {}).get("text")))})
        if name == "meta":
            return result(rid, text(json.dumps(params.get("_meta"), sort_keys=True)))
        if name == "weird":
            return result(rid, {"resultType": "weird", "content": []})
        if name == "task_anyway":
            return result(rid, {"resultType": "task", "taskId": "t-1", "status": "working"})
        if name == "loop":
            return result(rid, {"resultType": "input_required", "requestState": "again"})
        if name == "ask3":
            return self.ask3(rid, params)
        if name == "url_login":
            state = params.get("requestState")
            if state is None:
                return result(rid, {"resultType": "input_required", "requestState": "login-7", "inputRequests": {
                    "login": {"method": "elicitation/create", "params": {
                        "mode": "url", "message": "Sign in", "url": "https://login.example.com/start?x=1"}}}})
            answers = params.get("inputResponses")
            return result(rid, {"resultType": "complete", **text(json.dumps({"state": state, "answers": answers}))})
        error(rid, -32602, f"Unknown tool: {name}")

    def ask3(self, rid: Any, params: Json) -> None:
        state = params.get("requestState")
        answers = params.get("inputResponses") or {}
        log(f"ASK3 id={json.dumps(rid)} state={json.dumps(state)} answers={json.dumps(answers, sort_keys=True)}")
        rounds = [
            ("first", {"q1": {"method": "elicitation/create", "params": {
                "message": "Name?", "requestedSchema": {"type": "object", "properties": {
                    "name": {"type": "string"}, "colour": {"type": "string", "default": "green"}}}}}}),
            ('second \u00e9 "quoted" \\ state', {"q2": {"method": "sampling/createMessage", "params": {
                "messages": [{"role": "user", "content": {"type": "text", "text": "Say hi"}}], "maxTokens": 5}}}),
            ("third", {"q3": {"method": "roots/list", "params": {}}}),
        ]
        expected_state = [None] + [r[0] for r in rounds]
        step = expected_state.index(state) if state in expected_state else -1
        if step < 0:
            return error(rid, -32602, f"unknown requestState {state!r}")
        if step == len(rounds):
            return result(rid, {"resultType": "complete", **text(json.dumps(answers, sort_keys=True))})
        new_state, requests = rounds[step]
        result(rid, {"resultType": "input_required", "requestState": new_state, "inputRequests": requests})

    def listen(self, rid: Any, params: Json) -> None:
        wanted = (params.get("notifications") or {}).get("resourceSubscriptions") or []
        meta = {SUBSCRIPTION_KEY: rid}
        send({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
              "params": {"notifications": {"resourceSubscriptions": wanted}, "_meta": meta}})
        if wanted:
            send({"jsonrpc": "2.0", "method": "notifications/resources/updated",
                  "params": {"uri": wanted[0].rstrip("/") + "/child", "_meta": meta}})
            # An update for another stream's id must not reach this one's subscribers.
            send({"jsonrpc": "2.0", "method": "notifications/resources/updated",
                  "params": {"uri": wanted[0], "_meta": {SUBSCRIPTION_KEY: "someone-else"}}})
        self.listens[rid] = threading.Event()

    def cancelled(self, params: Json) -> None:
        rid = params.get("requestId")
        if rid in self.listens:
            log(f"LISTEN CANCELLED {json.dumps(rid)}")  # and, cancelled, it is never answered
            del self.listens[rid]


def main() -> None:
    mode = sys.argv[1]
    server: Any = Modern() if mode == "modern" else Modern(refusals=1) if mode == "modern-refuse-once" \
        else Legacy(mode)
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        method, rid = message.get("method"), message.get("id")
        log(f"RECV {method} {json.dumps(rid)}")
        if method is None:
            continue
        params = message.get("params") or {}
        if "id" not in message:
            if method == "notifications/cancelled" and isinstance(server, Modern):
                server.cancelled(params)
            continue
        server.handle(method, rid, params)


if __name__ == "__main__":
    try:
        main()
    except BrokenPipeError:
        pass
