#!/usr/bin/env python3
"""stdio round-trip benchmark: raw pipe floor vs threaded floor vs mcpsync vs the official MCP SDK.

All clients talk to the same stdlib echo server (``echo_server.py``) over
stdin/stdout. Every client is measured in its own fresh child process (a
"worker", this same file run with ``--worker``), so CPU time and peak RSS are
those of the client process alone and one library's imports never pollute
another's figures. The server always runs in a grandchild process, so its CPU
is not counted. Each client worker runs --rounds times, interleaved with the
others in rotating order, and every figure is the median across rounds.

Sections:
  raw       hand-written JSON over a pipe, one thread (the floor)
  threaded  the same pipe with mcpsync's fixed design and nothing else: callers park on a
            threading.Event per request id, a daemon reader thread sets it (the design floor)
  mcpsync   mcpsync.connect(...).call_tool(...)            (skipped if not importable)
  official  mcp.client.stdio.stdio_client + ClientSession  (skipped if not installed)
  script    fresh-process wall time: import, connect, list tools, call once, exit
  import    fresh-process ``import mcpsync`` / ``import mcp`` time

The script only reports; it never asserts. Run ``--help`` for options.
"""

from __future__ import annotations

import argparse
import faulthandler
import json
import os
import platform
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(HERE)
SERVER = os.path.join(HERE, "echo_server.py")

RESULT_MARK = "@@BENCH-RESULT@@ "
CALL_TIMEOUT = 30.0  # per-call timeout handed to the client libraries
ECHO_ARGS = {"text": "hi"}
SECTIONS = ("raw", "threaded", "mcpsync", "official", "script", "import")


# --------------------------------------------------------------------------
# Shared helpers
# --------------------------------------------------------------------------


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _maxrss_kib() -> float:
    """Peak RSS of this process so far, in KiB."""
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss / 1024.0 if sys.platform == "darwin" else float(rss)  # macOS reports bytes


def _child_env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = REPO_ROOT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.pop("PYTHONSTARTUP", None)
    # The discarded warm-up runs write the .pyc files every later run reads, as an installed
    # package has them: without that, each run would compile what changed since the last write.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def _run(cmd: list, timeout: float, env: dict | None = None) -> tuple:
    """Run cmd in its own process group; returns (returncode, stdout, stderr, wall_s).

    On timeout the whole group is killed and returncode is None.
    """
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        cmd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env if env is not None else _child_env(),
        cwd=REPO_ROOT,
        start_new_session=True,
        text=True,
        errors="replace",
    )
    try:
        out, err = proc.communicate(timeout=timeout)
        wall = time.perf_counter() - t0
        return proc.returncode, out, err, wall
    except BaseException:
        _kill_group(proc)
        try:
            out, err = proc.communicate(timeout=5)
        except Exception:
            out, err = "", ""
        if sys.exc_info()[0] is subprocess.TimeoutExpired:
            return None, out or "", (err or "") + "\n[timed out after %.0fs]" % timeout, time.perf_counter() - t0
        raise


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError, OSError):
        try:
            proc.kill()
        except OSError:
            pass


def _tail(text: str, n: int = 6) -> str:
    lines = [ln for ln in (text or "").strip().splitlines() if ln.strip()]
    return " | ".join(lines[-n:])


def _lat_stats(samples_ns: list) -> dict:
    s = sorted(samples_ns)
    n = len(s)

    def pct(p: float) -> float:
        return s[min(n - 1, int(p * n))] / 1000.0

    return {
        "calls": n,
        "median_us": statistics.median(s) / 1000.0,
        "mean_us": statistics.fmean(s) / 1000.0,
        "p90_us": pct(0.90),
        "p99_us": pct(0.99),
        "min_us": s[0] / 1000.0,
    }


def _split(total: int, parts: int) -> list:
    base, extra = divmod(total, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


# --------------------------------------------------------------------------
# Workers (run in a fresh child process: ``--worker KIND``)
# --------------------------------------------------------------------------


def _start_echo_server(client_name: str) -> tuple:
    """Start the echo server and run the hand-written handshake; returns (proc, send, stdout)."""
    proc = subprocess.Popen(
        [sys.executable, SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=None
    )
    w, r = proc.stdin, proc.stdout
    assert w is not None and r is not None

    def send(obj: dict) -> None:
        w.write(json.dumps(obj).encode() + b"\n")
        w.flush()

    try:
        send({
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": client_name, "version": "0"}},
        })
        init = json.loads(r.readline())
        if "result" not in init:
            raise RuntimeError("initialize failed: %r" % (init,))
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    except BaseException:
        _stop_echo_server(proc)
        raise
    return proc, send, r


def _start_stdlib_worker(kind: str) -> tuple:
    """For the stdlib-only clients: (result dict, start RSS, start time, server process, its stdout)."""
    res: dict = {"client": kind}
    rss0 = _maxrss_kib()
    res["import_s"] = None  # stdlib only; nothing to import
    res["rss_after_import_kib"] = _maxrss_kib()
    t0 = time.perf_counter()
    proc, _send, r = _start_echo_server(kind + "-bench")
    return res, rss0, t0, proc, r


def _stop_echo_server(proc: subprocess.Popen) -> None:
    try:
        proc.stdin.close()  # type: ignore[union-attr]
    except OSError:
        pass
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=5)


def _measure_sequential(call_once, warmup: int, calls: int) -> dict:
    """Warm up, then time ``calls`` calls one at a time: latency stats plus CPU per call."""
    for _ in range(warmup):
        call_once()
    lat = []
    perf = time.perf_counter_ns
    c0 = time.process_time_ns()
    for _ in range(calls):
        t = perf()
        call_once()
        lat.append(perf() - t)
    cpu = time.process_time_ns() - c0
    seq = _lat_stats(lat)
    seq["cpu_per_call_us"] = cpu / calls / 1000.0
    return seq


def _measure_threads(call_once, calls: int, threads: int, mode: str) -> dict:
    """``calls`` calls spread over ``threads`` OS threads started together."""
    errors: list = []
    barrier = threading.Barrier(threads + 1)

    def worker(n: int) -> None:
        try:
            barrier.wait(timeout=30)
            for _ in range(n):
                call_once()
        except BaseException as e:  # report, don't crash the run
            errors.append(repr(e))

    pool = [threading.Thread(target=worker, args=(n,), daemon=True) for n in _split(calls, threads)]
    for th in pool:
        th.start()
    barrier.wait(timeout=30)
    c0 = time.process_time_ns()
    t = time.perf_counter()
    deadline = time.monotonic() + max(60.0, calls * 0.01)
    for th in pool:
        th.join(timeout=max(0.0, deadline - time.monotonic()))
    wall = time.perf_counter() - t
    cpu = time.process_time_ns() - c0
    if any(th.is_alive() for th in pool):
        errors.append("threads still running after the deadline")
    if errors:
        raise RuntimeError("threaded phase failed: %s" % "; ".join(errors[:3]))
    return {
        "mode": mode, "workers": threads, "calls": calls, "wall_s": wall,
        "calls_per_s": calls / wall, "cpu_per_call_us": cpu / calls / 1000.0,
    }


def _worker_raw(calls: int, warmup: int, threads: int) -> dict:
    res, rss0, t0, proc, r = _start_stdlib_worker("raw")
    dumps, loads = json.dumps, json.loads
    try:
        res["connect_s"] = time.perf_counter() - t0
        w = proc.stdin
        next_id = [1]

        def request_line(i: int) -> bytes:
            return dumps({"jsonrpc": "2.0", "id": i, "method": "tools/call",
                          "params": {"name": "echo", "arguments": ECHO_ARGS}}).encode() + b"\n"

        def call_once() -> None:
            i = next_id[0]
            next_id[0] = i + 1
            w.write(request_line(i))
            w.flush()
            msg = loads(r.readline())
            if msg.get("id") != i or msg["result"]["content"][0]["text"] != "hi":
                raise RuntimeError("bad response: %r" % (msg,))

        res["seq"] = _measure_sequential(call_once, warmup, calls)

        # Pipelined: a sliding window of `threads` requests in flight, one thread.
        base = next_id[0]
        sent = received = 0
        c0 = time.process_time_ns()
        t = time.perf_counter()
        first = min(threads, calls)
        w.write(b"".join(request_line(base + k) for k in range(first)))
        w.flush()
        sent = first
        while received < calls:
            msg = loads(r.readline())
            if msg["result"]["content"][0]["text"] != "hi":
                raise RuntimeError("bad response: %r" % (msg,))
            received += 1
            if sent < calls:
                w.write(request_line(base + sent))
                w.flush()
                sent += 1
        wall = time.perf_counter() - t
        cpu = time.process_time_ns() - c0
        res["conc"] = {
            "mode": "pipelined, %d in flight, 1 thread" % threads,
            "workers": threads, "calls": calls, "wall_s": wall,
            "calls_per_s": calls / wall, "cpu_per_call_us": cpu / calls / 1000.0,
        }
    finally:
        _stop_echo_server(proc)
    res["rss_start_kib"] = rss0
    res["rss_peak_kib"] = _maxrss_kib()
    return res


def _worker_threaded(calls: int, warmup: int, threads: int) -> dict:
    """The design floor: mcpsync's fixed threading design with no SDK around it.

    Each caller writes its request under a write lock and parks on a
    ``threading.Event`` registered under its request id; a daemon reader thread
    reads the server's stdout and sets that Event. The I/O primitives are the
    ones ``_worker_raw`` uses (buffered write + flush, ``readline``,
    ``json.dumps``/``json.loads``), so the difference from raw is the hand-off
    between threads, not the I/O.
    """
    res, rss0, t0, proc, r = _start_stdlib_worker("threaded")
    dumps, loads = json.dumps, json.loads
    w = proc.stdin
    reader = None
    try:
        lock = threading.Lock()        # guards next_id, waiters, answers, closed
        write_lock = threading.Lock()  # one writer at a time on the server's stdin
        waiters: dict = {}             # request id -> threading.Event
        answers: dict = {}             # request id -> parsed response (set by the reader)
        next_id = [1]
        closed = [False]

        def read_loop() -> None:
            readline = r.readline
            try:
                while True:
                    line = readline()
                    if not line:
                        break  # EOF: the server exited
                    msg = loads(line)
                    with lock:
                        ev = waiters.get(msg.get("id"))
                        if ev is not None:
                            answers[msg["id"]] = msg
                    if ev is not None:
                        ev.set()
            finally:
                # Wake every parked caller so none waits out its timeout for nothing.
                with lock:
                    closed[0] = True
                    pending = list(waiters.values())
                for ev in pending:
                    ev.set()

        reader = threading.Thread(target=read_loop, name="threaded-bench-reader", daemon=True)
        reader.start()
        res["connect_s"] = time.perf_counter() - t0

        def call_once() -> None:
            ev = threading.Event()
            with lock:
                if closed[0]:
                    raise RuntimeError("connection closed")
                i = next_id[0]
                next_id[0] = i + 1
                waiters[i] = ev
            try:
                data = dumps({"jsonrpc": "2.0", "id": i, "method": "tools/call",
                              "params": {"name": "echo", "arguments": ECHO_ARGS}}).encode() + b"\n"
                with write_lock:
                    w.write(data)
                    w.flush()
                if not ev.wait(CALL_TIMEOUT):
                    raise RuntimeError("no response to request %d within %.0fs" % (i, CALL_TIMEOUT))
            finally:
                with lock:
                    del waiters[i]
                    msg = answers.pop(i, None)
            if msg is None:
                raise RuntimeError("connection closed before the response to request %d" % i)
            if msg["result"]["content"][0]["text"] != "hi":
                raise RuntimeError("bad response: %r" % (msg,))

        res["seq"] = _measure_sequential(call_once, warmup, calls)
        # `threads` OS threads sharing the one connection (as in _worker_mcpsync).
        res["conc"] = _measure_threads(call_once, calls, threads, "%d threads sharing one connection" % threads)
    finally:
        _stop_echo_server(proc)
        if reader is not None:
            reader.join(timeout=5)  # the server exited, so the reader sees EOF
    res["rss_start_kib"] = rss0
    res["rss_peak_kib"] = _maxrss_kib()
    return res


def _worker_mcpsync(calls: int, warmup: int, threads: int) -> dict:
    res: dict = {"client": "mcpsync"}
    rss0 = _maxrss_kib()
    t = time.perf_counter()
    import mcpsync  # noqa: WPS433 (measured import)

    res["import_s"] = time.perf_counter() - t
    res["rss_after_import_kib"] = _maxrss_kib()
    res["version"] = getattr(mcpsync, "__version__", None)

    t0 = time.perf_counter()
    client = mcpsync.connect([sys.executable, SERVER])
    try:
        res["connect_s"] = time.perf_counter() - t0
        call_tool = client.call_tool

        def call_once() -> None:
            r = call_tool("echo", ECHO_ARGS, timeout=CALL_TIMEOUT)
            if r.text != "hi":
                raise RuntimeError("bad echo result: %r" % (r.text,))

        res["seq"] = _measure_sequential(call_once, warmup, calls)
        # `threads` OS threads sharing the one client.
        res["conc"] = _measure_threads(call_once, calls, threads, "%d threads sharing one client" % threads)
    finally:
        client.close()
    res["rss_start_kib"] = rss0
    res["rss_peak_kib"] = _maxrss_kib()
    return res


def _worker_official(calls: int, warmup: int, threads: int) -> dict:
    res: dict = {"client": "official"}
    rss0 = _maxrss_kib()
    t = time.perf_counter()
    import asyncio

    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    res["import_s"] = time.perf_counter() - t
    res["rss_after_import_kib"] = _maxrss_kib()
    try:
        from importlib.metadata import version as _dist_version

        res["version"] = _dist_version("mcp")
    except Exception:
        res["version"] = None
    # mcp 1.x wants a timedelta here; 2.x takes float seconds.
    read_timeout: object = CALL_TIMEOUT
    if res["version"] and res["version"].split(".")[0] in ("0", "1"):
        from datetime import timedelta

        read_timeout = timedelta(seconds=CALL_TIMEOUT)

    async def main() -> None:
        t0 = time.perf_counter()
        params = StdioServerParameters(command=sys.executable, args=[SERVER])
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write, read_timeout_seconds=read_timeout) as session:
                await session.initialize()
                res["connect_s"] = time.perf_counter() - t0

                async def call_once() -> None:
                    r = await session.call_tool("echo", ECHO_ARGS)
                    text = r.content[0].text
                    if text != "hi":
                        raise RuntimeError("bad echo result: %r" % (text,))

                # The first call also triggers an implicit tools/list (output-schema cache).
                for _ in range(warmup):
                    await call_once()

                lat = []
                perf = time.perf_counter_ns
                c0 = time.process_time_ns()
                for _ in range(calls):
                    t = perf()
                    await call_once()
                    lat.append(perf() - t)
                cpu = time.process_time_ns() - c0
                res["seq"] = _lat_stats(lat)
                res["seq"]["cpu_per_call_us"] = cpu / calls / 1000.0

                # `threads` concurrent tasks in flight on the one session.
                async def task(n: int) -> None:
                    for _ in range(n):
                        await call_once()

                c0 = time.process_time_ns()
                t = time.perf_counter()
                await asyncio.gather(*(task(n) for n in _split(calls, threads)))
                wall = time.perf_counter() - t
                cpu = time.process_time_ns() - c0
                res["conc"] = {
                    "mode": "%d asyncio tasks in flight (gather)" % threads,
                    "workers": threads, "calls": calls, "wall_s": wall,
                    "calls_per_s": calls / wall, "cpu_per_call_us": cpu / calls / 1000.0,
                }

    budget = 60.0 + calls * 0.02
    asyncio.run(asyncio.wait_for(main(), timeout=budget))
    res["rss_start_kib"] = rss0
    res["rss_peak_kib"] = _maxrss_kib()
    return res


WORKERS = {"raw": _worker_raw, "threaded": _worker_threaded, "mcpsync": _worker_mcpsync,
           "official": _worker_official}


def _worker_main(args: argparse.Namespace) -> int:
    # Watchdog: whatever happens, this child dies before the parent's timeout.
    faulthandler.dump_traceback_later(max(5.0, args.timeout - 5.0), exit=True)
    try:
        res = WORKERS[args.worker](args.calls, args.warmup, args.threads)
        res["ok"] = True
    except BaseException as e:  # report everything, including SystemExit from imports
        import traceback

        traceback.print_exc(file=sys.stderr)
        res = {"client": args.worker, "ok": False, "error": "%s: %s" % (type(e).__name__, e)}
    print(RESULT_MARK + json.dumps(res), flush=True)
    return 0


# --------------------------------------------------------------------------
# Parent side
# --------------------------------------------------------------------------


def _probe_import(module: str, timeout: float, require: str = "") -> tuple:
    """(ok, detail) for `import module` (and, optionally, its attribute `require`) in a fresh child."""
    code = "import %s as m; print(getattr(m, '__file__', None) or '?')" % module
    if require:
        # An unfinished package dir without __init__.py imports as an empty namespace package.
        code += ("\nif not hasattr(m, %r): raise SystemExit('%s.%s is missing (package incomplete?)')"
                 % (require, module, require))
    rc, out, err, _ = _run([sys.executable, "-c", code], timeout)
    if rc == 0:
        return True, out.strip()
    return False, _tail(err, 1) or "exit code %r" % (rc,)


def _run_worker(kind: str, args: argparse.Namespace) -> dict:
    cmd = [
        sys.executable, os.path.abspath(__file__), "--worker", kind,
        "--calls", str(args.calls), "--warmup", str(args.warmup),
        "--threads", str(args.threads), "--timeout", str(args.timeout),
    ]
    rc, out, err, wall = _run(cmd, args.timeout)
    for line in reversed(out.splitlines()):
        if line.startswith(RESULT_MARK):
            res = json.loads(line[len(RESULT_MARK):])
            if not res.get("ok"):
                res["stderr_tail"] = _tail(err)
            res["worker_wall_s"] = wall
            return res
    if rc is None or "Timeout (" in err:  # parent kill, or the worker's faulthandler watchdog
        why = "timed out after ~%.0fs (hung call?)" % args.timeout
    else:
        why = "worker produced no result (rc=%r)" % (rc,)
    return {"client": kind, "ok": False, "error": why, "stderr_tail": _tail(err)}


SCRIPT_RAW = r'''
import json, subprocess, sys
p = subprocess.Popen([sys.executable, {server!r}], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
def rpc(obj):
    p.stdin.write(json.dumps(obj).encode() + b"\n"); p.stdin.flush()
    return json.loads(p.stdout.readline()) if "id" in obj else None
rpc({{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {{"protocolVersion": "2025-11-25",
    "capabilities": {{}}, "clientInfo": {{"name": "raw", "version": "0"}}}}}})
rpc({{"jsonrpc": "2.0", "method": "notifications/initialized"}})
rpc({{"jsonrpc": "2.0", "id": 2, "method": "tools/list"}})
r = rpc({{"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {{"name": "echo", "arguments": {{"text": "hi"}}}}}})
assert r["result"]["content"][0]["text"] == "hi", r
p.stdin.close(); p.wait(timeout=10)
print("OK")
'''

SCRIPT_MCPSYNC = r'''
import sys
import mcpsync
with mcpsync.connect([sys.executable, {server!r}]) as client:
    client.list_tools()
    r = client.call_tool("echo", {{"text": "hi"}}, timeout=30)
    assert r.text == "hi", r
print("OK")
'''

SCRIPT_OFFICIAL = r'''
import asyncio, sys
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
async def main():
    params = StdioServerParameters(command=sys.executable, args=[{server!r}])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            await session.list_tools()
            r = await session.call_tool("echo", {{"text": "hi"}})
            assert r.content[0].text == "hi", r
asyncio.run(asyncio.wait_for(main(), 60))
print("OK")
'''

# mcp >= 2: the high-level Client; mode="auto" probes server/discover first,
# gets -32601 from the echo server and falls back to initialize.
SCRIPT_OFFICIAL_CLIENT = r'''
import asyncio, sys
from mcp import Client, StdioServerParameters
async def main():
    async with Client(StdioServerParameters(command=sys.executable, args=[{server!r}])) as client:
        await client.list_tools()
        r = await client.call_tool("echo", {{"text": "hi"}})
        assert r.content[0].text == "hi", r
asyncio.run(asyncio.wait_for(main(), 60))
print("OK")
'''


def _time_scripts(jobs: dict, runs: int, timeout: float) -> dict:
    """Wall time of each job ``name -> (cmd, env or None, expected output)``, in rotating order.

    The jobs take turns run by run (A B C, B C A, ...), so that a machine whose speed drifts
    (a shared VM) weighs on all of them alike and their ratios hold. Each job's first run
    warms the page cache and the .pyc files and is discarded. A job that fails once is dropped.
    """
    names = list(jobs)
    walls: dict = {name: [] for name in names}
    failed: dict = {}
    for i in range(runs + 1):
        order = names[i % len(names):] + names[:i % len(names)] if names else []
        for name in order:
            if name in failed:
                continue
            cmd, env, expect = jobs[name]
            rc, out, err, wall = _run(cmd, timeout, env)
            if rc != 0 or expect not in out:
                failed[name] = {"ok": False, "error": "rc=%r: %s" % (rc, _tail(err, 3))}
            elif i:
                walls[name].append(wall)
    results = dict(failed)
    for name in names:
        if name not in failed:
            w = walls[name]
            results[name] = {"ok": True, "runs": runs, "median_ms": statistics.median(w) * 1000.0,
                             "min_ms": min(w) * 1000.0, "max_ms": max(w) * 1000.0}
    return results


def _time_import(module: str, runs: int, timeout: float) -> dict:
    if module:
        code = ("import time; t = time.perf_counter(); import %s; "
                "print(repr(time.perf_counter() - t))" % module)
    else:
        code = "print(0.0)"
    vals, walls = [], []
    for i in range(runs + 1):
        rc, out, err, wall = _run([sys.executable, "-c", code], timeout)
        if rc != 0:
            return {"ok": False, "error": "rc=%r: %s" % (rc, _tail(err, 2))}
        if i:
            vals.append(float(out.strip().splitlines()[-1]))
            walls.append(wall)
    return {"ok": True, "runs": runs, "median_ms": statistics.median(vals) * 1000.0,
            "process_wall_median_ms": statistics.median(walls) * 1000.0}


def _aggregate(runs: list) -> dict:
    """Merge per-round worker results: numbers become the median across rounds."""
    out: dict = {}
    for key, first in runs[0].items():
        vals = [r.get(key) for r in runs]
        if isinstance(first, dict):
            out[key] = _aggregate([v for v in vals if isinstance(v, dict)])
        elif isinstance(first, (int, float)) and not isinstance(first, bool) and all(
                isinstance(v, (int, float)) for v in vals):
            out[key] = statistics.median(vals)
        else:
            out[key] = first
    return out


def _get(d: dict, *keys):
    for k in keys:
        if not isinstance(d, dict) or k not in d:
            return None
        d = d[k]
    return d


def _targets(results: dict) -> list:
    """PASS/FAIL per target; SKIP when an input was not measurable (library missing, section off).

    A side that was available but whose run errored counts as FAIL.
    """
    clients = results["clients"]
    scripts, imports = results["script_time"], results["import_time"]
    sources = {
        "raw": clients.get("raw"), "mcpsync": clients.get("mcpsync"), "official": clients.get("official"),
        "mcpsync script": scripts.get("mcpsync"), "official script": scripts.get("official"),
        "raw script": scripts.get("raw"), "cli": scripts.get("cli"),
        "import mcpsync": imports.get("mcpsync"),
    }

    def value(src: str, *path):
        d = sources[src]
        return _get(d, *path) if d and d.get("ok") else None

    rows = []

    def add(name, srcs, num, den, op, target, unit):
        a = value(*num)
        b = value(*den) if den else 1.0
        v = None if a is None or b is None or not b else a / b
        if v is None:
            failed = [s for s in srcs if sources[s] and not sources[s].get("ok")
                      and not str(sources[s].get("error", "")).startswith(("not importable", "not run"))]
            missing = [s for s in srcs if not (sources[s] and sources[s].get("ok"))]
            if failed:
                note = "; ".join("%s failed: %s" % (s, sources[s].get("error")) for s in failed)
                status = "FAIL"
            else:
                note = "not measured: " + ", ".join(
                    s + ("" if sources[s] else " (section not run)") for s in missing)
                details = [str(sources[s].get("error")) for s in missing if sources[s]]
                if details:
                    note += " (%s)" % details[0]
                status = "SKIP"
            rows.append({"name": name, "status": status, "value": None, "target": target,
                         "op": op, "unit": unit, "note": note})
            return
        passed = v <= target if op == "<=" else (v >= target if op == ">=" else v < target)
        rows.append({"name": name, "status": "PASS" if passed else "FAIL", "value": v,
                     "target": target, "op": op, "unit": unit, "note": ""})

    add("sequential latency mcpsync/raw", ("mcpsync", "raw"),
        ("mcpsync", "seq", "median_us"), ("raw", "seq", "median_us"), "<=", 1.5, "x")
    add("client CPU per call mcpsync/raw", ("mcpsync", "raw"),
        ("mcpsync", "seq", "cpu_per_call_us"), ("raw", "seq", "cpu_per_call_us"), "<=", 2.0, "x")
    add("8-way throughput mcpsync(threads)/official(tasks)", ("mcpsync", "official"),
        ("mcpsync", "conc", "calls_per_s"), ("official", "conc", "calls_per_s"), ">=", 3.0, "x")
    add("script time mcpsync/official", ("mcpsync script", "official script"),
        ("mcpsync script", "median_ms"), ("official script", "median_ms"), "<=", 0.2, "x")
    add("script time mcpsync/raw pipe loop", ("mcpsync script", "raw script"),
        ("mcpsync script", "median_ms"), ("raw script", "median_ms"), "<=", 1.2, "x")
    add("mcpsync tools -- ... / mcpsync script", ("cli", "mcpsync script"),
        ("cli", "median_ms"), ("mcpsync script", "median_ms"), "<=", 1.2, "x")
    add("import mcpsync over a bare interpreter", ("import mcpsync",), ("import mcpsync", "median_ms"), None,
        "<=", 20.0, " ms")
    return rows


def _info_ratios(results: dict) -> list:
    """Informational ratios (not targets): how much of mcpsync's gap to raw is the design itself.

    "design floor" is threaded/raw: the cost of the fixed thread hand-off, which no
    implementation of that design avoids. "mcpsync/threaded" is what mcpsync's own
    code adds on top of that floor.
    """
    clients = results["clients"]
    rows = []
    for name, num, den in (("design floor threaded/raw", "threaded", "raw"),
                           ("SDK overhead mcpsync/threaded", "mcpsync", "threaded")):
        a, b = clients.get(num), clients.get(den)
        row: dict = {"name": name, "latency_x": None, "cpu_x": None, "note": ""}
        missing = [k for k, d in ((num, a), (den, b)) if not (d and d.get("ok"))]
        if missing:
            row["note"] = "not measured: " + ", ".join(
                k + ("" if clients.get(k) else " (section not run)") for k in missing)
        else:
            for key, path in (("latency_x", ("seq", "median_us")), ("cpu_x", ("seq", "cpu_per_call_us"))):
                x, y = _get(a, *path), _get(b, *path)
                row[key] = x / y if x is not None and y else None
        rows.append(row)
    return rows


def _fmt(v, spec: str = "{:,.1f}") -> str:
    if v is None:
        return "-"
    return spec.format(v)


def _print_report(results: dict) -> None:
    c = results["clients"]
    cols = [("raw", "raw pipe"), ("threaded", "threaded floor"), ("mcpsync", "mcpsync"),
            ("official", "official SDK")]
    meta = results["meta"]
    print()
    print("MCP stdio round-trip benchmark")
    print("  python %s on %s, %s CPUs; %d calls per phase (+%d warm-up), %d-way concurrency;"
          " medians over %d interleaved round(s)"
          % (meta["python"], meta["platform"], meta["cpus"], meta["calls"], meta["warmup"], meta["threads"],
             meta["rounds"]))
    print("  server: %s" % meta["server"])
    for key, label in cols:
        d = c.get(key)
        if d is None:
            print("  %-14s not run" % label)
        elif not d.get("ok"):
            print("  %-14s SKIPPED/FAILED: %s" % (label, d.get("error")))
            if d.get("stderr_tail"):
                print("  %-14s   stderr: %s" % ("", d["stderr_tail"][-400:]))
        elif d.get("version"):
            print("  %-14s version %s" % (label, d["version"]))
    print()

    def val(key, *path, scale=1.0):
        d = c.get(key) or {}
        if not d.get("ok"):
            return None
        v = _get(d, *path)
        return None if v is None else v * scale

    def rss_mib(key, which):
        d = c.get(key) or {}
        if not d.get("ok"):
            return None
        if which == "peak":
            return d["rss_peak_kib"] / 1024.0
        return (d["rss_peak_kib"] - d["rss_start_kib"]) / 1024.0

    rows = [
        ("seq latency, median (us)", [val(k, "seq", "median_us") for k, _ in cols], "{:,.1f}"),
        ("seq latency, p99 (us)", [val(k, "seq", "p99_us") for k, _ in cols], "{:,.1f}"),
        ("client CPU per call, seq (us)", [val(k, "seq", "cpu_per_call_us") for k, _ in cols], "{:,.1f}"),
        ("throughput, %d-way (calls/s)" % meta["threads"],
         [val(k, "conc", "calls_per_s") for k, _ in cols], "{:,.0f}"),
        ("client CPU per call, %d-way (us)" % meta["threads"],
         [val(k, "conc", "cpu_per_call_us") for k, _ in cols], "{:,.1f}"),
        ("connect incl. spawn (ms)", [val(k, "connect_s", scale=1000.0) for k, _ in cols], "{:,.1f}"),
        ("import in worker (ms)", [val(k, "import_s", scale=1000.0) for k, _ in cols], "{:,.1f}"),
        ("peak RSS of client (MiB)", [rss_mib(k, "peak") for k, _ in cols], "{:,.1f}"),
        ("RSS delta over baseline (MiB)", [rss_mib(k, "delta") for k, _ in cols], "{:,.1f}"),
    ]
    st = results["script_time"]
    rows.append(("fresh script time, median (ms)",
                 [(st.get(k) or {}).get("median_ms") if (st.get(k) or {}).get("ok") else None
                  for k, _ in cols], "{:,.1f}"))
    it = results["import_time"]
    rows.append(("fresh-process import (ms)",
                 [None, None] + [(it.get(k) or {}).get("median_ms") if (it.get(k) or {}).get("ok") else None
                           for k in ("mcpsync", "mcp")], "{:,.1f}"))

    w0 = max(len(r[0]) for r in rows) + 2
    header = "".join(["%-*s" % (w0, "")] + ["%16s" % label for _, label in cols])
    print(header)
    print("-" * len(header))
    for name, vals, spec in rows:
        print("".join(["%-*s" % (w0, name)] + ["%16s" % _fmt(v, spec) for v in vals]))
    print()
    for k, label in cols:
        d = c.get(k) or {}
        if d.get("ok") and d.get("rounds", 1) > 1:
            print("  %-14s per-round seq median %s us; CPU/call %s us; %d-way %s calls/s"
                  % (label, "/".join("%.0f" % v for v in d["seq_median_us_by_round"]),
                     "/".join("%.0f" % v for v in d["seq_cpu_per_call_us_by_round"]), meta["threads"],
                     "/".join("%.0f" % v for v in d["conc_calls_per_s_by_round"])))
    if c.get("raw", {}).get("ok"):
        print("  raw %d-way = %s (no threads)." % (meta["threads"], c["raw"]["conc"]["mode"]))
    for k in ("threaded", "mcpsync", "official"):
        if (c.get(k) or {}).get("ok"):
            print("  %s %d-way = %s." % (k, meta["threads"], c[k]["conc"]["mode"]))
    nowd, cli = st.get("mcpsync_no_watchdog") or {}, st.get("cli") or {}
    if nowd.get("ok"):
        with_wd = (st.get("mcpsync") or {}).get("median_ms")
        print("  mcpsync script without the watchdog (MCPSYNC_WATCHDOG=0): %.1f ms%s" % (
            nowd["median_ms"], "; with it / without: %.2fx" % (with_wd / nowd["median_ms"]) if with_wd else ""))
    if cli.get("ok"):
        print("  mcpsync tools -- python echo_server.py: %.1f ms" % cli["median_ms"])
    extra = st.get("official_client") or {}
    if extra.get("ok"):
        print("  official SDK high-level mcp.Client (auto mode: server/discover probe -> initialize): "
              "script time %.1f ms" % extra["median_ms"])
    elif extra.get("error"):
        print("  official SDK high-level mcp.Client script: %s" % extra["error"])
    py = it.get("python") or {}
    if py.get("ok"):
        print("  bare interpreter start-up (python -c): %.1f ms wall" % py["process_wall_median_ms"])
    print()
    print("Targets:")
    for t in results["targets"]:
        if t["value"] is None:
            print("  %s  %-52s %8s   (target %s %s%s) - %s"
                  % (t["status"], t["name"], "-", t["op"], _fmt(t["target"], "{:g}"), t["unit"], t["note"]))
        else:
            print("  %s  %-52s %8s%s  (target %s %s%s)"
                  % (t["status"], t["name"], _fmt(t["value"], "{:.2f}"), t["unit"],
                     t["op"], _fmt(t["target"], "{:g}"), t["unit"]))
    for r in results.get("info", []):
        if r["latency_x"] is None and r["cpu_x"] is None:
            print("  info  %s: - (%s)" % (r["name"], r["note"] or "not measured"))
        else:
            print("  info  %s: latency %sx, CPU %sx (not a target)"
                  % (r["name"], _fmt(r["latency_x"], "{:.2f}"), _fmt(r["cpu_x"], "{:.2f}")))
    print()


def _parent_main(args: argparse.Namespace) -> int:
    only = set(SECTIONS) if not args.only else {s.strip() for s in args.only.split(",") if s.strip()}
    unknown = only - set(SECTIONS)
    if unknown:
        _log("unknown section(s): %s (choose from %s)" % (", ".join(sorted(unknown)), ", ".join(SECTIONS)))
        return 2

    t_start = time.perf_counter()
    results: dict = {
        "meta": {
            "python": platform.python_version(), "platform": platform.platform(terse=True),
            "cpus": os.cpu_count(), "calls": args.calls, "warmup": args.warmup,
            "threads": args.threads, "runs": args.runs, "rounds": args.rounds, "server": SERVER,
        },
        "availability": {}, "clients": {}, "script_time": {}, "import_time": {},
    }

    ok_ms, why_ms = _probe_import("mcpsync", args.timeout, require="connect")
    ok_mcp, why_mcp = _probe_import("mcp.client.stdio", args.timeout)
    results["availability"] = {"mcpsync": {"ok": ok_ms, "detail": why_ms},
                               "mcp": {"ok": ok_mcp, "detail": why_mcp}}
    if not ok_ms:
        _log("mcpsync is not importable (%s): skipping every mcpsync measurement." % why_ms)
    if not ok_mcp:
        _log("official SDK (mcp) is not importable (%s): skipping its measurements." % why_mcp)

    # Interleaved rounds: pipe wake-up latency on small VMs is bimodal and drifts over
    # time (same-core hand-off vs cross-core wake-up), so every client is measured once
    # per round, in rotating order, and each figure is the median across rounds.
    kinds = []
    for kind, available, why in (("raw", True, ""), ("threaded", True, ""), ("mcpsync", ok_ms, why_ms),
                                 ("official", ok_mcp, why_mcp)):
        if kind not in only:
            continue
        if not available:
            results["clients"][kind] = {"client": kind, "ok": False, "error": "not importable: " + why}
            continue
        kinds.append(kind)
    runs: dict = {k: [] for k in kinds}
    failed: dict = {}
    for rnd in range(args.rounds):
        order = kinds[rnd % len(kinds):] + kinds[:rnd % len(kinds)] if kinds else []
        for kind in order:
            if kind in failed:
                continue
            _log("[%s] round %d/%d: %d sequential calls + %d-way phase ..."
                 % (kind, rnd + 1, args.rounds, args.calls, args.threads))
            res = _run_worker(kind, args)
            if res.get("ok"):
                runs[kind].append(res)
                _log("[%s] median %.1f us, CPU %.1f us/call, %.0f calls/s %d-way (%.1fs)"
                     % (kind, res["seq"]["median_us"], res["seq"]["cpu_per_call_us"],
                        res["conc"]["calls_per_s"], args.threads, res["worker_wall_s"]))
            else:
                failed[kind] = res  # a broken client is not retried
                _log("[%s] FAILED: %s" % (kind, res.get("error")))
    for kind in kinds:
        if kind in failed:
            results["clients"][kind] = failed[kind]
        else:
            agg = _aggregate(runs[kind])
            agg["rounds"] = len(runs[kind])
            agg["seq_median_us_by_round"] = [r["seq"]["median_us"] for r in runs[kind]]
            agg["seq_cpu_per_call_us_by_round"] = [r["seq"]["cpu_per_call_us"] for r in runs[kind]]
            agg["conc_calls_per_s_by_round"] = [r["conc"]["calls_per_s"] for r in runs[kind]]
            results["clients"][kind] = agg

    if "script" in only:
        with tempfile.TemporaryDirectory(prefix="mcpsync-bench-") as tmp:
            scripts = [("raw", SCRIPT_RAW, True, "")]
            scripts.append(("mcpsync", SCRIPT_MCPSYNC, ok_ms, why_ms))
            scripts.append(("official", SCRIPT_OFFICIAL, ok_mcp, why_mcp))
            ok_client, _ = _probe_import("mcp.client.client", args.timeout) if ok_mcp else (False, "")
            if ok_client:
                scripts.append(("official_client", SCRIPT_OFFICIAL_CLIENT, True, ""))
            jobs: dict = {}
            for name, template, available, why in scripts:
                if not available:
                    results["script_time"][name] = {"ok": False, "error": "not importable: " + why}
                    continue
                path = os.path.join(tmp, "script_%s.py" % name)
                with open(path, "w") as f:
                    f.write(template.format(server=SERVER))
                jobs[name] = ([sys.executable, path], None, "OK")
            if ok_ms:
                # The same script without the watchdog process (what a first connect costs with it),
                # and the command line's whole run: `mcpsync tools -- python echo_server.py`.
                jobs["mcpsync_no_watchdog"] = (jobs["mcpsync"][0], dict(_child_env(), MCPSYNC_WATCHDOG="0"), "OK")
                jobs["cli"] = ([sys.executable, "-m", "mcpsync", "tools", "--", sys.executable, SERVER], None, "echo")
            _log("[script] %s, %d runs each, interleaved ..." % (", ".join(jobs), args.runs))
            results["script_time"].update(_time_scripts(jobs, args.runs, args.timeout))

    if "import" in only:
        for name, module, available, why in (("python", "", True, ""), ("mcpsync", "mcpsync", ok_ms, why_ms),
                                              ("mcp", "mcp", ok_mcp, why_mcp)):
            if not available:
                results["import_time"][name] = {"ok": False, "error": "not importable: " + why}
                continue
            _log("[import] %s x%d ..." % (name or "python", args.runs))
            results["import_time"][name] = _time_import(module, args.runs, args.timeout)

    results["targets"] = _targets(results)
    results["info"] = _info_ratios(results)
    results["meta"]["total_s"] = time.perf_counter() - t_start
    if args.json:
        print(json.dumps(results, indent=2, sort_keys=True))
    else:
        _print_report(results)
        print("total benchmark time: %.1f s" % results["meta"]["total_s"])
    return 0


def main(argv: list | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--calls", type=int, default=2000,
                   help="calls per measured phase (sequential, and again for the N-way phase) in each round;"
                        " default 2000")
    p.add_argument("--warmup", type=int, default=None,
                   help="un-timed warm-up calls before measuring (default: calls/10, 50..300)")
    p.add_argument("--threads", type=int, default=8,
                   help="concurrency of the throughput phase (threads / tasks / pipelined requests); default 8")
    p.add_argument("--rounds", type=int, default=3,
                   help="interleaved repetitions of each client worker; figures are medians across rounds;"
                        " default 3")
    p.add_argument("--runs", type=int, default=5,
                   help="fresh-process repetitions for script and import times (median); default 5")
    p.add_argument("--timeout", type=float, default=120.0,
                   help="kill any single child process after this many seconds; default 120")
    p.add_argument("--only", default="",
                   help="comma-separated subset of sections: " + ",".join(SECTIONS))
    p.add_argument("--json", action="store_true", help="print machine-readable JSON instead of the table")
    p.add_argument("--worker", choices=sorted(WORKERS), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    args.calls = max(1, args.calls)
    args.threads = max(1, args.threads)
    args.runs = max(1, args.runs)
    args.rounds = max(1, args.rounds)
    if args.warmup is None:
        args.warmup = min(300, max(50, args.calls // 10))
    if args.worker:
        return _worker_main(args)
    return _parent_main(args)


if __name__ == "__main__":
    sys.exit(main())
