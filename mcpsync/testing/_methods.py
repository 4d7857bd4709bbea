"""The MCP methods a FakeServer answers, for both protocol eras.

:func:`handle` answers the protocol's own requests on the dispatcher thread
(they never run user code); :func:`run_user_code` serves ``tools/call``,
``resources/read`` and ``prompts/get`` on a worker thread. Both return the
result dict or raise :class:`~mcpsync.MCPError`; :func:`finish_result` adds
what the 2026-07-28 era requires of every result.

They work from the :class:`~mcpsync.testing._side.ServerSide` (settings,
declarations) and, for the legacy-only methods, the connection's
:class:`~mcpsync.testing._context.LegacySession`, which only :func:`handle`
changes, on the dispatcher thread. :func:`handle` never blocks;
:func:`run_user_code` blocks its worker as long as the user's function runs.
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Dict, List, Optional

from .._protocol import methods
from .._protocol.methods import (
    COMPLETION_COMPLETE, INITIALIZE, LOGGING_SET_LEVEL, PING, PROMPTS_LIST, RESOURCES_LIST,
    RESOURCES_READ, RESOURCES_SUBSCRIBE, RESOURCES_TEMPLATES_LIST, RESOURCES_UNSUBSCRIBE, SERVER_DISCOVER,
    SKILLS_GET, SKILLS_LIST, TOOLS_CALL, TOOLS_LIST,
)
from .._rpc import jsonrpc as rpc
from .._rpc.jsonrpc import JSONObject
from ..exceptions import MCPError, RequestCancelled
from ._context import Context, Invocation, LegacySession, NoAnswer
from ._protocol import (
    LOG_LEVELS, RESOURCE_NOT_FOUND_LEGACY, SERVER_INFO_KEY, SKILL_METHODS, SKILLS_EXTENSION,
    UNSUPPORTED_PROTOCOL_VERSION,
)
from ._registry import call, prompt_result, resource_contents, tool_result
from ._schema import check_arguments
from ._side import ServerSide

__all__ = ["finish_result", "handle", "run_user_code"]

log = logging.getLogger("mcpsync.testing")

_CACHEABLE = frozenset({SERVER_DISCOVER, TOOLS_LIST, PROMPTS_LIST, RESOURCES_LIST,
                        RESOURCES_TEMPLATES_LIST, RESOURCES_READ, SKILLS_LIST, SKILLS_GET})
_NEEDS = methods.CAPABILITIES


def handle(side: ServerSide, session: LegacySession, run: Invocation) -> JSONObject:
    """Answer a protocol request (no user code runs here); ``session`` is the connection's, which it may change."""
    _require_capability(side, run)
    return _PROTOCOL_HANDLERS.get(run.method, _list)(side, session, run)


def _ping(side: ServerSide, session: LegacySession, run: Invocation) -> JSONObject:
    return {}


def _discover(side: ServerSide, session: LegacySession, run: Invocation) -> JSONObject:
    settings = side.settings
    result: JSONObject = {"supportedVersions": list(settings.modern_versions),
                          "capabilities": side.capabilities("modern")}
    if settings.instructions is not None:
        result["instructions"] = settings.instructions
    return result


def _subscribe(side: ServerSide, session: LegacySession, run: Invocation) -> JSONObject:
    session.subscriptions.add(_string(run.params, "uri"))
    return {}


def _unsubscribe(side: ServerSide, session: LegacySession, run: Invocation) -> JSONObject:
    session.subscriptions.discard(_string(run.params, "uri"))
    return {}


def _set_level(side: ServerSide, session: LegacySession, run: Invocation) -> JSONObject:
    level = run.params.get("level")
    if level not in LOG_LEVELS:
        raise MCPError(rpc.INVALID_PARAMS, f"Invalid params: unknown log level {level!r}")
    session.log_level = str(level)
    return {}


def _list(side: ServerSide, session: LegacySession, run: Invocation) -> JSONObject:
    """A ``*/list`` request: a page of the registry's listing of its kind."""
    key = methods.LIST_KEYS[run.method]
    return _page(side.settings.page_size, side.registry.listings()[key], run.params, key)


def _require_capability(side: ServerSide, run: Invocation) -> None:
    """A method whose capability the server does not offer is not found (2026-07-28 basic §Error Codes)."""
    needed = _NEEDS.get(run.method)
    if needed is not None and needed not in side.capabilities(run.era):
        raise MCPError(rpc.METHOD_NOT_FOUND, f"Method not found: {run.method} (this server offers no {needed})")


def _initialize(side: ServerSide, session: LegacySession, run: Invocation) -> JSONObject:
    settings, params = side.settings, run.params
    requested = params.get("protocolVersion")
    if not settings.legacy_versions:
        raise MCPError(UNSUPPORTED_PROTOCOL_VERSION, "Unsupported protocol version: this server does not speak "
                       f"the initialize handshake; it supports {', '.join(settings.modern_versions)}",
                       {"supported": list(settings.modern_versions), "requested": requested})
    # Asked for a version it does not speak: offer its newest (oldest first, so the last).
    version = requested if requested in settings.legacy_versions else settings.legacy_versions[-1]
    capabilities = params.get("capabilities")
    info = params.get("clientInfo")
    session.version = str(version)
    session.client_capabilities = capabilities if isinstance(capabilities, dict) else {}
    session.client_info = info if isinstance(info, dict) else {}
    session.initialized = False
    session.log_level = None
    result: JSONObject = {"protocolVersion": version, "capabilities": side.capabilities("legacy"),
                          "serverInfo": settings.server_info()}
    if settings.instructions is not None:
        result["instructions"] = settings.instructions
    return result


def _page(size: Optional[int], items: List[JSONObject], params: JSONObject, key: str) -> JSONObject:
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


def _complete(side: ServerSide, session: LegacySession, run: Invocation) -> JSONObject:
    ref = run.params.get("ref")
    argument = run.params.get("argument")
    if not isinstance(ref, dict) or not isinstance(argument, dict):
        raise MCPError(rpc.INVALID_PARAMS, "Invalid params: completion/complete needs ref and argument")
    target = ref.get("name") if ref.get("type") == "ref/prompt" else ref.get("uri")
    completer = side.registry.completer(str(target))
    values: List[str] = []
    if completer is not None:
        found = completer(str(argument.get("name", "")), str(argument.get("value", "")))
        values = [str(value) for value in found or ()]
    return {"completion": {"values": values[:100], "total": len(values), "hasMore": len(values) > 100}}


def run_user_code(side: ServerSide, run: Invocation, ctx: Context) -> JSONObject:
    """Serve ``tools/call``, ``resources/read`` or ``prompts/get`` by calling the user's function.

    Runs on the request's worker thread and blocks it as long as the function runs.
    """
    if run.method == TOOLS_CALL:
        return _call_tool(side, run, ctx)
    _require_capability(side, run)
    if run.method == RESOURCES_READ:
        return _read_resource(side, run, ctx)
    return _get_prompt(side, run, ctx)


def _call_tool(side: ServerSide, run: Invocation, ctx: Context) -> JSONObject:
    try:
        _require_capability(side, run)
        name = _string(run.params, "name")
        tool = side.registry.tool(name)
        if tool is None:
            raise MCPError(rpc.INVALID_PARAMS, f"Unknown tool: {name}")
        arguments = run.params.get("arguments")
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            raise MCPError(rpc.INVALID_PARAMS, "Invalid params: arguments must be an object")
    except MCPError as exc:
        _refused(side, run, exc.message)
        raise
    problem = check_arguments(tool.input_schema, arguments)
    if problem is not None:
        text = f"Invalid arguments for tool {name!r}: {problem}"
        _refused(side, run, text)
        return _tool_error(text)
    try:
        value = call(tool.fn, tool.context, ctx, arguments)
    except (MCPError, NoAnswer, RequestCancelled):
        raise
    except Exception as exc:  # a tool that fails is a result the model can see, not a protocol error
        log.debug("[%s] Tool %r raised %r", side.name, name, exc)
        return _tool_error(str(exc) or type(exc).__name__)
    return tool_result(value)


def _skills(side: ServerSide, session: LegacySession, run: Invocation) -> JSONObject:
    """``skills/list`` (paged like every list) and ``skills/get`` (by the ``SKILL.md`` URI)."""
    extensions = side.capabilities(run.era).get("extensions")
    if not isinstance(extensions, dict) or SKILLS_EXTENSION not in extensions:
        raise MCPError(rpc.METHOD_NOT_FOUND, f"Method not found: {run.method} (this server declares no "
                       f"{SKILLS_EXTENSION} extension)")
    if run.method == SKILLS_LIST:
        entries = [definition.entry() for definition in side.registry.skills()]
        return _page(side.settings.page_size, entries, run.params, "skills")
    uri = _string(run.params, "uri")
    found = next((d for d in side.registry.skills() if d.uri == uri), None)
    if found is None:
        raise MCPError(rpc.INVALID_PARAMS, f"No skill is served at {uri}", {"uri": uri})
    return {"skill": found.entry()}


#: Who answers each protocol request, all called as ``(side, session, run)``; any other method is a ``*/list``.
_PROTOCOL_HANDLERS: Dict[str, Callable[[ServerSide, LegacySession, Invocation], JSONObject]] = {
    **dict.fromkeys(SKILL_METHODS, _skills),
    INITIALIZE: _initialize, PING: _ping, SERVER_DISCOVER: _discover, RESOURCES_SUBSCRIBE: _subscribe,
    RESOURCES_UNSUBSCRIBE: _unsubscribe, LOGGING_SET_LEVEL: _set_level, COMPLETION_COMPLETE: _complete,
}


def _read_resource(side: ServerSide, run: Invocation, ctx: Context) -> JSONObject:
    uri = _string(run.params, "uri")
    skill_file = side.registry.skill_file(uri)
    if skill_file is not None:
        return {"contents": skill_file}
    found = side.registry.resource_for(uri)
    if found is None:
        if run.era == "modern":
            raise MCPError(rpc.INVALID_PARAMS, f"Resource not found: {uri}", {"uri": uri})
        raise MCPError(RESOURCE_NOT_FOUND_LEGACY, f"Resource not found: {uri}", {"uri": uri})
    definition, variables = found
    value = call(definition.fn, definition.context, ctx, variables)
    return {"contents": resource_contents(uri, definition.mime_type, value)}


def _get_prompt(side: ServerSide, run: Invocation, ctx: Context) -> JSONObject:
    name = _string(run.params, "name")
    prompt = side.registry.prompt(name)
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


def finish_result(side: ServerSide, run: Invocation, result: JSONObject) -> JSONObject:
    """Add what a 2026-07-28 result carries: ``resultType``, ``serverInfo`` and cache hints."""
    if run.era != "modern":
        return result
    finished: Dict[str, Any] = dict(result)
    finished.setdefault("resultType", "complete")
    meta = dict(finished.get("_meta") or {})
    meta.setdefault(SERVER_INFO_KEY, side.settings.server_info())
    finished["_meta"] = meta
    if run.method in _CACHEABLE and finished["resultType"] == "complete":
        finished.setdefault("ttlMs", side.settings.ttl_ms)
        finished.setdefault("cacheScope", "public")
    return finished


def _refused(side: ServerSide, run: Invocation, reason: str) -> None:
    """Mark the call's record: answered with ``reason`` before the tool ran (so it is not one of ``calls()``)."""
    if run.record is not None:
        side.recorder.refuse(run.record, reason)


def _tool_error(text: str) -> JSONObject:
    return {"content": [{"type": "text", "text": text}], "isError": True}


def _string(params: JSONObject, key: str) -> str:
    value: Optional[Any] = params.get(key)
    if not isinstance(value, str):
        raise MCPError(rpc.INVALID_PARAMS, f"Invalid params: {key!r} must be a string")
    return value
