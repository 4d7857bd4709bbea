"""A Celery worker with the prefork pool (kombu's filesystem transport: no broker service),
its children recycled by worker_max_tasks_per_child, running tasks that call tools through a
client and a manager its main process connected at import (tests/engines/celery_app.py).

Every task's result must be its own token's echo, from a server of the child's own; the main
process's servers must survive every child and answer it at shutdown; after the worker stops,
none of its processes or servers are left.
"""

from __future__ import annotations

import signal
import uuid
from typing import Any, Dict, List

import pytest

from .conftest import EngineRun, alive, python

pytest.importorskip("celery")
pytestmark = [pytest.mark.engines, pytest.mark.timeout(150)]

TASKS = 18
MANAGER_TASKS = 8


def test_celery_prefork_children_call_tools_and_recycle(engine_run: EngineRun) -> None:
    from celery import Celery

    from .celery_app import configure

    broker = engine_run.folder / "broker"
    engine_run.env["MCPSYNC_ENGINE_BROKER"] = str(broker)
    sender = Celery("mcpsync_engines_sender")
    configure(sender, broker)
    worker = engine_run.start(python("-m", "celery", "-A", "tests.engines.celery_app", "worker", "--pool", "prefork",
                                     "--concurrency", "2", "--without-heartbeat", "--without-gossip",
                                     "--without-mingle", "--loglevel", "WARNING"), "celery")
    try:
        tokens = [f"{uuid.uuid4().hex}-{i}" for i in range(TASKS)]
        managed_tokens = [f"{uuid.uuid4().hex}-m{i}" for i in range(MANAGER_TASKS)]
        pending = [sender.send_task("engines.echo", args=[t]) for t in tokens]
        managed_pending = [sender.send_task("engines.manager_echo", args=[t]) for t in managed_tokens]
        results: List[Dict[str, Any]] = [p.get(timeout=120, interval=0.05) for p in pending]
        managed: List[Dict[str, Any]] = [p.get(timeout=120, interval=0.05) for p in managed_pending]
    finally:
        code = engine_run.stop(worker, signal.SIGTERM, 60)  # warm shutdown
    assert code == 0, engine_run.log("celery")

    assert [(r["token"], r["answer"]) for r in results] == [(t, t) for t in tokens]
    assert [(r["token"], r["answer"]) for r in managed] == [(t, t) for t in managed_tokens]
    [imported] = engine_run.notes("imported")
    assert imported["pid"] == worker.pid  # connected in the main process, inherited by the children
    children = {r["worker"] for r in results + managed}
    assert worker.pid not in children and len(children) >= (TASKS + MANAGER_TASKS) // 3  # recycled every 3 tasks
    servers = {r["server"] for r in results} | {r["server"] for r in managed}
    assert not servers & {imported["server"], imported["manager_server"]}  # each child used servers of its own
    [final] = engine_run.notes("main_final")
    assert final == {"kind": "main_final", "pid": worker.pid, "server": imported["server"], "answer": "main-final",
                     "manager_server": imported["manager_server"], "manager_answer": "main-final"}
    assert not alive(imported["server"])  # the worker closed its own servers on its way out
    engine_run.nothing_left()
