"""Ray task bodies for tests/engines/ray_driver.py (importable by Ray's worker processes).

Each returns what it was asked, what came back, its worker's pid and which connection answered: the
stdio server's pid, or the Streamable HTTP session id.
"""

from __future__ import annotations

import os
from typing import Any, Dict

import mcpsync
from tests.engines.common import echo_through


def echo(client: mcpsync.Client, token: str) -> Dict[str, Any]:
    result = echo_through(client, token)
    result["session"] = getattr(client.transport, "session_id", None)
    return result


def manager_echo(manager: mcpsync.Manager, token: str) -> Dict[str, Any]:
    answer = manager.call_tool("mcp_demo_echo", {"text": token}).text
    demo = manager.client("demo")
    return {"token": token, "answer": answer, "worker": os.getpid(), "server": getattr(demo.transport, "pid", None),
            "session": getattr(demo.transport, "session_id", None)}
