#!/usr/bin/env python3
"""Free-threaded scaling: calls per second with the GIL on and off, at 1, 2, 8 and 64 threads.

Runs on ONE free-threaded interpreter (``python3.13t``; ``.ci/build-free-threaded-python``
builds one into a cache), so the two GIL settings differ in nothing else. For each setting
(``PYTHON_GIL=1`` and ``PYTHON_GIL=0``), transport (stdio, Streamable HTTP) and thread count,
every client shares ONE connection and its calls are measured in a fresh child process:

  floor    the design floor on the same binary: stdio, a pipe with callers parked on a
           threading.Event per request id and one reader thread (``stdio_roundtrip.py``'s
           ``threaded`` worker); HTTP, ``requests`` with a session per thread
  mcpsync  ``mcpsync.connect(...).call_tool("echo", ...)`` from every thread

It prints calls/s, then the ratios: GIL off / GIL on per client, and mcpsync / floor per
setting. The script only reports; it never asserts. Rounds are interleaved (off, on, off, on ...)
and the median is shown, so a burst of load on a shared machine hits both settings alike.

    python benchmarks/free_threaded_scaling.py [--python PATH] [--calls N] [--rounds N]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
from typing import Any, Dict, List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
MARK = "@@SCALING@@ "
THREADS = (1, 2, 8, 64)


def _default_python() -> Optional[str]:
    """The free-threaded venv .ci/versions --free-threaded makes (mcpsync and requests installed)."""
    venvs = os.environ.get("MCPSYNC_VENV_CACHE", os.path.expanduser("~/.cache/mcpsync-venvs"))
    path = os.path.join(venvs, "3.13t", "bin", "python")
    return path if os.path.exists(path) else None


# -- the worker (child process, on the free-threaded binary) -------------------------------------

def _http_worker(client: str, threads: int, calls: int, warmup: int) -> Dict[str, Any]:
    sys.path.insert(0, HERE)
    import http_roundtrip as bench  # noqa: E402  (the benchmark's own server and clients)

    server = bench.ServerProcess()
    try:
        url = server.url("json")
        factory = (lambda: bench.MCPSyncClient(url)) if client == "mcpsync" else (lambda: bench.RequestsClient(url))
        raw = bench.measure(factory, calls, warmup, threads)
        done = raw.get("calls", calls)
        return {"calls_per_s": done / raw["wall"]}
    finally:
        server.stop()


def _worker(args: argparse.Namespace) -> None:
    if args.transport == "http":
        result = _http_worker(args.client, args.threads, args.calls, args.warmup)
    else:
        kind = "threaded" if args.client == "floor" else "mcpsync"
        cmd = [sys.executable, os.path.join(HERE, "stdio_roundtrip.py"), "--worker", kind,
               "--threads", str(args.threads), "--calls", str(args.calls), "--warmup", str(args.warmup),
               "--timeout", "120"]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=150).stdout
        line = [x for x in out.splitlines() if x.startswith("@@BENCH-RESULT@@ ")][-1]
        res = json.loads(line.split(" ", 1)[1])
        section = res["seq"] if args.threads == 1 else res["conc"]
        per_s = 1e6 / section["mean_us"] if args.threads == 1 else section["calls_per_s"]
        result = {"calls_per_s": per_s}
    gil = getattr(sys, "_is_gil_enabled", lambda: True)()
    print(MARK + json.dumps(dict(result, gil=gil)), flush=True)


# -- the parent -----------------------------------------------------------------------------------

def _run(python: str, gil: str, transport: str, client: str, threads: int, calls: int,
         warmup: int) -> Optional[float]:
    env = dict(os.environ, PYTHON_GIL=gil)
    cmd = [python, os.path.abspath(__file__), "--worker", "--transport", transport, "--client", client,
           "--threads", str(threads), "--calls", str(calls), "--warmup", str(warmup)]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
    except subprocess.TimeoutExpired:
        return None
    lines = [x for x in done.stdout.splitlines() if x.startswith(MARK)]
    if not lines:
        sys.stderr.write(f"{transport}/{client}/{threads}/GIL={gil}: no result\n{done.stderr[-800:]}\n")
        return None
    res = json.loads(lines[-1][len(MARK):])
    if bool(res["gil"]) != (gil == "1"):
        sys.stderr.write(f"warning: asked PYTHON_GIL={gil}, the worker ran with the GIL "
                         f"{'on' if res['gil'] else 'off'}\n")
    return float(res["calls_per_s"])


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--python", default=None, help="the free-threaded interpreter (default: the CI cache)")
    p.add_argument("--calls", type=int, default=4000, help="calls per measurement (default 4000)")
    p.add_argument("--warmup", type=int, default=50)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--transports", default="stdio,http")
    p.add_argument("--threads", default=",".join(map(str, THREADS)))
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--transport", default="stdio", help=argparse.SUPPRESS)
    p.add_argument("--client", default="mcpsync", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        args.threads = int(args.threads)
        _worker(args)
        return 0

    python = args.python or _default_python()
    if not python:
        print("no free-threaded venv: run .ci/versions --free-threaded, or pass --python (a 3.13t with mcpsync installed)", file=sys.stderr)
        return 2
    version = subprocess.run([python, "-VV"], capture_output=True, text=True).stdout.strip()
    print(f"interpreter: {version}; {os.cpu_count()} cores; {args.calls} calls per cell, "
          f"median of {args.rounds} interleaved rounds\n")
    table: Dict[str, List[float]] = {}
    for transport in args.transports.split(","):
        for threads in map(int, args.threads.split(",")):
            for _ in range(args.rounds):
                for gil in ("0", "1"):
                    for client in ("floor", "mcpsync"):
                        value = _run(python, gil, transport, client, threads, args.calls, args.warmup)
                        if value is not None:
                            table.setdefault(f"{transport}|{threads}|{gil}|{client}", []).append(value)

    def med(key: str) -> Optional[float]:
        values = table.get(key)
        return statistics.median(values) if values else None

    def fmt(value: Optional[float], spec: str = "{:>10,.0f}") -> str:
        return spec.format(value) if value is not None else f"{'-':>10}"

    print(f"{'transport':<10}{'threads':>8}{'floor on':>11}{'floor off':>11}{'mcpsync on':>12}"
          f"{'mcpsync off':>12}{'off/on mcpsync':>15}{'off/on floor':>13}{'mcpsync/floor off':>18}")
    for transport in args.transports.split(","):
        for threads in map(int, args.threads.split(",")):
            k = f"{transport}|{threads}|"
            f_on, f_off = med(k + "1|floor"), med(k + "0|floor")
            m_on, m_off = med(k + "1|mcpsync"), med(k + "0|mcpsync")
            ratio = (lambda a, b: (a / b) if a and b else None)
            print(f"{transport:<10}{threads:>8}{fmt(f_on, '{:>11,.0f}')}{fmt(f_off, '{:>11,.0f}')}"
                  f"{fmt(m_on, '{:>12,.0f}')}{fmt(m_off, '{:>12,.0f}')}"
                  f"{fmt(ratio(m_off, m_on), '{:>14.2f}x')}{fmt(ratio(f_off, f_on), '{:>12.2f}x')}"
                  f"{fmt(ratio(m_off, f_off), '{:>17.2f}x')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
