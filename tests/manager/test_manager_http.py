"""Manager with HTTP servers: one config mixing stdio, Streamable HTTP and legacy SSE servers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mcpsync.manager import Manager

from ..conftest import server_argv
from ..http_fixtures import _sdk_servers  # noqa: F401  (fixture)


def test_one_config_with_stdio_streamable_http_and_legacy_sse_servers(_sdk_servers: Any, tmp_path: Path) -> None:
    streamable, legacy = _sdk_servers("sse-stateful"), _sdk_servers("legacy-sse")
    argv = server_argv("misbehaving.py", "good")
    config = {"mcpServers": {
        "local": {"command": argv[0], "args": argv[1:]},
        "web": {"type": "http", "url": streamable.url},
        "old": {"type": "sse", "url": legacy.url},
        "guess": {"url": streamable.url},  # no type: Streamable HTTP (with the legacy fallback offered)
    }}
    try:
        with Manager(config, cache=tmp_path / "cache") as manager:
            assert manager.wait(30)
            status = manager.status()
            assert {name: (s.state, s.type) for name, s in status.items()} == {
                "local": ("connected", "stdio"), "web": ("connected", "http"), "old": ("connected", "sse"),
                "guess": ("connected", "http")}
            assert {s.configured_type for s in status.values()} == {"stdio", "http", "sse"}
            for name in ("web", "old", "guess"):
                assert manager.call_tool(f"mcp_{name}_echo", {"text": name}).text == name
            assert manager.call_tool("mcp_local_echo", {"text": "local"}).text == "local"
            assert manager.reconnect("web").reconnects == 1
            assert manager.call_tool("mcp_web_add", {"a": 1, "b": 1}).structured_content == {"result": 2.0}
    finally:
        streamable.served.wait_idle()
        legacy.served.wait_idle()


def test_status_type_is_the_transport_really_used_after_a_fallback_to_legacy_sse(_sdk_servers: Any,
                                                                                  tmp_path: Path) -> None:
    legacy = _sdk_servers("legacy-sse")  # knows only the legacy HTTP+SSE transport
    config = {"mcpServers": {"fell": {"url": legacy.url}, "asked": {"type": "http", "url": legacy.url}}}
    try:
        manager = Manager(config, cache=False)  # nothing started before the with block
        before = manager.server_status("fell")
        assert (before.state, before.type, before.configured_type) == ("idle", "http", "http")  # what was asked
        with manager:
            assert manager.wait(30)
            status = manager.status()
            assert (status["fell"].state, status["fell"].type, status["fell"].configured_type) == (
                "connected", "sse", "http")
            assert status["fell"].to_dict()["configured_type"] == "http"
            assert manager.call_tool("mcp_fell_echo", {"text": "via sse"}).text == "via sse"
            assert manager.reconnect("fell").type == "sse"  # the new connection fell back again
            # An explicit "http" offers no fallback: it fails, and says the type it tried.
            assert (status["asked"].state, status["asked"].type) == ("failed", "http")
    finally:
        legacy.served.wait_idle()


def test_the_command_takes_an_http_url_as_its_server(_sdk_servers: Any, tmp_path: Path) -> None:
    import json
    import os
    import subprocess
    import sys

    from ..conftest import ROOT

    server = _sdk_servers("json-stateful")
    env = {**os.environ, "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "config"),
           "XDG_CACHE_HOME": str(tmp_path / "cache"), "PYTHONPATH": str(ROOT)}
    try:
        tools = subprocess.run([sys.executable, "-m", "mcpsync", "tools", server.url, "--json"], env=env,
                               cwd=tmp_path, capture_output=True, text=True, timeout=60)
        assert tools.returncode == 0, tools.stderr
        assert {"echo", "add"} <= {t["name"] for t in json.loads(tools.stdout)}
        call = subprocess.run([sys.executable, "-m", "mcpsync", "call", server.url, "echo", '{"text": "over http"}'],
                              env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60)
        assert (call.returncode, call.stdout) == (0, "over http\n"), call.stderr
    finally:
        server.served.wait_idle()
