"""A call to a managed stdio server whose pipe broke before the call was written (issue 15, item 2).

A server that stops reading (it died, or closed its stdin) breaks the client's next write
with EPIPE before the reader has seen anything wrong. Nothing of that request reached the
server, so a managed call waits for the reconnect within its timeout and is sent on the new
connection instead of failing with ``TransportClosed``. A request that was written (even in
part) is never sent twice.
"""

from __future__ import annotations

import sys
from typing import Any

import pytest

import mcpsync
from mcpsync import Manager, ReconnectPolicy

from ..conftest import SERVERS

MISBEHAVING = str(SERVERS / "misbehaving.py")


def deaf_manager(**options: Any) -> Manager:
    config = {"mcpServers": {"deaf": {"command": sys.executable, "args": [MISBEHAVING, "deaf"]}}}
    return Manager(config, reconnect=ReconnectPolicy(initial_delay=0.05, max_delay=0.2),
                   client_options={"protocol": "legacy"}, **options)


def test_a_managed_call_that_finds_the_pipe_broken_waits_for_the_reconnect_and_is_sent_there() -> None:
    with deaf_manager() as manager:
        manager.connect_all(startup_timeout=20)
        first_pid = manager.client("deaf").transport.pid
        assert manager.call_tool("mcp_deaf_deaf", timeout=20).text == "deaf"  # it reads no more
        result = manager.call_tool("mcp_deaf_echo", {"text": "after"}, timeout=20)
        assert result.text == "after"
        status = manager.status()["deaf"]
        assert status.state == "connected" and status.reconnects == 1
        assert manager.client("deaf").transport.pid != first_pid


def test_a_plain_client_says_the_pipe_broke() -> None:
    with mcpsync.connect([sys.executable, MISBEHAVING, "deaf"], protocol="legacy", timeout=20,
                         shutdown_timeout=0.5) as client:
        assert client.call_tool("deaf").text == "deaf"
        with pytest.raises(mcpsync.TransportClosed, match="stopped reading its input") as caught:
            client.call_tool("echo", {"text": "after"})
        assert caught.value.unsent  # nothing of it was written
        assert not client.connected  # the server that reads nothing was ended, not left running
