"""The MCP methods a FakeServer answers, for both protocol eras.

:func:`handle` answers the protocol's own requests on the dispatcher thread
(they never run user code); :func:`run_user_code` serves ``tools/call``,
``resources/read`` and ``prompts/get`` on a worker thread. Both return the
result dict or raise :class:`~mcpsync.MCPError`; :func:`finish_result` adds
what the 2026-07-28 era requires of every result.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Dict, List, Optional

from .._rpc import jsonrpc as rpc
from .._rpc.jsonrpc import JSONObject
from ..exceptions import MCPError, RequestCancelled
from ._context import Context, Invocation, NoAnswer
from ._protocol import LOG_LEVELS, RESOURCE_NOT_FOUND_LEGACY, SERVER_INFO_KEY, UNSUPPORTED_PROTOCOL_VERSION
from ._registry import call, prompt_result, resource_contents, tool_result
from ._schema import check_arguments

if TYPE_CHECKING:
    from ._connection import Connection

__all__ = ["finish_result", "handle", "run_user_code"]

log = logging.getLogger("mcpsync.testing")

_CACHEABLE = frozenset({"server/discover", "tools/list", "prompts/list", "resources/list",
                        "resources/templates/list", "resources/read"})
_NEEDS = {"tools/list": "tools", "tools/call": "tools", "resources/list": "resources",
          "resources/templates/list": "resources", "resources/read": "resources",
          "resources/subscribe": "resources", "resources/unsubscribe": "resources", "prompts/list": "prompts",
          "prompts/get": "prompts", "completion/complete": "completions", "logging/setLevel": "logging"}


def handle(connection: "Connection", run: Invocation) -> JSONObject:
    """Answer a protocol request (no user code runs here)."""
    method, params, server = run.method, run.params, connection.server
    _require_capability(connection, run)
    if method == "initialize":
        return _initialize(connection, params)
    if method == "ping":
        return {}
    if method == "server/discover":
        result: JSONObject = {"supportedVersions": list(server.modern_versions),
                              "capabilities": server.capabilities("modern")}
        if server.instructions is not None:
            result["instructions"] = server.instructions
        return result
    if method in ("resources/subscribe", "resources/unsubscribe"):
        uri = _string(params, "uri")
        if method == "resources/subscribe":
            connection.subscriptions.add(uri)
        else:
            connection.subscriptions.discard(uri)
        return {}
    if method == "logging/setLevel":
        level = params.get("level")
        if level not in LOG_LEVELS:
            raise MCPError(rpc.INVALID_PARAMS, f"Invalid params: unknown log level {level!r}")
        connection.log_level = str(level)
        return {}
    if method == "completion/complete":
        return _complete(connection, params)
    listings = server._listings()
    key = {"tools/list": "tools", "resources/list": "resources", "resources/templates/list": "resourceTemplates",
           "prompts/list": "prompts"}[method]
    return _page(connection, listings[key], params, key)


def _require_capability(connection: "Connection", run: Invocation) -> None:
    """A method whose capability the server does not offer is not found (2026-07-28 basic §Error Codes)."""
    needed = _NEEDS.get(run.method)
    if needed is not None and needed not in connection.server.capabilities(run.era):
        raise MCPError(rpc.METHOD_NOT_FOUND, f"Method not found: {run.method} (this server offers no {needed})")


def _initialize(connection: "Connection", params: JSONObject) -> JSONObject:
    server = connection.server
    requested = params.get("protocolVersion")
    if not server.legacy_versions:
        raise MCPError(UNSUPPORTED_PROTOCOL_VERSION, "Unsupported protocol version: this server does not speak "
                       f"the initialize handshake; it supports {', '.join(server.modern_versions)}",
                       {"supported": list(server.modern_versions), "requested": requested})
    # Asked for a version it does not speak: offer its newest (oldest first, so the last).
    version = requested if requested in server.legacy_versions else server.legacy_versions[-1]
    capabilities = params.get("capabilities")
    info = params.get("clientInfo")
    connection.legacy_version = str(version)
    connection.client_capabilities = capabilities if isinstance(capabilities, dict) else {}
    connection.client_info = info if isinstance(info, dict) else {}
    connection.initialized = False
    connection.log_level = None
    result: JSONObject = {"protocolVersion": version, "capabilities": server.capabilities("legacy"),
                          "serverInfo": server.server_info()}
    if server.instructions is not None:
        result["instructions"] = server.instructions
    return result


def _page(connection: "Connection", items: List[JSONObject], params: JSONObject, key: str) -> JSONObject:
    size = connection.server.page_size
    if not size:
        return {key: items}
    cursor = params.get("cursor")
    start = 0
    if cursor is not None:
        text = cursor[len("page-"):] if isinstance(cursor, str) and cursor.startswith("page-") else ""
        if not text.isdigit() or int(text) > len(items):
            raise MCPError(rpc.INVALID_PARAMS, f"Invalid params: invalid cursor {cursor!r}")
        start = int(text)
    result: JSONObject = {key: items[start:start + size]}
    if start + size < len(items):
        result["nextCursor"] = f"page-{start + size}"
    return result


def _complete(connection: "Connection", params: JSONObject) -> JSONObject:
    ref = params.get("ref")
    argument = params.get("argument")
    if not isinstance(ref, dict) or not isinstance(argument, dict):
        raise MCPError(rpc.INVALID_PARAMS, "Invalid params: completion/complete needs ref and argument")
    target = ref.get("name") if ref.get("type") == "ref/prompt" else ref.get("uri")
    completer = connection.server._completer(str(target))
    values: List[str] = []
    if completer is not None:
        found = completer(str(argument.get("name", "")), str(argument.get("value", "")))
        values = [str(value) for value in found or ()]
    return {"completion": {"values": values[:100], "total": len(values), "hasMore": len(values) > 100}}


def run_user_code(connection: "Connection", run: Invocation, ctx: Context) -> JSONObject:
    """Serve ``tools/call``, ``resources/read`` or ``prompts/get`` by calling the user's function."""
    _require_capability(connection, run)
    if run.method == "tools/call":
        return _call_tool(connection, run, ctx)
    if run.method == "resources/read":
        return _read_resource(connection, run, ctx)
    return _get_prompt(connection, run, ctx)


def _call_tool(connection: "Connection", run: Invocation, ctx: Context) -> JSONObject:
    name = _string(run.params, "name")
    tool = connection.server._tool(name)
    if tool is None:
        raise MCPError(rpc.INVALID_PARAMS, f"Unknown tool: {name}")
    arguments = run.params.get("arguments")
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise MCPError(rpc.INVALID_PARAMS, "Invalid params: arguments must be an object")
    problem = check_arguments(tool.input_schema, arguments)
    if problem is not None:
        return _tool_error(f"Invalid arguments for tool {name!r}: {problem}")
    try:
        value = call(tool.fn, tool.context, ctx, arguments)
    except (MCPError, NoAnswer, RequestCancelled):
        raise
    except Exception as exc:  # a tool that fails is a result the model can see, not a protocol error
        log.debug("[%s] Tool %r raised %r", connection.server.name, name, exc)
        return _tool_error(str(exc) or type(exc).__name__)
    return tool_result(value)


def _read_resource(connection: "Connection", run: Invocation, ctx: Context) -> JSONObject:
    uri = _string(run.params, "uri")
    found = connection.server._resource_for(uri)
    if found is None:
        if run.era == "modern":
            raise MCPError(rpc.INVALID_PARAMS, f"Resource not found: {uri}", {"uri": uri})
        raise MCPError(RESOURCE_NOT_FOUND_LEGACY, f"Resource not found: {uri}", {"uri": uri})
    definition, variables = found
    value = call(definition.fn, definition.context, ctx, variables)
    return {"contents": resource_contents(uri, definition.mime_type, value)}


def _get_prompt(connection: "Connection", run: Invocation, ctx: Context) -> JSONObject:
    name = _string(run.params, "name")
    prompt = connection.server._prompt(name)
    if prompt is None:
        raise MCPError(rpc.INVALID_PARAMS, f"Unknown prompt: {name}")
    arguments = run.params.get("arguments") or {}
    if not isinstance(arguments, dict):
        raise MCPError(rpc.INVALID_PARAMS, "Invalid params: arguments must be an object")
    known = {argument["name"]: argument for argument in prompt.arguments}
    for argument_name, argument in known.items():
        if argument.get("required") and argument_name not in arguments:
            raise MCPError(rpc.INVALID_PARAMS, f"Missing required argument {argument_name!r} for prompt {name!r}")
    unknown = sorted(set(arguments) - set(known))
    if unknown:
        raise MCPError(rpc.INVALID_PARAMS, f"Unknown argument {unknown[0]!r} for prompt {name!r}")
    return prompt_result(call(prompt.fn, prompt.context, ctx, arguments), prompt.description)


def finish_result(connection: "Connection", run: Invocation, result: JSONObject) -> JSONObject:
    """Add what a 2026-07-28 result carries: ``resultType``, ``serverInfo`` and cache hints."""
    if run.era != "modern":
        return result
    finished: Dict[str, Any] = dict(result)
    finished.setdefault("resultType", "complete")
    meta = dict(finished.get("_meta") or {})
    meta.setdefault(SERVER_INFO_KEY, connection.server.server_info())
    finished["_meta"] = meta
    if run.method in _CACHEABLE and finished["resultType"] == "complete":
        finished.setdefault("ttlMs", connection.server.ttl_ms)
        finished.setdefault("cacheScope", "public")
    return finished


def _tool_error(text: str) -> JSONObject:
    return {"content": [{"type": "text", "text": text}], "isError": True}


def _string(params: JSONObject, key: str) -> str:
    value: Optional[Any] = params.get(key)
    if not isinstance(value, str):
        raise MCPError(rpc.INVALID_PARAMS, f"Invalid params: {key!r} must be a string")
    return value
