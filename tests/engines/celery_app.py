"""A Celery app whose tasks call tools, for tests/engines/test_celery.py.

The broker is kombu's filesystem transport and the results go to files (no broker service):
both under the folder named by ``MCPSYNC_ENGINE_BROKER``. The client and the manager are made
at import time, so the worker's main process connects them and the prefork pool's children
inherit them across fork (recycled by ``worker_max_tasks_per_child``). When the worker shuts
down, its main process calls a tool through its own client, to show it still answers.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Dict

from celery import Celery
from celery.signals import worker_shutdown

import mcpsync
from tests.engines.common import demo_config, echo_through, manager_config, note


def configure(app: Celery, folder: Path) -> None:
    for name in ("queue", "processed", "results", "control"):
        (folder / name).mkdir(parents=True, exist_ok=True)
    app.conf.update(
        broker_url="filesystem://",
        broker_transport_options={"data_folder_in": str(folder / "queue"), "data_folder_out": str(folder / "queue"),
                                  "processed_folder": str(folder / "processed"),
                                  "control_folder": str(folder / "control"), "polling_interval": 0.05},
        result_backend=f"file://{folder / 'results'}",
        broker_connection_retry_on_startup=True,
        worker_max_tasks_per_child=3,
        worker_prefetch_multiplier=1,
        task_acks_late=True,
        worker_hijack_root_logger=False,
    )


app = Celery("mcpsync_engines")
if "MCPSYNC_ENGINE_BROKER" in os.environ:
    configure(app, Path(os.environ["MCPSYNC_ENGINE_BROKER"]))

client: Any = None
manager: Any = None
if os.environ.get("MCPSYNC_ENGINE_NOTES"):  # the worker (the test's sender imports only configure)
    client = mcpsync.connect(demo_config(), timeout=30)
    manager = mcpsync.Manager(manager_config(), cache=False, timeout=30)
    manager.connect_all(30)
    note("imported", server=client.transport.pid, manager_server=manager.client("demo").transport.pid)


@app.task(name="engines.echo")
def echo(token: str) -> Dict[str, Any]:
    return echo_through(client, token)


@app.task(name="engines.manager_echo")
def manager_echo(token: str) -> Dict[str, Any]:
    answer = manager.call_tool("mcp_demo_echo", {"text": token}).text
    return {"token": token, "answer": answer, "worker": os.getpid(),
            "server": manager.client("demo").transport.pid}


@worker_shutdown.connect
def _final(**_: Any) -> None:
    if client is not None:
        note("main_final", server=client.transport.pid, answer=client.call_tool("echo", {"text": "main-final"}).text,
             manager_server=manager.client("demo").transport.pid,
             manager_answer=manager.call_tool("mcp_demo_echo", {"text": "main-final"}).text)
