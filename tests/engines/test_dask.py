"""A Dask distributed LocalCluster with worker processes, mcpsync clients and a manager handed
to its tasks by pickling (tests/engines/dask_driver.py, run in a process of its own).

Every task's answer must be its own token's echo, from a server the worker started (never the
driver's); the driver's own server must answer it meanwhile and afterwards; when the driver has
ended, none of the cluster's processes or servers are left. Copies a worker unpickles share one
server; a client built with ``share=False`` gets one per task.
"""

from __future__ import annotations

import json

import pytest

from .conftest import EngineRun, python

pytest.importorskip("distributed")
pytestmark = [pytest.mark.engines, pytest.mark.timeout(150)]


def test_dask_workers_call_tools_through_pickled_clients(engine_run: EngineRun) -> None:
    path = engine_run.folder / "report.json"
    driver = engine_run.start(python("-m", "tests.engines.dask_driver", str(path)), "dask")
    assert driver.wait(120) == 0, engine_run.log("dask")
    report = json.loads(path.read_text())

    results, tokens = report["results"], report["tokens"]
    assert [(r["token"], r["answer"]) for r in results] == [(t, t) for t in tokens]  # nothing lost or misrouted
    assert report["meanwhile"] == [f"driver-{i}" for i in range(20)] and report["final"] == "driver-final"
    assert report["server_after"] == report["server"] and report["running"]  # the driver's server intact
    assert {r["worker"] for r in results} <= set(report["workers"])
    servers = {r["server"] for r in results}
    assert not servers & {report["server"], report["manager_server"]}  # workers started servers of their own
    scattered = results[:report["scattered"]]
    managed = results[report["scattered"]:report["scattered"] + report["managed"]]
    start = report["scattered"] + report["managed"]
    by_argument = results[start:start + report["by_argument"]]
    private = results[start + report["by_argument"]:]
    # A scattered client is one copy per worker, and the copies a worker unpickles for its tasks share
    # one connection: one server per worker serves all its tasks.
    for group in (scattered, managed, by_argument):
        per_worker: dict = {}
        for r in group:
            per_worker.setdefault(r["worker"], set()).add(r["server"])
        assert all(len(s) == 1 for s in per_worker.values()), per_worker
    # A client built with share=False is a copy per task, each with its own server.
    assert len({r["server"] for r in private}) == len(private)
    engine_run.nothing_left()
