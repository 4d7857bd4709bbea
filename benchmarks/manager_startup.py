#!/usr/bin/env python
"""How long until a manager's tools are available: ten stdio servers with known start times.

Usage: ``python benchmarks/manager_startup.py [--servers 10] [--max-delay 1.0] [--window 0.25] [--json]``

Server *i* (of N) sleeps ``max_delay * i / N`` seconds before it answers
anything (``tests/servers/slow_start.py --delay``), so the slowest takes
``max_delay`` and, started one after another, they would take about
N(N+1)/2N times that. Three measurements, each with fresh processes:

* cold: no tools cache; ``connect_all`` with a window long enough for every
  server. Reported: the time until every server's tools are listed, its ratio
  to the slowest server's start (near 1 means the starts overlapped) and to
  the sum of all starts (what connecting one by one would cost at least).
* warm: the cache filled by the cold run; ``connect_all(startup_timeout=W)``.
  Reported: the time until every server's tools are listed (cached ones as
  deferred tools), and how far past the window that is, in milliseconds.
* warm, then live: from the same start, the time until every tool is live.

The script only reports; it never asserts and always exits 0.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mcpsync.manager import Manager  # noqa: E402

SERVER = ROOT / "tests" / "servers" / "slow_start.py"


def config(delays: List[float]) -> Dict[str, Any]:
    return {"mcpServers": {
        f"s{i:02d}": {"command": sys.executable,
                      "args": [str(SERVER), "--delay", f"{delay:.3f}", "--tools", f"t{i:02d}a,t{i:02d}b"]}
        for i, delay in enumerate(delays)}}


def tool_count(manager: Manager) -> int:
    return len(manager.tools())


def cold(cfg: Dict[str, Any], cache: Path, expected: int) -> float:
    start = time.perf_counter()
    manager = Manager(cfg, cache=cache)
    try:
        manager.connect_all(startup_timeout=120)
        elapsed = time.perf_counter() - start
        if tool_count(manager) != expected:
            raise RuntimeError(f"cold run listed {tool_count(manager)} tools, expected {expected}")
        return elapsed
    finally:
        manager.close()


def warm(cfg: Dict[str, Any], cache: Path, window: float, expected: int) -> Dict[str, float]:
    start = time.perf_counter()
    manager = Manager(cfg, cache=cache)
    try:
        manager.connect_all(startup_timeout=window)
        available = time.perf_counter() - start
        listed = tool_count(manager)
        deferred = sum(1 for tool in manager.tools() if tool.deferred)
        manager.wait_until(lambda status: all(s.state == "connected" for s in status.values())
                           and not any(t.deferred for t in manager.tools()), 120)
        live = time.perf_counter() - start
        return {"available": available, "listed": listed, "deferred": deferred, "live": live,
                "complete": float(listed == expected)}
    finally:
        manager.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--servers", type=int, default=10)
    parser.add_argument("--max-delay", type=float, default=1.0, help="the slowest server's start, in seconds")
    parser.add_argument("--window", type=float, default=0.25, help="startup_timeout for the warm run")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    options = parser.parse_args()

    n = options.servers
    delays = [options.max_delay * (i + 1) / n for i in range(n)]
    cfg = config(delays)
    expected = 2 * n
    slowest, total = max(delays), sum(delays)
    results: Dict[str, Any] = {"servers": n, "slowest_start_s": slowest, "sum_of_starts_s": total,
                               "window_s": options.window, "runs": []}
    for run in range(options.runs):
        with tempfile.TemporaryDirectory(prefix="mcpsync-bench-") as tmp:
            cache = Path(tmp)
            cold_s = cold(cfg, cache, expected)
            warm_r = warm(cfg, cache, options.window, expected)
        results["runs"].append({"cold_s": cold_s, **{f"warm_{k}": v for k, v in warm_r.items()}})
        print(f"run {run + 1}/{options.runs}: cold {cold_s:.3f}s, warm {warm_r['available']:.3f}s", file=sys.stderr)

    best = min(results["runs"], key=lambda r: r["cold_s"])
    best_warm = min(results["runs"], key=lambda r: r["warm_available"])
    results["summary"] = {
        "cold_s": best["cold_s"],
        "cold_over_slowest": best["cold_s"] / slowest,
        "cold_over_sum": best["cold_s"] / total,
        "warm_available_s": best_warm["warm_available"],
        "warm_over_window_ms": (best_warm["warm_available"] - options.window) * 1000,
        "warm_tools_listed": best_warm["warm_listed"],
        "warm_tools_deferred": best_warm["warm_deferred"],
        "warm_live_s": best_warm["warm_live"],
    }
    if options.json:
        print(json.dumps(results, indent=2))
        return
    s = results["summary"]
    print(f"{n} stdio servers; starts {delays[0]:.2f}s .. {slowest:.2f}s (sum {total:.2f}s); best of {options.runs}")
    print(f"cold (no cache): all tools after {s['cold_s']:.3f}s = {s['cold_over_slowest']:.2f}x the slowest start, "
          f"{s['cold_over_sum']:.2f}x the sum of starts")
    print(f"warm (cache, startup_timeout={options.window:g}s): {s['warm_tools_listed']}/{expected} tools after "
          f"{s['warm_available_s']:.3f}s = window + {s['warm_over_window_ms']:.1f}ms "
          f"({s['warm_tools_deferred']} deferred); all live after {s['warm_live_s']:.3f}s")


if __name__ == "__main__":
    main()
