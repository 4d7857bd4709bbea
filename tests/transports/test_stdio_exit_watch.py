"""The exit watcher: one thread for every stdio server, which still notices a server that dies
while a descendant holds its stdout open, and which ends with the last server."""

from __future__ import annotations

import os
import threading

import pytest

import mcpsync
from mcpsync import TransportClosed

from ..conftest import server_argv, until

pidfds = pytest.mark.skipif(not hasattr(os, "pidfd_open"), reason="no process file descriptors here")


def _exit_watchers():
    return [t for t in threading.enumerate() if t.name.startswith("mcpsync-stdio-exit")]


@pidfds
def test_many_servers_share_one_exit_watcher_that_ends_with_the_last():
    clients = [mcpsync.connect(server_argv("misbehaving.py", "good"), name=f"good{i}") for i in range(4)]
    try:
        for client in clients:
            assert client.call_tool("echo", {"text": "hi"}).text == "hi"
        assert len(_exit_watchers()) == 1  # before: one per server
        per_server = [t for t in threading.enumerate() if "[good0]" in t.name]
        assert sorted(t.name.split("[")[0] for t in per_server) == ["mcpsync-stdio-reader", "mcpsync-stdio-stderr"]
    finally:
        for client in clients:
            client.close()
    until(lambda: not _exit_watchers())


@pidfds
def test_a_crash_under_a_held_open_stdout_is_noticed_beside_a_healthy_server():
    healthy = mcpsync.connect(server_argv("misbehaving.py", "good"), name="healthy")
    argv = ["sh", "-c", 'sleep 60 & exec "$0" "$@"', *server_argv("misbehaving.py", "crash")]
    crashing = mcpsync.connect(argv, name="crashing", shutdown_timeout=0.3)
    try:
        with pytest.raises(TransportClosed) as info:
            crashing.call_tool("crash", timeout=5)
        assert info.value.returncode == 3
        until(lambda: not crashing.connected)
        assert healthy.call_tool("echo", {"text": "still"}).text == "still"
        assert len(_exit_watchers()) == 1
    finally:
        crashing.close()
        healthy.close()
    until(lambda: not _exit_watchers())


def test_without_process_file_descriptors_each_server_has_its_own_watcher(monkeypatch):
    from mcpsync.transports import _exit_watch

    monkeypatch.setattr(_exit_watch, "_pidfd", lambda pid: -1)  # an old kernel, macOS, a sandbox
    argv = ["sh", "-c", 'sleep 60 & exec "$0" "$@"', *server_argv("misbehaving.py", "crash")]
    crashing = mcpsync.connect(argv, name="crashing", shutdown_timeout=0.3)
    try:
        assert [t.name for t in _exit_watchers()] == [f"mcpsync-stdio-exit[{crashing.transport.pid}]"]
        with pytest.raises(TransportClosed) as info:
            crashing.call_tool("crash", timeout=5)
        assert info.value.returncode == 3
    finally:
        crashing.close()
    until(lambda: not _exit_watchers())
