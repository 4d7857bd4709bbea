"""Stress: 32 threads share one client, with random server delays, random timeouts and random cancels.

Over stdio and over Streamable HTTP (JSON and SSE answers). Every call must end
with exactly its own result (its own tag) or its own typed error (a
RequestTimeout carrying its own timeout, a RequestCancelled carrying its own
token's reason); none may be lost or misrouted. Every request the client
abandoned after sending it is announced to the server exactly once: the
request ids in the server's ``notifications/cancelled`` are the ids the engine
abandoned, no more, no fewer. The client is still usable afterwards.

With fork: a pool of forked workers, recycled as it goes (so forked off the client while the
parent's threads are mid-call), hammers calls through the inherited client while the parent's
threads run the same checks; every worker's answers are its own, from a server of its own.

The fast tier makes a few thousand calls; ``-m soak`` makes 10,000 per thread.
Run with ``-s`` to see the figures.
"""

from __future__ import annotations

import collections
import json
import logging
import random
import threading
import time
from typing import Any, Dict, List, Optional

import pytest

import mcpsync
from mcpsync import CancelToken, RequestCancelled, RequestTimeout

from .conftest import TIERS, HostileHTTP, hostile_stdio

THREADS = 32
CALLS = {"fast": {"stdio": 60, "http": 20}, "soak": {"stdio": 10_000, "http": 10_000}}
DELAYS_MS = (0, 0, 0, 0, 1, 2, 5, 10, 20, 40)
TIMEOUTS = (None, None, 0.002, 0.01, 0.03, 0.1, 1.0)
CANCEL_SHARE = 0.15


class Load:
    """Drives one shared client from many threads and checks every outcome."""

    def __init__(self, client: mcpsync.Client, seed: int) -> None:
        self.client = client
        self.seed = seed
        self.lock = threading.Lock()
        self.active: Dict[str, CancelToken] = {}
        self.outcomes: "collections.Counter[str]" = collections.Counter()
        self.failures: List[str] = []
        self.stop = threading.Event()
        # Every request the engine abandons after sending it (a timeout or a cancel) goes
        # through its abandon hook, which tells the server: count them on the way. Over stdio
        # a request still queued for the pipe is taken back instead (the server never sees it,
        # so it is not told either): those are not counted.
        self.abandoned: List[Any] = []
        transport = client.transport
        engine = transport._engine
        announce = engine.abandon_hook
        taken_back = threading.local()  # per thread: the abandon hook runs on the abandoning thread
        writer = getattr(transport, "_writer", None)
        if writer is not None:
            take_back = writer.withdraw

            def withdraw(request_id: Any) -> bool:
                taken_back.last = take_back(request_id)
                return taken_back.last

            writer.withdraw = withdraw

        def counting(request_id: Any, reason: Any) -> None:
            taken_back.last = False
            announce(request_id, reason)
            if not taken_back.last:
                self.abandoned.append(request_id)

        engine.abandon_hook = counting

    def run(self, threads: int, calls: int) -> float:
        workers = [threading.Thread(target=self.worker, args=(index, calls), name=f"test-stress-{index}")
                   for index in range(threads)]
        cancellers = [threading.Thread(target=self.canceller, args=(index,), name=f"test-cancel-{index}")
                      for index in range(2)]
        started = time.monotonic()
        try:
            for thread in workers + cancellers:
                thread.start()
            for thread in workers:
                thread.join(3600)
        finally:
            # Also when pytest-timeout interrupts the joins: the cancellers loop until told,
            # and left running they kept a free-threaded run's pytest from exiting (22 min and on).
            self.stop.set()
        elapsed = time.monotonic() - started
        for thread in cancellers:
            thread.join(10)
        assert not [t.name for t in workers + cancellers if t.is_alive()], "a caller never returned"
        return elapsed

    def record(self, outcome: str, failure: Optional[str] = None) -> None:
        with self.lock:
            self.outcomes[outcome] += 1
            if failure is not None:
                self.failures.append(failure)

    def worker(self, index: int, calls: int) -> None:
        rng = random.Random(self.seed * 1000 + index)
        for n in range(calls):
            tag = f"{index}-{n}"
            delay = rng.choice(DELAYS_MS)
            timeout = rng.choice(TIMEOUTS)
            token = CancelToken() if rng.random() < CANCEL_SHARE else None
            if token is not None:
                with self.lock:
                    self.active[tag] = token
            started = time.monotonic()
            try:
                result = self.client.call_tool("work", {"tag": tag, "delay_ms": delay}, timeout=timeout,
                                               cancel=token)
                self.record("result", None if result.text == tag else f"{tag}: got {result.text!r}")
            except RequestTimeout as exc:
                elapsed = time.monotonic() - started
                # Its own timeout, never early; how late a loaded machine notices it is not the client's doing.
                mine = timeout is not None and exc.timeout == timeout and timeout <= elapsed
                self.record("timeout", None if mine else f"{tag}: {exc!r} after {elapsed:.3f}s (timeout {timeout})")
            except RequestCancelled as exc:
                mine = token is not None and token.cancelled and exc.reason == tag
                self.record("cancelled", None if mine else f"{tag}: {exc!r} (token {token!r})")
            except Exception as exc:  # anything else is a failure of the client
                self.record("other", f"{tag}: {type(exc).__name__}: {exc}")
            finally:
                if token is not None:
                    with self.lock:
                        self.active.pop(tag, None)

    def canceller(self, index: int) -> None:
        rng = random.Random(self.seed * 7919 + index)
        while not self.stop.wait(rng.uniform(0.0, 0.002)):  # pacing only: this thread generates load
            with self.lock:
                tags = list(self.active)
                tag = rng.choice(tags) if tags else None
                token = self.active[tag] if tag is not None else None
            if token is not None:
                token.cancel(tag)  # the reason names the call, so it can tell the error is its own

    def check(self, total: int) -> Dict[str, Any]:
        assert self.failures == []
        assert sum(self.outcomes.values()) == total, self.outcomes
        assert self.outcomes["other"] == 0
        # The server saw exactly the cancellations of the abandoned requests: none lost, none twice.
        expected = len(self.abandoned)
        assert len(set(self.abandoned)) == expected
        assert expected <= self.outcomes["timeout"] + self.outcomes["cancelled"]
        stats = json.loads(self.client.call_tool(
            "stats", {"expect_cancelled": expected, "wait_ms": 30_000}, timeout=60).text)
        assert stats["cancelled"] == expected
        assert sorted(stats["ids"]) == sorted(self.abandoned)
        # Still usable.
        self.client.ping()
        assert self.client.call_tool("work", {"tag": "after", "delay_ms": 0}).text == "after"
        return stats


def report(name: str, load: Load, elapsed: float, total: int) -> None:
    outcomes = dict(load.outcomes)
    print(f"\n[stress {name}] {total} calls by {THREADS} threads in {elapsed:.1f}s "
          f"({total / elapsed:.0f} calls/s): {outcomes}; cancellations announced: {len(load.abandoned)}")


@pytest.mark.parametrize("era", ["legacy", "modern"])
@pytest.mark.parametrize("tier", TIERS)
def test_stdio_under_threads_timeouts_and_cancels_loses_and_misroutes_nothing(tier: str, era: str) -> None:
    calls = CALLS[tier]["stdio"]
    argv = hostile_stdio("stress", *(["--version", "2026-07-28"] if era == "modern" else []))
    with mcpsync.connect(argv, timeout=30) as client:
        assert client.era == era
        load = Load(client, seed=1)
        elapsed = load.run(THREADS, calls)
        load.check(THREADS * calls)
        report(f"stdio-{era} {tier}", load, elapsed, THREADS * calls)


@pytest.mark.parametrize("response", ["json", "sse"])
@pytest.mark.parametrize("tier", TIERS)
def test_streamable_http_under_threads_timeouts_and_cancels_loses_and_misroutes_nothing(
        tier: str, response: str, http_server: Any) -> None:
    calls = CALLS[tier]["http"]
    server: HostileHTTP = http_server("stress", "--response", response)
    pool_warnings = WarningCounter()
    logging.getLogger("urllib3").addHandler(pool_warnings)
    try:
        with mcpsync.connect({"type": "http", "url": server.url()}, timeout=30) as client:
            load = Load(client, seed=2)
            elapsed = load.run(THREADS, calls)
            load.check(THREADS * calls)
            report(f"http-{response} {tier}", load, elapsed, THREADS * calls)
    finally:
        logging.getLogger("urllib3").removeHandler(pool_warnings)
    # Every exchange thread has a kept-alive connection to go back to: none is thrown away.
    assert pool_warnings.messages == []


class WarningCounter(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: List[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


# -- fork: a pool of forked workers hammering calls while the parent does too ------------------------

FORK_WORKERS = 3
FORK_BATCHES = {"fast": 8, "soak": 60}  # tasks of the pool; workers are recycled every 2 (so forked anew)
FORK_CALLS = {"fast": 25, "soak": 1000}  # calls per task, by FORK_THREADS threads of the worker
FORK_THREADS = 4
PARENT_CALLS = {"fast": 60, "soak": 3000}  # per parent thread (THREADS // 4 of them)

#: The client the forked workers inherit (set before the pool forks them).
_inherited: Optional[mcpsync.Client] = None


def _forked_batch(batch: int, calls: int) -> Dict[str, Any]:
    """In a forked worker: ``calls`` calls through the inherited client, from several threads at once;
    what came back wrong, and which server answered."""
    import os

    client = _inherited
    assert client is not None
    wrong: List[str] = []
    lock = threading.Lock()

    def hammer(thread: int) -> None:
        rng = random.Random(batch * 100 + thread)
        for n in range(calls // FORK_THREADS):
            tag = f"w{batch}-{thread}-{n}"
            try:
                text = client.call_tool("work", {"tag": tag, "delay_ms": rng.choice(DELAYS_MS[:6])}, timeout=30).text
            except Exception as exc:
                text = f"{type(exc).__name__}: {exc}"
            if text != tag:
                with lock:
                    wrong.append(f"{tag}: {text!r}")

    threads = [threading.Thread(target=hammer, args=(t,)) for t in range(FORK_THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(600)
    return {"wrong": wrong, "worker": os.getpid(), "server": client.transport.pid,
            "calls": FORK_THREADS * (calls // FORK_THREADS)}


@pytest.mark.parametrize("tier", TIERS)
def test_forked_workers_and_the_parent_hammer_one_client_at_once(tier: str) -> None:
    """The parent's threads keep calling (with timeouts and cancels) while a fork pool, recycled as it
    goes, forks workers off it mid-call: every worker's calls get their own answers from a server of
    the worker's own, and the parent's load checks out exactly (its server saw only its requests)."""
    import multiprocessing

    global _inherited
    with mcpsync.connect(hostile_stdio("stress"), timeout=30) as client:
        server = client.transport.pid
        load = Load(client, seed=3)
        parent_threads = THREADS // 4
        parent = threading.Thread(target=load.run, args=(parent_threads, PARENT_CALLS[tier]), name="test-parent-load")
        _inherited = client
        try:
            started = time.monotonic()
            parent.start()
            with multiprocessing.get_context("fork").Pool(FORK_WORKERS, maxtasksperchild=2) as pool:
                pending = pool.starmap_async(_forked_batch, [(b, FORK_CALLS[tier]) for b in range(FORK_BATCHES[tier])],
                                             chunksize=1)
                batches = pending.get(3000)
                pool.close()
                pool.join()
            parent.join(3000)
            elapsed = time.monotonic() - started
        finally:
            _inherited = None
        assert not parent.is_alive()
        assert [b["wrong"] for b in batches] == [[]] * len(batches)
        assert server not in {b["server"] for b in batches}  # no worker used the parent's server
        assert len({b["worker"] for b in batches}) >= len(batches) // 2  # recycled: forked anew mid-load
        total = parent_threads * PARENT_CALLS[tier]
        load.check(total)
        assert client.transport.pid == server and client.transport.returncode is None
        child_calls = sum(b["calls"] for b in batches)
        print(f"\n[stress fork {tier}] parent: {total} calls by {parent_threads} threads {dict(load.outcomes)}, cancellations announced = received: {len(load.abandoned)}; "
              f"{len(batches)} forked tasks on {len({b['worker'] for b in batches})} workers: {child_calls} calls; "
              f"{(total + child_calls) / elapsed:.0f} calls/s in all over {elapsed:.1f}s")
