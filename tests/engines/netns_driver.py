"""Drive a Dask cluster spread over network namespaces (tests/engines/test_across_hosts.py).

Runs in its own namespace ("host"). Arguments: the scheduler's address, the MCP server's URL, the
report file. Submits one task per token, each calling the MCP server on another host through a
pickled client; once ``HALF`` results are in (fetched at once) it prints ``half`` and waits for a line on stdin (the
test has pulled one worker's link meanwhile), then waits for every future, bounded, and reports
each one's outcome: its result, its error, or still pending (lost).
"""

from __future__ import annotations

import json
import socket
import sys
import threading
import time
import uuid
from typing import Any, Dict, List
from urllib.parse import urlsplit

import mcpsync
from tests.engines import netns_tasks

TASKS, HALF = 40, 10


def reachable(url: str, timeout: float) -> None:
    """Wait (bounded) for the server, in another namespace, to accept connections: no event to wait on."""
    parts = urlsplit(url)
    deadline, pause = time.monotonic() + timeout, threading.Event()
    while True:
        try:
            socket.create_connection((parts.hostname, parts.port), timeout=1).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            pause.wait(0.05)


def main() -> None:
    from distributed import Client, as_completed, wait

    scheduler, url, path = sys.argv[1:4]
    reachable(url, 30)
    client = mcpsync.connect({"type": "http", "url": url}, timeout=10)
    assert client.call_tool("echo", {"text": "driver"}).text == "driver"
    tokens = [f"{uuid.uuid4().hex}-{i}" for i in range(TASKS)]
    outcomes: List[Dict[str, Any]] = []
    with Client(scheduler, timeout=30) as dask:
        dask.wait_for_workers(2, timeout=60)
        futures = [dask.submit(netns_tasks.call, client, token, pure=False) for token in tokens]
        early: Dict[str, Any] = {}  # fetched at once: a lost worker's results are recomputed elsewhere
        for future in as_completed(futures):
            if future.status == "finished":
                result = future.result()
                early[result["token"]] = result
            if len(early) == HALF:
                break
        print("half", flush=True)
        sys.stdin.readline()  # the test pulled a worker's link
        try:
            wait(futures, timeout=150)
        except TimeoutError:  # reported below: each future still pending is a lost call
            pass
        for token, future in zip(tokens, futures):
            if token in early:
                outcomes.append({"token": token, "status": "finished", "result": early[token]})
            elif future.status == "finished":
                outcomes.append({"token": token, "status": "finished", "result": future.result()})
            elif future.status == "error":
                exc = future.exception()
                outcomes.append({"token": token, "status": "error", "error": type(exc).__name__})
            else:
                outcomes.append({"token": token, "status": future.status})
        for future in futures:
            future.cancel()
    client.close()
    with open(path, "w") as out:
        json.dump({"outcomes": outcomes}, out)


if __name__ == "__main__":
    main()
