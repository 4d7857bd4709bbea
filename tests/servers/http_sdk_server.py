#!/usr/bin/env python
"""Test peer: an MCP server built with the official ``mcp`` SDK, served over HTTP.

``make_app(mode)`` returns the Starlette app for one transport mode; the test
fixtures serve it with uvicorn on ``127.0.0.1`` and an ephemeral port. Run as a
script to serve one mode by hand: ``python tests/servers/http_sdk_server.py
--mode sse-stateful --port 8000``.

Modes
    json-stateful      Streamable HTTP, JSON responses, with Mcp-Session-Id sessions
    sse-stateful       Streamable HTTP, SSE responses, with sessions
    json-stateless     Streamable HTTP, JSON responses, no sessions
    sse-stateless      Streamable HTTP, SSE responses, no sessions
    legacy-sse         the 2024-11-05 HTTP+SSE transport (GET /sse, POST /messages/)

Tools
    echo(text)                 returns ``text``
    add(a, b)                  structured output ``{"result": a + b}``
    fail(message)              an ``isError`` result
    progress(steps=3)          progress 1..steps with a message, returns "done"
    block(seconds=30)          sleeps (cancellable), returns "unblocked"
    log(message)               an info notifications/message, returns "logged"
    sample(prompt)             asks the client sampling/createMessage, returns the reply text
    ask(question)              asks the client elicitation/create, returns "<action> <data json>"
    roots()                    asks the client roots/list, returns the uris joined by ","
    touch(uri)                 sends notifications/resources/updated for ``uri``, returns "touched"
    big(mb=1)                  returns one text block of ``mb`` MiB of "x"

Every handler is ``async``: the SDK runs plain functions on AnyIO worker
threads, which would outlive a test and trip its leak check.

Resources ``demo://greeting`` ("hello"), template ``demo://users/{user_id}``,
``demo://blob`` (bytes 0..15); prompt ``greet(name)``; completion for
``greet.name``; ``logging/setLevel`` and ``resources/(un)subscribe`` are accepted.
"""

from __future__ import annotations

import argparse
import json
import warnings
from typing import Any, List

import anyio
from mcp_types import (
    Completion,
    CompletionArgument,
    CompletionContext,
    EmptyResult,
    PromptReference,
    ResourceTemplateReference,
    SamplingMessage,
    SetLevelRequestParams,
    SubscribeRequestParams,
    TextContent,
    UnsubscribeRequestParams,
)
from pydantic import BaseModel

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPDeprecationWarning

warnings.filterwarnings("ignore", category=MCPDeprecationWarning)

MODES = ("json-stateful", "sse-stateful", "json-stateless", "sse-stateless", "legacy-sse")
NAMES = ["alice", "bob", "carol"]


def quiet() -> Any:
    """Silence the SDK's deprecation warnings (2026 deprecates logging, sampling, roots) around a call.

    The test run turns warnings into errors, and these are attributed to this module.
    """
    context = warnings.catch_warnings()

    class Quiet:
        def __enter__(self) -> None:
            context.__enter__()
            warnings.simplefilter("ignore")

        def __exit__(self, *exc: Any) -> None:
            context.__exit__(*exc)

    return Quiet()


class Answer(BaseModel):
    answer: str


def build_server(name: str = "http-sdk-server") -> MCPServer:
    server = MCPServer(name, version="1.0.0", log_level="WARNING")
    levels: List[str] = []

    @server.tool(description="Return the given text unchanged.")
    async def echo(text: str) -> str:
        return text

    @server.tool(description="Add two numbers.")
    async def add(a: float, b: float) -> float:
        return a + b

    @server.tool(description="Always fails with the given message.")
    async def fail(message: str) -> str:
        raise ToolError(message)

    @server.tool(description="Report progress steps 1..steps, then return 'done'.")
    async def progress(ctx: Context, steps: int = 3) -> str:
        for step in range(1, steps + 1):
            await ctx.report_progress(step, steps, f"step {step} of {steps}")
        return "done"

    @server.tool(description="Sleep for the given number of seconds.")
    async def block(seconds: float = 30) -> str:
        await anyio.sleep(seconds)
        return "unblocked"

    @server.tool(description="Send an info log notification.")
    async def log(ctx: Context, message: str) -> str:
        with quiet():
            await ctx.info(message)
        return "logged"

    @server.tool(description="Ask the client to sample a message.")
    async def sample(ctx: Context, prompt: str) -> str:
        with quiet():
            result = await ctx.session.create_message(
                [SamplingMessage(role="user", content=TextContent(type="text", text=prompt))],
                max_tokens=10, related_request_id=ctx.request_id,
            )
        content = result.content
        return content.text if isinstance(content, TextContent) else str(content)

    @server.tool(description="Ask the client a question (elicitation).")
    async def ask(ctx: Context, question: str) -> str:
        with quiet():
            result = await ctx.elicit(question, Answer)
        data = result.data.model_dump() if getattr(result, "data", None) is not None else None
        return f"{result.action} {json.dumps(data)}"

    @server.tool(description="Ask the client for its roots.")
    async def roots(ctx: Context) -> str:
        with quiet():
            result = await ctx.session.list_roots()
        return ",".join(str(root.uri) for root in result.roots)

    @server.tool(description="Send notifications/resources/updated for uri.")
    async def touch(ctx: Context, uri: str) -> str:
        with quiet():
            await ctx.session.send_resource_updated(uri)
        return "touched"

    @server.tool(description="Return mb MiB of text.")
    async def big(mb: float = 1) -> str:
        return "x" * int(mb * 1024 * 1024)

    @server.resource("demo://greeting", name="greeting", mime_type="text/plain")
    async def greeting() -> str:
        return "hello"

    @server.resource("demo://users/{user_id}", name="user", mime_type="text/plain")
    async def user(user_id: str) -> str:
        return f"user {user_id}"

    @server.resource("demo://blob", name="blob", mime_type="application/octet-stream")
    async def blob() -> bytes:
        return bytes(range(16))

    @server.prompt(description="Greet someone by name.")
    async def greet(name: str) -> str:
        return f"Hello, {name}!"

    @server.completion()  # type: ignore[untyped-decorator,no-untyped-call]
    async def complete(ref: PromptReference | ResourceTemplateReference, argument: CompletionArgument,
                       context: CompletionContext | None) -> Completion | None:
        if isinstance(ref, PromptReference) and ref.name == "greet" and argument.name == "name":
            values = [n for n in NAMES if n.startswith(argument.value)]
            return Completion(values=values, total=len(values), has_more=False)
        return None

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


def make_app(mode: str, host: str = "127.0.0.1") -> Any:
    """The Starlette app serving ``build_server()`` in ``mode`` (see the module docstring) on ``host``
    (the SDK checks the Host header against it: only loopback names for a loopback address)."""
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; expected one of {MODES}")
    server = build_server()
    if mode == "legacy-sse":
        return server.sse_app(host=host)
    return server.streamable_http_app(json_response=mode.startswith("json"),
                                      stateless_http=mode.endswith("stateless"), host=host)


def url_path(mode: str) -> str:
    """The path a client is given for ``mode``."""
    return "/sse" if mode == "legacy-sse" else "/mcp"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mode", default="sse-stateful", choices=MODES)
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--host", default="127.0.0.1", help="the address to serve on (a test's network namespace)")
    args = parser.parse_args()
    import uvicorn

    uvicorn.run(make_app(args.mode, args.host), host=args.host, port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
