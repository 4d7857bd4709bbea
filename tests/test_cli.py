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

from .conftest import ROOT, server_argv


def stdio(script: str, *args: str) -> Dict[str, Any]:
    argv = server_argv(script, *args)
    return {"command": argv[0], "args": argv[1:]}


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
    assert [line.split()[:2] for line in out.stdout.splitlines()] == [
        ["SERVER", "TOOL"], ["a", "echo"], ["a", "shout"], ["b", "echo"]]
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
    assert len(dead.stderr.splitlines()) == 1 and "Traceback" not in dead.stderr
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
