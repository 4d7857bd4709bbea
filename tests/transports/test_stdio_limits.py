"""Hostile stdio servers against the client's limits (issue 13, items 12, 13, 15, 16, 17).

Each test runs ``tests/servers/flood_stdio.py`` in one mode and pins what the
client does about it: memory held for queued messages stays within a byte
budget, JSON nested too deeply is refused with a typed error, the reader thread
never blocks on a write, and the CLI shows what a server sent.
"""

from __future__ import annotations

import gc
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Dict, List

import pytest

import mcpsync
from mcpsync import ProtocolError
from mcpsync._rpc import jsonrpc as rpc

from ..conftest import ROOT, server_argv, until
from ..reliability.conftest import rss_bytes

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

@pytest.mark.parametrize("command", ["tools", "prompts"])
def test_the_cli_shows_nothing_for_a_tool_or_prompt_without_a_description(tmp_path: Path, command: str) -> None:
    env = {key: value for key, value in os.environ.items() if not key.startswith(("XDG_", "MCPSYNC_"))}
    env.update(HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path / ".config"),
               XDG_CACHE_HOME=str(tmp_path / ".cache"), PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-m", "mcpsync", command, "--", *flood("no-description")],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    rows = {line.split()[1]: line.split()[2:] for line in out.stdout.splitlines()[1:] if line.strip()}
    if command == "tools":  # the tools table has a QUALIFIED NAME column before the description
        rows = {name: cells[1:] for name, cells in rows.items()}
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


# -- item 12: byte budgets for queued messages ------------------------------------------------------

MiB = 1024 * 1024


def test_big_notifications_behind_a_slow_handler_are_held_within_a_byte_budget(logs: Any) -> None:
    count, size = 800, 512 * 1024  # 400 MiB in all: the unbudgeted queue held nearly all of it
    release = threading.Event()
    seen: List[int] = []

    def slow(params: Any) -> None:
        seen.append(1)
        release.wait(60)  # the first notification holds the dispatcher until the call is answered

    gc.collect()
    before = rss_bytes()
    began = time.monotonic()
    with connect("big-notifications", "--count", str(count), "--size", str(size), timeout=60) as client:
        client.on_notification("notifications/message", slow)
        dispatcher = client.transport._engine._dispatcher
        try:
            assert client.call_tool("flood", timeout=60).text == "done"  # read past every notification
            grown = rss_bytes() - before
            held, dropped = dispatcher.queued_bytes, dispatcher.dropped
        finally:
            release.set()
        client.ping()
    assert grown < 120 * MiB, f"RSS grew {grown / MiB:.0f} MiB"  # the budget is 16 MiB; unbounded: ~400
    assert held <= dispatcher.max_bytes + size + 4096
    assert len(seen) + dropped == count  # closing ran what was queued: each one delivered or counted
    assert dispatcher.dropped_for_bytes == dropped > count // 2
    elapsed = time.monotonic() - began
    drops = [w for w in warnings_from(logs, ENGINE_LOG) if "Notification queue over its byte budget" in w]
    assert drops[0].startswith("[flood_stdio] Notification queue over its byte budget (16 MiB): dropped "
                               "notifications/message of ")
    assert drops[0].endswith("(1 dropped so far, 1 of them for bytes)")
    # Said, not shouted: the first drop, then at most one line per 10 s of dropping (a loaded
    # machine may take over 10 s to read 400 MiB) or per thousand drops.
    assert len(drops) <= 2 + int(elapsed // 10)


def test_big_server_requests_behind_busy_handlers_are_refused_past_a_byte_budget(logs: Any) -> None:
    count, size = 300, 1024 * 1024  # the pool's count limit (256) alone let it hold 256 MiB
    release = threading.Event()
    started = threading.Event()

    def sampling(params: Dict[str, Any]) -> Dict[str, Any]:
        started.set()
        release.wait(60)
        return {"role": "assistant", "content": {"type": "text", "text": "ok"}, "model": "m"}

    gc.collect()
    before = rss_bytes()
    with connect("big-requests", "--count", str(count), "--size", str(size), timeout=60,
                 sampling_handler=sampling) as client:
        pool = client.transport._engine._pool
        result: Dict[str, Any] = {}
        caller = threading.Thread(target=lambda: result.update(json.loads(client.call_tool("flood", timeout=60).text)))
        caller.start()
        try:
            assert started.wait(30)
            until(lambda: pool.dropped + pool.queued_bytes // size + 4 >= count, timeout=60)  # all read
            grown = rss_bytes() - before
            held = pool.queued_bytes
        finally:
            release.set()
            caller.join(60)
        client.ping()
    assert grown < 150 * MiB, f"RSS grew {grown / MiB:.0f} MiB"  # the budget is 16 MiB; unbounded: ~260
    assert held <= pool.max_bytes + size + 4096
    assert result["results"] + result["errors"] == count
    assert result["errors"] == pool.dropped == pool.dropped_for_bytes > count // 2  # each refused, and answered
    refusals = [w for w in warnings_from(logs, ENGINE_LOG) if "byte budget" in w]
    assert "refusing sampling/createMessage (1 refused so far, 1 of them for bytes)" in refusals[0]


def test_a_queue_takes_one_message_of_any_size_and_refuses_more_past_its_budget() -> None:
    from mcpsync._rpc.workers import JobQueue

    queue = JobQueue("budget-test", 1, 4, max_bytes=100)
    busy, gate, ran = threading.Event(), threading.Event(), []
    try:
        assert queue.submit(lambda: (busy.set(), gate.wait(10)))
        assert busy.wait(10)  # its one thread is held: what follows stays queued
        assert queue.offer(500, ran.append, "big") is None  # alone in the queue: taken whatever its size
        assert queue.offer(1, ran.append, "small") == "over budget"
        assert queue.submit(ran.append, "sizeless")  # a job of no size is bounded by count only
        assert queue.queued_bytes == 500 and queue.dropped == queue.dropped_for_bytes == 1
        assert queue.submit(ran.append, "3") and queue.submit(ran.append, "4")
        assert queue.offer(0, ran.append, "5") == "full"
    finally:
        gate.set()
        queue.stop(10)
    assert ran == ["big", "sizeless", "3", "4"] and queue.queued_bytes == 0


def test_a_flood_of_garbage_lines_is_counted_but_not_logged_line_by_line(logs: Any) -> None:
    from ..reliability.conftest import hostile_stdio

    with mcpsync.connect(hostile_stdio("garbage-bytes"), timeout=60, shutdown_timeout=0.5) as client:
        assert client.call_tool("echo").text == "right"
        skipped = client.transport.skipped_lines
    logged = [w for w in warnings_from(logs, "mcpsync.transport.stdio") if "Skipping a line" in w]
    assert skipped > 15_000
    assert 100 <= len(logged) <= 100 + skipped // 1000 + 5  # the first hundred, then a few with the count
    assert all("skipped so far" in w for w in logged[100:])
