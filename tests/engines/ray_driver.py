"""Drive a local Ray cluster: mcpsync clients and a manager handed to its worker processes.

Run by tests/engines/test_ray.py in a process of its own (Ray's processes and threads stay out of
the test's). Each object travels two ways: as a plain task argument (pickled per task) and as a
shared object (``ray.put`` once, the reference passed to each task). The targets are the demo
server over stdio (a server per worker) and one Streamable HTTP server shared by all (its URL in
``MCPSYNC_ENGINE_URL``). Writes a JSON report to the file named by its first argument.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import uuid
from typing import Any, Dict, List

import mcpsync
from tests.engines import ray_tasks
from tests.engines.common import demo_config, manager_config

PER_KIND = 4


def main() -> None:
    import ray

    url = os.environ["MCPSYNC_ENGINE_URL"]
    mine = mcpsync.connect(demo_config(), timeout=30)
    web = mcpsync.connect({"type": "http", "url": url}, timeout=30)
    manager = mcpsync.Manager(manager_config(), cache=False, timeout=30)
    manager.connect_all(30)
    before = {"server": mine.transport.pid, "session": web.transport.session_id,  # type: ignore[attr-defined]
              "manager_server": manager.client("demo").transport.pid}
    temp = tempfile.mkdtemp(prefix="ray", dir="/tmp")  # short: Ray's socket paths must fit in 107 bytes
    kinds: Dict[str, List[Any]] = {}
    try:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, object_store_memory=80 * 2**20,
                 _temp_dir=temp, configure_logging=False)
        echo = ray.remote(num_cpus=1)(ray_tasks.echo)
        manager_echo = ray.remote(num_cpus=1)(ray_tasks.manager_echo)
        plans = {
            "stdio-argument": (echo, lambda: mine),
            "stdio-shared": (echo, lambda: shared_mine),
            "http-argument": (echo, lambda: web),
            "http-shared": (echo, lambda: shared_web),
            "manager-argument": (manager_echo, lambda: manager),
            "manager-shared": (manager_echo, lambda: shared_manager),
        }
        shared_mine, shared_web, shared_manager = ray.put(mine), ray.put(web), ray.put(manager)
        tokens = {kind: [f"{uuid.uuid4().hex}-{kind}-{i}" for i in range(PER_KIND)] for kind in plans}
        refs = {kind: [task.remote(target(), token) for token in tokens[kind]]
                for kind, (task, target) in plans.items()}
        meanwhile = [mine.call_tool("echo", {"text": f"driver-{i}"}).text for i in range(10)]
        kinds = {kind: ray.get(kind_refs, timeout=90) for kind, kind_refs in refs.items()}
        report = {"kinds": kinds, "tokens": tokens, "meanwhile": meanwhile, "before": before,
                  "after": {"server": mine.transport.pid, "session": web.transport.session_id,  # type: ignore[attr-defined]
                            "manager_server": manager.client("demo").transport.pid},
                  "final": web.call_tool("echo", {"text": "driver-final"}).text}
    finally:
        ray.shutdown()
        shutil.rmtree(temp, ignore_errors=True)
        manager.close()
        web.close()
        mine.close()
    with open(sys.argv[1], "w") as out:
        json.dump(report, out)


if __name__ == "__main__":
    main()
