"""Free-threaded Python: the GIL stays off, and 64 threads share one client on every transport.

On a free-threaded interpreter (``python3.13t``) run with ``PYTHON_GIL=0`` (``.ci/versions`` does
this), ``import mcpsync`` and a connect over each transport must not turn the GIL back on (an
extension module without free-threading support would), and 64 threads calling through one
client at once must each get exactly their own answer: 0 lost, 0 misrouted, nothing leaked (the
leak fixture checks threads, children and descriptors after every test).

On a regular interpreter the GIL checks are skipped and the 64-thread runs still run: they are
the same promise with the GIL held.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from typing import Callable, Dict, Iterator, List

import pytest

import mcpsync

from .conftest import server_argv
from .reliability.conftest import HostileHTTP

FREE_THREADED = hasattr(sys, "_is_gil_enabled") and not sys._is_gil_enabled()
THREADS = 64
CALLS_PER_THREAD = 12

needs_gil_off = pytest.mark.skipif(
    not FREE_THREADED, reason="needs a free-threaded interpreter running with the GIL off (PYTHON_GIL=0)")


@pytest.fixture
def target() -> Iterator[Callable[[str], object]]:
    """Yields a factory: transport name -> what ``mcpsync.connect`` takes for the stress server."""
    servers: List[HostileHTTP] = []

    def make(kind: str) -> object:
        if kind == "stdio":
            return server_argv("hostile_stdio.py", "stress")
        server = HostileHTTP("stress")
        servers.append(server)
        if kind == "streamable-http":
            return server.url("/mcp")
        return {"type": "sse", "url": server.url("/sse")}

    yield make
    for server in servers:
        server.stop()


@needs_gil_off
def test_importing_mcpsync_leaves_the_gil_off() -> None:
    code = "import sys, mcpsync, mcpsync.manager, mcpsync.auth, mcpsync.config; print(sys._is_gil_enabled())"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False", "an import turned the GIL back on: " + done.stderr


@needs_gil_off
@pytest.mark.parametrize("kind", ["stdio", "streamable-http", "legacy-sse"])
def test_a_connect_and_a_call_leave_the_gil_off(kind: str, target: Callable[[str], object]) -> None:
    with mcpsync.connect(target(kind), timeout=30) as client:  # type: ignore[arg-type]
        assert client.call_tool("work", {"tag": "t", "delay_ms": 0}).text == "t"
    assert not sys._is_gil_enabled()  # type: ignore[attr-defined]


@pytest.mark.parametrize("kind", ["stdio", "streamable-http", "legacy-sse"])
def test_64_threads_share_one_client_and_each_gets_its_own_answer(kind: str, target: Callable[[str], object]) -> None:
    answers: Dict[str, str] = {}
    errors: List[BaseException] = []
    lock = threading.Lock()
    start = threading.Barrier(THREADS)

    with mcpsync.connect(target(kind), timeout=60) as client:  # type: ignore[arg-type]
        def worker(n: int) -> None:
            try:
                start.wait()
                for i in range(CALLS_PER_THREAD):
                    tag = f"{n}-{i}"
                    text = client.call_tool("work", {"tag": tag, "delay_ms": i % 3}).text
                    with lock:
                        answers[tag] = text
            except BaseException as exc:  # noqa: BLE001 - every failure is counted and shown
                with lock:
                    errors.append(exc)

        threads = [threading.Thread(target=worker, args=(n,), name=f"ft-{n}") for n in range(THREADS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
        assert not any(thread.is_alive() for thread in threads)
        assert client.call_tool("work", {"tag": "after", "delay_ms": 0}).text == "after"  # still usable

    assert errors == []
    lost = THREADS * CALLS_PER_THREAD - len(answers)
    misrouted = [tag for tag, text in answers.items() if text != tag]
    assert (lost, misrouted) == (0, [])
    if FREE_THREADED:
        assert not sys._is_gil_enabled()  # type: ignore[attr-defined]
