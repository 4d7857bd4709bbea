"""Tasks for tests/engines/pool_driver.py, with the client and manager made at import time.

This is how an application module usually holds a client: ``client = mcpsync.connect(...)`` at
module level. Under the ``fork`` start method the workers inherit the driver's (connected)
objects; under ``spawn`` and ``forkserver`` each worker imports this module and connects its
own. The target is the demo server over stdio, or the Streamable HTTP server whose URL is in
``MCPSYNC_ENGINE_URL`` (then all workers share that one server, each with sessions of its own).
"""

from __future__ import annotations

import os
from typing import Any, Dict

import mcpsync
from tests.engines.common import demo_config, echo_through

URL = os.environ.get("MCPSYNC_ENGINE_URL")
TARGET: Dict[str, Any] = {"type": "http", "url": URL} if URL else demo_config()

client = mcpsync.connect(TARGET, timeout=30)
manager = mcpsync.Manager({"mcpServers": {"demo": TARGET}}, cache=False, timeout=30)
manager.connect_all(30)


def session(of: mcpsync.Client) -> Any:
    return getattr(of.transport, "session_id", None)


def echo(token: str) -> Dict[str, Any]:
    result = echo_through(client, token)
    result["session"] = session(client)
    return result


def manager_echo(token: str) -> Dict[str, Any]:
    answer = manager.call_tool("mcp_demo_echo", {"text": token}).text
    demo = manager.client("demo")
    return {"token": token, "answer": answer, "worker": os.getpid(), "server": getattr(demo.transport, "pid", None),
            "session": session(demo)}
