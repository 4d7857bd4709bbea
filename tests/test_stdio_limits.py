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


# -- item 13: nesting depth --------------------------------------------------------------------------

def nest(depth: int) -> str:
    return '{"a":' * (depth - 1) + "{}" + "}" * (depth - 1)


def test_decode_refuses_json_nested_deeper_than_the_limit_with_a_protocol_error() -> None:
    limit = rpc.MAX_DEPTH
    assert limit == 100
    assert rpc.decode(nest(limit)) is not None
    assert rpc.decode(b"[" * limit + b"]" * limit) is not None
    for text in (nest(limit + 1), "[" * 250 + "]" * 250, " " + nest(300), nest(2000), "[" * 200_000):
        with pytest.raises(ProtocolError, match="nested too deeply") as caught:
            rpc.decode(text)
        assert "100" in str(caught.value) and "flatter JSON" in str(caught.value)  # the limit, and what to do
    with pytest.raises(ProtocolError, match=r"nested 250 levels deep; at most 100 are accepted"):
        rpc.decode(nest(250))
    # Brackets inside strings are not nesting.
    assert rpc.decode(json.dumps({"text": "[{" * 500})) == {"text": "[{" * 500}


def test_a_tool_schema_nested_250_levels_fails_the_listing_at_once_with_a_typed_error(logs: Any) -> None:
    with connect("deep-schema") as client:
        with pytest.raises(ProtocolError, match="nested 254 levels deep; at most 100") as caught:
            client.list_tools(timeout=20)
        assert "Malformed response" in str(caught.value)
        client.ping()
        assert client.call_tool("deep").text == "right"
    assert not [r for r in logs.records if r.exc_info and isinstance(r.exc_info[1], RecursionError)]


def test_the_manager_reports_a_too_deep_tool_list_and_never_raises_recursion_error(tmp_path: Path,
                                                                                   logs: Any) -> None:
    argv = flood("deep-schema")
    config = {"mcpServers": {"deep": {"command": argv[0], "args": argv[1:]}}}
    with mcpsync.Manager(config, cache=tmp_path / "cache", reconnect=False) as manager:
        manager.connect_all(startup_timeout=30)
        status = manager.status()["deep"]
    assert status.last_error is not None and "nested 254 levels deep" in str(status.last_error)
    assert not [r for r in logs.records if r.exc_info and isinstance(r.exc_info[1], RecursionError)]


def test_a_schema_just_inside_the_limit_goes_through_every_layer(tmp_path: Path, logs: Any) -> None:
    argv = flood("deep-schema", "--depth", "96")  # the tools/list answer is 100 levels deep
    config = {"mcpServers": {"deep": {"command": argv[0], "args": argv[1:]}}}
    changed = threading.Event()
    with mcpsync.Manager(config, cache=tmp_path / "cache", reconnect=False,
                         on_tools_changed=lambda name: changed.set()) as manager:
        manager.connect_all(startup_timeout=30)
        assert changed.wait(10)
        [tool] = manager.tools("deep")
        assert rpc.nesting_depth(tool.tool.to_dict()["inputSchema"]) == 96
        assert manager.call_tool(tool.qualified_name, timeout=20).text == "right"
    assert [p for p in (tmp_path / "cache").rglob("*.json")]  # the cache took it
    assert not [r for r in logs.records if r.exc_info]


def test_to_dict_copies_any_depth_without_recursion() -> None:
    schema: Dict[str, Any] = {}
    inner = schema
    for _ in range(5000):
        inner["x"] = {}
        inner = inner["x"]
    tool = mcpsync.Tool.from_dict({"name": "t", "inputSchema": schema})
    copied = tool.to_dict()
    assert copied is not tool.to_dict() and copied["inputSchema"] is not schema
    depth, node = 0, copied["inputSchema"]
    while node:
        node, depth = node["x"], depth + 1
    assert depth == 5000
