"""Drive a Dask LocalCluster with worker processes: mcpsync clients handed to tasks by pickling.

Run by tests/engines/test_dask.py in a process of its own (Dask's threads and processes stay
out of the test's). Writes a JSON report to the file named by its argument: what every task answered, and what the driver saw
of its own client and server.

* a client (and a manager) scattered to every worker: each worker unpickles one copy, which
  connects on its first call and serves all that worker's tasks;
* a client passed as a plain task argument: each task unpickles its own copy; the copies of one
  worker share one connection (one server per worker, mcpsync._shared);
* a client built with ``share=False`` passed as an argument: each task's copy connects, answers,
  and ends its server when the copy is collected.
"""

from __future__ import annotations

import json
import os
import sys
import uuid

import mcpsync
from tests.engines import dask_tasks
from tests.engines.common import demo_config, manager_config

SCATTERED, MANAGED, BY_ARGUMENT, PRIVATE = 24, 8, 8, 4


def main() -> None:
    from distributed import Client, LocalCluster

    mine = mcpsync.connect(demo_config(), timeout=30)
    private = mcpsync.Client(mcpsync.StdioTransport(demo_config()["command"], demo_config()["args"],
                                                    env=demo_config()["env"], timeout=30), share=False)
    manager = mcpsync.Manager(manager_config(), cache=False, timeout=30)
    manager.connect_all(30)
    server = mine.transport.pid
    tokens = [f"{uuid.uuid4().hex}-{i}" for i in range(SCATTERED)]
    managed_tokens = [f"{uuid.uuid4().hex}-m{i}" for i in range(MANAGED)]
    argument_tokens = [f"{uuid.uuid4().hex}-a{i}" for i in range(BY_ARGUMENT)]
    private_tokens = [f"{uuid.uuid4().hex}-p{i}" for i in range(PRIVATE)]
    with LocalCluster(n_workers=2, threads_per_worker=2, processes=True, dashboard_address=None,
                      worker_dashboard_address=None) as cluster, Client(cluster) as dask:
        shared = dask.scatter(mine, broadcast=True)
        shared_manager = dask.scatter(manager, broadcast=True)
        futures = [dask.submit(dask_tasks.echo, shared, t, pure=False) for t in tokens]
        managed = [dask.submit(dask_tasks.manager_echo, shared_manager, t, pure=False) for t in managed_tokens]
        by_argument = [dask.submit(dask_tasks.echo, mine, t, pure=False) for t in argument_tokens]
        privately = [dask.submit(dask_tasks.echo, private, t, pure=False) for t in private_tokens]
        meanwhile = [mine.call_tool("echo", {"text": f"driver-{i}"}).text for i in range(20)]
        results = dask.gather(futures + managed + by_argument + privately)
        workers = sorted(dask.run(os.getpid).values())
    final = mine.call_tool("echo", {"text": "driver-final"}).text
    report = {"results": results, "tokens": tokens + managed_tokens + argument_tokens + private_tokens,
              "meanwhile": meanwhile,
              "final": final, "server": server, "server_after": mine.transport.pid,
              "running": mine.transport.returncode is None, "workers": workers,
              "scattered": SCATTERED, "managed": MANAGED,
              "by_argument": BY_ARGUMENT, "manager_server": manager.client("demo").transport.pid}
    manager.close()
    mine.close()
    with open(sys.argv[1], "w") as out:
        json.dump(report, out)


if __name__ == "__main__":
    main()
