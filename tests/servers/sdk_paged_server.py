#!/usr/bin/env python
"""Test peer: a low-level official-SDK MCP stdio server whose lists paginate.

Run as ``python tests/servers/sdk_paged_server.py [--loop-cursor]``.

Listings (page size 3, opaque base64 cursors; a bad cursor is error -32602)
    tools/list       t0..t6            pages [t0 t1 t2] [t3 t4 t5] [t6]
    resources/list   demo://r/0..4     pages [r/0 r/1 r/2] [r/3 r/4]
    prompts/list     p0..p3            pages [p0 p1 p2] [p3]

With ``--loop-cursor``, tools/list always answers the first page with the
same ``nextCursor`` ("loop"), whatever cursor it is given: a client that
follows cursors blindly never terminates.

Tools
    t0..t6 (no arguments)  returns text "t<i>"
    touch                  (not listed) sends notifications/tools/list_changed, returns "touched"
    update(uri: str)       (not listed) sends notifications/resources/updated for ``uri`` if it is
                           subscribed, returns "sent" or "not subscribed"

Resources: resources/read of demo://r/<i> returns text "resource <i>".
Prompts: prompts/get p<i> returns one user message "prompt <i>".
Subscriptions: resources/subscribe and resources/unsubscribe are served
(capability ``subscribe: true``). About 50 ms after answering a subscribe the
server sends notifications/resources/updated for that URI (once).
Capabilities also advertise ``tools.listChanged: true``.
"""

from __future__ import annotations

import argparse
import base64
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

PAGE_SIZE = 3
LOOP_CURSOR = "loop"

TOOLS = [
    types.Tool(name=f"t{i}", description=f"Test tool number {i}.", input_schema={"type": "object", "properties": {}})
    for i in range(7)
]
RESOURCES = [
    types.Resource(name=f"r{i}", uri=f"demo://r/{i}", mime_type="text/plain") for i in range(5)
]
PROMPTS = [types.Prompt(name=f"p{i}", description=f"Test prompt number {i}.") for i in range(4)]


def encode_cursor(kind: str, offset: int) -> str:
    return base64.urlsafe_b64encode(f"{kind}:{offset}".encode()).decode()


def decode_cursor(kind: str, cursor: str | None) -> int:
    """Return the offset a cursor points at; 0 for no cursor. Raises -32602 on a bad cursor."""
    if cursor is None:
        return 0
    try:
        got_kind, offset = base64.urlsafe_b64decode(cursor.encode()).decode().split(":")
        if got_kind != kind or int(offset) < 0:
            raise ValueError(cursor)
        return int(offset)
    except ValueError:
        raise MCPError(code=types.INVALID_PARAMS, message=f"invalid cursor: {cursor!r}") from None


def page(kind: str, items: list[Any], cursor: str | None) -> tuple[list[Any], str | None]:
    start = decode_cursor(kind, cursor)
    end = start + PAGE_SIZE
    return items[start:end], (encode_cursor(kind, end) if end < len(items) else None)


def text_result(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


def build_server(loop_cursor: bool) -> Server[dict[str, Any]]:
    subscribed: set[str] = set()

    @asynccontextmanager
    async def lifespan(_: Server[dict[str, Any]]) -> AsyncIterator[dict[str, Any]]:
        # A task group for work that must happen after a response went out.
        async with anyio.create_task_group() as tg:
            yield {"tg": tg}
            tg.cancel_scope.cancel()

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        if loop_cursor:
            return types.ListToolsResult(tools=TOOLS[:PAGE_SIZE], next_cursor=LOOP_CURSOR)
        tools, next_cursor = page("tools", TOOLS, params.cursor if params else None)
        return types.ListToolsResult(tools=tools, next_cursor=next_cursor)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        name = params.name
        args = params.arguments or {}
        if name == "touch":
            await ctx.session.send_tool_list_changed()
            return text_result("touched")
        if name == "update":
            uri = str(args.get("uri", ""))
            if uri not in subscribed:
                return text_result("not subscribed")
            await ctx.session.send_resource_updated(uri)
            return text_result("sent")
        if any(tool.name == name for tool in TOOLS):
            return text_result(name)
        raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {name}")

    async def list_resources(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
        resources, next_cursor = page("resources", RESOURCES, params.cursor if params else None)
        return types.ListResourcesResult(resources=resources, next_cursor=next_cursor)

    async def read_resource(ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        uri = str(params.uri)
        for resource in RESOURCES:
            if resource.uri == uri:
                index = uri.rsplit("/", 1)[1]
                return types.ReadResourceResult(
                    contents=[types.TextResourceContents(uri=uri, mime_type="text/plain", text=f"resource {index}")]
                )
        raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown resource: {uri}", data={"uri": uri})

    async def send_updated_later(session: Any, uri: str) -> None:
        await anyio.sleep(0.05)  # let the subscribe response go out first
        if uri in subscribed:
            await session.send_resource_updated(uri)

    async def subscribe(ctx: Any, params: types.SubscribeRequestParams) -> types.EmptyResult:
        uri = str(params.uri)
        subscribed.add(uri)
        ctx.lifespan_context["tg"].start_soon(send_updated_later, ctx.session, uri)
        return types.EmptyResult()

    async def unsubscribe(ctx: Any, params: types.UnsubscribeRequestParams) -> types.EmptyResult:
        subscribed.discard(str(params.uri))
        return types.EmptyResult()

    async def list_prompts(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListPromptsResult:
        prompts, next_cursor = page("prompts", PROMPTS, params.cursor if params else None)
        return types.ListPromptsResult(prompts=prompts, next_cursor=next_cursor)

    async def get_prompt(ctx: Any, params: types.GetPromptRequestParams) -> types.GetPromptResult:
        if not any(prompt.name == params.name for prompt in PROMPTS):
            raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown prompt: {params.name}")
        text = f"prompt {params.name[1:]}"
        return types.GetPromptResult(
            messages=[types.PromptMessage(role="user", content=types.TextContent(type="text", text=text))]
        )

    return Server(
        "sdk-paged-server",
        version="1.0.0",
        lifespan=lifespan,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_read_resource=read_resource,
        on_subscribe_resource=subscribe,
        on_unsubscribe_resource=unsubscribe,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
    )


async def serve(loop_cursor: bool) -> None:
    server = build_server(loop_cursor)
    options = server.create_initialization_options(NotificationOptions(tools_changed=True))
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, options)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--loop-cursor", action="store_true", help="tools/list always returns the same nextCursor")
    args = parser.parse_args()
    anyio.run(serve, args.loop_cursor)


if __name__ == "__main__":
    main()
