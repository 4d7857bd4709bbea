"""Across hosts: a Dask cluster and an MCP server on a virtual network of network namespaces.

Where the tests run as root, tests/engines/netns.py builds five "hosts" (namespaces, each with its
own address on 10.214.0.0/24, veth-linked to a bridge in a namespace of its own): the official
SDK's Streamable HTTP server on ``server``, a Dask scheduler on ``sched``, a worker on each of ``w1``
and ``w2``, and the driver (tests/engines/netns_driver.py) on ``host``, which hands a pickled client
to every task. Every call crosses the virtual network. Once a quarter of the results are in, the
test pulls ``w1``'s link (its bridge port goes down) with calls in flight there; the scheduler then
loses that worker and its tasks go to ``w2``.

Checked: every task's answer is its own token's; every call either returned that or was reported
failed by the job (its future's error): none is silently missing; a worker's copies share one
connection. Everything is torn down at the end, even on failure: processes, then namespaces.
"""

from __future__ import annotations

import json
import select
import signal
import subprocess
from typing import Iterator

import pytest

from .conftest import ROOT, EngineRun, python
from .netns import Hosts, NamespacesUnavailable
from .netns_tasks import ROLE

pytest.importorskip("distributed")
pytestmark = [pytest.mark.engines, pytest.mark.timeout(300)]

ROLES = ["server", "sched", "w1", "w2", "host"]
PORT, SCHEDULER_PORT = 8765, 8786


@pytest.fixture
def hosts(engine_run: EngineRun) -> Iterator[Hosts]:
    made = Hosts()
    try:
        made.build(ROLES)
    except NamespacesUnavailable as exc:
        made.teardown()
        pytest.skip(f"no virtual network here: {exc}")
    try:
        yield made
    finally:
        engine_run.kill_all()  # nothing may be left inside a namespace being deleted
        made.teardown()


def start_in(engine_run: EngineRun, hosts: Hosts, role: str, argv: list, name: str) -> "subprocess.Popen[bytes]":
    engine_run.env[ROLE] = role
    return engine_run.start(hosts.run_in(role, argv), name)


def test_calls_across_hosts_survive_a_worker_losing_its_link(engine_run: EngineRun, hosts: Hosts) -> None:
    address = hosts.addresses
    url = f"http://{address['server']}:{PORT}/mcp"
    scheduler = f"tcp://{address['sched']}:{SCHEDULER_PORT}"
    engine_run.env["DASK_DISTRIBUTED__SCHEDULER__WORKER_TTL"] = "5s"  # a silent worker is dropped in seconds
    engine_run.env["DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT"] = "5s"
    start_in(engine_run, hosts, "server", python("tests/servers/http_sdk_server.py", "--mode", "json-stateful",
                                                 "--host", address["server"], "--port", str(PORT)), "server")
    start_in(engine_run, hosts, "sched", python("-m", "distributed.cli.dask_scheduler", "--host", address["sched"],
                                                "--port", str(SCHEDULER_PORT), "--no-dashboard"), "scheduler")
    for worker in ("w1", "w2"):
        start_in(engine_run, hosts, worker, python("-m", "distributed.cli.dask_worker", scheduler, "--host",
                                                   address[worker], "--nthreads", "2", "--no-nanny",
                                                   "--no-dashboard"), worker)
    report = engine_run.folder / "report.json"
    engine_run.env[ROLE] = "host"
    with open(engine_run.folder / "driver.log", "wb") as log:
        driver = subprocess.Popen(hosts.run_in("host", python("-m", "tests.engines.netns_driver", scheduler, url,
                                                              str(report))),
                                  cwd=ROOT, env=engine_run.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=log, start_new_session=True)
    engine_run.procs.append(driver)
    assert driver.stdout is not None and driver.stdin is not None
    ready, _, _ = select.select([driver.stdout], [], [], 150)
    line = driver.stdout.readline() if ready else b""
    if line.strip() != b"half":
        driver.stdin.close()
        driver.stdout.close()
        raise AssertionError(engine_run.log("driver") + engine_run.log("w1") + engine_run.log("server"))
    hosts.down("w1")  # mid-run: w1 has calls in flight and tasks queued
    driver.stdin.write(b"go\n")
    driver.stdin.close()
    code = driver.wait(200)
    driver.stdout.close()
    assert code == 0, engine_run.log("driver")

    outcomes = json.loads(report.read_text())["outcomes"]
    assert outcomes and all(o["status"] in ("finished", "error") for o in outcomes), \
        [o for o in outcomes if o["status"] not in ("finished", "error")]  # none silently missing
    finished = [o for o in outcomes if o["status"] == "finished"]
    assert all(o["result"]["answer"] == o["token"] == o["result"]["token"] for o in finished)
    assert {o["result"]["host"] for o in finished} == {"w1", "w2"}  # both worked, across the network
    per_worker: dict = {}
    for o in finished:
        per_worker.setdefault(o["result"]["worker"], set()).add(o["result"]["connection"])
    assert all(len(c) == 1 for c in per_worker.values()), per_worker  # the copies of a worker share one connection
    for proc in engine_run.procs:
        engine_run.stop(proc, signal.SIGKILL if proc.args[3] == hosts.ns("w1") else signal.SIGTERM, 30)
    engine_run.nothing_left(30)
