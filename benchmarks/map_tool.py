#!/usr/bin/env python3
"""Batch benchmark: one tool over many arguments, three ways, side by side in one run.

  map_tool   mcpsync: ``client.map_tool("echo", items, max_concurrency=C)``
  threads    mcpsync: a hand-written ``ThreadPoolExecutor(C)`` calling ``client.call_tool`` per item,
             results collected in input order (what people write without map_tool)
  official   the official SDK: ``asyncio.gather`` over every item under an ``asyncio.Semaphore(C)``
             (``mcp.client.stdio.stdio_client`` + ``ClientSession``; skipped if not installed)

All talk to ``echo_server.py`` over stdio; each is measured in its own fresh child process (this
file run with ``--worker``) so CPU time is the client's alone and one library's imports never touch
another's figures. The workers run --rounds times, interleaved in rotating order; every figure is
the median across rounds. Printed: wall time, calls per second, client CPU per call, and each
column's ratios to map_tool. The script only reports; it never asserts.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(HERE)
SERVER = os.path.join(HERE, "echo_server.py")
RESULT_MARK = "@@BENCH-RESULT@@ "
KINDS = ("map_tool", "threads", "official")
CALL_TIMEOUT = 60.0


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _items(n: int) -> list:
    return [{"text": "item-%d" % i} for i in range(n)]


def _check(texts: list, n: int) -> None:
    if texts != ["item-%d" % i for i in range(n)]:
        raise RuntimeError("results out of order or wrong")


# -- workers (fresh child processes) ----------------------------------------------------------------


def _worker_map_tool(n: int, c: int) -> dict:
    import mcpsync

    with mcpsync.connect([sys.executable, SERVER], timeout=CALL_TIMEOUT) as client:
        client.map_tool("echo", _items(50), max_concurrency=c)  # warm-up
        items = _items(n)
        c0, t0 = time.process_time(), time.perf_counter()
        results = client.map_tool("echo", items, max_concurrency=c)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    _check([r.text for r in results], n)
    return {"wall_s": wall, "cpu_s": cpu}


def _worker_threads(n: int, c: int) -> dict:
    from concurrent.futures import ThreadPoolExecutor

    import mcpsync

    with mcpsync.connect([sys.executable, SERVER], timeout=CALL_TIMEOUT) as client:
        def one(args: dict) -> str:
            return client.call_tool("echo", args).text

        with ThreadPoolExecutor(c) as pool:
            list(pool.map(one, _items(50)))  # warm-up
            items = _items(n)
            c0, t0 = time.process_time(), time.perf_counter()
            texts = list(pool.map(one, items))
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    _check(texts, n)
    return {"wall_s": wall, "cpu_s": cpu}


def _worker_official(n: int, c: int) -> dict:
    import asyncio

    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    async def run() -> dict:
        params = StdioServerParameters(command=sys.executable, args=[SERVER])
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                gate = asyncio.Semaphore(c)

                async def one(args: dict) -> str:
                    async with gate:
                        result = await session.call_tool("echo", args)
                    return result.content[0].text  # type: ignore[union-attr]

                await asyncio.gather(*(one(a) for a in _items(50)))  # warm-up
                items = _items(n)
                c0, t0 = time.process_time(), time.perf_counter()
                texts = await asyncio.gather(*(one(a) for a in items))
                wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        _check(list(texts), n)
        return {"wall_s": wall, "cpu_s": cpu}

    return asyncio.run(run())


WORKERS = {"map_tool": _worker_map_tool, "threads": _worker_threads, "official": _worker_official}


def _run_worker(kind: str, args: argparse.Namespace) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = REPO_ROOT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", kind, "--items", str(args.items),
           "--concurrency", str(args.concurrency)]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout, env=env, cwd=REPO_ROOT,
                              start_new_session=True)
    except subprocess.TimeoutExpired:
        return {"ok": False, "error": "timed out after %.0fs" % args.timeout}
    for line in done.stdout.splitlines():
        if line.startswith(RESULT_MARK):
            return json.loads(line[len(RESULT_MARK):])
    tail = " | ".join(done.stderr.strip().splitlines()[-4:])
    return {"ok": False, "error": "exit %s: %s" % (done.returncode, tail)}


def _worker_main(args: argparse.Namespace) -> int:
    try:
        res = WORKERS[args.worker](args.items, args.concurrency)
        res["ok"] = True
    except ImportError as exc:
        res = {"ok": False, "error": "not importable: %s" % exc}
    except Exception as exc:  # report, never crash the run
        res = {"ok": False, "error": "%s: %s" % (type(exc).__name__, exc)}
    print(RESULT_MARK + json.dumps(res), flush=True)
    return 0


# -- parent ------------------------------------------------------------------------------------------


def _parent_main(args: argparse.Namespace) -> int:
    runs: dict = {k: [] for k in KINDS}
    failed: dict = {}
    for rnd in range(args.rounds):
        order = list(KINDS[rnd % len(KINDS):] + KINDS[:rnd % len(KINDS)])
        for kind in order:
            if kind in failed:
                continue
            _log("[%s] round %d/%d: %d items, %d in flight ..." % (kind, rnd + 1, args.rounds, args.items,
                                                                     args.concurrency))
            res = _run_worker(kind, args)
            if res.get("ok"):
                runs[kind].append(res)
                _log("[%s] %.2fs, %.0f calls/s" % (kind, res["wall_s"], args.items / res["wall_s"]))
            else:
                failed[kind] = res
                _log("[%s] SKIPPED/FAILED: %s" % (kind, res.get("error")))
    figures: dict = {}
    for kind in KINDS:
        if runs[kind]:
            wall = statistics.median(r["wall_s"] for r in runs[kind])
            cpu = statistics.median(r["cpu_s"] for r in runs[kind])
            figures[kind] = {"wall_s": wall, "calls_per_s": args.items / wall,
                             "cpu_per_call_us": cpu / args.items * 1e6}
    if args.json:
        print(json.dumps({"meta": vars(args), "figures": figures,
                          "failed": {k: v.get("error") for k, v in failed.items()}}, indent=2, sort_keys=True))
        return 0
    print()
    print("map_tool benchmark: %d items of echo, %d in flight, median of %d rounds; Python %s on %s, %s CPUs"
          % (args.items, args.concurrency, args.rounds, platform.python_version(), platform.platform(terse=True),
             os.cpu_count()))
    print("%-28s %14s %14s %14s" % ("", "map_tool", "threads", "official"))

    def row(name: str, key: str, spec: str) -> None:
        cells = [spec % figures[k][key] if k in figures else "-" for k in KINDS]
        print("%-28s %14s %14s %14s" % (name, *cells))

    row("wall time (s)", "wall_s", "%.2f")
    row("throughput (calls/s)", "calls_per_s", "%.0f")
    row("client CPU per call (us)", "cpu_per_call_us", "%.1f")
    base = figures.get("map_tool")
    if base is not None:
        print()
        for kind in ("threads", "official"):
            if kind in figures:
                print("  %s / map_tool: wall %.2fx, CPU per call %.2fx"
                      % (kind, figures[kind]["wall_s"] / base["wall_s"],
                         figures[kind]["cpu_per_call_us"] / base["cpu_per_call_us"]))
    for kind, res in failed.items():
        print("  %s: %s" % (kind, res.get("error")))
    return 0


def main(argv: list | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--items", type=int, default=10_000, help="tool calls per batch; default 10000")
    p.add_argument("--concurrency", type=int, default=8, help="calls in flight; default 8")
    p.add_argument("--rounds", type=int, default=3, help="interleaved repetitions (median); default 3")
    p.add_argument("--timeout", type=float, default=300.0, help="kill a worker after this many seconds")
    p.add_argument("--json", action="store_true", help="machine-readable JSON instead of the table")
    p.add_argument("--worker", choices=sorted(WORKERS), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    args.items, args.concurrency, args.rounds = max(1, args.items), max(1, args.concurrency), max(1, args.rounds)
    if args.worker:
        return _worker_main(args)
    return _parent_main(args)


if __name__ == "__main__":
    sys.exit(main())
