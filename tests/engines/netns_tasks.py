"""The task of tests/engines/netns_driver.py (importable by the Dask workers in their namespaces)."""

from __future__ import annotations

import os
from typing import Any, Dict

import mcpsync

ROLE = "MCPSYNC_NETNS_ROLE"


def call(client: mcpsync.Client, token: str) -> Dict[str, Any]:
    """A little work on the server (``block``: it waits a moment), then the echo of this task's token."""
    client.call_tool("block", {"seconds": 0.2})
    answer = client.call_tool("echo", {"text": token}).text
    return {"token": token, "answer": answer, "host": os.environ.get(ROLE), "worker": os.getpid(),
            "connection": id(client.transport)}  # the copies of one worker share one transport
