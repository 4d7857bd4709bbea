"""Task functions for the multiprocessing tests (tests/test_fork.py), importable by spawned workers.

Workers reach the server through the module-level :data:`client` and :data:`manager`: inherited
from the parent under the ``fork`` start method, or handed over pickled by :func:`install` (the
pool's initializer) under ``spawn`` and ``forkserver``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import mcpsync

DEMO = [sys.executable, str(Path(__file__).parent.parent / "examples" / "demo_server.py")]

client: Optional[mcpsync.Client] = None
manager: Optional[mcpsync.Manager] = None


def install(shared_client: Optional[mcpsync.Client], shared_manager: Optional[mcpsync.Manager]) -> None:
    """The pool initializer: keep the (unpickled) client and manager for this worker's tasks."""
    global client, manager
    client, manager = shared_client, shared_manager


def echo(text: str) -> Tuple[str, str, int, Optional[int]]:
    """(asked, answered, worker pid, server pid) of one echo call through the module-level client."""
    assert client is not None
    answer = client.call_tool("echo", {"text": text}).text
    return text, answer, os.getpid(), getattr(client.transport, "pid", None)


def manager_echo(text: str) -> Tuple[str, str, int]:
    """(asked, answered, worker pid) of one echo call through the module-level manager."""
    assert manager is not None
    return text, manager.call_tool("mcp_demo_echo", {"text": text}).text, os.getpid()


def manager_config() -> Dict[str, Any]:
    return {"mcpServers": {"demo": {"command": DEMO[0], "args": DEMO[1:]}}}


def expected(prefix: str, count: int) -> List[str]:
    return [f"{prefix}-{i}" for i in range(count)]
