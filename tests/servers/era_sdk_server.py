#!/usr/bin/env python
"""Test peer: one official-SDK (``mcp`` 2.x) server for both protocol eras, over stdio or HTTP.

Run as ``python tests/servers/era_sdk_server.py [--legacy-only] [--name NAME]`` (stdio), or
serve ``make_app(json_response=..., legacy_only=...)`` over HTTP (see http_fixtures).

By default the server is dual-era, as the SDK serves it: a client that opens with the
2026-07-28 ``_meta`` envelope gets the modern protocol, one that opens with ``initialize``
the legacy one. ``--legacy-only`` (stdio: the SDK's handshake-only loop; HTTP: the modern
``MCP-Protocol-Version`` header is hidden from the SDK) behaves like a server written
before 2026: it knows neither ``server/discover`` nor the envelope.

The tools work in both eras, through the SDK's own machinery:

    echo(text), add(a, b)        plain results
    sample(prompt)               the SDK's ``Sample`` resolver: sampling/createMessage (legacy: a
                                 request mid-call; modern: an input_required result)
    ask(question)                the SDK's ``Elicit`` resolver: a form (answer: str, count: int = 7)
    where()                      the SDK's ``ListRoots`` resolver: the client's roots, joined by ","
    survey()                     sample, then ask, then roots: three rounds on a modern server
    log(message)                 an info notifications/message (modern: only when the request's
                                 _meta asks for a log level)
    progress(steps)              progress notifications 1..steps
    block(seconds)               sleeps; a cancelled call is counted (see ``cancelled()``)
    cancelled()                  how many block calls were cancelled, as text
    touch(uri)                   a resources/updated notification for uri (legacy: to the session,
                                 after resources/subscribe; modern: to subscriptions/listen streams)
    grow()                       adds a tool and announces tools/list_changed
    route(region, query)         ``region`` carries ``x-mcp-header: Region``: the SDK checks the
                                 Mcp-Param-Region header of modern HTTP calls against the body
    broken_header(amount)        listed only (the SDK refuses to register it): ``x-mcp-header`` on a
                                 number is invalid, so a modern HTTP client must leave it out
    url_login()                  legacy: raises -32042 (URL elicitation required)

Tasks (neither era's task protocol is in the SDK: a ``TaskMiddleware`` on the SDK server
serves the 2025-11-25 tasks and the 2026-07-28 ``io.modelcontextprotocol/tasks`` extension):

    square(n)                    taskSupport "optional": as a task it takes ~0.3 s, result n*n
    slow_square(n)               taskSupport "required" (2025-11-25); modern: always a task for a
                                 client declaring the extension, -32021 for one that does not
    approve_task(item)           a task that needs the person's approval: 2025-11-25 through an
                                 elicitation sent during tasks/result; 2026 through inputRequests
                                 and tasks/update

Resources ``demo://greeting`` and ``demo://folder/{name}``; prompt ``greet(name)``.
``tools/list`` results are cacheable for 60 s (``ttlMs``, public) on modern requests.
"""

from __future__ import annotations

import argparse
import json
import time
import uuid
import warnings
from datetime import datetime, timezone
from typing import Annotated, Any, Dict, List, Optional

import anyio
from mcp_types import (
    CreateMessageResult, EmptyResult, ElicitRequestURLParams, ListRootsResult, SamplingMessage,
    SetLevelRequestParams, SubscribeRequestParams, TextContent, UnsubscribeRequestParams,
)
from pydantic import BaseModel, Field

from mcp.server.caching import CacheHint
from mcp.server.mcpserver import Context, Elicit, ElicitationResult, ListRoots, MCPServer, Resolve, Sample
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError, UrlElicitationRequiredError

warnings.filterwarnings("ignore", category=MCPDeprecationWarning)
warnings.filterwarnings("ignore", category=DeprecationWarning)

MODERN = "2026-07-28"
TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
TASK_TOOLS = {"square": "optional", "slow_square": "required", "approve_task": "optional"}
TASK_SECONDS = 0.3


class Answer(BaseModel):
    answer: str
    count: int = 7


class Approval(BaseModel):
    approved: bool


# -- resolvers (the SDK runs them in either era; async, since plain functions would run on AnyIO
# worker threads that outlive a test when the server runs in-process) ----------------------------------


def sample_request(prompt: str) -> Sample:
    return Sample([SamplingMessage(role="user", content=TextContent(type="text", text=prompt))], max_tokens=32,
                  system_prompt="Be brief.")


async def sampled(prompt: str) -> Sample:
    return sample_request(prompt)


async def asked(question: str) -> Elicit[Answer]:
    return Elicit(question, Answer)


async def roots() -> ListRoots:
    return ListRoots()


async def survey_sample() -> Sample:
    return sample_request("Name a colour")


async def survey_ask() -> Elicit[Answer]:
    return Elicit("How many?", Answer)


def text_of(result: CreateMessageResult) -> str:
    content = result.content
    return content.text if isinstance(content, TextContent) else str(content)


# -- tasks, served by a middleware in front of the SDK's handlers -------------------------------------


def now() -> str:
    return datetime.now(timezone.utc).isoformat().replace("+00:00", "Z")


class TaskMiddleware:
    """2025-11-25 tasks (``params.task``, tasks/get|result|cancel|list) and the 2026 tasks extension."""

    def __init__(self) -> None:
        self.tasks: Dict[str, Dict[str, Any]] = {}

    async def __call__(self, ctx: Any, call_next: Any) -> Any:
        method, params = ctx.method, dict(ctx.params or {})
        modern = ctx.protocol_version == MODERN or VERSION_KEY in (params.get("_meta") or {})
        if method == "initialize":
            result = dict(await call_next(ctx))
            capabilities = dict(result.get("capabilities") or {})
            capabilities["tasks"] = {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
            result["capabilities"] = capabilities
            return result
        if method == "server/discover":
            result = dict(await call_next(ctx))
            capabilities = dict(result.get("capabilities") or {})
            capabilities["extensions"] = {**(capabilities.get("extensions") or {}), TASKS_EXTENSION: {}}
            result["capabilities"] = capabilities
            return result
        if method == "tools/list" and not modern:
            result = dict(await call_next(ctx))
            result["tools"] = [dict(tool, execution={"taskSupport": TASK_TOOLS[tool["name"]]})
                               if tool.get("name") in TASK_TOOLS else tool for tool in result.get("tools", [])]
            return result
        if method == "tools/call" and params.get("name") in TASK_TOOLS:
            return self._call(ctx, params, modern) or await call_next(ctx)
        if method.startswith("tasks/"):
            return await self._task_method(ctx, method, params, modern)
        return await call_next(ctx)

    def _call(self, ctx: Any, params: Dict[str, Any], modern: bool) -> Optional[Dict[str, Any]]:
        name = params["name"]
        if modern:
            declared = ((params.get("_meta") or {}).get(CAPABILITIES_KEY) or {}).get("extensions") or {}
            if TASKS_EXTENSION not in declared:
                if name == "slow_square":
                    raise MCPError(-32021, "This tool runs only as a task",
                                   {"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}})
                return None  # run it at once, as a plain call
        elif "task" not in params:
            if TASK_TOOLS[name] == "required":
                raise MCPError(-32602, f"Tool {name} must be called as a task")
            return None
        task_id = str(uuid.uuid4())
        arguments = params.get("arguments") or {}
        self.tasks[task_id] = {"tool": name, "arguments": arguments, "start": time.monotonic(), "created": now(),
                               "cancelled": False, "approval": None, "modern": modern}
        info = self._info(task_id)
        return {"resultType": "task", **info} if modern else {"task": info}

    def _state(self, task_id: str) -> Dict[str, Any]:
        task = self.tasks.get(task_id)
        if task is None:
            raise MCPError(-32602, f"Failed to retrieve task: no task {task_id}")
        return task

    def _status(self, task: Dict[str, Any]) -> str:
        if task["cancelled"]:
            return "cancelled"
        if task["tool"] == "approve_task":
            return "completed" if task["approval"] is not None else "input_required"
        return "completed" if time.monotonic() - task["start"] >= TASK_SECONDS else "working"

    def _result(self, task: Dict[str, Any]) -> Dict[str, Any]:
        arguments = task["arguments"]
        if task["tool"] == "approve_task":
            text = f"{arguments.get('item')}: {'approved' if task['approval'] else 'rejected'}"
        else:
            text = str(int(arguments.get("n", 0)) ** 2)
        return {"content": [{"type": "text", "text": text}], "isError": False}

    def _info(self, task_id: str) -> Dict[str, Any]:
        task = self.tasks[task_id]
        status = self._status(task)
        info: Dict[str, Any] = {"taskId": task_id, "status": status, "createdAt": task["created"],
                                "lastUpdatedAt": now()}
        if task["modern"]:
            info.update(ttlMs=60000, pollIntervalMs=50)
            if status == "completed":
                info["result"] = self._result(task)
            elif status == "input_required":
                info["inputRequests"] = {"approval-1": {"method": "elicitation/create", "params": {
                    "mode": "form", "message": f"Approve {task['arguments'].get('item')}?",
                    "requestedSchema": {"type": "object", "properties": {"approved": {"type": "boolean"}},
                                        "required": ["approved"]}}}}
        else:
            info.update(ttl=60000, pollInterval=50)
        return info

    async def _task_method(self, ctx: Any, method: str, params: Dict[str, Any], modern: bool) -> Dict[str, Any]:
        if method == "tasks/list" and not modern:
            return {"tasks": [self._info(task_id) for task_id in self.tasks]}
        task_id = str(params.get("taskId"))
        task = self._state(task_id)
        if method == "tasks/get":
            return self._info(task_id)
        if method == "tasks/cancel":
            task["cancelled"] = True
            return {} if modern else self._info(task_id)
        if method == "tasks/update" and modern:
            answer = (params.get("inputResponses") or {}).get("approval-1")
            if isinstance(answer, dict):
                task["approval"] = answer.get("action") == "accept" and bool((answer.get("content") or {})
                                                                             .get("approved"))
            return {}
        if method == "tasks/result" and not modern:
            if task["tool"] == "approve_task" and task["approval"] is None:
                reply = await ctx.session.elicit_form(
                    f"Approve {task['arguments'].get('item')}?",
                    {"type": "object", "properties": {"approved": {"type": "boolean"}}, "required": ["approved"]},
                    related_request_id=ctx.request_id)
                task["approval"] = reply.action == "accept" and bool((reply.content or {}).get("approved"))
            while self._status(task) == "working":
                await anyio.sleep(0.02)
            if self._status(task) == "cancelled":
                raise MCPError(-32603, "The task was cancelled")
            result = self._result(task)
            result["_meta"] = {"io.modelcontextprotocol/related-task": {"taskId": task_id}}
            return result
        raise MCPError(-32601, f"Method not found: {method}")


BROKEN_TOOL = {"name": "broken_header", "description": "An invalid x-mcp-header (on a number).",
               "inputSchema": {"type": "object", "properties": {
                   "amount": {"type": "number", "x-mcp-header": "Amount"}}}}


async def list_broken_tool(ctx: Any, call_next: Any) -> Any:
    """A middleware that lists one tool the SDK itself would refuse to register."""
    result = await call_next(ctx)
    if ctx.method == "tools/list" and isinstance(result, dict):
        result = dict(result, tools=[*result.get("tools", []), BROKEN_TOOL])
    return result


# -- the server -----------------------------------------------------------------------------------------


def build_server(name: str = "era-sdk-server") -> MCPServer:
    tasks = TaskMiddleware()
    server = MCPServer(name, version="2.0.0", instructions="Ask in either era.", log_level="WARNING",
                       cache_hints={"tools/list": CacheHint(ttl_ms=60_000, scope="public")},
                       middleware=[tasks, list_broken_tool])
    counters = {"cancelled": 0}
    levels: List[str] = []

    @server.tool(description="Return the given text unchanged.")
    async def echo(text: str) -> str:
        return text

    @server.tool(description="Add two numbers.")
    async def add(a: float, b: float) -> float:
        return a + b

    @server.tool(description="Ask the client's model.")
    async def sample(prompt: str, reply: Annotated[CreateMessageResult, Resolve(sampled)]) -> str:
        return text_of(reply)

    @server.tool(description="Ask the person a question.")
    async def ask(question: str, reply: Annotated[ElicitationResult[Answer], Resolve(asked)]) -> str:
        data = reply.data.model_dump() if getattr(reply, "data", None) is not None else None
        return f"{reply.action} {json.dumps(data, sort_keys=True)}"

    @server.tool(description="The client's roots.")
    async def where(found: Annotated[ListRootsResult, Resolve(roots)]) -> str:
        return ",".join(str(root.uri) for root in found.roots)

    @server.tool(description="Three questions in a row.")
    async def survey(colour: Annotated[CreateMessageResult, Resolve(survey_sample)],
                     many: Annotated[ElicitationResult[Answer], Resolve(survey_ask)],
                     places: Annotated[ListRootsResult, Resolve(roots)]) -> str:
        count = many.data.count if getattr(many, "data", None) is not None else None
        return f"{text_of(colour)}|{many.action}:{count}|{len(places.roots)}"

    @server.tool(description="Send an info log message.")
    async def log(ctx: Context, message: str) -> str:
        with warnings.catch_warnings():  # in-process under pytest, where warnings are errors
            warnings.simplefilter("ignore")
            await ctx.info(message)
        return "logged"

    @server.tool(description="Report progress steps 1..steps.")
    async def progress(ctx: Context, steps: int = 3) -> str:
        for step in range(1, steps + 1):
            await ctx.report_progress(step, steps, f"step {step} of {steps}")
        return "done"

    @server.tool(description="Sleep (cancellable).")
    async def block(seconds: float = 30) -> str:
        try:
            await anyio.sleep(seconds)
        except anyio.get_cancelled_exc_class():
            counters["cancelled"] += 1
            raise
        return "unblocked"

    @server.tool(description="How many block calls were cancelled.")
    async def cancelled() -> str:
        return str(counters["cancelled"])

    @server.tool(description="Announce an update of a resource.")
    async def touch(ctx: Context, uri: str) -> str:
        if ctx.protocol_version == MODERN:
            await ctx.notify_resource_updated(uri)
        else:
            await ctx.session.send_resource_updated(uri)
        return "touched"

    @server.tool(description="Add a tool and announce it.")
    async def grow(ctx: Context) -> str:
        async def grown() -> str:
            return "grown"

        if "grown" not in [tool.name for tool in await server.list_tools()]:
            server.add_tool(grown, name="grown", description="Added at run time.")
        if ctx.protocol_version == MODERN:
            await ctx.notify_tools_changed()
        else:
            await ctx.session.send_tool_list_changed()
        return "grew"

    @server.tool(description="A query routed by region (x-mcp-header).")
    async def route(region: Annotated[str, Field(json_schema_extra={"x-mcp-header": "Region"})],
                    query: str) -> str:
        return f"{region}:{query}"

    @server.tool(description="Needs the person to log in at a URL first (legacy -32042).")
    async def url_login() -> str:
        raise UrlElicitationRequiredError([ElicitRequestURLParams(
            message="Log in to continue", url="https://login.example.com/start?x=1", elicitation_id="login-1")])

    @server.tool(description="Square a number (may run as a task).")
    async def square(n: int) -> str:
        return str(n * n)

    @server.tool(description="Square a number slowly (always a task).")
    async def slow_square(n: int) -> str:
        return str(n * n)

    @server.tool(description="Wait for the person's approval (a task).")
    async def approve_task(item: str) -> str:
        return f"{item}: not run as a task"

    @server.resource("demo://greeting", name="greeting", mime_type="text/plain")
    async def greeting() -> str:
        return "hello"

    @server.resource("demo://folder/{name}", name="file", mime_type="text/plain")
    async def folder_file(name: str) -> str:
        return f"file {name}"

    @server.prompt(description="Greet someone by name.")
    async def greet(name: str) -> str:
        return f"Hello, {name}!"

    async def set_level(ctx: Any, params: SetLevelRequestParams) -> EmptyResult:
        levels.append(params.level)
        return EmptyResult()

    async def subscribe(ctx: Any, params: SubscribeRequestParams) -> EmptyResult:
        return EmptyResult()

    async def unsubscribe(ctx: Any, params: UnsubscribeRequestParams) -> EmptyResult:
        return EmptyResult()

    low = server._lowlevel_server
    low.add_request_handler("logging/setLevel", SetLevelRequestParams, set_level)
    low.add_request_handler("resources/subscribe", SubscribeRequestParams, subscribe)
    low.add_request_handler("resources/unsubscribe", UnsubscribeRequestParams, unsubscribe)
    return server


# -- serving ---------------------------------------------------------------------------------------


def run_stdio(server: MCPServer, legacy_only: bool) -> None:
    if not legacy_only:
        server.run("stdio")
        return
    from mcp.server.runner import serve_loop
    from mcp.server.stdio import stdio_server

    async def handshake_only() -> None:
        low = server._lowlevel_server
        async with low.lifespan(low) as state, stdio_server() as (read, write):
            await serve_loop(low, read, write, lifespan_state=state, init_options=low.create_initialization_options())

    anyio.run(handshake_only)


def make_app(*, json_response: bool = False, legacy_only: bool = False) -> Any:
    """The Streamable HTTP app (stateful: legacy clients get sessions, so the server can ask them things)."""
    app = build_server().streamable_http_app(json_response=json_response)
    return HideModernHeader(app) if legacy_only else app


class HideModernHeader:
    """ASGI wrapper: the SDK never sees a 2026-07-28 ``MCP-Protocol-Version``, as a server from 2025 would not."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Dict[str, Any], receive: Any, send: Any) -> None:
        if scope.get("type") == "http":
            headers = [(k, v) for k, v in scope["headers"] if not (k == b"mcp-protocol-version" and v == MODERN.encode())]
            scope = dict(scope, headers=headers)
        await self.app(scope, receive, send)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--legacy-only", action="store_true", help="speak only the initialize handshake era")
    parser.add_argument("--name", default="era-sdk-server")
    args = parser.parse_args()
    run_stdio(build_server(args.name), args.legacy_only)


if __name__ == "__main__":
    main()
