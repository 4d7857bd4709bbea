"""gunicorn server hooks for tests/engines/test_gunicorn.py: the master checks on its own client.

With ``--preload`` the master holds the client the app module connected at import. After each
worker exits it notes whether its server is still running (a worker's exit must never end it),
and just before it exits it calls a tool through it, to show it still answers.
"""

from __future__ import annotations

import sys
from typing import Any

from tests.engines.common import note

APP = "tests.engines.wsgi_app"


def child_exit(server: Any, worker: Any) -> None:
    module = sys.modules.get(APP)
    if module is not None:
        note("child_exit", worker=worker.pid, server=module.client.transport.pid,
             running=module.client.transport.returncode is None)


def on_exit(server: Any) -> None:
    module = sys.modules.get(APP)
    if module is not None:
        answer = module.client.call_tool("echo", {"text": "master-final"}).text
        note("master_final", server=module.client.transport.pid, answer=answer)
