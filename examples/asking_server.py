#!/usr/bin/env python3
"""A small MCP server that asks its client for things, for the handler and task examples.

Standard library only; stdio; the 2025-11-25 protocol (with the ``initialize``
handshake). A 2026-07-28 server asks through ``input_required`` results
instead, and mcpsync runs the very same handlers for it.

    tools   haiku(topic)              asks the client's model (sampling/createMessage)
            book_table(restaurant)    asks the person (elicitation/create, a form with defaults)
            render(frames)            a slow job that may run as a task (about 0.3 s a frame;
                                      --frame-seconds S sets another pace)

Requests are handled one at a time; while it waits for the client's answer
to its own request, it keeps reading (and answers ``ping``).
"""

from __future__ import annotations

import json
import sys
import time
import uuid
from typing import Any, Dict, Optional

Json = Dict[str, Any]
FRAME_SECONDS = 0.3


class RpcError(Exception):
    """Answer the request with this JSON-RPC error code."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code

TOOLS = [
    {"name": "haiku", "description": "Write a haiku about a topic (asks your model).",
     "inputSchema": {"type": "object", "properties": {"topic": {"type": "string"}}, "required": ["topic"]}},
    {"name": "book_table", "description": "Book a table (asks you for the details).",
     "inputSchema": {"type": "object", "properties": {"restaurant": {"type": "string"}}, "required": ["restaurant"]}},
    {"name": "render", "description": "Render an animation (slow: run it as a task).",
     "inputSchema": {"type": "object", "properties": {"frames": {"type": "integer"}}, "required": ["frames"]},
     "execution": {"taskSupport": "optional"}},
]


class Server:
    def __init__(self, frame_seconds: float = FRAME_SECONDS) -> None:
        self.frame_seconds = frame_seconds
        self.next_id = 0
        self.tasks: Dict[str, Json] = {}

    # -- the wire ------------------------------------------------------------------------------

    def send(self, message: Json) -> None:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()

    def read(self) -> Optional[Json]:
        line = sys.stdin.readline()
        return json.loads(line) if line else None

    def ask(self, method: str, params: Json) -> Json:
        """Send our own request to the client and wait for its answer (serving pings meanwhile)."""
        self.next_id += 1
        request_id = f"srv-{self.next_id}"
        self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        while True:
            message = self.read()
            if message is None:
                sys.exit(0)
            if message.get("id") == request_id and "method" not in message:
                if "error" in message:
                    raise RuntimeError(message["error"].get("message", "refused"))
                return dict(message["result"])
            if message.get("method") == "ping" and "id" in message:
                self.send({"jsonrpc": "2.0", "id": message["id"], "result": {}})

    # -- requests --------------------------------------------------------------------------------

    def serve(self) -> None:
        while True:
            message = self.read()
            if message is None:
                return
            if "id" not in message or "method" not in message:
                continue  # notifications, stray answers
            try:
                result = self.handle(message["method"], message.get("params") or {})
                self.send({"jsonrpc": "2.0", "id": message["id"], "result": result})
            except RpcError as exc:
                self.send({"jsonrpc": "2.0", "id": message["id"], "error": {"code": exc.code, "message": str(exc)}})

    def handle(self, method: str, params: Json) -> Json:
        if method == "initialize":
            return {"protocolVersion": "2025-11-25", "serverInfo": {"name": "asking-server", "version": "1.0"},
                    "capabilities": {"tools": {}, "tasks": {"list": {}, "cancel": {},
                                                            "requests": {"tools": {"call": {}}}}}}
        if method == "ping":
            return {}
        if method == "tools/list":
            return {"tools": TOOLS}
        if method == "tools/call":
            return self.call(params["name"], params.get("arguments") or {}, params.get("task"))
        if method.startswith("tasks/"):
            return self.task_method(method, params)
        raise RpcError(-32601, f"Method not found: {method}")

    def call(self, name: str, arguments: Json, task: Optional[Json]) -> Json:
        if name == "haiku":
            reply = self.ask("sampling/createMessage", {
                "messages": [{"role": "user", "content": {"type": "text",
                                                          "text": f"Write a haiku about {arguments['topic']}."}}],
                "systemPrompt": "You are a poet.", "maxTokens": 60,
                "modelPreferences": {"hints": [{"name": "claude"}], "speedPriority": 0.8}})
            return text(reply.get("content", {}).get("text", ""))
        if name == "book_table":
            reply = self.ask("elicitation/create", {
                "message": f"Booking a table at {arguments['restaurant']}.",
                "requestedSchema": {"type": "object", "required": ["name"], "properties": {
                    "name": {"type": "string", "title": "Your name"},
                    "party": {"type": "integer", "title": "How many people", "minimum": 1, "default": 2},
                    "outside": {"type": "boolean", "title": "Sit outside", "default": False}}}})
            if reply.get("action") != "accept":
                return text(f"No booking ({reply.get('action')}).")
            form = reply.get("content") or {}
            where = "outside" if form.get("outside") else "inside"
            return text(f"Booked {arguments['restaurant']} for {form.get('name')}, "
                        f"{form.get('party')} people, {where}.")
        if name == "render":
            frames = int(arguments.get("frames", 1))
            if task is None:
                time.sleep(frames * self.frame_seconds)
                return text(f"Rendered {frames} frames.")
            task_id = str(uuid.uuid4())
            self.tasks[task_id] = {"frames": frames, "start": time.monotonic(), "cancelled": False}
            return {"task": self.info(task_id)}
        raise RpcError(-32602, f"Unknown tool: {name}")

    # -- tasks ------------------------------------------------------------------------------------

    def status(self, task: Json) -> str:
        if task["cancelled"]:
            return "cancelled"
        done = time.monotonic() - task["start"] >= task["frames"] * self.frame_seconds
        return "completed" if done else "working"

    def info(self, task_id: str) -> Json:
        task = self.tasks[task_id]
        elapsed = min(int((time.monotonic() - task["start"]) / self.frame_seconds), task["frames"])
        return {"taskId": task_id, "status": self.status(task), "statusMessage": f"frame {elapsed}/{task['frames']}",
                "createdAt": "2026-01-01T00:00:00Z", "lastUpdatedAt": "2026-01-01T00:00:00Z",
                "ttl": 600000, "pollInterval": 200}

    def task_method(self, method: str, params: Json) -> Json:
        if method == "tasks/list":
            return {"tasks": [self.info(task_id) for task_id in self.tasks]}
        task_id = str(params.get("taskId"))
        if task_id not in self.tasks:
            raise RpcError(-32602, f"No task {task_id}")
        task = self.tasks[task_id]
        if method == "tasks/get":
            return self.info(task_id)
        if method == "tasks/cancel":
            task["cancelled"] = True
            return self.info(task_id)
        if method == "tasks/result":
            while self.status(task) == "working":
                time.sleep(0.05)
            if task["cancelled"]:
                raise RpcError(-32603, f"Task {task_id} was cancelled")
            return text(f"Rendered {task['frames']} frames.")
        raise RpcError(-32601, f"Method not found: {method}")


def text(value: str) -> Json:
    return {"content": [{"type": "text", "text": value}]}


if __name__ == "__main__":
    try:
        pace = sys.argv[sys.argv.index("--frame-seconds") + 1] if "--frame-seconds" in sys.argv else FRAME_SECONDS
        Server(float(pace)).serve()
    except (BrokenPipeError, KeyboardInterrupt):
        pass
