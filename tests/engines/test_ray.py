"""A local Ray cluster (worker processes) given mcpsync clients and a manager by pickling: as plain task
arguments and as shared objects (``ray.put``), over stdio and over one shared Streamable HTTP server
(tests/engines/ray_driver.py, run in a process of its own).

Every task's answer must be its own token's echo; the copies a worker unpickles share one connection
(one stdio server, one HTTP session per worker process), never the driver's; the driver's own
connections are intact meanwhile and afterwards; when the driver has ended, none of the cluster's
processes or servers are left.
"""

from __future__ import annotations

import json
from typing import Dict, Iterator, Set

import pytest

from ..reliability.conftest import HostileHTTP
from .conftest import EngineRun, python

pytest.importorskip("ray")
pytestmark = [pytest.mark.engines, pytest.mark.timeout(240)]


@pytest.fixture
def shared_http() -> Iterator[HostileHTTP]:
    server = HostileHTTP("normal")
    yield server
    server.stop()


def test_ray_workers_call_tools_through_pickled_clients(engine_run: EngineRun, shared_http: HostileHTTP) -> None:
    engine_run.env["MCPSYNC_ENGINE_URL"] = shared_http.url()
    path = engine_run.folder / "report.json"
    driver = engine_run.start(python("-m", "tests.engines.ray_driver", str(path)), "ray")
    assert driver.wait(200) == 0, engine_run.log("ray")
    report = json.loads(path.read_text())

    before, after = report["before"], report["after"]
    assert report["meanwhile"] == [f"driver-{i}" for i in range(10)] and report["final"] == "driver-final"
    assert after == before  # the driver's server, session and manager's server intact
    for kind, results in report["kinds"].items():
        assert [(r["token"], r["answer"]) for r in results] == [(t, t) for t in report["tokens"][kind]], kind
        assert all(r["worker"] not in (before["server"], before["manager_server"]) for r in results)
        over_http = kind.startswith("http")
        key = "session" if over_http else "server"
        connections = {r[key] for r in results}
        assert None not in connections, kind
        assert not connections & {before["server"], before["session"], before["manager_server"]}, kind
        per_worker: Dict[int, Set[object]] = {}
        for r in results:
            per_worker.setdefault(r["worker"], set()).add(r[key])
        assert all(len(c) == 1 for c in per_worker.values()), (kind, per_worker)  # one per worker process
    workers = {r["worker"] for results in report["kinds"].values() for r in results}
    assert len(workers) >= 2, workers  # two tasks at a time on two CPUs: two worker processes
    engine_run.nothing_left(60)
