#!/usr/bin/env python3
"""What the stdio watchdog adds to connecting and closing: connect() and close() with it and without.

On Linux a process's first stdio server also starts the watchdog (a ``python -I -S`` process
that ends the servers if the client dies without closing them), and closing the last server
ends it; servers started while one is open share it, which costs one line on a pipe. This
script measures both cases against ``MCPSYNC_WATCHDOG=0``, in fresh worker processes that
alternate between the two settings:

  alone   connect() to benchmarks/echo_server.py, then close(), with no other server open:
          each cycle starts and ends a watchdog (the worst case: a script with one server)
  shared  the same while another server stays open (the watchdog already runs)

It prints the medians (ms) of connect() and close(), the ratios with/without, and the time
spent inside the watchdog's guard() (at connect) and forget() (at close) by the calling thread.
It never asserts. On a busy machine the connect and close ratios move by about 10% from run
to run (close() waits for the server with polling); the guard and forget times are the
watchdog's own share.
``--json`` prints the results as JSON instead.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Dict, List

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SERVER = os.path.join(HERE, "echo_server.py")
MARK = "@@CONNECT-COST@@ "


def worker(cycles: int) -> None:
    import mcpsync
    from mcpsync.transports import _process

    argv = [sys.executable, SERVER]
    mcpsync.connect(argv).close()  # warm the page cache and the imports; not counted
    result: Dict[str, List[float]] = {"alone_connect": [], "alone_close": [], "shared_connect": [],
                                      "shared_close": []}
    # The watchdog's own share, timed where it runs (the connecting or closing thread).
    spent = {"guard": 0.0, "forget": 0.0}
    for name in spent:
        def timed(*args: object, _name: str = name, _call: object = getattr(_process.WATCHDOG, name)) -> None:
            began = time.perf_counter()
            try:
                _call(*args)  # type: ignore[operator]
            finally:
                spent[_name] += time.perf_counter() - began
        setattr(_process.WATCHDOG, name, timed)
    watchdog_rss = 0
    for phase in ("alone", "shared"):
        anchor = mcpsync.connect(argv) if phase == "shared" else None
        for _ in range(cycles):
            spent.update(guard=0.0, forget=0.0)
            started = time.perf_counter()
            client = mcpsync.connect(argv)
            connected = time.perf_counter()
            client.close()
            closed = time.perf_counter()
            result[f"{phase}_connect"].append((connected - started) * 1000)
            result[f"{phase}_close"].append((closed - connected) * 1000)
            result.setdefault(f"{phase}_in_guard", []).append(spent["guard"] * 1000)
            result.setdefault(f"{phase}_in_forget", []).append(spent["forget"] * 1000)
        if anchor is not None:
            pid = _process.WATCHDOG.pid
            if pid is not None:
                try:
                    with open(f"/proc/{pid}/status") as status:
                        watchdog_rss = next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))
                except (OSError, StopIteration, ValueError):
                    pass
            anchor.close()
    print(MARK + json.dumps({"samples": result, "watchdog_rss_kib": watchdog_rss}), flush=True)


def run_worker(watchdog: bool, cycles: int, timeout: float) -> Dict[str, object]:
    env = dict(os.environ, MCPSYNC_WATCHDOG="1" if watchdog else "0")
    env["PYTHONPATH"] = ROOT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    done = subprocess.run([sys.executable, os.path.abspath(__file__), "--worker", "--cycles", str(cycles)],
                          env=env, capture_output=True, text=True, timeout=timeout, start_new_session=True)
    for line in done.stdout.splitlines():
        if line.startswith(MARK):
            value: Dict[str, object] = json.loads(line[len(MARK):])
            return value
    raise RuntimeError(f"worker failed ({done.returncode}): {done.stderr[-2000:]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=6, help="worker processes per setting (default 6)")
    parser.add_argument("--cycles", type=int, default=10, help="connect/close cycles per phase per worker")
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.cycles)
        return
    if not sys.platform.startswith("linux"):
        print("The watchdog runs on Linux only: nothing to measure here.")
        return
    samples: Dict[bool, Dict[str, List[float]]] = {True: {}, False: {}}
    rss: List[int] = []
    for round_ in range(args.rounds):
        for watchdog in ((True, False) if round_ % 2 == 0 else (False, True)):  # alternate the order
            print(f"round {round_ + 1}/{args.rounds}, watchdog {'on' if watchdog else 'off'}", file=sys.stderr)
            got = run_worker(watchdog, args.cycles, args.timeout)
            for key, values in got["samples"].items():  # type: ignore[union-attr]
                samples[watchdog].setdefault(key, []).extend(values)
            if watchdog and got["watchdog_rss_kib"]:
                rss.append(int(got["watchdog_rss_kib"]))  # type: ignore[call-overload]
    figures = {}
    for key in samples[True]:
        on, off = statistics.median(samples[True][key]), statistics.median(samples[False][key])
        figures[key] = {"on_ms": round(on, 2), "off_ms": round(off, 2),
                        "ratio": round(on / off, 3) if off >= 0.5 else None, "samples": len(samples[True][key])}
    result = {"figures": figures, "watchdog_rss_mib": round(statistics.median(rss) / 1024, 1) if rss else None,
              "python": sys.version.split()[0], "cpus": os.cpu_count()}
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"{'':16}{'with (ms)':>11}{'without (ms)':>14}{'ratio':>8}")
    for key, figure in figures.items():
        ratio = "" if figure["ratio"] is None else f"{figure['ratio']:>8.3f}"
        print(f"{key:16}{figure['on_ms']:>11.2f}{figure['off_ms']:>14.2f}{ratio}")
    print(f"watchdog RSS: {result['watchdog_rss_mib']} MiB; medians of {args.rounds} workers x "
          f"{args.cycles} cycles per setting; Python {result['python']}, {result['cpus']} CPUs")


if __name__ == "__main__":
    main()
