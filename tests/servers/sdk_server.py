#!/usr/bin/env python
"""Test peer: an MCP stdio server built with the official ``mcp`` SDK (MCPServer).

Run as ``python tests/servers/sdk_server.py [--name NAME] [--log-level LEVEL]``.
It speaks newline-delimited JSON-RPC on stdin/stdout and serves the legacy
``initialize`` handshake (the SDK picks the era from the first request).

Tools
    echo(text: str) -> str                 returns ``text``
    add(a: float, b: float) -> float       structured output ``{"result": a + b}``
    fail(message: str)                     raises; the result has ``isError: true``
    progress(steps: int = 3)               progress 1..steps (total=steps, with a message), returns "done"
    block(seconds: float = 30)             sleeps; on cancellation writes "CANCELLED block" to stderr
    image()                                returns one PNG image content block
    log(message: str)                      sends notifications/message (level info), returns "logged"
    stderr(text: str)                      writes ``text`` to stderr, returns "ok"

Resources
    demo://greeting                        text "hello"
    demo://users/{user_id}                 template, text "user <user_id>"
    demo://blob                            binary (application/octet-stream), bytes 0..15

Prompts
    greet(name: str)                       one user message "Hello, <name>!"
    completion/complete for greet.name     values from alice/bob/carol starting with the prefix

``logging/setLevel`` is accepted (the logging capability is advertised).
"""

from __future__ import annotations

import argparse
import struct
import sys
import warnings
import zlib
from typing import Any

import anyio
from mcp_types import (
    Completion,
    CompletionArgument,
    CompletionContext,
    EmptyResult,
    PromptReference,
    ResourceTemplateReference,
    SetLevelRequestParams,
)

from mcp.server.mcpserver import Context, Image, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPDeprecationWarning

# The SDK marks the logging capability as deprecated for the 2026 protocol; the
# warnings would only add noise to the stderr that tests inspect.
warnings.filterwarnings("ignore", category=MCPDeprecationWarning)

NAMES = ["alice", "bob", "carol"]


def tiny_png() -> bytes:
    """Build a valid 1x1 red RGB PNG from scratch."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)  # width, height, depth 8, RGB
    pixels = zlib.compress(b"\x00\xff\x00\x00")  # filter byte + one red pixel
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")


PNG_BYTES = tiny_png()


def build_server(name: str, log_level: str) -> MCPServer:
    server = MCPServer(name, version="1.0.0", log_level=log_level)  # type: ignore[arg-type]

    # ----------------------------------------------------------------- tools
    @server.tool(description="Return the given text unchanged.")
    def echo(text: str) -> str:
        return text

    @server.tool(description="Add two numbers.")
    def add(a: float, b: float) -> float:
        return a + b

    @server.tool(description="Always fails with the given message (isError result).")
    def fail(message: str) -> str:
        raise ToolError(message)

    @server.tool(description="Report progress steps 1..steps, then return 'done'.")
    async def progress(ctx: Context, steps: int = 3) -> str:
        for step in range(1, steps + 1):
            await ctx.report_progress(step, steps, f"step {step} of {steps}")
        return "done"

    @server.tool(description="Sleep for the given number of seconds (cancellable).")
    async def block(seconds: float = 30) -> str:
        try:
            await anyio.sleep(seconds)
        except anyio.get_cancelled_exc_class():
            sys.stderr.write("CANCELLED block\n")
            sys.stderr.flush()
            raise
        return "unblocked"

    @server.tool(description="Return a tiny PNG image.")
    def image() -> Image:
        return Image(data=PNG_BYTES, format="png")

    @server.tool(description="Send an info-level log notification, return 'logged'.")
    async def log(ctx: Context, message: str) -> str:
        await ctx.info(message)
        return "logged"

    @server.tool(description="Write the text to the server's stderr, return 'ok'.")
    def stderr(text: str) -> str:
        sys.stderr.write(text)
        sys.stderr.flush()
        return "ok"

    # ------------------------------------------------------------- resources
    @server.resource("demo://greeting", name="greeting", mime_type="text/plain")
    def greeting() -> str:
        return "hello"

    @server.resource("demo://users/{user_id}", name="user", mime_type="text/plain")
    def user(user_id: str) -> str:
        return f"user {user_id}"

    @server.resource("demo://blob", name="blob", mime_type="application/octet-stream")
    def blob() -> bytes:
        return bytes(range(16))

    # --------------------------------------------------------------- prompts
    @server.prompt(description="Greet someone by name.")
    def greet(name: str) -> str:
        return f"Hello, {name}!"

    @server.completion()  # type: ignore[untyped-decorator,no-untyped-call]
    async def complete(
        ref: PromptReference | ResourceTemplateReference,
        argument: CompletionArgument,
        context: CompletionContext | None,
    ) -> Completion | None:
        if isinstance(ref, PromptReference) and ref.name == "greet" and argument.name == "name":
            values = [n for n in NAMES if n.startswith(argument.value)]
            return Completion(values=values, total=len(values), has_more=False)
        return None

    # --------------------------------------------------------------- logging
    # MCPServer has no public hook for logging/setLevel; register it on the
    # low-level server so the capability is advertised and the request accepted.
    async def set_level(ctx: Any, params: SetLevelRequestParams) -> EmptyResult:
        sys.stderr.write(f"LOGLEVEL {params.level}\n")
        sys.stderr.flush()
        return EmptyResult()

    server._lowlevel_server.add_request_handler("logging/setLevel", SetLevelRequestParams, set_level)
    return server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--name", default="sdk-test-server", help="server name reported in serverInfo")
    parser.add_argument(
        "--log-level",
        default="WARNING",
        choices=["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"],
        help="level of the SDK's own logging to stderr (default WARNING)",
    )
    args = parser.parse_args()
    build_server(args.name, args.log_level).run("stdio")


if __name__ == "__main__":
    main()
