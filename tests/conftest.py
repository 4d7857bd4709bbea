"""Shared fixtures: leak checks and helpers to run the test servers."""

from __future__ import annotations

import importlib.util
import logging
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Tuple

import pytest

from mcpsync import _shared

SERVERS = Path(__file__).parent / "servers"
ROOT = Path(__file__).parent.parent
PY = sys.executable


# Test peers built on the official ``mcp`` SDK. It needs Python 3.10 or newer (and, on a
# free-threaded interpreter, pydantic-core wheels that may not exist), so where this interpreter
# cannot import it they run under MCPSYNC_PEER_PYTHON (an interpreter that has the test extra and
# this checkout installed; .ci/versions sets it), or the test is skipped with that reason.
SDK_PEERS = frozenset({
    "sdk_server.py", "era_sdk_server.py", "http_sdk_server.py", "protected_sdk_server.py",
    "sdk_paged_server.py", "sdk_fake_driver.py", "llm_tools_server.py", "fake_stdio_server.py",
})


def peer_python() -> str:
    """The interpreter that runs official-SDK peers: this one if it has ``mcp``, else MCPSYNC_PEER_PYTHON."""
    if importlib.util.find_spec("mcp") is not None:
        return PY
    other = os.environ.get("MCPSYNC_PEER_PYTHON")
    if not other:
        pytest.skip(f"the official mcp SDK cannot be installed on Python {sys.version.split()[0]}; "
                    "set MCPSYNC_PEER_PYTHON to an interpreter that has it to run this peer")
    return other


def require_sdk() -> None:
    """Skip the calling test module where the official ``mcp`` SDK cannot be installed (Python
    3.9, a free-threaded build): for modules that serve an SDK app in this process."""
    pytest.importorskip("mcp", reason=f"the official mcp SDK is not installed on Python {sys.version.split()[0]} "
                                      "(it needs 3.10+ and pydantic-core)")


def server_argv(script: str, *args: str) -> List[str]:
    """argv that runs ``tests/servers/<script>`` (official-SDK peers: with :func:`peer_python`)."""
    python = peer_python() if script in SDK_PEERS else PY
    return [python, str(SERVERS / script), *args]


def _children() -> set:
    """Pids of our live child processes (Linux /proc; empty elsewhere)."""
    me = str(os.getpid())
    found = set()
    try:
        entries = os.listdir("/proc")
    except OSError:
        return found
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[1] == me and fields[0] != "Z":
            found.add(int(entry))
    return found


def _fds() -> int:
    try:
        return len(os.listdir("/proc/self/fd"))
    except OSError:
        return 0


def _fd_targets() -> Dict[str, str]:
    """This process's open descriptors and what each is (Linux /proc; empty elsewhere)."""
    found = {}
    try:
        for fd in os.listdir("/proc/self/fd"):
            try:
                found[fd] = os.readlink(f"/proc/self/fd/{fd}")
            except OSError:  # closed meanwhile (or the listing's own descriptor)
                pass
    except OSError:
        pass
    return found


def until(check: Callable[[], bool], timeout: float = 10.0) -> None:
    """Wait (bounded) for a condition another thread or process brings about.

    For state with no event to wait on (another thread holding a lock, a server's stderr
    line read by its own thread); raises AssertionError when ``timeout`` passes first.
    """
    deadline = time.monotonic() + timeout
    pause = threading.Event()
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting")
        pause.wait(0.005)


@pytest.fixture(autouse=True)
def fresh_era_cache() -> Iterator[None]:
    """Each test finds out its servers' protocol eras itself (ephemeral ports and scripts get reused)."""
    from mcpsync._session import era as _era

    _era.cache.clear()
    yield
    _era.cache.clear()


@pytest.fixture(autouse=True)
def no_leaks(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fail a test that leaves a thread, a child process or a file descriptor behind."""
    threads_before = set(threading.enumerate())
    children_before = _children()
    fds_before = _fds()
    targets_before = _fd_targets()
    yield
    if request.node.get_closest_marker("allow_leaks"):
        return
    _shared.close_idle()  # a shared connection nobody holds is kept for its idle time on purpose
    leaked = [t for t in threading.enumerate() if t not in threads_before and t.is_alive()]
    for thread in leaked:
        thread.join(5.0)  # threads being torn down get a bounded moment to finish
    leaked = [t.name for t in leaked if t.is_alive()]
    children = _children() - children_before
    fds = _fds() - fds_before
    # A server thread in this process may close its end of a connection a moment after the
    # client got its whole answer (asyncio closes the socket after connection_lost). Give such
    # closes a bounded moment; a real leak stays. (The moment costs only a test that fails: a
    # loaded machine may take seconds to run that thread, so it is not kept short.)
    settle = threading.Event()
    deadline = time.monotonic() + 10.0
    while fds > 0 and time.monotonic() < deadline:
        settle.wait(0.01)
        fds = _fds() - fds_before
    problems = []
    if leaked:
        problems.append(f"threads left running: {leaked}")
    if children:
        problems.append(f"child processes left running: {sorted(children)}")
    if fds > 0:
        opened = sorted(f"{fd} -> {target}" for fd, target in _fd_targets().items()
                        if targets_before.get(fd) != target)
        problems.append(f"{fds} file descriptors left open ({', '.join(opened[:20])})")
    if problems:
        pytest.fail("Leak check failed: " + "; ".join(problems))


class LogWatch(logging.Handler):
    """Collects log records and lets a test wait for one (event-based, no sleeping)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: List[logging.LogRecord] = []
        self._cond = threading.Condition()

    def emit(self, record: logging.LogRecord) -> None:
        with self._cond:
            self.records.append(record)
            self._cond.notify_all()

    def messages(self, logger_prefix: str = "") -> List[str]:
        with self._cond:
            return [r.getMessage() for r in self.records if r.name.startswith(logger_prefix)]

    def wait_for(self, predicate: Callable[[str], bool], timeout: float = 10.0) -> str:
        with self._cond:
            found: List[str] = []

            def check() -> bool:
                for r in self.records:
                    if predicate(r.getMessage()):
                        found.append(r.getMessage())
                        return True
                return False

            if not self._cond.wait_for(check, timeout):
                raise AssertionError(f"no log record matched within {timeout}s; got {self.messages()[-20:]}")
            return found[0]


@pytest.fixture
def logs() -> Iterator[LogWatch]:
    """Every mcpsync log record (DEBUG and up) during the test."""
    watch = LogWatch()
    logger = logging.getLogger("mcpsync")
    old_level = logger.level
    logger.setLevel(logging.DEBUG)
    logger.addHandler(watch)
    yield watch
    logger.removeHandler(watch)
    logger.setLevel(old_level)


@pytest.fixture
def era_http() -> Iterator[Callable[[str], Any]]:
    """``make(mode)`` starts a scripted both-eras HTTP server (``tests/servers/http_era.py``); all stop after the test."""
    if str(SERVERS) not in sys.path:
        sys.path.insert(0, str(SERVERS))
    from http_era import EraHTTPServer

    servers: List[Any] = []

    def make(mode: str) -> Any:
        server = EraHTTPServer(mode).start()
        servers.append(server)
        return server

    yield make
    for server in servers:
        server.stop()


def call_in_thread(fn: Callable[[], Any]) -> "Tuple[threading.Thread, Dict[str, Any]]":
    """Start ``fn()`` on a thread of its own; the dict gets its ``result`` or its ``error``."""
    outcome: Dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["result"] = fn()
        except BaseException as exc:
            outcome["error"] = exc

    thread = threading.Thread(target=run, name="test-call")
    thread.start()
    return thread, outcome
