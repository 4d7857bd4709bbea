"""A FakeServer over stdio for the mcpsync.llm manager tests: ``python llm_tools_server.py NAME``.

Every server has ``echo``; it also has a tool with a dotted name, ``NAME.lookup``, whose
result names the server, so a test can tell which server ran a call.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run from a checkout without installing

from mcpsync.testing import FakeServer  # noqa: E402

name = sys.argv[1] if len(sys.argv) > 1 else "llm"
server = FakeServer(name)


@server.tool()
def echo(text: str) -> str:
    """Say the text back."""
    return f"{name}: {text}"


@server.tool(name=f"{name}.lookup", description="Look a key up.",
             input_schema={"type": "object", "properties": {"key-name": {"type": "string"}},
                           "required": ["key-name"]})
def lookup(**arguments: str) -> dict:
    return {"server": name, "key": arguments["key-name"]}


if __name__ == "__main__":
    server.run_stdio()
