"""Drive ``fake_stdio_server.py`` with the official SDK's client and print what it saw as JSON.

``python sdk_fake_driver.py MODE [server options...]`` where MODE is ``auto``
(probe ``server/discover``, fall back to ``initialize``) or ``legacy``. Run as a
subprocess so the SDK's event loop never touches the test process.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Dict, List

import anyio
import mcp_types as types
from mcp import Client, StdioServerParameters

SERVER = Path(__file__).with_name("fake_stdio_server.py")


async def sampling(context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
    asked = params.messages[0].content
    text = getattr(asked, "text", "")
    return types.CreateMessageResult(role="assistant", model="fake-model",
                                     content=types.TextContent(type="text", text=f"Paris ({text})"))


async def elicitation(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content={"ok": True})


async def roots(context: Any) -> types.ListRootsResult:
    return types.ListRootsResult(roots=[types.Root(uri="file:///srv/project")])


async def main(mode: str, server_args: List[str]) -> None:
    out: Dict[str, Any] = {}
    progress: List[Any] = []

    async def on_progress(value: float, total: Any, message: Any) -> None:
        progress.append([value, total, message])

    params = StdioServerParameters(command=sys.executable, args=[str(SERVER), *server_args])
    async with Client(params, mode=mode, sampling_callback=sampling, elicitation_callback=elicitation,
                      list_roots_callback=roots, read_timeout_seconds=30) as client:
        out["protocol_version"] = client.protocol_version
        info = client.server_info
        out["server_info"] = {"name": info.name, "version": info.version} if info else None
        out["instructions"] = client.instructions
        out["tools"] = sorted(tool.name for tool in (await client.list_tools()).tools)
        added = await client.call_tool("add", {"a": 2, "b": 40})
        out["add"] = added.model_dump(by_alias=True, exclude_none=True, mode="json")
        counted = await client.call_tool("countdown", {"n": 2}, progress_callback=on_progress)
        out["countdown"] = counted.content[0].text  # type: ignore[union-attr]
        out["progress"] = progress
        asked = await client.call_tool("ask", {})
        out["ask"] = asked.structured_content
        bad = await client.call_tool("add", {"a": "two", "b": 40})
        out["bad_arguments"] = {"is_error": bad.is_error, "text": bad.content[0].text}  # type: ignore[union-attr]
        read = await client.read_resource("memo://today")
        out["resource"] = read.contents[0].text  # type: ignore[union-attr]
        prompt = await client.get_prompt("greet", {"name": "Ada"})
        out["prompt"] = prompt.messages[0].content.text  # type: ignore[union-attr]
    print(json.dumps(out))


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2:])
