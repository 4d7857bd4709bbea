"""Shared pieces of the reliability suite: hostile server processes, resource snapshots, two test tiers.

Every test here runs in one of two tiers: the fast subset (the default test
command) and the soak tier (``python -m pytest -m soak``), which runs the same
checks with far more load or far more generated inputs. Property tests use
fixed seeds and no example database, so every run tries the same inputs.
"""

from __future__ import annotations

import gc
import logging
import os
import select
import subprocess
import threading
from typing import Any, Dict, Iterator, List, Optional

import pytest
from hypothesis import HealthCheck, settings

from ..conftest import _children, _fds, server_argv

#: The fast tier runs in the default command; the soak tier only with ``-m soak``.
TIERS = [pytest.param("fast", id="fast"),
         pytest.param("soak", id="soak", marks=[pytest.mark.soak, pytest.mark.timeout(3600)])]

_COMMON: Dict[str, Any] = {
    "derandomize": True, "database": None, "deadline": None,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
}
PROPERTY_SETTINGS = {
    "fast": settings(max_examples=60, **_COMMON),
    "soak": settings(max_examples=2000, **_COMMON),
}


@pytest.fixture
def quiet() -> Iterator[None]:
    """Silence mcpsync's warnings for a test that sends it garbage by the thousand (they are tested elsewhere)."""
    logger = logging.getLogger("mcpsync")
    level = logger.level
    logger.setLevel(logging.ERROR)
    yield
    logger.setLevel(level)


def hostile_stdio(mode: str, *args: str) -> List[str]:
    """argv of ``tests/servers/hostile_stdio.py MODE ARGS...``."""
    return server_argv("hostile_stdio.py", mode, *args)


class HostileHTTP:
    """``tests/servers/hostile_http.py`` in a child process; it exits when its stdin closes."""

    def __init__(self, mode: str, *args: str) -> None:
        self.proc = subprocess.Popen(server_argv("hostile_http.py", mode, *args), stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE)
        assert self.proc.stdout is not None
        # Generous: on a loaded machine (CI's three suites side by side, the free-threaded one
        # among them) a 15 s wait for the first line ran out twice in a row.
        ready, _, _ = select.select([self.proc.stdout], [], [], 45)
        line = self.proc.stdout.readline() if ready else b""
        if not line.startswith(b"PORT "):
            self.stop()
            raise RuntimeError(f"hostile_http.py {mode} did not start: {line!r}")
        self.port = int(line.split()[1])
        self.scheme = "https" if "--tls" in args else "http"

    def url(self, path: str = "/mcp") -> str:
        return f"{self.scheme}://127.0.0.1:{self.port}{path}"

    def stop(self) -> None:
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                stream.close()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def http_server() -> Iterator[Any]:
    """A factory of hostile HTTP server processes, all ended after the test."""
    servers: List[HostileHTTP] = []

    def start(mode: str, *args: str) -> HostileHTTP:
        server = HostileHTTP(mode, *args)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


def rss_bytes() -> int:
    """This process's resident set size (Linux; 0 elsewhere)."""
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


class Snapshot:
    """Threads, file descriptors, child processes and memory at one moment."""

    def __init__(self) -> None:
        gc.collect()
        self.thread_set = set(threading.enumerate())
        self.threads = len(self.thread_set)
        self.fds = _fds()
        self.children = _children()
        self.rss = rss_bytes()

    def __repr__(self) -> str:
        return (f"<Snapshot threads={self.threads} fds={self.fds} children={len(self.children)} "
                f"rss={self.rss / 2**20:.1f}MiB>")


def settle(baseline: Snapshot, timeout: float = 5.0) -> Snapshot:
    """Join (bounded) the threads started since ``baseline`` that are still winding down; a new snapshot."""
    for thread in threading.enumerate():
        if thread not in baseline.thread_set and thread is not threading.current_thread():
            thread.join(timeout)
    return Snapshot()


def expect_back_to(baseline: Snapshot) -> Snapshot:
    """Assert threads, fds and child processes are back to ``baseline``; return the snapshot."""
    now = settle(baseline)
    extra = sorted(t.name for t in now.thread_set - baseline.thread_set)
    assert now.threads <= baseline.threads, extra
    assert now.fds <= baseline.fds, (baseline, now)
    assert now.children <= baseline.children, (baseline, now)
    return now
