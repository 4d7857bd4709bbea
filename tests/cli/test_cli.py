"""The mcpsync command, run as a subprocess against real servers, with an isolated home and project."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest

from ..conftest import ROOT, server_argv
from ..http_fixtures import _sdk_servers  # noqa: F401  (fixture)


def stdio(script: str, *args: str, **keys: Any) -> Dict[str, Any]:
    argv = server_argv(script, *args)
    return {"command": argv[0], "args": argv[1:], **keys}


class Shell:
    """Runs ``python -m mcpsync`` in an empty home and project directory."""

    def __init__(self, tmp_path: Path) -> None:
        self.home = tmp_path / "home"
        self.project = tmp_path / "project"
        self.home.mkdir()
        self.project.mkdir()
        self.env = {key: value for key, value in os.environ.items() if not key.startswith(("XDG_", "MCPSYNC_"))}
        self.env.update(HOME=str(self.home), XDG_CONFIG_HOME=str(self.home / ".config"),
                        XDG_CACHE_HOME=str(self.home / ".cache"), PYTHONPATH=str(ROOT))
        self.trust_project = False  # True: every run passes --trust-project (the project files are the test's)

    def write_config(self, servers: Dict[str, Any], name: str = ".mcp.json") -> Path:
        path = self.project / name
        path.write_text(json.dumps({"mcpServers": servers}))
        return path

    def run(self, *args: str, input: Optional[str] = None, timeout: float = 60) -> "subprocess.CompletedProcess[str]":
        trust = ["--trust-project"] if self.trust_project else []
        return subprocess.run([sys.executable, "-m", "mcpsync", *trust, *args], cwd=self.project, env=self.env,
                              capture_output=True, text=True, input=input, timeout=timeout)


@pytest.fixture
def sh(tmp_path: Path) -> Shell:
    return Shell(tmp_path)


def test_servers_prints_a_status_table_of_the_discovered_config(sh: Shell) -> None:
    sh.write_config({
        "good": stdio("misbehaving.py", "good"),
        "broken": stdio("misbehaving.py", "exit-early"),
        "invalid": {"type": "telepathy"},
        "sleeping": {"command": "x", "enabled": False},
    })
    out = sh.run("servers", "--status", "--trust-project")
    assert out.returncode == 4, out.stderr  # "broken" could not start (issue 15: a failure is not a success)
    lines = out.stdout.splitlines()
    assert lines[0].split() == ["SERVER", "STATE", "TYPE", "TOOLS", "SOURCE", "/", "ERROR"]
    rows = {line.split()[0]: line for line in lines[1:]}
    assert rows["good"].split()[1:4] == ["connected", "stdio", "1"]
    assert str(sh.project / ".mcp.json") in rows["good"]
    assert rows["broken"].split()[1] == "failed" and "exited with code 2" in rows["broken"]
    assert rows["invalid"].split()[1] == "failed" and "unknown type 'telepathy'" in rows["invalid"]
    assert rows["sleeping"].split()[1] == "disabled"

    data = json.loads(sh.run("servers", "--json", "--connect", "--trust-project").stdout)
    assert [(row["name"], row["state"]) for row in data] == [
        ("good", "connected"), ("broken", "failed"), ("sleeping", "disabled"), ("invalid", "failed")]


def test_tools_lists_every_server_or_one(sh: Shell) -> None:
    config = sh.write_config({"a": stdio("slow_start.py", "--tools", "echo,shout"),
                              "b": stdio("misbehaving.py", "good")}, name="servers.json")
    out = sh.run("--config", str(config), "tools")
    assert out.returncode == 0, out.stderr
    assert [line.split()[:3] for line in out.stdout.splitlines()] == [
        ["SERVER", "TOOL", "QUALIFIED"], ["a", "echo", "mcp_a_echo"], ["a", "shout", "mcp_a_shout"],
        ["b", "echo", "mcp_b_echo"]]
    data = json.loads(sh.run("tools", "b", "--json", "--config", str(config)).stdout)
    assert data == [{"server": "b", "qualified_name": "mcp_b_echo", "name": "echo",
                     "description": "Echo the text back.",
                     "input_schema": {"type": "object", "properties": {"text": {"type": "string"}},
                                      "required": ["text"]}}]


def test_call_prints_the_result_and_uses_documented_exit_codes(sh: Shell) -> None:
    sh.write_config({"s": stdio("slow_start.py", "--tools", "echo"), "dead": stdio("misbehaving.py", "exit-early")})
    sh.trust_project = True
    ok = sh.run("call", "s", "echo", '{"text": "hello there"}')
    assert (ok.returncode, ok.stdout, ok.stderr) == (0, "hello there\n", "")
    as_json = sh.run("call", "s", "echo", "-", "--json", input='{"text": "from stdin"}')
    assert json.loads(as_json.stdout) == {"content": [{"type": "text", "text": "from stdin"}]}

    refused = sh.run("call", "s", "nope")  # the server answers with a JSON-RPC error
    assert refused.returncode == 6
    assert refused.stderr == "mcpsync: error: MCP error -32602: Unknown tool: nope\n"

    bad_json = sh.run("call", "s", "echo", "{text}")
    assert bad_json.returncode == 2 and bad_json.stderr.startswith("mcpsync: error: ARGUMENTS is not valid JSON")
    unknown = sh.run("call", "ghost", "echo")
    assert unknown.returncode == 3 and unknown.stderr == (
        "mcpsync: error: Unknown MCP server 'ghost'; configured: s, dead\n")

    dead = sh.run("call", "dead", "echo")
    assert dead.returncode == 4
    assert dead.stderr.startswith("mcpsync: error: MCP server not connected: dead; last error: Transport closed: "
                                  "server process exited with code 2")
    # the error line, then the server's own last stderr lines: why it died
    assert dead.stderr.splitlines()[1:] == ["mcpsync: the last lines server 'dead' wrote to stderr:",
                                            "  cannot start: missing config"]
    assert "Traceback" not in dead.stderr
    debug = sh.run("call", "dead", "echo", "--debug")
    assert debug.returncode == 4 and "Traceback" in debug.stderr and "cannot start: missing config" in debug.stderr


def test_a_tool_error_result_exits_1(sh: Shell) -> None:
    out = sh.run("call", "fail", '{"message": "no luck"}', "--", *server_argv("sdk_server.py"))
    assert out.returncode == 1
    assert "no luck" in out.stdout and out.stderr == "mcpsync: error: the tool reported an error\n"


def test_a_server_given_directly_needs_no_config(sh: Shell) -> None:
    argv = server_argv("sdk_server.py")
    tools = sh.run("tools", "--json", "--", *argv)
    assert tools.returncode == 0, tools.stderr
    assert {"echo", "add", "progress"} <= {t["name"] for t in json.loads(tools.stdout)}
    resources = sh.run("resources", "--", *argv)
    assert "demo://greeting" in resources.stdout and resources.returncode == 0
    prompts = sh.run("prompts", "--json", "--", *argv)
    assert [p["name"] for p in json.loads(prompts.stdout)] == ["greet"]
    call = sh.run("call", "add", '{"a": 1, "b": 2}', "--json", "--", *argv)
    assert json.loads(call.stdout)["structuredContent"] == {"result": 3.0}


def test_no_servers_or_a_malformed_file_are_reported_clearly(sh: Shell) -> None:
    sh.trust_project = True
    out = sh.run("tools")
    assert out.returncode == 3 and out.stderr.startswith("mcpsync: error: no MCP servers found")
    (sh.project / ".mcp.json").write_text("{ nope")
    (sh.project / ".cursor").mkdir()
    (sh.project / ".cursor" / "mcp.json").write_text(json.dumps({"mcpServers": {"ok": stdio("misbehaving.py", "good")}}))
    out = sh.run("tools")
    assert out.returncode == 0
    assert out.stderr.startswith(f"mcpsync: warning: Skipping MCP config {sh.project / '.mcp.json'}: invalid JSON")
    assert "ok" in out.stdout


def test_a_server_still_starting_at_the_timeout_exits_5(sh: Shell, tmp_path: Path) -> None:
    sh.write_config({"slow": stdio("slow_start.py", "--wait-for", str(tmp_path / "never"))})
    sh.trust_project = True
    out = sh.run("call", "slow", "echo", "--timeout", "0.5")
    assert out.returncode == 5
    assert out.stderr.startswith("mcpsync: error: MCP server not connected: slow; last error: Request timeout after "
                                 "500ms: MCP server 'slow' sent no answer to 'initialize'")


def test_progress_is_shown_on_stderr_when_it_is_a_terminal(sh: Shell) -> None:
    import pty

    master, slave = pty.openpty()
    try:
        proc = subprocess.run([sys.executable, "-m", "mcpsync", "call", "progress", '{"steps": 3}', "--",
                               *server_argv("slow_start.py", "--tools", "progress")],
                              cwd=sh.project, env=sh.env, stdout=subprocess.PIPE, stderr=slave, text=True, timeout=60)
    finally:
        os.close(slave)
    shown: List[bytes] = []
    try:
        while True:
            chunk = os.read(master, 4096)
            if not chunk:
                break
            shown.append(chunk)
    except OSError:  # EIO once the writer side is closed and drained
        pass
    finally:
        os.close(master)
    assert proc.returncode == 0 and proc.stdout == "done\n"
    assert b"progress 3/3 step 3" in b"".join(shown)


def test_the_console_script_and_python_m_agree(sh: Shell) -> None:
    script = shutil.which("mcpsync")
    if script is None:
        pytest.skip("the mcpsync console script is not installed (pip install -e .)")
    out = subprocess.run([script, "--help"], capture_output=True, text=True, timeout=60, env=sh.env)
    assert out.returncode == 0 and "Exit codes: 0 ok" in out.stdout.replace("\n", " ")
    usage = sh.run()
    assert usage.returncode == 2 and "usage: mcpsync" in usage.stderr


# -- issue 15 item 11 -------------------------------------------------------------------------------


def test_call_takes_the_managers_qualified_names(sh: Shell) -> None:
    sh.write_config({"everything": stdio("slow_start.py", "--tools", "echo,shout"),
                     "other": stdio("misbehaving.py", "exit-early")})
    sh.trust_project = True
    short = sh.run("call", "everything_echo", '{"text": "hi"}')
    assert (short.returncode, short.stdout) == (0, "hi\n"), short.stderr
    full = sh.run("call", "mcp_everything_shout", '{"text": "hey"}')
    assert (full.returncode, full.stdout) == (0, "shout:hey\n"), full.stderr
    assert sh.run("call", "mcp_everything_echo").returncode == 0  # no ARGUMENTS: {}
    unknown = sh.run("call", "nobody_echo", "{}")
    assert unknown.returncode == 3 and "no configured server has a tool named 'nobody_echo'" in unknown.stderr
    missing_tool = sh.run("call", "everything")
    assert missing_tool.returncode == 2 and "'everything' is a server: give its TOOL too" in missing_tool.stderr
    dead = sh.run("call", "other_echo")
    assert dead.returncode == 4 and "MCP server not connected: other" in dead.stderr


def test_call_refuses_a_tool_the_config_filters_out(sh: Shell) -> None:
    sh.write_config({"fs": stdio("slow_start.py", "--tools", "read_file,write_file", disabled_tools=["write_*"])})
    sh.trust_project = True
    for words in (["fs", "write_file"], ["fs_write_file"]):
        out = sh.run("call", *words, '{"text": "x"}')
        assert out.returncode == 3, out.stderr
        assert "MCP tool 'write_file' of server 'fs' is not allowed: disabled_tools 'write_*'" in out.stderr
    tools = json.loads(sh.run("tools", "--json").stdout)
    assert [t["name"] for t in tools] == ["read_file"]


def test_the_call_usage_line_says_what_it_takes(sh: Shell) -> None:
    helped = sh.run("call", "--help")
    assert helped.returncode == 0
    usage = helped.stdout.split("\n\n")[0]
    assert "mcpsync call [options] SERVER TOOL [ARGUMENTS]" in usage
    assert "mcpsync call [options] QUALIFIED_TOOL [ARGUMENTS]" in usage
    assert "TOOL [ARGUMENTS] -- COMMAND..." in usage
    assert "[SERVER TOOL [ARGUMENTS] ...]" not in helped.stdout
    too_many = sh.run("call", "a", "b", "{}", "extra")
    assert too_many.returncode == 2 and "usage: mcpsync call [options] SERVER TOOL [ARGUMENTS]" in too_many.stderr


def test_version(sh: Shell) -> None:
    import mcpsync

    out = sh.run("--version")
    assert out.returncode == 0 and out.stdout.startswith(f"mcpsync {mcpsync.__version__} (MCP protocol versions ")


# read and prompt are two tests: each run starts the official SDK's server, and seven runs in
# one test went past its 60 s on a loaded machine (CI's 3.9 suite beside the 3.13 one).


def test_read(sh: Shell) -> None:
    sh.write_config({"demo": stdio("sdk_server.py"), "plain": stdio("slow_start.py")})
    sh.trust_project = True
    read = sh.run("read", "demo://greeting")
    assert (read.returncode, read.stdout) == (0, "hello\n"), read.stderr
    named = sh.run("read", "demo", "demo://users/ann", "--json")
    assert json.loads(named.stdout)["contents"][0]["text"].startswith("user ann"), named.stdout
    blob = sh.run("read", "demo://blob")
    assert blob.returncode == 0 and "application/octet-stream blob" in blob.stdout
    missing = sh.run("read", "demo", "demo://nothing")
    assert missing.returncode == 6, missing.stderr
    direct = sh.run("read", "demo://greeting", "--", *server_argv("sdk_server.py"))
    assert (direct.returncode, direct.stdout) == (0, "hello\n"), direct.stderr


def test_prompt(sh: Shell) -> None:
    sh.write_config({"demo": stdio("sdk_server.py"), "plain": stdio("slow_start.py")})
    sh.trust_project = True
    prompt = sh.run("prompt", "greet", '{"name": "Ann"}')
    assert prompt.returncode == 0 and "user: " in prompt.stdout and "Ann" in prompt.stdout, prompt.stderr
    assert json.loads(sh.run("prompt", "demo", "greet", '{"name": "Bo"}', "--json").stdout)["messages"]
    nowhere = sh.run("prompt", "nothing")
    assert nowhere.returncode == 3 and "no connected server lists a prompt named 'nothing'" in nowhere.stderr


def test_servers_exit_code_and_check(sh: Shell) -> None:
    sh.write_config({"good": stdio("slow_start.py")})
    sh.trust_project = True
    assert sh.run("servers", "--check").returncode == 0
    sh.write_config({"good": stdio("slow_start.py"), "slow": stdio("slow_start.py", "--fail-after-start")})
    failed = sh.run("servers", "--check")
    assert failed.returncode == 4 and "failed" in failed.stdout
    sh.write_config({"good": stdio("slow_start.py"), "bad": {"type": "telepathy"}})
    assert sh.run("servers").returncode == 3  # nothing started: the invalid entry alone fails it


def test_no_servers_found_names_the_files_searched(sh: Shell) -> None:
    out = sh.run("tools")
    assert out.returncode == 3
    assert out.stderr.startswith("mcpsync: error: no MCP servers found; searched ")
    for name in (".mcp.json", ".cursor/mcp.json", ".vscode/mcp.json", "~/.claude.json", "~/.cursor/mcp.json",
                 "claude_desktop_config.json"):
        assert name in out.stderr, name
    given = sh.run("tools", "--config", str(sh.project / "none.json"))
    assert given.returncode == 3 and f"searched {sh.project / 'none.json'}" in given.stderr


def test_call_max_output_prints_where_the_whole_result_is(sh: Shell, tmp_path: Path) -> None:
    sh.env["MCPSYNC_OUTPUT_DIR"] = str(tmp_path / "spill")
    out = sh.run("call", "echo", json.dumps({"text": "y" * 500}), "--max-output", "100", "--",
                 *server_argv("slow_start.py"))
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("y" * 100 + "\n[mcpsync: output truncated: the result is 500 bytes")
    path = out.stderr.split("the whole of it is in ")[1].strip()
    assert Path(path).read_text() == "y" * 500 and Path(path).parent == tmp_path / "spill"


def test_servers_shows_the_transport_really_used(_sdk_servers: Any, sh: Shell) -> None:
    legacy = _sdk_servers("legacy-sse")
    try:
        config = sh.write_config({"old": {"url": legacy.url}}, name="servers.json")  # no type: http, then sse
        out = sh.run("servers", "--check", "--json", "--config", str(config))
        assert out.returncode == 0, out.stderr
        (row,) = json.loads(out.stdout)
        assert (row["state"], row["type"], row["configured_type"], row["transport"]) == ("connected", "sse", "http", "sse")
        table = sh.run("servers", "--check", "--config", str(config))
        assert table.stdout.splitlines()[1].split()[:3] == ["old", "connected", "sse"]
    finally:
        legacy.served.wait_idle()


def test_a_qualified_name_of_a_disabled_or_untrusted_server_is_a_config_error(sh: Shell) -> None:
    sh.write_config({"off": stdio("slow_start.py", enabled=False), "proj": stdio("slow_start.py")})
    off = sh.run("call", "off_echo", "--trust-project")
    assert off.returncode == 3 and 'server "off" is disabled' in off.stderr
    untrusted = sh.run("call", "proj_echo")  # no terminal, not trusted: never started
    assert untrusted.returncode == 3 and "not trusted" in untrusted.stderr, untrusted.stderr


def test_a_required_server_that_fails_fails_the_command_but_servers_shows_it(sh: Shell) -> None:
    sh.write_config({"ok": stdio("slow_start.py"), "must": stdio("slow_start.py", "--fail-after-start", required=True)})
    sh.trust_project = True
    tools = sh.run("tools")
    assert tools.returncode == 4 and "required MCP server 'must' did not connect" in tools.stderr
    table = sh.run("servers", "--check")
    assert table.returncode == 4
    assert {line.split()[0]: line.split()[1] for line in table.stdout.splitlines()[1:]} == {
        "ok": "connected", "must": "failed"}
