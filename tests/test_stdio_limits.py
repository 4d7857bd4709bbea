"""Hostile stdio servers against the client's limits (issue 13, items 12, 13, 15, 16, 17).

Each test runs ``tests/servers/flood_stdio.py`` in one mode and pins what the
client does about it: memory held for queued messages stays within a byte
budget, JSON nested too deeply is refused with a typed error, the reader thread
never blocks on a write, and the CLI shows what a server sent.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, Dict, List

import pytest

import mcpsync
from mcpsync import ProtocolError
from mcpsync._rpc import jsonrpc as rpc

from .conftest import ROOT, server_argv, until
from .reliability.conftest import rss_bytes

ENGINE_LOG = "mcpsync.engine"


def flood(mode: str, *args: str) -> List[str]:
    return server_argv("flood_stdio.py", mode, *args)


def connect(mode: str, *args: str, **options: Any) -> mcpsync.Client:
    options.setdefault("timeout", 20)
    options.setdefault("shutdown_timeout", 0.5)
    return mcpsync.connect(flood(mode, *args), **options)


def warnings_from(logs: Any, logger: str) -> List[str]:
    return [r.getMessage() for r in logs.records if r.name == logger and r.levelno == logging.WARNING]


# -- item 17: a tool without a description --------------------------------------------------------

def test_the_tools_command_shows_nothing_for_a_tool_without_a_description(tmp_path: Path) -> None:
    env = {key: value for key, value in os.environ.items() if not key.startswith(("XDG_", "MCPSYNC_"))}
    env.update(HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path / ".config"),
               XDG_CACHE_HOME=str(tmp_path / ".cache"), PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-m", "mcpsync", "tools", "--", *flood("no-description")],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    rows = {line.split()[1]: line.split()[2:] for line in out.stdout.splitlines()[1:] if line.strip()}
    assert rows["told"] == ["Has", "one."]
    assert rows["bare"] == []  # not "str", the type of the missing text


# -- item 16: the reader never writes ---------------------------------------------------------------

def test_a_server_flooding_requests_while_not_reading_cannot_stall_the_reader(logs: Any) -> None:
    with connect("deaf-flood") as client:
        for _ in range(3):  # each flood overfills the pipe the server does not read, and the outbox
            assert client.call_tool("flood", timeout=15).text == "done"
        answered = json.loads(client.call_tool("stats").text)["answered"]
        client.ping()
    assert 0 < answered < 3 * 20_000
    dropped = [w for w in warnings_from(logs, ENGINE_LOG) if "Reply queue full" in w]
    assert dropped and dropped[0].endswith("(1 dropped so far)")
    assert len(dropped) <= 3 + 60_000 // 1000  # said, not shouted


