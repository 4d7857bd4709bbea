"""Soak: connect/close cycles, servers crashing under load, and a Manager reconnecting servers mid-call.

After each run the threads, file descriptors and child processes are back to
where they were before it, and the process's memory (resident set size, after
a warm-up) has grown by less than a few MiB. The fast tier runs a handful of
cycles; ``-m soak`` runs 1,000 of each. Run with ``-s`` to see the figures.
"""

from __future__ import annotations

import collections
import random
import threading
import time
from typing import Any, Callable, Dict, List

import pytest

import mcpsync
from mcpsync import RequestTimeout, ServerNotConnected, TransportClosed

from .conftest import TIERS, HostileHTTP, Snapshot, expect_back_to, hostile_stdio, rss_bytes, settle

MB = 1 << 20
CYCLES = {"fast": 20, "soak": 1000}
WARM_UP = {"fast": 4, "soak": 50}
MEMORY_GROWTH_LIMIT = 4 * MB


def cycles(tier: str, one_cycle: Callable[[int], None], name: str) -> None:
    """Run ``one_cycle`` CYCLES[tier] times; check resources against the state before, memory after warm-up."""
    before = Snapshot()
    started = time.monotonic()
    warm = None
    for n in range(CYCLES[tier]):
        one_cycle(n)
        if n + 1 == WARM_UP[tier]:
            warm = settle(before)
    elapsed = time.monotonic() - started
    after = expect_back_to(before)
    assert warm is not None
    growth = after.rss - warm.rss
    print(f"\n[soak {name} {tier}] {CYCLES[tier]} cycles in {elapsed:.1f}s ({1000 * elapsed / CYCLES[tier]:.0f} ms "
          f"each); threads {before.threads}->{after.threads}, fds {before.fds}->{after.fds}, "
          f"children {len(before.children)}->{len(after.children)}, RSS after warm-up {growth / MB:+.2f} MiB")
    assert growth < MEMORY_GROWTH_LIMIT


@pytest.mark.parametrize("tier", TIERS)
def test_stdio_connect_close_cycles_leave_nothing_behind(tier: str) -> None:
    def one(n: int) -> None:
        with mcpsync.connect(hostile_stdio("stress"), timeout=30) as client:
            assert client.call_tool("work", {"tag": str(n)}).text == str(n)

    cycles(tier, one, "stdio connect/close")


@pytest.mark.parametrize("tier", TIERS)
def test_streamable_http_connect_close_cycles_leave_nothing_behind(tier: str, http_server: Any) -> None:
    server: HostileHTTP = http_server("normal")

    def one(n: int) -> None:
        with mcpsync.connect({"type": "http", "url": server.url()}, timeout=30) as client:
            assert client.call_tool("echo", {"text": str(n)}).text == str(n)

    cycles(tier, one, "streamable-http connect/close")


@pytest.mark.parametrize("tier", TIERS)
def test_legacy_sse_connect_close_cycles_leave_nothing_behind(tier: str, http_server: Any) -> None:
    server: HostileHTTP = http_server("normal")

    def one(n: int) -> None:
        with mcpsync.connect({"type": "sse", "url": server.url("/sse")}, timeout=30) as client:
            assert client.call_tool("echo", {"text": str(n)}).text == str(n)

    cycles(tier, one, "legacy-sse connect/close")


class Outcomes:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.counts: "collections.Counter[str]" = collections.Counter()
        self.failures: List[str] = []

    def add(self, outcome: str, failure: str = "") -> None:
        with self.lock:
            self.counts[outcome] += 1
            if failure:
                self.failures.append(failure)


@pytest.mark.parametrize("tier", TIERS)
def test_stdio_servers_crashing_under_load_leave_nothing_behind(tier: str) -> None:
    rng = random.Random(3)
    outcomes = Outcomes()

    def caller(client: mcpsync.Client, index: int, stop: threading.Event) -> None:
        n = 0
        while not stop.is_set():
            tag = f"{index}-{n}"
            n += 1
            try:
                result = client.call_tool("work", {"tag": tag, "delay_ms": n % 3}, timeout=30)
                outcomes.add("result", "" if result.text == tag else f"{tag}: got {result.text!r}")
            except TransportClosed as exc:
                mine = exc.returncode == 3 and "exited with code 3" in str(exc)
                outcomes.add("closed", "" if mine else f"{tag}: {exc!r}")
                return
            except Exception as exc:  # anything else is a failure
                outcomes.add("other", f"{tag}: {exc!r}")
                return

    def one(n: int) -> None:
        argv = hostile_stdio("stress", "--crash-after", str(rng.randint(5, 40)))
        with mcpsync.connect(argv, timeout=30, shutdown_timeout=0.5) as client:
            stop = threading.Event()
            threads = [threading.Thread(target=caller, args=(client, i, stop), name=f"test-caller-{i}")
                       for i in range(4)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(30)
            stop.set()
            assert not [t for t in threads if t.is_alive()]

    cycles(tier, one, "stdio crash under load")
    assert outcomes.failures == []
    assert outcomes.counts["closed"] == 4 * CYCLES[tier]  # every caller saw its server die, with the exit code
    print(f"[soak stdio crash under load {tier}] {dict(outcomes.counts)}")


def call_through_planned_crash(manager: "mcpsync.Manager", name: str) -> str:
    """Call ``name`` once more after the load; its server may be exactly at its planned crash.

    A ``--crash-after N`` server exits on its N-th call, and the check call can be that call (or
    can reach a process that exited a moment before the manager noticed). The manager does not
    retry a tool call by itself (calls need not be idempotent), so the check retries after the
    planned exit, and only for that exit.
    """
    for _ in range(3):
        try:
            return manager.call_tool(name, {"tag": "last"}, timeout=30).text
        except TransportClosed as exc:
            if exc.returncode != 3:
                raise
            assert manager.wait(30)
    raise AssertionError(f"{name} kept crashing after recovery")


@pytest.mark.parametrize("tier", TIERS)
def test_a_manager_reconnects_crashing_servers_while_calls_run(tier: str, tmp_path: Any) -> None:
    calls_per_thread = {"fast": 100, "soak": 2500}[tier]
    servers = {f"s{i}": {"command": argv[0], "args": argv[1:]}
               for i in range(3) for argv in [hostile_stdio("stress", "--crash-after", str(25 + 10 * i))]}
    policy = mcpsync.ReconnectPolicy(initial_delay=0.01, max_delay=0.05, jitter=0.0, max_attempts=10_000,
                                     window=60.0)
    outcomes = Outcomes()
    before = Snapshot()
    started = time.monotonic()
    with mcpsync.Manager({"mcpServers": servers}, cache=False, reconnect=policy, timeout=30) as manager:
        manager.connect_all(startup_timeout=30)
        assert manager.wait(30)

        def caller(index: int) -> None:
            rng = random.Random(index)
            for n in range(calls_per_thread):
                tag = f"{index}-{n}"
                name = f"mcp_s{rng.randrange(3)}_work"
                try:
                    result = manager.call_tool(name, {"tag": tag, "delay_ms": rng.choice((0, 0, 1, 3))}, timeout=30)
                    outcomes.add("result", "" if result.text == tag else f"{tag}: got {result.text!r}")
                except TransportClosed as exc:  # its server died while the call was out
                    outcomes.add("closed", "" if exc.returncode == 3 else f"{tag}: {exc!r}")
                except (ServerNotConnected, RequestTimeout) as exc:
                    outcomes.add("other", f"{tag}: {exc!r}")
                except Exception as exc:
                    outcomes.add("other", f"{tag}: {type(exc).__name__}: {exc}")

        threads = [threading.Thread(target=caller, args=(i,), name=f"test-manager-caller-{i}") for i in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(3600)
        assert not [t for t in threads if t.is_alive()]
        status: Dict[str, Any] = manager.status()
        reconnects = sum(s.reconnects for s in status.values())
        assert manager.wait(30)
        for name in servers:  # every server is back and answers
            assert call_through_planned_crash(manager, f"mcp_{name}_work") == "last"
    elapsed = time.monotonic() - started
    after = expect_back_to(before)
    total = 8 * calls_per_thread
    print(f"\n[soak manager {tier}] {total} calls in {elapsed:.1f}s with {reconnects} reconnects: "
          f"{dict(outcomes.counts)}; threads {before.threads}->{after.threads}, fds {before.fds}->{after.fds}")
    assert outcomes.failures == []
    assert sum(outcomes.counts.values()) == total
    assert reconnects >= 1
    assert rss_bytes() > 0
