"""The faults suite's peers: official-SDK servers that count tool runs, and the TypeScript server-everything.

Every ``-m faults`` test gets an upstream server (started once per session, before the leak
snapshot) and a :class:`~tests.faults.proxy.FaultProxy` in front of it (per test, stopped before
the leak check). The SDK servers count each run of their ``work(tag, seconds)`` tool by tag, so
a test sees how many times the server ran a call; the TypeScript server cannot count, so its
test counts the ``tools/call`` requests the proxy delivered (what the server may have run).
"""

from __future__ import annotations

import collections
import os
import sys
from pathlib import Path
from typing import Any, Callable, Counter, Dict, Iterator, List, Optional, Tuple

import pytest

sys.path.insert(0, str(Path(__file__).parent.parent / "servers"))

from .proxy import FaultProxy  # noqa: E402

#: tag -> how many times the SDK servers started ``work`` for it (all servers share it: tags are unique per test).
RUNS: Counter[str] = collections.Counter()


def build_counting_server() -> Any:
    """The both-eras SDK test server (tests/servers/era_sdk_server.py) with a ``work`` tool that counts its runs."""
    import anyio
    import era_sdk_server

    server = era_sdk_server.build_server("faults")

    @server.tool(description="Count a run of tag, sleep seconds, return '<tag> ran <n>'.")
    async def work(tag: str, seconds: float = 0.0) -> str:
        RUNS[tag] += 1
        runs = RUNS[tag]
        await anyio.sleep(seconds)
        return f"{tag} ran {runs}"

    @server.tool(description="How many times work ran for tag (for a server in another process).")
    async def runs(tag: str) -> str:
        return str(RUNS[tag])

    return server


#: (test, row, fault, outcome, seconds, runs): what each fault test saw; written as a table at the end of the
#: session when MCPSYNC_FAULTS_TABLE names a file (docs/reliability.md's table is made from it)
OUTCOMES: List[Tuple[str, str, str, str, float, int]] = []


def pytest_sessionfinish(session: Any) -> None:
    path = os.environ.get("MCPSYNC_FAULTS_TABLE")
    if not path or not OUTCOMES:
        return
    with open(path, "w") as out:
        for test, row, fault, outcome, seconds, runs in OUTCOMES:
            out.write(f"| {test} | {row} | {fault} | {outcome} | {seconds:.2f} | {runs} |\n")


#: name -> (app kind, path): the Streamable HTTP app with JSON or SSE answers, or the legacy HTTP+SSE app
APPS = {"json": "/mcp", "sse": "/mcp", "http+sse": "/sse"}


@pytest.fixture(scope="session")
def fault_upstreams() -> Iterator[Dict[str, Any]]:
    """The counting SDK server in each app kind, under uvicorn on 127.0.0.1 (started before any leak snapshot)."""
    from ..conftest import peer_python
    from ..http_fixtures import UvicornThread

    peer_python()  # skips where the official SDK cannot be imported
    served: Dict[str, Any] = {}
    for kind in APPS:
        server = build_counting_server()
        app = server.sse_app() if kind == "http+sse" else server.streamable_http_app(json_response=kind == "json")
        served[kind] = UvicornThread(app, name=f"faults-{kind}").start()
    yield served
    for thread in served.values():
        thread.stop()


#: why the TypeScript server is not running, when it is not
TS_MISSING = ["server-everything is not running"]


@pytest.fixture(scope="session", autouse=True)
def ts_upstream() -> Iterator[Optional[str]]:
    """The TypeScript SDK's server-everything over Streamable HTTP (legacy era, SSE answers with event ids).

    Autouse, once per session: its process then starts before any test's leak snapshot. None where it
    cannot run (no node or npm): only its rows are skipped, with the reason in TS_MISSING.
    """
    from ..npm_peers import everything_http

    try:
        server = everything_http("streamableHttp")
        url = server.__enter__()
    except pytest.skip.Exception as skipped:
        TS_MISSING[0] = str(skipped)
        yield None
        return
    try:
        yield url
    finally:
        server.__exit__(None, None, None)


@pytest.fixture
def make_proxy() -> Iterator[Callable[[int], FaultProxy]]:
    """``make_proxy(upstream_port)``: a started proxy; every one is stopped after the test."""
    proxies = []

    def make(port: int) -> FaultProxy:
        proxy = FaultProxy(port).start()
        proxies.append(proxy)
        return proxy

    yield make
    for proxy in proxies:
        proxy.stop()
