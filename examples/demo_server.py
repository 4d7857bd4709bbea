#!/usr/bin/env python3
"""A tiny MCP server, for trying out mcpsync. Standard library only.

It speaks the Model Context Protocol over stdio: one JSON-RPC 2.0 message
per line on stdin, one per line on stdout. Anything it wants to say to a
human goes to stderr, never to stdout.

    python examples/demo_server.py

What it offers:

    tools      echo(text)            -> the same text
               add(a, b)             -> the sum, as text and as structuredContent {"sum": ...}
               countdown(n, delay=0) -> "Liftoff!", after one progress notification per step
    resource   demo://readme         -> a short markdown document
    prompt     greet(name)           -> one user message asking to greet ``name``

It is deliberately simple: requests are handled one at a time, in order, and
it does not check that ``initialize`` came first.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any, Callable, Dict, List, Optional

# A decoded JSON object (requests, results, schemas...).
Json = Dict[str, Any]

SERVER_INFO = {"name": "mcpsync-demo", "version": "1.0.0"}

# Protocol versions this server understands. If the client asks for one of
# them we agree to it; otherwise we answer with the newest and let the client
# decide whether it can live with that.
SUPPORTED_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
LATEST_VERSION = "2025-11-25"

# Standard JSON-RPC error codes, plus MCP's "resource not found".
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
RESOURCE_NOT_FOUND = -32002


class RpcError(Exception):
    """Raised by a handler to answer the request with a JSON-RPC error."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


# --------------------------------------------------------------------------
# Writing to the client
# --------------------------------------------------------------------------

def write_message(message: Json) -> None:
    """Send one JSON-RPC message: compact JSON on a single line, then flush."""
    line = json.dumps(message, separators=(",", ":"), ensure_ascii=False)
    sys.stdout.buffer.write(line.encode("utf-8") + b"\n")
    sys.stdout.buffer.flush()


def send_notification(method: str, params: Json) -> None:
    write_message({"jsonrpc": "2.0", "method": method, "params": params})


def log(text: str) -> None:
    """Diagnostics go to stderr; the client usually shows or records them."""
    sys.stderr.write("[demo_server] %s\n" % text)
    sys.stderr.flush()


# --------------------------------------------------------------------------
# What the server offers
# --------------------------------------------------------------------------

TOOLS: List[Json] = [
    {
        "name": "echo",
        "description": "Return the given text unchanged.",
        "inputSchema": {
            "type": "object",
            "properties": {"text": {"type": "string", "description": "Text to echo back."}},
            "required": ["text"],
        },
    },
    {
        "name": "add",
        "description": "Add two numbers.",
        "inputSchema": {
            "type": "object",
            "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
            "required": ["a", "b"],
        },
        # Declaring an output schema tells clients what structuredContent looks like.
        "outputSchema": {
            "type": "object",
            "properties": {"sum": {"type": "number"}},
            "required": ["sum"],
        },
    },
    {
        "name": "countdown",
        "description": "Count down from n, reporting progress at every step.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "n": {"type": "integer", "minimum": 0, "maximum": 1000},
                "delay": {"type": "number", "minimum": 0, "maximum": 10,
                          "description": "Seconds to wait between steps (default 0)."},
            },
            "required": ["n"],
        },
    },
]

README_URI = "demo://readme"
README_TEXT = """\
# mcpsync demo server

This text is served as the resource `demo://readme`.
Try the tools `echo`, `add` and `countdown`, and the prompt `greet`.
"""

RESOURCES: List[Json] = [
    {
        "uri": README_URI,
        "name": "readme",
        "title": "About this server",
        "mimeType": "text/markdown",
    },
]

PROMPTS: List[Json] = [
    {
        "name": "greet",
        "description": "Ask the model to greet someone.",
        "arguments": [{"name": "name", "description": "Who to greet.", "required": True}],
    },
]


def is_number(value: Any) -> bool:
    # bool is a subclass of int in Python, but true/false are not numbers in JSON.
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def text_content(text: str) -> List[Json]:
    return [{"type": "text", "text": text}]


def tool_error(text: str) -> Json:
    """A tool that fails reports it in the result (isError), not as a JSON-RPC error,
    so the model can see what went wrong."""
    return {"content": text_content(text), "isError": True}


# --------------------------------------------------------------------------
# Tools
# --------------------------------------------------------------------------

def tool_echo(arguments: Json, progress_token: Any) -> Json:
    text = arguments.get("text")
    if not isinstance(text, str):
        return tool_error("'text' must be a string")
    return {"content": text_content(text)}


def tool_add(arguments: Json, progress_token: Any) -> Json:
    a: Any = arguments.get("a")
    b: Any = arguments.get("b")
    if not (is_number(a) and is_number(b)):
        return tool_error("'a' and 'b' must both be numbers")
    total = a + b
    return {"content": text_content(str(total)), "structuredContent": {"sum": total}}


def tool_countdown(arguments: Json, progress_token: Any) -> Json:
    n = arguments.get("n")
    delay = arguments.get("delay", 0)
    if not (isinstance(n, int) and not isinstance(n, bool) and 0 <= n <= 1000):
        return tool_error("'n' must be an integer between 0 and 1000")
    if not (is_number(delay) and 0 <= delay <= 10):
        return tool_error("'delay' must be a number of seconds between 0 and 10")
    for step in range(1, n + 1):
        if delay:
            time.sleep(delay)
        # Progress is only sent when the client asked for it by putting a
        # progressToken in the request's _meta; it must be echoed back.
        if progress_token is not None:
            send_notification("notifications/progress", {
                "progressToken": progress_token,
                "progress": step,
                "total": n,
                "message": "%d..." % (n - step + 1),
            })
    return {"content": text_content("Liftoff!")}


TOOL_FUNCTIONS: Dict[str, Callable[[Json, Any], Json]] = {"echo": tool_echo, "add": tool_add, "countdown": tool_countdown}


# --------------------------------------------------------------------------
# Request handlers: each takes the request params and returns the result
# --------------------------------------------------------------------------

def handle_initialize(params: Json) -> Json:
    requested = params.get("protocolVersion")
    version = requested if requested in SUPPORTED_VERSIONS else LATEST_VERSION
    client = params.get("clientInfo") or {}
    log("client %s %s connected, protocol %s" % (client.get("name"), client.get("version"), version))
    return {
        "protocolVersion": version,
        "capabilities": {"tools": {}, "resources": {}, "prompts": {}},
        "serverInfo": SERVER_INFO,
        "instructions": "A demo server: try the echo, add and countdown tools.",
    }


def handle_ping(params: Json) -> Json:
    return {}


def handle_tools_list(params: Json) -> Json:
    return {"tools": TOOLS}


def handle_tools_call(params: Json) -> Json:
    name: Any = params.get("name")
    function = TOOL_FUNCTIONS.get(name)
    if function is None:
        raise RpcError(INVALID_PARAMS, "Unknown tool: %s" % name)
    arguments = params.get("arguments") or {}
    progress_token = (params.get("_meta") or {}).get("progressToken")
    return function(arguments, progress_token)


def handle_resources_list(params: Json) -> Json:
    return {"resources": RESOURCES}


def handle_resource_templates_list(params: Json) -> Json:
    return {"resourceTemplates": []}


def handle_resources_read(params: Json) -> Json:
    uri = params.get("uri")
    if uri != README_URI:
        raise RpcError(RESOURCE_NOT_FOUND, "Resource not found", {"uri": uri})
    return {"contents": [{"uri": README_URI, "mimeType": "text/markdown", "text": README_TEXT}]}


def handle_prompts_list(params: Json) -> Json:
    return {"prompts": PROMPTS}


def handle_prompts_get(params: Json) -> Json:
    if params.get("name") != "greet":
        raise RpcError(INVALID_PARAMS, "Unknown prompt: %s" % params.get("name"))
    who = (params.get("arguments") or {}).get("name")
    if not who:
        raise RpcError(INVALID_PARAMS, "Missing required argument: name")
    return {
        "description": "Greet %s" % who,
        "messages": [{"role": "user", "content": {"type": "text", "text": "Please greet %s warmly." % who}}],
    }


REQUEST_HANDLERS: Dict[str, Callable[[Json], Json]] = {
    "initialize": handle_initialize,
    "ping": handle_ping,
    "tools/list": handle_tools_list,
    "tools/call": handle_tools_call,
    "resources/list": handle_resources_list,
    "resources/templates/list": handle_resource_templates_list,
    "resources/read": handle_resources_read,
    "prompts/list": handle_prompts_list,
    "prompts/get": handle_prompts_get,
}


# --------------------------------------------------------------------------
# The message loop
# --------------------------------------------------------------------------

def handle_message(message: Any) -> Optional[Json]:
    """Handle one decoded message; return the response to send, or None."""
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return {"jsonrpc": "2.0", "id": None, "error": {"code": INVALID_REQUEST, "message": "Invalid Request"}}

    method = message.get("method")
    if not isinstance(method, str):
        # A response to a request we sent. This server never sends any, so ignore it.
        return None

    if "id" not in message:
        # A notification: never answered. notifications/initialized,
        # notifications/cancelled (requests here finish before we could see
        # the cancel) and anything else are simply ignored.
        return None

    request_id = message["id"]  # echoed back exactly as received
    params = message.get("params") or {}
    handler = REQUEST_HANDLERS.get(method)
    try:
        if handler is None:
            raise RpcError(METHOD_NOT_FOUND, "Method not found: %s" % method)
        if not isinstance(params, dict):
            raise RpcError(INVALID_PARAMS, "params must be an object")
        return {"jsonrpc": "2.0", "id": request_id, "result": handler(params)}
    except RpcError as exc:
        error: Json = {"code": exc.code, "message": exc.message}
        if exc.data is not None:
            error["data"] = exc.data
        return {"jsonrpc": "2.0", "id": request_id, "error": error}
    except Exception as exc:  # a bug in this server: report it, keep serving
        log("internal error in %s: %r" % (method, exc))
        return {"jsonrpc": "2.0", "id": request_id, "error": {"code": INTERNAL_ERROR, "message": "Internal error"}}


def main() -> None:
    log("ready")
    while True:
        line = sys.stdin.buffer.readline()
        if not line:
            break  # stdin closed: the client is done with us
        if not line.strip():
            continue
        try:
            message = json.loads(line.decode("utf-8"))
        except ValueError:  # also covers invalid UTF-8
            write_message({"jsonrpc": "2.0", "id": None, "error": {"code": PARSE_ERROR, "message": "Parse error"}})
            continue
        response = handle_message(message)
        if response is not None:
            write_message(response)
    log("stdin closed, exiting")


if __name__ == "__main__":
    main()
