"""Dask task functions for tests/engines/dask_driver.py (importable by the worker processes)."""

from __future__ import annotations

import os
from typing import Any, Dict

import mcpsync
from tests.engines.common import echo_through


def echo(client: mcpsync.Client, token: str) -> Dict[str, Any]:
    """One echo through ``client``: the copy of the driver's client this worker unpickled."""
    return echo_through(client, token)


def manager_echo(manager: mcpsync.Manager, token: str) -> Dict[str, Any]:
    answer = manager.call_tool("mcp_demo_echo", {"text": token}).text
    return {"token": token, "answer": answer, "worker": os.getpid(), "server": manager.client("demo").transport.pid}
