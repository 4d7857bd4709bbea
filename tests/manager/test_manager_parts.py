"""The manager's parts without servers: qualified names, the tools cache, the reconnect policy, the scheduler."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any, List

import pytest

from mcpsync._fleet import naming as _naming
from mcpsync._fleet.scheduler import Scheduler
from mcpsync._fleet.toolcache import ToolCache, default_cache_dir
from mcpsync.manager import ReconnectPolicy


# -- qualified names -------------------------------------------------------------------------------

@pytest.mark.parametrize("server, tool, expected", [
    ("github", "search_issues", "mcp_github_search_issues"),
    ("My Server", "Get.Data", "mcp_my_server_get_data"),
    ("s3", "list-buckets", "mcp_s3_list-buckets"),
    ("a..b", "x y/z", "mcp_a_b_x_y_z"),
    ("ünï", "tool", "mcp__n__tool"),
])
def test_qualified_names_are_lower_case_and_use_only_safe_characters(server: str, tool: str, expected: str) -> None:
    assert _naming.qualified_name(server, tool) == expected


def test_long_names_are_cut_to_64_characters_with_a_stable_hash_suffix() -> None:
    name = _naming.qualified_name("a-very-long-server-name-indeed", "and_an_even_longer_tool_name_that_goes_on")
    assert len(name) == 64
    assert name.startswith("mcp_a-very-long-server-name-indeed_and_an_even_longer_")
    assert name == _naming.qualified_name("a-very-long-server-name-indeed", "and_an_even_longer_tool_name_that_goes_on")
    other = _naming.qualified_name("a-very-long-server-name-indeed", "and_an_even_longer_tool_name_that_goes_ON!")
    assert other != name and len(other) == 64


def test_collisions_are_made_unique_deterministically(caplog: pytest.LogCaptureFixture) -> None:
    pairs = [("A", "x"), ("a", "x"), ("b", "get.data"), ("b", "get_data"), ("b", "get.data")]
    names = _naming.assign(pairs)
    assert names[("A", "x")] == "mcp_a_x" and names[("b", "get.data")] == "mcp_b_get_data"
    assert names[("a", "x")].startswith("mcp_a_x_") and names[("b", "get_data")].startswith("mcp_b_get_data_")
    assert len(set(names.values())) == 4
    assert names == _naming.assign(pairs)  # the same input gives the same names
    assert "Tool name collision" in caplog.text
    warned: set = set()
    caplog.clear()
    _naming.assign(pairs, warned)
    _naming.assign(pairs, warned)
    assert caplog.text.count("Tool name collision") == 2  # once per colliding pair


# -- the tools cache -------------------------------------------------------------------------------

TOOLS = [{"name": "echo", "inputSchema": {"type": "object"}}]


def test_the_cache_round_trips_and_is_written_owner_only(tmp_path: Path) -> None:
    cache = ToolCache(tmp_path / "c")
    assert cache.get("srv", "h1") is None
    assert cache.put("srv", "h1", TOOLS)
    assert cache.get("srv", "h1") == TOOLS
    assert cache.get("srv", "other-config") is None
    assert cache.get("other", "h1") is None
    path = cache.path_for("srv")
    assert path.stat().st_mode & 0o777 == 0o600 and path.parent.stat().st_mode & 0o777 == 0o700
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temporary file left behind


def test_entries_expire_after_the_ttl(tmp_path: Path) -> None:
    cache = ToolCache(tmp_path, ttl=30 * 24 * 3600)
    cache.put("srv", "h", TOOLS)
    path = cache.path_for("srv")
    entry = json.loads(path.read_text())
    entry["saved_at"] = time.time() - 31 * 24 * 3600
    path.write_text(json.dumps(entry))
    assert cache.get("srv", "h") is None


@pytest.mark.parametrize("content", ["{", "[]", '{"version": 99}', '{"version": 1, "server": "srv", "saved_at": 1, '
                                     '"config_hash": "h", "tools": [{"no": "name"}]}', b"\xff\xfe"])
def test_a_corrupt_entry_is_ignored_with_a_warning(tmp_path: Path, content: Any,
                                                    caplog: pytest.LogCaptureFixture) -> None:
    cache = ToolCache(tmp_path)
    path = cache.path_for("srv")
    path.parent.mkdir(parents=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    assert cache.get("srv", "h") is None
    assert str(path) in caplog.text


def test_an_unwritable_cache_is_skipped_with_a_warning(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    cache = ToolCache(blocker)
    assert cache.put("srv", "h", TOOLS) is False
    assert "Could not write the MCP tools cache" in caplog.text


def test_the_default_cache_directory_follows_the_platform(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("MCPSYNC_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    if os.name == "posix" and not os.uname().sysname == "Darwin":
        assert default_cache_dir() == tmp_path / "xdg" / "mcpsync"
    monkeypatch.setenv("MCPSYNC_CACHE_DIR", str(tmp_path / "mine"))
    assert default_cache_dir() == tmp_path / "mine"


# -- reconnect policy and scheduler ----------------------------------------------------------------

def test_reconnect_delays_back_off_exponentially_with_jitter() -> None:
    policy = ReconnectPolicy(initial_delay=0.5, max_delay=4.0, jitter=0.25)
    for attempt, base in enumerate([0.5, 1.0, 2.0, 4.0, 4.0]):
        delays = [policy.delay(attempt) for _ in range(50)]
        assert all(base * 0.75 <= d <= base * 1.25 for d in delays)
    assert ReconnectPolicy(jitter=0).delay(1) == 1.0


def test_the_scheduler_runs_jobs_in_due_order_on_bounded_threads_and_joins_them() -> None:
    scheduler = Scheduler("test-scheduler", 2)
    done: List[str] = []
    finished = threading.Event()
    lock = threading.Lock()

    def job(name: str) -> None:
        with lock:
            done.append(name)
            if len(done) == 4:
                finished.set()

    scheduler.submit(job, "later", delay=0.2)
    for name in ("a", "b", "c"):
        scheduler.submit(job, name)
    assert finished.wait(10)
    assert done[-1] == "later" and sorted(done[:3]) == ["a", "b", "c"]
    assert len([t for t in threading.enumerate() if t.name.startswith("test-scheduler")]) <= 2
    scheduler.submit(job, "dropped", delay=60)
    assert scheduler.stop(5) == []
    assert scheduler.submit(job, "after stop") is False
