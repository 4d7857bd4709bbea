"""Configs as people write them (issue 15 item 12): the variables and the per-server keys of Claude Code,
Codex, Cursor, VS Code and Gemini CLI configs, and what a Manager does with them."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Dict

import pytest

import mcpsync
from mcpsync import config
from mcpsync.manager import Manager

from ..conftest import server_argv


def stdio(script: str, *args: str, **keys: Any) -> Dict[str, Any]:
    argv = server_argv(script, *args)
    return {"command": argv[0], "args": argv[1:], **keys}


# -- variables -----------------------------------------------------------------------------------


def test_a_default_may_itself_be_a_variable() -> None:
    env = {"FALLBACK": "from-b"}
    assert config.expand("x${A:-${FALLBACK}}y", env) == "xfrom-by"
    assert config.expand("${A:-${B:-${C:-last}}}", {}) == "last"
    assert config.expand("${A:-}", {}) == ""
    assert config.expand("${A:-a}-${B:-b}", {"B": "set"}) == "a-set"
    assert config.expand("cost ${ unclosed", {}) == "cost ${ unclosed"  # text, as the other tools leave it
    with pytest.raises(mcpsync.ConfigError, match=r"unset variable \$\{B\}"):
        config.expand("${A:-${B}}", {})


def test_cursor_and_vscode_builtin_variables_are_known(tmp_path: Path) -> None:
    assert config.expand("${userHome}${/}x", {}) == os.path.expanduser("~") + os.sep + "x"
    assert config.expand("a${pathSeparator}b", {}) == f"a{os.sep}b"
    (tmp_path / ".cursor").mkdir()
    (tmp_path / ".cursor" / "mcp.json").write_text(json.dumps({"mcpServers": {"files": {
        "command": "npx", "args": ["${workspaceFolder}/data", "${workspaceFolderBasename}", "${userHome}"]}}}))
    found = config.discover(tmp_path, user=False, trust_project=True)
    assert found.servers["files"].args == (f"{tmp_path}/data", tmp_path.name, os.path.expanduser("~"))


# -- the keys, and their spellings ---------------------------------------------------------------


def test_codex_gemini_and_camel_case_spellings_are_read() -> None:
    codex = config.parse_server("c", {"command": "x", "enabled_tools": ["read_*"], "disabled_tools": ["read_secret"],
                                      "startup_timeout_sec": 20, "tool_timeout_sec": 45.5, "required": True})
    assert codex.enabled_tools == ("read_*",) and codex.disabled_tools == ("read_secret",)
    assert (codex.startup_timeout, codex.tool_timeout, codex.required) == (20.0, 45.5, True)
    legacy_codex = config.parse_server("l", {"command": "x", "startup_timeout_ms": 15000})
    assert legacy_codex.startup_timeout == 15.0
    gemini = config.parse_server("g", {"httpUrl": "https://h/mcp", "includeTools": ["a", "b"],
                                       "excludeTools": ["b"], "timeout": 5000})
    assert gemini.enabled_tools == ("a", "b") and gemini.disabled_tools == ("b",) and gemini.timeout == 5.0
    ours = config.parse_server("o", {"url": "https://h/mcp", "startup_timeout": "3", "tool_timeout": 9,
                                     "max_output": 4096, "disabledTools": "write_*, delete_*"})
    assert (ours.startup_timeout, ours.tool_timeout, ours.max_output) == (3.0, 9.0, 4096)
    assert ours.disabled_tools == ("write_*", "delete_*") and ours.enabled_tools is None and not ours.required
    assert ours.transport_config() == {"url": "https://h/mcp", "headers": {}}  # the transport sees none of them


@pytest.mark.parametrize("entry, message", [
    ({"enabled_tools": 5, "command": "x"}, '"enabled_tools" must be a list of tool names or glob patterns'),
    ({"disabled_tools": [1], "command": "x"}, '"disabled_tools" must be a list'),
    ({"startup_timeout_sec": 0, "command": "x"}, '"startup_timeout_sec" must be a positive number of seconds'),
    ({"startup_timeout_ms": "soon", "command": "x"}, '"startup_timeout_ms" must be a positive number of milli'),
    ({"tool_timeout": -1, "command": "x"}, '"tool_timeout" must be a positive number of seconds'),
    ({"required": "maybe", "command": "x"}, '"required" must be true or false'),
    ({"max_output": 1.5, "command": "x"}, '"max_output" must be a positive whole number of bytes'),
])
def test_bad_values_name_the_key(entry: Dict[str, Any], message: str) -> None:
    with pytest.raises(mcpsync.ConfigError, match=message.replace("(", r"\(")):
        config.parse_server("bad", entry)


# -- what the manager does with them -------------------------------------------------------------


def test_the_tool_filter_hides_tools_and_refuses_calls_to_them(tmp_path: Path) -> None:
    tools = "read_file,read_secret,write_file,echo"
    entry = stdio("slow_start.py", "--tools", tools, enabled_tools=["read_*", "echo"], disabled_tools=["*secret"])
    with Manager({"fs": entry, "all": stdio("slow_start.py", "--tools", tools)}, cache=tmp_path / "cache") as manager:
        assert manager.wait(30)
        assert [t.name for t in manager.tools("fs")] == ["read_file", "echo"]
        assert len(manager.tools("all")) == 4
        assert manager.server_status("fs").tools == 2
        assert manager.call_tool("mcp_fs_read_file", {"text": "ok"}).text == "read_file:ok"
        with pytest.raises(mcpsync.ToolNotAllowed, match=r"'write_file' of server 'fs' is not allowed: not in "
                                                          r"enabled_tools \['read_\*', 'echo'\]") as refused:
            manager.call_tool("mcp_fs_write_file", {"text": "no"})
        assert isinstance(refused.value, mcpsync.UnknownToolError)
        assert (refused.value.server, refused.value.tool) == ("fs", "write_file")
        with pytest.raises(mcpsync.ToolNotAllowed, match="disabled_tools '\\*secret'"):
            manager.tool("mcp_fs_read_secret")
        with pytest.raises(mcpsync.UnknownToolError) as unknown:
            manager.call_tool("mcp_fs_nothing_like_it")
        assert type(unknown.value) is mcpsync.UnknownToolError
        assert manager.call_tool("mcp_all_write_file", {"text": "yes"}).text == "write_file:yes"


def test_a_required_server_that_fails_fails_connect_all(tmp_path: Path) -> None:
    config_ = {"ok": stdio("slow_start.py"), "must": stdio("slow_start.py", "--fail-after-start", required=True)}
    manager = Manager(config_, cache=tmp_path / "cache")
    try:
        with pytest.raises(mcpsync.ServerNotConnected, match="required MCP server 'must' did not connect") as failed:
            manager.connect_all(startup_timeout=0)  # a required server is waited for past the window
        assert failed.value.server == "must" and manager.server_status("must").state == "failed"
        assert not manager.closed  # the caller decides; the others keep going
    finally:
        manager.close()
    entered = Manager(config_, cache=tmp_path / "cache")
    with pytest.raises(mcpsync.ServerNotConnected, match="required MCP server 'must'"):
        entered.__enter__()  # what 'with' does: it closes the manager, so nothing is left running
    assert entered.closed
    optional = {"ok": stdio("slow_start.py"), "may": stdio("slow_start.py", "--fail-after-start")}
    with Manager(optional, cache=tmp_path / "cache") as manager:
        assert manager.wait(30) and manager.server_status("may").state == "failed"


def test_a_required_server_is_waited_for_past_the_startup_window(tmp_path: Path) -> None:
    gate = tmp_path / "go"
    gate.touch()  # answers at once; the point is that connect_all(startup_timeout=0) still waits for it
    entry = stdio("slow_start.py", "--wait-for", str(gate), required=True)
    manager = Manager({"must": entry, "other": stdio("slow_start.py", "--wait-for", str(tmp_path / "never"))},
                      cache=False)
    try:
        status = manager.connect_all(startup_timeout=0)
        assert status["must"].state == "connected" and status["other"].state == "connecting"
    finally:
        manager.close()


def test_a_disabled_server_is_listed_as_disabled_and_never_started(tmp_path: Path) -> None:
    marker = tmp_path / "started"
    entries = {"on": stdio("slow_start.py"), "off": stdio("slow_start.py", "--marker", str(marker), enabled=False),
               "gone": {"command": "x", "disabled": True}}
    with Manager(entries, cache=tmp_path / "cache") as manager:
        assert manager.wait(30)
        status = manager.status()
        assert {name: s.state for name, s in status.items()} == {"on": "connected", "off": "disabled",
                                                                 "gone": "disabled"}
        assert manager.servers == ["on", "off", "gone"]
        assert [t.server for t in manager.tools()] == ["on"]
        with pytest.raises(mcpsync.ServerNotConnected, match='"enabled: false"'):
            manager.client("off", timeout=0)
        with pytest.raises(mcpsync.ConfigError, match='server "gone" is disabled \\("disabled: true"'):
            manager.reconnect("gone")
    assert not marker.exists()


def test_startup_timeout_bounds_an_attempt_and_tool_timeout_a_call(tmp_path: Path) -> None:
    never = tmp_path / "never"  # never created: the server answers nothing
    entries = {"stuck": stdio("slow_start.py", "--wait-for", str(never), startup_timeout=0.3),
               "slow_tools": stdio("sdk_server.py", tool_timeout=0.3)}
    with Manager(entries, cache=False, timeout=60) as manager:
        assert manager.wait(60)
        stuck = manager.server_status("stuck")
        assert stuck.state == "failed" and "timeout" in (stuck.last_error or "").lower()
        with pytest.raises(mcpsync.RequestTimeout):
            manager.call_tool("mcp_slow_tools_block", {"seconds": 30})
        assert manager.call_tool("mcp_slow_tools_block", {"seconds": 0}, timeout=30).text


def test_env_file_is_read_relative_to_the_config_file_and_env_wins(tmp_path: Path) -> None:
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / ".env").write_text('# secrets\nexport TOKEN="abc def"\nMODE=fast # inline\n'
                                            "KEEP=${NOT_EXPANDED}\nOVERRIDDEN=file\n")
    path = tmp_path / "conf" / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {"s": {"command": "x", "envFile": ".env", "env": {"OVERRIDDEN": "entry"}},
                                               "gone": {"command": "x", "envFile": "missing.env"}}}))
    found = config.load(path)
    assert found.servers["s"].env == {"TOKEN": "abc def", "MODE": "fast", "KEEP": "${NOT_EXPANDED}",
                                      "OVERRIDDEN": "entry"}
    assert "cannot read it" in str(found.errors["gone"])
    (tmp_path / "conf" / "bad.env").write_text("TOKEN\n")
    with pytest.raises(mcpsync.ConfigError, match="line 1: expected NAME=VALUE"):
        config.parse_server("b", {"command": "x", "envFile": str(tmp_path / "conf" / "bad.env")})


def test_codex_config_toml_is_discovered_and_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("tomllib")
    home = tmp_path / "home"
    (home / ".codex").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.delenv("CODEX_HOME", raising=False)
    monkeypatch.setenv("DOCS_TOKEN", "t0ken")
    monkeypatch.setenv("PASSED_ON", "yes")
    (home / ".codex" / "config.toml").write_text('''
model = "o4"

[mcp_servers.files]
command = "npx"
args = ["-y", "@modelcontextprotocol/server-filesystem", "."]
env = { "DEBUG" = "1" }
env_vars = ["PASSED_ON", "NOT_SET_ANYWHERE"]
enabled_tools = ["read_*"]
startup_timeout_sec = 20
tool_timeout_sec = 90
required = true

[mcp_servers.docs]
url = "https://docs.example/mcp"
bearer_token_env_var = "DOCS_TOKEN"
http_headers = { "X-Team" = "core" }

[mcp_servers.off]
command = "x"
enabled = false
''')
    found = config.discover(tmp_path / "project", project=False)
    assert found.problems == []
    files, docs = found.servers["files"], found.servers["docs"]
    assert files.source == str(home / ".codex" / "config.toml")
    assert files.env == {"DEBUG": "1", "PASSED_ON": "yes"}
    assert (files.enabled_tools, files.startup_timeout, files.tool_timeout, files.required) == (
        ("read_*",), 20.0, 90.0, True)
    assert (docs.type, docs.headers) == ("http", {"X-Team": "core", "Authorization": "Bearer t0ken"})
    assert not found.servers["off"].enabled
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "elsewhere"))
    assert "files" not in config.discover(tmp_path / "project", project=False).servers
    (tmp_path / "bad.toml").write_text("[mcp_servers.x\n")
    assert "invalid TOML" in config.load(tmp_path / "bad.toml").problems[0].reason


def test_the_command_scrubs_the_variables_codex_names(tmp_path: Path) -> None:
    from mcpsync.cli._output import Secrets

    found = config.from_mapping({"mcp_servers": {"docs": {"url": "https://d/mcp", "bearer_token_env_var": "TOK",
                                                           "env_http_headers": {"X-K": "KEY"}}}},
                                format="codex", environ={"TOK": "secret-token", "KEY": "secret-key"})
    secrets = Secrets()
    secrets.learn(found, {"TOK": "secret-token", "KEY": "secret-key"})
    assert secrets.scrub("got secret-token and secret-key") == "got *** and ***"
