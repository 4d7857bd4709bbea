"""Drive a multiprocessing pool and a ProcessPoolExecutor over tests/engines/pool_tasks.py.

``python -m tests.engines.pool_driver METHOD REPORT``: runs a ``multiprocessing`` pool of the
start method METHOD (workers recycled every 2 tasks) and then a ``ProcessPoolExecutor``, both
calling tools through pool_tasks' module-level client and manager while this process calls
through its own; writes a JSON report to the file REPORT.
"""

from __future__ import annotations

import concurrent.futures
import json
import multiprocessing
import sys
import uuid

from tests.engines import pool_tasks

TASKS, MANAGED, EXECUTED = 12, 6, 6


def main(method: str, path: str) -> None:
    context = multiprocessing.get_context(method)
    client = pool_tasks.client
    before = {"server": getattr(client.transport, "pid", None), "session": pool_tasks.session(client),
              "manager_session": pool_tasks.session(pool_tasks.manager.client("demo"))}
    tokens = [f"{uuid.uuid4().hex}-{i}" for i in range(TASKS)]
    managed_tokens = [f"{uuid.uuid4().hex}-m{i}" for i in range(MANAGED)]
    executed_tokens = [f"{uuid.uuid4().hex}-e{i}" for i in range(EXECUTED)]
    with context.Pool(2, maxtasksperchild=2) as pool:
        pending = pool.map_async(pool_tasks.echo, tokens, chunksize=1)
        managed = pool.map_async(pool_tasks.manager_echo, managed_tokens, chunksize=1)
        meanwhile = [client.call_tool("echo", {"text": f"driver-{i}"}).text for i in range(20)]
        results = pending.get(100) + managed.get(100)
        pool.close()
        pool.join()
    with concurrent.futures.ProcessPoolExecutor(2, mp_context=context) as executor:
        results += list(executor.map(pool_tasks.echo, executed_tokens, timeout=100))
    final = client.call_tool("echo", {"text": "driver-final"}).text
    after = {"server": getattr(client.transport, "pid", None), "session": pool_tasks.session(client),
             "manager_session": pool_tasks.session(pool_tasks.manager.client("demo")),
             "running": getattr(client.transport, "returncode", None) is None}
    report = {"results": results, "tokens": tokens + managed_tokens + executed_tokens, "meanwhile": meanwhile,
              "final": final, "before": before, "after": after}
    pool_tasks.manager.close()
    client.close()
    with open(path, "w") as out:
        json.dump(report, out)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
