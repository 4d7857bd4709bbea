"""multiprocessing pools (fork, forkserver, spawn) and ProcessPoolExecutor over a module whose
client and manager are made at import time (tests/engines/pool_tasks.py), over stdio (a server
per worker) and over Streamable HTTP (one server shared by every worker).

tests/test_fork.py covers pools whose client is handed over by the initializer, in the pytest
process; these run in a driver process of their own (tests/engines/pool_driver.py), as an
application would, and check in addition that after the driver has ended no worker and no
server of the run is left, and that over HTTP each worker has sessions of its own while the
driver keeps its own.
"""

from __future__ import annotations

import json
from typing import Any, Iterator

import pytest

from ..reliability.conftest import HostileHTTP
from .conftest import EngineRun, python

pytestmark = [pytest.mark.engines, pytest.mark.timeout(120)]


@pytest.fixture
def shared_http() -> Iterator[HostileHTTP]:
    server = HostileHTTP("normal")
    yield server
    server.stop()


@pytest.mark.parametrize("method", ["fork", "forkserver", "spawn"])
@pytest.mark.parametrize("over", ["stdio", "http"])
def test_pools_with_an_import_time_client(engine_run: EngineRun, method: str, over: str, request: Any) -> None:
    if over == "http":
        engine_run.env["MCPSYNC_ENGINE_URL"] = request.getfixturevalue("shared_http").url()
    path = engine_run.folder / "report.json"
    driver = engine_run.start(python("-m", "tests.engines.pool_driver", method, str(path)), "pool")
    assert driver.wait(110) == 0, engine_run.log("pool")
    report = json.loads(path.read_text())

    results = report["results"]
    assert [(r["token"], r["answer"]) for r in results] == [(t, t) for t in report["tokens"]]
    assert report["meanwhile"] == [f"driver-{i}" for i in range(20)] and report["final"] == "driver-final"
    before, after = report["before"], report["after"]
    assert after["running"] and after["server"] == before["server"]  # the driver's connection is intact
    assert after["session"] == before["session"] and after["manager_session"] == before["manager_session"]
    workers = {r["worker"] for r in results}
    assert len(workers) > 2  # recycled
    if over == "stdio":
        assert before["server"] not in {r["server"] for r in results}  # a server per worker, never the driver's
    else:
        sessions = {r["session"] for r in results}
        assert None not in sessions and not sessions & {before["session"], before["manager_session"]}
        per_session: dict = {}
        for r in results:
            per_session.setdefault(r["session"], set()).add(r["worker"])
        assert all(len(w) == 1 for w in per_session.values()), per_session  # no session shared by two workers
    engine_run.nothing_left()
