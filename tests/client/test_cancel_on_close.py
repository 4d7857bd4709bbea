"""A call that timed out tells the server, even when its client is closed at once after it.

The cancellation is written before the timeout is raised; the close that follows must not
drop it. It used to be dropped by a FakeServer connection closed before its dispatcher had
read it (the close marked the connection closed and the dispatcher skipped what was still
queued): under load, some of these cancellations never arrived.
"""

from __future__ import annotations

import threading
from typing import List

import mcpsync
from mcpsync.testing import Context, FakeServer

ROUNDS = 60
THREADS = 6


def one_round(failures: List[str]) -> None:
    server = FakeServer("slow")

    @server.tool()
    def forecast(ctx: Context, city: str) -> str:
        ctx.sleep(30)
        return "too late"

    try:
        with server.client(timeout=5) as client:
            try:
                client.call_tool("forecast", {"city": "Oslo"}, timeout=0.02)
            except mcpsync.RequestTimeout:
                pass
        try:
            server.wait_for_notification("notifications/cancelled", timeout=5)
        except AssertionError:
            failures.append("no notifications/cancelled")
    finally:
        server.close()


def test_a_call_timing_out_then_an_immediate_close_always_tells_the_server() -> None:
    failures: List[str] = []

    def worker() -> None:
        for _ in range(ROUNDS // THREADS):
            one_round(failures)

    threads = [threading.Thread(target=worker, name=f"test-cancel-{i}") for i in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not any(thread.is_alive() for thread in threads)
    assert failures == [], f"{len(failures)} of {ROUNDS} cancellations were lost"
