"""mcpsync.testing.FakeServer.run_stdio() in a real subprocess, with mcpsync's client and the official SDK's.

``tests/servers/fake_stdio_server.py`` is a FakeServer script; the official
client runs in its own subprocess (``tests/servers/sdk_fake_driver.py``), which
starts the fake server over stdio and prints what it saw as JSON.
"""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import metadata
from typing import Any, Dict, List

import pytest

import mcpsync
from mcpsync import RequestTimeout, TransportClosed

from ..conftest import LogWatch, server_argv

MODERN = "2026-07-28"


# The fake imports the SDK: on a loaded machine it starts after the 3 s default probe timeout,
# and an unanswered server/discover counts as legacy (the late probe then shifts the request
# numbers the crash test reads). A probe timeout that outlasts the start keeps the era fixed.
PROBE = 30


def sample(params: Dict[str, Any]) -> Dict[str, Any]:
    return {"role": "assistant", "model": "m", "content": {"type": "text", "text": "Paris"}}


def test_mcpsync_client_over_stdio() -> None:
    progress: List[Any] = []
    with mcpsync.connect(server_argv("fake_stdio_server.py"), probe_timeout=PROBE, timeout=15, sampling_handler=sample,
                         elicitation_handler=lambda params: {"action": "accept", "content": {"ok": True}},
                         roots=[{"uri": "file:///srv/project"}]) as client:
        # Whichever era mcpsync's client picks (the handshake, or 2026-07-28 after a server/discover
        # probe once it speaks it), the fake serves it.
        assert client.protocol_version in ("2025-11-25", MODERN)
        assert client.server_info is not None and client.server_info.version == "2.0.0"
        assert client.instructions == "A fake server for the stdio tests."
        assert [tool.name for tool in client.list_tools()] == ["add", "countdown", "ask", "chatty", "stall"]
        assert client.call_tool("add", {"a": 2, "b": 40}).text == "42"
        assert client.call_tool("countdown", {"n": 2}, on_progress=lambda *a: progress.append(a)).text == "liftoff"
        assert client.call_tool("ask").structured_content == {
            "sampled": "Paris", "elicited": {"action": "accept", "content": {"ok": True}},
            "roots": ["file:///srv/project"]}
        assert client.call_tool("chatty", {"text": "quiet"}).text == "QUIET"  # its print() went to stderr
        assert client.read_resource("memo://today").text == "Buy milk."
        assert client.get_prompt("greet", {"name": "Ada"}).messages[0].content.to_dict()["text"] == "Hello, Ada!"
    assert progress == [(1, 2, "step 1"), (2, 2, "step 2")]


def test_a_cancelled_call_reaches_the_stdio_server(logs: LogWatch) -> None:
    with mcpsync.connect(server_argv("fake_stdio_server.py"), probe_timeout=PROBE, timeout=15) as client:
        with pytest.raises(RequestTimeout):
            client.call_tool("stall", timeout=0.3)
        logs.wait_for(lambda message: "stall cancelled: True" in message)
        assert client.call_tool("add", {"a": 1, "b": 1}).text == "2"


def test_a_scripted_crash_ends_the_process_with_its_exit_code() -> None:
    argv = server_argv("fake_stdio_server.py", "--crash-at", "2", "--crash-tool", "add")
    with mcpsync.connect(argv, probe_timeout=PROBE, timeout=15) as client:
        assert client.call_tool("add", {"a": 1, "b": 1}).text == "2"
        with pytest.raises(TransportClosed) as raised:
            client.call_tool("add", {"a": 2, "b": 2})
    assert raised.value.returncode == 3
    assert any("crashed at request #3 (tools/call)" in line for line in raised.value.stderr_tail)


def _sdk_driver(*args: str) -> Dict[str, Any]:
    argv = server_argv("sdk_fake_driver.py")
    if argv[0] == sys.executable and int(metadata.version("mcp").split(".")[0]) < 2:
        pytest.skip("the official SDK speaks 2026-07-28 from mcp 2.0 on")
    done = subprocess.run([*argv, *args], capture_output=True,
                          text=True, timeout=90)
    assert done.returncode == 0, done.stderr[-3000:]
    result: Dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _assert_common(seen: Dict[str, Any]) -> None:
    assert seen["server_info"] == {"name": "fake-stdio", "version": "2.0.0"}
    assert seen["instructions"] == "A fake server for the stdio tests."
    assert seen["tools"] == ["add", "ask", "chatty", "countdown", "stall"]
    assert seen["add"]["content"] == [{"type": "text", "text": "42"}]
    assert seen["countdown"] == "liftoff"
    assert seen["progress"] == [[1.0, 2.0, "step 1"], [2.0, 2.0, "step 2"]]
    assert seen["ask"] == {"sampled": "Paris (Capital of France?)",
                           "elicited": {"action": "accept", "content": {"ok": True}},
                           "roots": ["file:///srv/project"]}
    assert seen["bad_arguments"] == {
        "is_error": True, "text": "Invalid arguments for tool 'add': argument 'a' should be an integer, got 'two'"}
    assert seen["resource"] == "Buy milk."
    assert seen["prompt"] == "Hello, Ada!"


def test_official_client_in_auto_mode_speaks_2026_07_28() -> None:
    seen = _sdk_driver("auto")
    assert seen["protocol_version"] == MODERN
    # Modern results carry resultType and the server's identity in _meta.
    assert seen["add"]["resultType"] == "complete"
    assert seen["add"]["_meta"] == {"io.modelcontextprotocol/serverInfo": {"name": "fake-stdio", "version": "2.0.0"}}
    _assert_common(seen)  # sampling, elicitation and roots went through input_required rounds


def test_official_client_in_legacy_mode_uses_the_handshake() -> None:
    seen = _sdk_driver("legacy")
    assert seen["protocol_version"] == "2025-11-25"
    assert "_meta" not in seen["add"]
    _assert_common(seen)  # sampling, elicitation and roots were server-to-client requests


def test_official_client_in_auto_mode_falls_back_for_a_legacy_only_server() -> None:
    seen = _sdk_driver("auto", "--legacy-only")
    assert seen["protocol_version"] == "2025-11-25"
    _assert_common(seen)
