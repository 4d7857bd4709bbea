"""Manager: many real stdio servers, the startup window, deferred tools, reconnects, no leaks."""

from __future__ import annotations

import contextlib
import json
import threading
from pathlib import Path
from typing import Any, Dict, List

import pytest

import mcpsync
from mcpsync import config as mcpconfig
from mcpsync._fleet.toolcache import ToolCache
from mcpsync.manager import Manager, ReconnectPolicy

from ..conftest import server_argv

FAST_RECONNECT = ReconnectPolicy(initial_delay=0.01, max_delay=0.05)


def stdio(script: str, *args: str) -> Dict[str, Any]:
    argv = server_argv(script, *args)
    return {"command": argv[0], "args": argv[1:]}


def gated(gate: Path, *args: str) -> Dict[str, Any]:
    """A server that answers nothing until the file ``gate`` exists."""
    return stdio("slow_start.py", "--wait-for", str(gate), *args)


def names(manager: Manager) -> List[str]:
    return [tool.qualified_name for tool in manager.tools()]


def state_is(name: str, *states: str):
    return lambda status: status[name].state in states


class Changes:
    """Records on_tools_changed calls; a test can wait for one (no sleeping)."""

    def __init__(self) -> None:
        self.names: List[str] = []
        self._cond = threading.Condition()

    def __call__(self, name: str) -> None:
        with self._cond:
            self.names.append(name)
            self._cond.notify_all()

    def wait_for(self, name: str, count: int = 1, timeout: float = 15) -> None:
        """Wait until ``name`` was reported ``count`` times."""
        with self._cond:
            assert self._cond.wait_for(lambda: self.names.count(name) >= count, timeout), self.names


@pytest.fixture
def cache_dir(tmp_path: Path) -> Path:
    return tmp_path / "cache"


def test_connect_all_serves_live_tools_from_several_real_servers(cache_dir: Path) -> None:
    config = {"mcpServers": {
        "sdk": stdio("sdk_server.py"),
        "plain": stdio("misbehaving.py", "good"),
        "multi": stdio("slow_start.py", "--tools", "echo,shout"),
    }}
    with Manager(config, cache=cache_dir) as manager:
        manager.wait(30)
        status = manager.status()
        assert [s.state for s in status.values()] == ["connected"] * 3
        assert {"mcp_sdk_echo", "mcp_sdk_add", "mcp_plain_echo", "mcp_multi_echo", "mcp_multi_shout"} <= set(
            names(manager))
        assert manager.call_tool("mcp_sdk_echo", {"text": "hi"}).text == "hi"
        assert manager.call_tool("mcp_sdk_add", {"a": 2, "b": 40}).structured_content == {"result": 42.0}
        assert manager.call_tool("mcp_plain_echo", {"text": "plain"}).text == "plain"
        assert manager.call_tool("mcp_multi_shout", {"text": "x"}).text == "shout:x"
        tool = manager.tool("mcp_sdk_echo")
        assert (tool.server, tool.name, tool.deferred) == ("sdk", "echo", False)
        assert isinstance(tool.tool, mcpsync.Tool) and tool.description
        assert manager.client("sdk").server_info.name == "sdk-test-server"
        assert status["sdk"].tools == len(manager.tools("sdk")) and status["sdk"].connected_at
        assert manager.call_tool("mcp_sdk_fail", {"message": "no"}).is_error
    assert all(s.state == "closed" for s in manager.status().values())


def test_startup_returns_at_the_window_and_a_slow_server_adds_its_tools_when_ready(
        tmp_path: Path, cache_dir: Path) -> None:
    gate = tmp_path / "gate"
    changed = Changes()
    config = {"fast": stdio("misbehaving.py", "good"), "slow": gated(gate, "--tools", "echo,late")}
    with contextlib.closing(Manager(config, cache=cache_dir, on_tools_changed=changed)) as manager:
        status = manager.connect_all(startup_timeout=0.2)  # returns although "slow" cannot have started
        assert status["slow"].state == "connecting"  # no cache entry: not deferred, no tools yet
        assert manager.wait_until(state_is("fast", "connected"), 15)
        assert names(manager) == ["mcp_fast_echo"]
        gate.touch()
        assert manager.wait_until(state_is("slow", "connected"), 15)
        assert names(manager) == ["mcp_fast_echo", "mcp_slow_echo", "mcp_slow_late"]
        changed.wait_for("slow")
        assert manager.call_tool("mcp_slow_late", {"text": "x"}).text == "late:x"


def test_cached_tools_are_served_as_deferred_then_replaced_by_live_ones(tmp_path: Path, cache_dir: Path) -> None:
    gate = tmp_path / "gate"
    config = {"slow": gated(gate, "--tools", "echo,fresh")}
    server_config = mcpconfig.load(config).servers["slow"]
    ToolCache(cache_dir).put("slow", server_config.config_hash,
                             [{"name": "echo", "inputSchema": {"type": "object"}}, {"name": "stale"}])
    changes = Changes()
    manager = Manager(config, cache=cache_dir, on_tools_changed=changes)
    try:
        status = manager.connect_all(startup_timeout=0.2)
        assert status["slow"].state == "deferred"
        tools = manager.tools()
        assert [(t.qualified_name, t.deferred) for t in tools] == [("mcp_slow_echo", True), ("mcp_slow_stale", True)]

        outcome: Dict[str, Any] = {}
        started = threading.Event()

        def call() -> None:
            started.set()
            outcome["result"] = manager.call_tool("mcp_slow_echo", {"text": "waited"}, timeout=30)

        caller = threading.Thread(target=call)
        caller.start()
        started.wait(5)
        gate.touch()  # now the server starts; the deferred call goes through
        caller.join(30)
        assert outcome["result"].text == "waited"
        changes.wait_for("slow", 2)  # once for the cached tools, once for the live ones
        assert [(t.qualified_name, t.deferred) for t in manager.tools()] == [
            ("mcp_slow_echo", False), ("mcp_slow_fresh", False)]
        # the cache now holds the live list
        assert [t["name"] for t in ToolCache(cache_dir).get("slow", server_config.config_hash) or []] == [
            "echo", "fresh"]
    finally:
        manager.close()


def test_a_deferred_tool_of_a_server_that_then_fails_reports_not_connected_with_its_error(
        tmp_path: Path, cache_dir: Path) -> None:
    gate = tmp_path / "gate"
    config = {"doomed": gated(gate, "--fail-after-start")}
    ToolCache(cache_dir).put("doomed", mcpconfig.load(config).servers["doomed"].config_hash, [{"name": "echo"}])
    with contextlib.closing(Manager(config, cache=cache_dir)) as manager:
        manager.connect_all(startup_timeout=0.1)
        assert manager.server_status("doomed").state == "deferred"
        gate.touch()
        assert manager.wait_until(state_is("doomed", "failed"), 15)
        with pytest.raises(mcpsync.ServerNotConnected) as caught:
            manager.call_tool("mcp_doomed_echo", {"text": "x"})
        text = str(caught.value)
        assert text.startswith("MCP server not connected: doomed")
        assert "exited with code 5" in text and "failing on purpose" in text
        assert manager.tools() == []  # a failed server's tools are not offered
        assert "exited with code 5" in (manager.server_status("doomed").last_error or "")


def test_a_call_waiting_for_a_connection_times_out_or_is_cancelled(tmp_path: Path, cache_dir: Path) -> None:
    gate = tmp_path / "never"
    config = {"stuck": gated(gate)}
    ToolCache(cache_dir).put("stuck", mcpconfig.load(config).servers["stuck"].config_hash, [{"name": "echo"}])
    with contextlib.closing(Manager(config, cache=cache_dir)) as manager:
        manager.connect_all(startup_timeout=0.05)
        with pytest.raises(mcpsync.RequestTimeout, match="MCP server 'stuck' is still connecting"):
            manager.call_tool("mcp_stuck_echo", timeout=0.2)
        token = mcpsync.CancelToken()
        timer = threading.Timer(0.1, token.cancel, args=("stop",))
        timer.start()
        try:
            with pytest.raises(mcpsync.RequestCancelled, match="stop"):
                manager.call_tool("mcp_stuck_echo", timeout=30, cancel=token)
        finally:
            timer.join()


def test_a_crashed_server_is_reconnected_and_calls_succeed_again(cache_dir: Path) -> None:
    config = {"crashy": stdio("slow_start.py", "--tools", "echo,crash,pid")}
    with Manager(config, cache=cache_dir, reconnect=FAST_RECONNECT) as manager:
        first_pid = manager.call_tool("mcp_crashy_pid").text
        with pytest.raises(mcpsync.TransportClosed, match="exited with code 3"):
            manager.call_tool("mcp_crashy_crash")
        # the next call waits for the reconnect, then succeeds on a new process
        assert manager.call_tool("mcp_crashy_echo", {"text": "back"}, timeout=30).text == "back"
        assert manager.call_tool("mcp_crashy_pid").text != first_pid
        status = manager.server_status("crashy")
        assert status.state == "connected" and status.reconnects == 1
        assert "exited with code 3" in (status.last_error or "")


def test_reconnecting_stops_after_the_burst_limit(cache_dir: Path) -> None:
    config = {"flaky": stdio("slow_start.py", "--exit-after-list")}
    policy = ReconnectPolicy(initial_delay=0.01, max_delay=0.02, max_attempts=2, window=60)
    with Manager(config, cache=cache_dir, reconnect=policy) as manager:
        assert manager.wait_until(state_is("flaky", "failed"), 30)
        with pytest.raises(mcpsync.ServerNotConnected, match="gave up reconnecting after 2 attempts"):
            manager.call_tool("mcp_flaky_echo")


def test_with_reconnect_off_a_crash_fails_the_server(cache_dir: Path) -> None:
    config = {"crashy": stdio("slow_start.py", "--tools", "echo,crash")}
    with Manager(config, cache=cache_dir, reconnect=False) as manager:
        with pytest.raises(mcpsync.TransportClosed):
            manager.call_tool("mcp_crashy_crash")
        assert manager.wait_until(state_is("crashy", "failed"), 15)
        with pytest.raises(mcpsync.ServerNotConnected, match="reconnect is off"):
            manager.call_tool("mcp_crashy_echo")


def test_reconnect_forces_a_new_connection_even_after_a_failure(tmp_path: Path, cache_dir: Path) -> None:
    config = {"srv": stdio("slow_start.py", "--tools", "pid"), "bad": stdio("misbehaving.py", "exit-early")}
    with Manager(config, cache=cache_dir) as manager:
        manager.wait(15)
        before = manager.call_tool("mcp_srv_pid").text
        status = manager.reconnect("srv")
        assert status.state == "connected" and status.reconnects == 1
        assert manager.call_tool("mcp_srv_pid").text != before
        with pytest.raises(mcpsync.ServerNotConnected, match="cannot start: missing config"):
            manager.reconnect("bad")
        with pytest.raises(mcpsync.UnknownServerError, match="configured: srv, bad"):
            manager.reconnect("nope")


def test_invalid_servers_fail_alone_with_a_clear_message(cache_dir: Path) -> None:
    config = {"mcpServers": {
        "ok": stdio("misbehaving.py", "good"),
        "nocommand": {"args": ["x"]},
        "weird": {"type": "carrier-pigeon", "url": "https://example.invalid"},
        "unset": {"command": "python", "env": {"TOKEN": "${MCPSYNC_TEST_SURELY_UNSET}"}},
        "off": {"command": "python", "disabled": True},
    }}
    with Manager(config, cache=cache_dir) as manager:
        manager.wait(15)
        status = manager.status()
        assert list(status) == ["ok", "off", "nocommand", "weird", "unset"]
        assert status["off"].state == "disabled"  # listed, never started (issue 15)
        assert status["ok"].state == "connected"
        assert 'missing "command"' in (status["nocommand"].last_error or "")
        assert "unknown type 'carrier-pigeon'" in (status["weird"].last_error or "")
        assert "unset variable ${MCPSYNC_TEST_SURELY_UNSET} in env.TOKEN" in (status["unset"].last_error or "")
        assert status["unset"].state == "failed" and status["unset"].type == "unknown"
        with pytest.raises(mcpsync.ServerNotConnected, match="invalid config"):
            manager.client("unset")


def test_variables_are_expanded_in_the_command_line(monkeypatch: pytest.MonkeyPatch, cache_dir: Path) -> None:
    argv = server_argv("slow_start.py")
    monkeypatch.setenv("MCPSYNC_TEST_TOOLS", "echo,expanded")
    config = {"x": {"command": "${MCPSYNC_TEST_PY:-" + argv[0] + "}",
                    "args": [argv[1], "--tools", "${MCPSYNC_TEST_TOOLS}"]}}
    with Manager(config, cache=cache_dir) as manager:
        manager.wait(15)
        assert names(manager) == ["mcp_x_echo", "mcp_x_expanded"]


def test_name_collisions_get_a_stable_suffix_and_route_to_the_right_server(cache_dir: Path) -> None:
    config = {"Echo": stdio("slow_start.py", "--name", "first", "--tools", "whoami"),
              "echo": stdio("slow_start.py", "--name", "second", "--tools", "whoami")}
    with Manager(config, cache=cache_dir) as manager:
        manager.wait(15)
        tools = manager.tools()
        assert tools[0].qualified_name == "mcp_echo_whoami" and tools[0].server == "Echo"
        assert tools[1].qualified_name.startswith("mcp_echo_whoami_") and tools[1].server == "echo"
        assert len(tools[1].qualified_name) == len("mcp_echo_whoami_") + 8
        assert manager.call_tool(tools[0].qualified_name).text == "first"
        assert manager.call_tool(tools[1].qualified_name).text == "second"


def test_each_servers_tools_are_kept_apart_on_add_refresh_and_remove(cache_dir: Path) -> None:
    # "a" is a prefix of "a_b" and "My-Server" has characters the names clean away (B1 and B2).
    config = {"a": stdio("slow_start.py", "--tools", "echo,add_tool"),
              "a_b": stdio("slow_start.py", "--tools", "x"),
              "My-Server": stdio("slow_start.py", "--tools", "y")}
    changes = Changes()
    with Manager(config, cache=cache_dir, on_tools_changed=changes) as manager:
        manager.wait(15)
        assert names(manager) == ["mcp_a_echo", "mcp_a_add_tool", "mcp_a_b_x", "mcp_my-server_y"]
        # tools/list_changed refreshes only that server
        manager.call_tool("mcp_a_add_tool", {"name": "new"})
        assert manager.wait_until(lambda s: "mcp_a_new" in names(manager), 15)
        assert names(manager) == ["mcp_a_echo", "mcp_a_add_tool", "mcp_a_new", "mcp_a_b_x", "mcp_my-server_y"]
        # adding a server later does not touch the others
        manager.add_server("late", stdio("slow_start.py", "--tools", "z"))
        assert manager.wait_until(state_is("late", "connected"), 15)
        assert names(manager)[-1] == "mcp_late_z" and len(names(manager)) == 6
        manager.remove_server("a")
        assert names(manager) == ["mcp_a_b_x", "mcp_my-server_y", "mcp_late_z"]
        manager.remove_server("My-Server")
        assert names(manager) == ["mcp_a_b_x", "mcp_late_z"]
        with pytest.raises(mcpsync.UnknownToolError):
            manager.call_tool("mcp_a_echo")
        with pytest.raises(mcpsync.ConfigError, match="already exists"):
            manager.add_server("late", {"command": "x"})
        with pytest.raises(mcpsync.ConfigError, match='missing "url"'):
            manager.add_server("web", {"type": "http"})
    assert {"a", "late", "My-Server"} <= set(changes.names)


def test_a_corrupt_cache_file_is_ignored_with_a_warning_and_rewritten(logs: Any, cache_dir: Path) -> None:
    config = {"srv": stdio("slow_start.py")}
    cache = ToolCache(cache_dir)
    path = cache.path_for("srv")
    path.parent.mkdir(parents=True)
    path.write_text("{ this is not json")
    with contextlib.closing(Manager(config, cache=cache_dir)) as manager:
        manager.connect_all(startup_timeout=0.0)  # window over at once: the cache is consulted
        manager.wait(15)
        assert names(manager) == ["mcp_srv_echo"]
    logs.wait_for(lambda m: "Ignoring corrupt MCP tools cache" in m and str(path) in m)
    entry = json.loads(path.read_text())
    assert entry["server"] == "srv" and [t["name"] for t in entry["tools"]] == ["echo"]
    assert path.stat().st_mode & 0o777 == 0o600


def test_close_during_a_connect_ends_the_process_and_every_thread(logs: Any, tmp_path: Path,
                                                                  cache_dir: Path) -> None:
    config = {"stuck": gated(tmp_path / "never"), "also": gated(tmp_path / "never")}
    manager = Manager(config, cache=cache_dir)
    manager.connect_all(startup_timeout=0.0)
    for name in ("stuck", "also"):  # both processes run and wait for an answer to initialize
        logs.wait_for(lambda m, name=name: m.startswith(f"[{name}] Started"))
    assert [s.state for s in manager.status().values()] == ["connecting", "connecting"]
    manager.close()  # the no_leaks fixture checks the processes and threads are gone
    manager.close()  # idempotent
    assert [s.state for s in manager.status().values()] == ["closed", "closed"]
    with pytest.raises(mcpsync.TransportClosed, match="manager is closed"):
        manager.connect_all()


def test_remove_server_during_a_connect_closes_it(tmp_path: Path, cache_dir: Path) -> None:
    config = {"stuck": gated(tmp_path / "never"), "ok": stdio("misbehaving.py", "good")}
    with contextlib.closing(Manager(config, cache=cache_dir)) as manager:
        manager.connect_all(startup_timeout=0.1)
        manager.remove_server("stuck")
        assert manager.servers == ["ok"]
        assert manager.wait_until(state_is("ok", "connected"), 15)
        assert manager.call_tool("mcp_ok_echo", {"text": "still here"}).text == "still here"


def test_calls_before_connect_all_say_the_server_is_not_started(cache_dir: Path) -> None:
    manager = Manager({"srv": stdio("misbehaving.py", "good")}, cache=cache_dir)
    try:
        assert manager.server_status("srv").state == "idle"
        with pytest.raises(mcpsync.ServerNotConnected, match="not started"):
            manager.client("srv")
    finally:
        manager.close()


def test_progress_reaches_the_caller(cache_dir: Path) -> None:
    seen: List[float] = []
    with Manager({"p": stdio("slow_start.py", "--tools", "progress")}, cache=cache_dir) as manager:
        result = manager.call_tool("mcp_p_progress", {"steps": 3}, on_progress=lambda p, t, m: seen.append(p))
        assert result.text == "done" and seen == [1, 2, 3]


def test_discover_builds_a_manager_from_the_working_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                              cache_dir: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"proj": stdio("misbehaving.py", "good")}}))
    with Manager.discover(project, cache=cache_dir, trust_project=True) as manager:
        manager.wait(15)
        assert names(manager) == ["mcp_proj_echo"]
        assert manager.server_status("proj").source == str(project / ".mcp.json")


def test_a_config_error_raised_again_does_not_grow_its_traceback(cache_dir: Path) -> None:
    """Reconnecting a server whose config is invalid raises its stored ConfigError each time; the
    traceback is this raise's, not every earlier raise's frames piled on (and kept alive)."""
    import traceback

    with Manager({"nocommand": {"args": ["x"]}}, cache=cache_dir) as manager:
        manager.wait(15)
        depths = []
        for _ in range(3):
            with pytest.raises(mcpsync.ConfigError, match='missing "command"') as caught:
                manager.reconnect("nocommand")
            depths.append(len(traceback.extract_tb(caught.value.__traceback__)))
        assert depths[0] == depths[1] == depths[2], depths
