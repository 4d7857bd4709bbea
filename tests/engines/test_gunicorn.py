"""gunicorn (sync and gthread workers, with and without --preload, workers recycled by
--max-requests) serving tests/engines/wsgi_app.py, driven by concurrent HTTP requests.

Every response must carry its own request's answer (the echo of a token no other request
sent); with --preload the master's server must outlive every recycled worker and still answer
the master at the end; when gunicorn has stopped, none of its processes and none of the
servers its workers started are left.
"""

from __future__ import annotations

import concurrent.futures
import http.client
import json
import socket
import uuid
from pathlib import Path
from typing import Any, Dict, List

import pytest

from ..conftest import until
from .conftest import EngineRun, alive, python

pytest.importorskip("gunicorn")
pytestmark = [pytest.mark.engines, pytest.mark.timeout(120)]

REQUESTS = 36
CONCURRENCY = 6
MAX_REQUESTS = 6


class UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path: Path) -> None:
        super().__init__("localhost", timeout=60)
        self.unix_path = str(path)

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        sock.connect(self.unix_path)
        self.sock = sock


def get(path: Path, token: str) -> Dict[str, Any]:
    connection = UnixHTTPConnection(path)
    try:
        connection.request("GET", f"/?token={token}", headers={"Connection": "close"})
        response = connection.getresponse()
        body = json.loads(response.read())
        body["status"] = response.status
        return body
    finally:
        connection.close()


def listening(path: Path) -> bool:
    if not path.exists():
        return False
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        try:
            sock.connect(str(path))
        except OSError:
            return False
    return True


@pytest.mark.parametrize("preload", [True, False], ids=["preload", "no-preload"])
@pytest.mark.parametrize("worker_class", ["sync", "gthread"])
def test_gunicorn_workers_answer_every_request_with_its_own_answer(
        engine_run: EngineRun, worker_class: str, preload: bool) -> None:
    sock = engine_run.folder / "gunicorn.sock"
    argv = python("-m", "gunicorn", "-c", "tests/engines/gunicorn_conf.py", "-b", f"unix:{sock}", "-w", "2",
                  # (--threads above 1 would turn sync workers into gthread ones: only for gthread)
                  "-k", worker_class, *(["--threads", "3"] if worker_class == "gthread" else []),
                  "--max-requests", str(MAX_REQUESTS),
                  "--max-requests-jitter", "0", "--graceful-timeout", "20", "--timeout", "60",
                  "--log-level", "warning", *(["--preload"] if preload else []), "tests.engines.wsgi_app:app")
    master = engine_run.start(argv, "gunicorn")
    until(lambda: listening(sock) or master.poll() is not None, 60)
    assert master.poll() is None, engine_run.log("gunicorn")
    tokens = [f"{uuid.uuid4().hex}-{i}" for i in range(REQUESTS)]
    with concurrent.futures.ThreadPoolExecutor(CONCURRENCY, thread_name_prefix="test-http") as pool:
        answers: List[Dict[str, Any]] = list(pool.map(lambda t: get(sock, t), tokens, timeout=100))

    # Nothing lost or misrouted: each response is its own request's, by a worker of this run.
    assert [a.get("error") for a in answers] == [None] * REQUESTS, answers
    assert [(a["token"], a["answer"], a["status"]) for a in answers] == [(t, t, 200) for t in tokens]
    assert {a["multithread"] for a in answers} == {worker_class == "gthread"}  # the worker class asked for
    workers = {a["worker"] for a in answers}
    assert len(workers) > 2, workers  # --max-requests recycled the workers
    imported = engine_run.notes("imported")
    if preload:
        # The master connected at import; every worker inherited that client and reconnected:
        # no worker ever used the master's server, which survived every worker's exit.
        assert [n["pid"] for n in imported] == [master.pid], imported
        master_server = imported[0]["server"]
        assert master_server not in {a["server"] for a in answers}
        assert alive(master_server)
        exits = engine_run.notes("child_exit")
        assert exits and all(n["server"] == master_server and n["running"] for n in exits), exits
    else:
        assert workers <= {n["pid"] for n in imported}  # each worker imported the app and connected itself
    # One server per worker: none shared by two workers.
    by_server: Dict[int, set] = {}
    for a in answers:
        by_server.setdefault(a["server"], set()).add(a["worker"])
    assert all(len(w) == 1 for w in by_server.values()), by_server

    assert engine_run.stop(master) == 0, engine_run.log("gunicorn")
    if preload:
        assert engine_run.notes("master_final") == [
            {"kind": "master_final", "pid": master.pid, "server": master_server, "answer": "master-final"}]
    engine_run.nothing_left()
