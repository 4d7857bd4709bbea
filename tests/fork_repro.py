"""Issue 12's repro, run as its own program: a client, then os.fork(); prints a JSON report.

``python tests/fork_repro.py ROUNDS AFTER_FORK``: each round forks a child that calls a tool
while the parent calls too, and ends the child in turn by ``sys.exit(0)``, ``os._exit(0)`` and
SIGTERM. With ``AFTER_FORK=raise`` the child reports the ForkedError its first call raises, then
connects explicitly and calls again. Run by tests/test_fork.py in a fresh interpreter, so the child's
``sys.exit`` runs the real exit hooks.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any, Dict, List

import mcpsync

DEMO = [sys.executable, str(Path(__file__).parent.parent / "examples" / "demo_server.py")]
ENDINGS = ("sys.exit", "os._exit", "signal")
CALLS = 5


def child(client: mcpsync.Client, round_no: int, ending: str, out: int) -> None:
    report: Dict[str, Any] = {}
    try:
        try:
            report["texts"] = [client.call_tool("echo", {"text": f"c{round_no}-{i}"}).text for i in range(CALLS)]
        except mcpsync.ForkedError as exc:
            report["forked_error"] = str(exc)
            client.connect()
            report["texts"] = [client.call_tool("echo", {"text": f"c{round_no}-{i}"}).text for i in range(CALLS)]
        report["server"] = client.transport.pid
    except BaseException as exc:  # reported, not raised: the parent checks
        report["error"] = repr(exc)
    os.write(out, json.dumps(report).encode())
    os.close(out)
    if ending == "sys.exit":
        sys.exit(0)
    if ending == "os._exit":
        os._exit(0)
    os.kill(os.getpid(), signal.SIGTERM)


def main(rounds: int, after_fork: str) -> None:
    options = {} if after_fork == "reconnect" else {"after_fork": after_fork}  # the default: runs on old code too
    client = mcpsync.connect(DEMO, timeout=float(os.environ.get("REPRO_TIMEOUT", "10")), **options)
    server = client.transport.pid
    results: List[Dict[str, Any]] = []
    for round_no in range(rounds):
        ending = ENDINGS[round_no % len(ENDINGS)]
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read_end)
            child(client, round_no, ending, write_end)
        os.close(write_end)
        started = time.monotonic()
        parent = [client.call_tool("echo", {"text": f"p{round_no}-{i}"}).text for i in range(CALLS)]
        with os.fdopen(read_end, "rb") as stream:
            report = json.loads(stream.read() or b"{}")
        _, status = os.waitpid(pid, 0)
        report.update(ending=ending, parent=parent, status=status, seconds=time.monotonic() - started)
        results.append(report)
    final = client.call_tool("echo", {"text": "final"}).text
    print(json.dumps({"server": server, "server_after": client.transport.pid, "alive": client.transport.returncode
                      is None, "final": final, "rounds": results}))
    client.close()


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2])
