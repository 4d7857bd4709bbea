"""Config files: formats, discovery and precedence, ${VAR} expansion, validation, malformed files."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Dict

import pytest

import mcpsync
from mcpsync import config as mcpconfig


@pytest.fixture
def places(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Dict[str, Path]:
    """An empty home and project; HOME, XDG_CONFIG_HOME and the cwd point at them."""
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.delenv("APPDATA", raising=False)
    monkeypatch.chdir(project)
    return {"home": home, "project": project, "config": home / ".config"}


def write(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


def servers(**entries: Any) -> Dict[str, Any]:
    return {"mcpServers": entries}


def test_discovery_reads_every_known_file_and_the_first_definition_wins(places: Dict[str, Path]) -> None:
    home, project, config_home = places["home"], places["project"], places["config"]
    write(project / ".mcpsync.json", servers(shared={"command": "own-project"}))
    write(project / ".mcp.json", servers(shared={"command": "claude-project"}, proj={"command": "p"}))
    write(project / ".cursor" / "mcp.json", servers(cursor_proj={"command": "c"}))
    write(project / ".vscode" / "mcp.json", {"servers": {"vs": {"type": "stdio", "command": "v"}}})
    write(config_home / "mcpsync" / "mcp.json", servers(user_own={"command": "u"}, proj={"command": "user"}))
    write(home / ".claude.json", {
        "mcpServers": {"claude_user": {"command": "cu"}},
        "projects": {str(project): {"mcpServers": {"local": {"command": "l"}, "proj": {"command": "local"}}}},
    })
    write(config_home / "Claude" / "claude_desktop_config.json", servers(desktop={"command": "d"}))
    write(home / ".cursor" / "mcp.json", servers(cursor_user={"command": "cu2"}))
    write(home / ".codeium" / "windsurf" / "mcp_config.json", servers(surf={"serverUrl": "https://s.example/mcp"}))
    write(home / ".gemini" / "settings.json", servers(gem={"httpUrl": "https://g.example/mcp"},
                                                      gem_sse={"url": "https://g.example/sse"}))

    found = mcpconfig.discover()
    assert found.problems == [] and found.errors == {}
    assert list(found.servers) == ["shared", "local", "proj", "cursor_proj", "vs", "user_own", "claude_user",
                                   "desktop", "cursor_user", "surf", "gem", "gem_sse"]
    assert found.servers["shared"].command == "own-project"  # mcpsync's project file beats .mcp.json
    assert found.servers["proj"].command == "local"  # Claude Code local scope beats project scope
    assert found.servers["shared"].source == str(project / ".mcpsync.json")
    assert (found.servers["surf"].type, found.servers["surf"].url) == ("http", "https://s.example/mcp")
    assert (found.servers["gem"].type, found.servers["gem_sse"].type) == ("http", "sse")
    assert [s.path for s in mcpconfig.discovery_sources()][:3] == [
        project / ".mcpsync.json", home / ".claude.json", project / ".mcp.json"]

    assert list(mcpconfig.discover(user=False).servers) == ["shared", "local", "proj", "cursor_proj", "vs"]
    assert "shared" not in mcpconfig.discover(project=False).servers


def test_a_malformed_file_is_reported_and_skipped_without_stopping_the_others(places: Dict[str, Path]) -> None:
    project, home = places["project"], places["home"]
    bad = write(project / ".mcp.json", '{"mcpServers": {"x": {"command": "a",}}')  # broken JSON
    wrong = write(project / ".cursor" / "mcp.json", {"mcpServers": ["not", "a", "map"]})
    write(home / ".cursor" / "mcp.json", servers(fine={"command": "ok"}))
    found = mcpconfig.discover()
    assert list(found.servers) == ["fine"]
    problems = {p.path: p.reason for p in found.problems}
    assert problems[str(bad)].startswith("invalid JSON:") and "line 1" in problems[str(bad)]
    assert problems[str(wrong)] == '"mcpServers" must be an object, not a list'
    assert str(found.problems[0]).startswith(str(bad) + ": invalid JSON")


def test_files_are_read_fresh_on_every_discovery(places: Dict[str, Path]) -> None:
    path = write(places["project"] / ".mcp.json", servers(a={"command": "one"}))
    assert mcpconfig.discover().servers["a"].command == "one"
    write(path, servers(a={"command": "two"}))
    assert mcpconfig.discover().servers["a"].command == "two"


def test_vscode_files_may_have_comments_trailing_commas_and_workspace_variables(places: Dict[str, Path]) -> None:
    project = places["project"]
    write(project / ".vscode" / "mcp.json", """{
      // a comment, and a URL-like string that is not one: "http://x//y"
      "inputs": [],
      "servers": {
        "files": {"type": "stdio", "command": "npx", "args": ["server", "${workspaceFolder}/data", "a//b"],},
        /* another */ "web": {"type": "http", "url": "https://example.com/mcp", "headers": {"X": "1"}},
      },
    }""")
    found = mcpconfig.discover(user=False, trust_project=True)
    assert found.problems == []
    assert found.servers["files"].args == ("server", f"{project}/data", "a//b")
    assert found.servers["web"].headers == {"X": "1"}


def test_variables_expand_in_command_args_env_url_and_headers() -> None:
    environ = {"TOKEN": "s3cret", "HOST": "example.com", "EMPTY": ""}
    found = mcpconfig.from_mapping(servers(
        local={"command": "${TOOL:-npx}", "args": ["-y", "${HOST}"], "env": {"KEY": "${TOKEN}", "E": "${EMPTY:-d}"},
               "cwd": "${HOME_DIR:-/tmp}"},
        remote={"type": "streamableHttp", "url": "https://${HOST}/mcp",
                "headers": {"Authorization": "Bearer ${env:TOKEN}"}},
    ), environ=environ)
    local, remote = found.servers["local"], found.servers["remote"]
    assert (local.command, local.args, local.env, local.cwd) == ("npx", ("-y", "example.com"),
                                                                 {"KEY": "s3cret", "E": "d"}, "/tmp")
    assert (remote.type, remote.url, remote.headers) == ("http", "https://example.com/mcp",
                                                        {"Authorization": "Bearer s3cret"})
    assert "s3cret" not in repr(local) and "s3cret" not in repr(remote)  # values of env and headers stay hidden
    # the cache key hashes the entry as written, so a rotated secret keeps the cache
    rotated = mcpconfig.from_mapping(servers(remote={"type": "streamableHttp", "url": "https://${HOST}/mcp",
                                                     "headers": {"Authorization": "Bearer ${env:TOKEN}"}}),
                                     environ={**environ, "TOKEN": "new"}).servers["remote"]
    assert rotated.config_hash == remote.config_hash
    assert mcpconfig.expand("$HOME and ${X:-}", {}) == "$HOME and "


def test_an_unset_variable_is_a_per_server_error_not_an_empty_string() -> None:
    found = mcpconfig.from_mapping(servers(
        good={"command": "ok"},
        bad={"type": "http", "url": "https://x.example/mcp", "headers": {"Authorization": "Bearer ${NO_TOKEN}"}},
        odd={"command": "x", "args": ["${input:thing}"]},
        sleeping={"command": "x", "env": {"K": "${NO_TOKEN}"}, "enabled": False},
    ), environ={})
    assert list(found.servers) == ["good", "sleeping"]
    assert str(found.errors["bad"]) == ('server "bad": unset variable ${NO_TOKEN} in headers.Authorization '
                                        '(set it, or give a default: ${NO_TOKEN:-value})')
    assert found.errors["bad"].server == "bad"
    assert "unsupported variable ${input:thing} in args[0]" in str(found.errors["odd"])
    assert found.servers["sleeping"].enabled is False


@pytest.mark.parametrize("name, entry, message", [
    ("a", {"args": ["x"]}, 'server "a": missing "command" (a stdio server needs the program to run) or "url"'),
    ("a", {"type": "stdio", "url": "https://x"}, 'missing "command"'),
    ("a", {"type": "http"}, 'server "a": missing "url" (a http server needs the endpoint URL)'),
    ("a", {"type": "sse", "command": "x", "url": "https://x"}, 'both "command" and "url" are set'),
    ("a", {"command": "x", "url": "https://x"}, 'both "command" and "url" are set'),
    ("a", {"type": "websocket", "url": "wss://x"}, "unknown type 'websocket' (expected stdio, http, "),
    ("a", {"url": "ftp://x"}, "url 'ftp://x' is not an http:// or https:// URL"),
    ("a", {"command": "x", "args": "one two"}, '"args" must be a list of strings, not a string'),
    ("a", {"command": "x", "env": {"K": {"nested": 1}}}, '"env.K" must be a string, not an object'),
    ("a", {"command": "x", "timeout": -5}, '"timeout" must be a positive number of milliseconds'),
    ("a", {"command": "x", "enabled": "maybe"}, "\"enabled\" must be true or false, not 'maybe'"),
    ("a", "python server.py", "the entry must be an object, not a string"),
    ("bad|name", {"command": "x"}, "invalid server name 'bad|name'"),
    ("", {"command": "x"}, "invalid server name ''"),
    ("x" * 101, {"command": "x"}, "invalid server name"),
])
def test_each_server_is_validated_with_a_clear_message(name: str, entry: Any, message: str) -> None:
    with pytest.raises(mcpsync.ConfigError) as caught:
        mcpconfig.parse_server(name, entry)
    assert message in str(caught.value)


def test_entry_shapes_from_other_tools_are_understood(tmp_path: Path) -> None:
    parsed = mcpconfig.from_mapping({
        "plain": {"command": "python", "args": ["s.py", 8080], "env": {"DEBUG": True, "N": 3}, "timeout": "1500"},
        "opencode": {"type": "local", "command": ["npx", "-y", "srv"], "environment": {"A": "b"}},
        "remote": {"type": "remote", "url": "https://r.example/mcp"},
        "legacy": {"type": "sse", "url": "http://127.0.0.1:9/sse"},
        "off": {"command": "x", "disabled": True},
        "on": {"command": "x", "enabled": "true"},
    })
    plain = parsed.servers["plain"]
    assert (plain.args, plain.env, plain.timeout) == (("s.py", "8080"), {"DEBUG": "true", "N": "3"}, 1.5)
    assert (parsed.servers["opencode"].command, parsed.servers["opencode"].args) == ("npx", ("-y", "srv"))
    assert parsed.servers["opencode"].env == {"A": "b"}
    assert parsed.servers["remote"].type == "http" and parsed.servers["legacy"].type == "sse"
    assert parsed.servers["off"].enabled is False and parsed.servers["on"].enabled is True
    assert plain.transport_config() == {"type": "stdio", "command": "python", "args": ["s.py", "8080"],
                                        "env": {"DEBUG": "true", "N": "3"}}


def test_a_relative_cwd_is_taken_relative_to_the_config_file(tmp_path: Path) -> None:
    path = write(tmp_path / "conf" / "servers.json", servers(s={"command": "x", "cwd": "../work"}))
    found = mcpconfig.load(path)
    assert found.servers["s"].cwd == str(tmp_path / "work")
    assert found.files == [str(path)]


def test_load_takes_a_path_a_dict_or_a_config(tmp_path: Path) -> None:
    assert list(mcpconfig.load({"a": {"command": "x"}}).servers) == ["a"]  # a bare name map
    assert list(mcpconfig.load({"servers": {"b": {"command": "x"}}}).servers) == ["b"]
    existing = mcpconfig.load({"mcpServers": {"c": {"command": "x"}}})
    assert mcpconfig.load(existing) is existing
    missing = mcpconfig.load(tmp_path / "nope.json")
    assert [p.reason for p in missing.problems] == ["file not found"]
    empty = mcpconfig.load(write(tmp_path / "empty.json", {"other": 1}))
    assert [p.reason for p in empty.problems] == ['no "mcpServers" (or "servers") map found']
    unreadable = write(tmp_path / "secret.json", servers(a={"command": "x"}))
    os.chmod(unreadable, 0)
    try:
        if os.geteuid() != 0:  # root reads anything
            assert mcpconfig.load(unreadable).problems[0].reason.startswith("cannot read")
    finally:
        os.chmod(unreadable, 0o600)


def test_config_errors_and_manager_errors_pickle() -> None:
    import pickle

    for exc in (mcpsync.ConfigError("bad", server="s", path="p"), mcpsync.ServerNotConnected("s", "boom", "closed"),
                mcpsync.UnknownServerError("x", ["a", "b"]), mcpsync.UnknownToolError("mcp_x_y")):
        copy = pickle.loads(pickle.dumps(exc))
        assert type(copy) is type(exc) and str(copy) == str(exc)
    assert isinstance(mcpsync.ConfigError("x"), ValueError)
    assert isinstance(mcpsync.UnknownToolError("t"), KeyError) and str(mcpsync.UnknownToolError("t")).startswith(
        "Unknown MCP tool 't'")
    assert str(mcpsync.ServerNotConnected("s", "boom", "closed")) == "MCP server not connected: s (closed); last error: boom"


def test_the_config_package_keeps_every_name_and_path_it_had_as_one_module() -> None:
    """mcpsync.config became a package (issue 11); what callers import from it did not change."""
    import pickle

    assert mcpconfig.__all__ == ["Config", "ConfigProblem", "ConfigSource", "ServerConfig", "discover",
                                 "discovery_sources", "expand", "load", "parse_server", "revoke_trust",
                                 "trust_file", "trust_project_file", "trusted_projects", "valid_name"]
    for name in ("from_mapping", "STDIO", "HTTP", "SSE", "PathLike", "log"):  # used outside __all__
        assert hasattr(mcpconfig, name), name
    assert (mcpconfig.STDIO, mcpconfig.HTTP, mcpconfig.SSE) == ("stdio", "http", "sse")
    assert mcpconfig.log.name == "mcpsync.config"
    for value in (mcpconfig.Config, mcpconfig.ConfigProblem, mcpconfig.ConfigSource, mcpconfig.ServerConfig):
        assert value.__module__ == "mcpsync.config", value
    server = mcpconfig.parse_server("a", {"command": "x", "env": {"K": "v"}})
    assert pickle.loads(pickle.dumps(server)) == server
    assert mcpsync.ServerConfig is mcpconfig.ServerConfig


def test_jsonc_is_read_as_json_first_and_keeps_comment_marks_inside_strings() -> None:
    from mcpsync.config._jsonc import parse_json, strip_jsonc

    assert parse_json('{"a": "//not a comment", "b": [1, 2,],} // end') == {"a": "//not a comment", "b": [1, 2]}
    assert strip_jsonc('{"a": "x\\"/*y*/", /* c */ "b": 1,\n}') == '{"a": "x\\"/*y*/",  "b": 1\n}'
    with pytest.raises(ValueError, match="Expecting"):
        parse_json("{nope}")
