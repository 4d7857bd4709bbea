#!/usr/bin/env python3
"""Scale benchmark: how each cost of mcpsync grows with the work, beside the floor and the official SDK.

    python benchmarks/scale.py                      # default run (under 5 minutes on 2 cores)
    python benchmarks/scale.py --quick              # smoke run: small sizes, about a minute
    python benchmarks/scale.py --only threads,pending --json
    python benchmarks/scale.py --plot docs/img/scale   # also write PNG charts (needs matplotlib)

Sections (each point measured in a fresh child process, so CPU time and RSS are
the client's own; the servers are grandchildren and are never counted):

  threads   1..1,024 threads sharing one stdio client and one HTTP client: throughput,
            p50/p99 latency, client CPU per call (official SDK: as many asyncio tasks)
  pending   up to 10,000 requests held by the server on one stdio connection: memory per
            pending request, and the latency of a fresh call while they wait
  manager   1..100 stdio servers in one Manager (official: ClientSessionGroup): time until
            every tool is listed, peak RSS, threads and file descriptors per server, close()
  results   tool results of 1 KB..100 MB over stdio, Streamable HTTP JSON and SSE: MB/s,
            and peak RSS as a multiple of the result size
  catalog   servers with 10..10,000 tools: list_tools, the manager's index (with the
            qualified names), the tools cache's write and read

The floor is the same work with no SDK: the stdio "threaded floor" of
``stdio_roundtrip.py`` (an Event per request id, a writer lock, one reader
thread), and for HTTP a pool of ``http.client`` connections. Figures are
medians across ``--rounds`` interleaved rounds. The script only reports: it
never asserts, prints PASS/MISS per target of issue 16 and always exits 0.
"""

from __future__ import annotations

import argparse
import faulthandler
import gc
import http.client
import itertools
import json
import os
import platform
import queue
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from typing import IO, Any, Callable, Dict, List, Optional, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(HERE)
SERVER = os.path.join(HERE, "scale_server.py")
RESULT_MARK = "@@SCALE-RESULT@@ "
SECTIONS = ("threads", "pending", "manager", "results", "catalog")
CALL_TIMEOUT = 120.0  # per call, handed to every client
BIG_LIMIT = 256 * 1024 * 1024  # max_message_size for the results section (mcpsync's default is 64 MiB)
HTTP_POOL = 64  # the HTTP floor's connections, as many as mcpsync's default pool
ECHO = {"text": "hi"}
PER_THREAD = 8  # the threads section's fewest calls per thread (see _section_threads)

# What each mode measures: (quick, default).
PLAN: Dict[str, Dict[str, Any]] = {
    "quick": {"threads": [1, 8, 64, 256], "calls": 600, "http_calls": 300, "pending": [100, 1000], "fresh": 100,
              "servers": [1, 10], "sizes": [1_000, 100_000, 1_000_000, 10_000_000],
              "tools": [10, 100, 1000], "rounds": 1},
    "default": {"threads": [1, 8, 64, 256, 1024], "calls": 2000, "http_calls": 800, "pending": [100, 1000, 10000], "fresh": 200,
                "servers": [1, 10, 50, 100],
                "sizes": [1_000, 100_000, 1_000_000, 10_000_000, 100_000_000],
                "tools": [10, 100, 1000, 10000], "rounds": 3},
}


# --------------------------------------------------------------------------
# Shared helpers
# --------------------------------------------------------------------------


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _status_kib(field: str) -> Optional[float]:
    """A ``kB`` field of /proc/self/status (VmRSS, VmHWM), or None off Linux."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return float(line.split()[1])
    except OSError:
        pass
    return None


def _rss_kib() -> float:
    value = _status_kib("VmRSS")
    if value is not None:
        return value
    import resource

    return float(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)  # no /proc: the peak stands in


def _reset_peak() -> bool:
    """Reset this process's peak RSS (Linux >= 4.0: ``5`` into clear_refs); False if it can't."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _os_threads() -> int:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Threads:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return threading.active_count()


def _fds() -> int:
    try:
        return len(os.listdir("/proc/self/fd")) - 1  # minus the listing's own
    except OSError:
        return -1


def _pct(sorted_s: List[float], p: float) -> float:
    return sorted_s[min(len(sorted_s) - 1, int(p * len(sorted_s)))]


def _split(total: int, parts: int) -> List[int]:
    base, extra = divmod(total, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


def _server_argv(*extra: str) -> List[str]:
    return [sys.executable, SERVER, *extra]


def _child_env() -> Dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = REPO_ROOT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.pop("PYTHONSTARTUP", None)
    return env


_LIVE: "List[subprocess.Popen[str]]" = []  # the parent's running children, killed on the way out


def _kill_group(proc: "subprocess.Popen[Any]") -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        try:
            proc.kill()
        except OSError:
            pass


def _run(cmd: List[str], timeout: float) -> Tuple[Optional[int], str, str]:
    """Run cmd in its own process group; (returncode or None on timeout, stdout, stderr)."""
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=_child_env(), cwd=REPO_ROOT, start_new_session=True, text=True, errors="replace")
    _LIVE.append(proc)
    try:
        out, err = proc.communicate(timeout=timeout)
        return proc.returncode, out, err
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        out, err = proc.communicate(timeout=10)
        return None, out or "", (err or "") + "\n[timed out after %.0fs]" % timeout
    finally:
        _kill_group(proc)  # the whole group: any grandchild the worker left behind
        _LIVE.remove(proc)


def _tail(text: str, n: int = 4) -> str:
    return " | ".join([ln for ln in (text or "").strip().splitlines() if ln.strip()][-n:])


# --------------------------------------------------------------------------
# Clients (inside a worker): floor, mcpsync and the official SDK
# --------------------------------------------------------------------------


class StdioFloor:
    """The design floor over stdio: one pipe, an Event per request id, a writer lock, one reader thread."""

    def __init__(self, argv: List[str]) -> None:
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.w: IO[bytes] = self.proc.stdin
        self.r: IO[bytes] = self.proc.stdout
        self.lock = threading.Lock()
        self.pending: Dict[int, List[Any]] = {}
        self.ids = itertools.count(1)
        self.w.write(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "floor", "version": "0"}}}).encode() + b"\n")
        self.w.flush()
        json.loads(self.r.readline())
        self.w.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        self.w.flush()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        loads, pending = json.loads, self.pending
        for line in self.r:
            msg = loads(line)
            slot = pending.pop(msg.get("id"), None)
            if slot is not None:
                slot[1] = msg
                slot[0].set()
        for slot in list(pending.values()):
            slot[0].set()

    def request(self, method: str, params: Dict[str, Any]) -> Any:
        rid = next(self.ids)
        slot: List[Any] = [threading.Event(), None]
        self.pending[rid] = slot
        line = json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}).encode() + b"\n"
        with self.lock:
            self.w.write(line)
            self.w.flush()
        if not slot[0].wait(CALL_TIMEOUT) or slot[1] is None:
            raise RuntimeError("no answer to %s" % method)
        return slot[1]["result"]

    def tool(self, name: str, args: Dict[str, Any]) -> str:
        return str(self.request("tools/call", {"name": name, "arguments": args})["content"][0]["text"])

    def list_tools(self) -> int:
        return len(self.request("tools/list", {})["tools"])

    def close(self) -> None:
        try:
            self.w.close()
        except OSError:
            pass
        self.proc.wait(10)


HTTP_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
                "MCP-Protocol-Version": "2025-11-25", "Mcp-Session-Id": "scale"}


class HttpFloor:
    """The HTTP floor: a LIFO pool of up to HTTP_POOL ``http.client`` connections, one POST per call."""

    def __init__(self, url: str) -> None:
        from urllib.parse import urlsplit

        parts = urlsplit(url)
        self.host, self.port, self.path = parts.hostname or "127.0.0.1", parts.port, parts.path
        self.pool: "queue.LifoQueue[http.client.HTTPConnection]" = queue.LifoQueue()
        self.slots = threading.BoundedSemaphore(HTTP_POOL)
        self.ids = itertools.count(1)

    def request(self, method: str, params: Dict[str, Any]) -> Any:
        body = json.dumps({"jsonrpc": "2.0", "id": next(self.ids), "method": method, "params": params}).encode()
        with self.slots:
            try:
                conn = self.pool.get_nowait()
            except queue.Empty:
                conn = http.client.HTTPConnection(self.host, self.port, timeout=CALL_TIMEOUT)
            try:
                conn.request("POST", self.path, body=body, headers=HTTP_HEADERS)
                response = conn.getresponse()
                data = response.read()
                kind = response.getheader("Content-Type", "")
            except BaseException:
                conn.close()
                raise
            self.pool.put(conn)
        if kind.startswith("text/event-stream"):
            start = data.index(b"data: ") + 6
            data = data[start:data.index(b"\n", start)]
        return json.loads(data)["result"]

    tool = StdioFloor.tool
    list_tools = StdioFloor.list_tools

    def close(self) -> None:
        while not self.pool.empty():
            self.pool.get_nowait().close()


class MCPSync:
    def __init__(self, target: Any, **options: Any) -> None:
        import mcpsync

        self.client = mcpsync.connect(target, timeout=CALL_TIMEOUT, **options)

    def tool(self, name: str, args: Dict[str, Any]) -> str:
        return self.client.call_tool(name, args).text

    def list_tools(self) -> int:
        return len(self.client.list_tools(refresh=True))

    def close(self) -> None:
        self.client.close()


class HttpServer:
    """scale_server.py --http in a child of this worker (same process group), on 127.0.0.1:ephemeral."""

    def __init__(self) -> None:
        self.dir = tempfile.mkdtemp(prefix="mcpsync-scale-")
        port_file = os.path.join(self.dir, "port")
        self.proc = subprocess.Popen(_server_argv("--http", port_file), stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while not os.path.exists(port_file):
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise RuntimeError("the HTTP server did not start")
            time.sleep(0.02)
        with open(port_file) as f:
            self.port = int(f.read())

    def url(self, mode: str) -> str:
        return "http://127.0.0.1:%d/%s" % (self.port, mode)

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait(10)
        shutil.rmtree(self.dir, ignore_errors=True)


class SyncTarget:
    """Opens the client a worker asked for (and its HTTP server); closes both."""

    def __init__(self, client: str, transport: str, server_args: Tuple[str, ...] = (), **options: Any) -> None:
        self.http: Optional[HttpServer] = None
        if transport == "stdio":
            argv = _server_argv(*server_args)
            self.client: Any = StdioFloor(argv) if client == "floor" else MCPSync(argv, **options)
        else:
            self.http = HttpServer()
            url = self.http.url("sse" if transport == "sse" else "json")
            self.client = HttpFloor(url) if client == "floor" else MCPSync({"type": "http", "url": url}, **options)

    def close(self) -> None:
        try:
            self.client.close()
        finally:
            if self.http is not None:
                self.http.stop()


class Official:
    """The official SDK (async): stdio_client + ClientSession, or mcp.Client over HTTP."""

    def __init__(self, transport: str, server_args: Tuple[str, ...] = ()) -> None:
        self.transport, self.server_args = transport, server_args
        self.http: Optional[HttpServer] = None

    async def __aenter__(self) -> "Official":
        import contextlib

        self.stack = contextlib.AsyncExitStack()
        await self.stack.__aenter__()
        if self.transport == "stdio":
            from mcp import ClientSession, StdioServerParameters
            from mcp.client.stdio import stdio_client

            params = StdioServerParameters(command=sys.executable, args=[SERVER, *self.server_args])
            read, write = await self.stack.enter_async_context(stdio_client(params))
            self.session = await self.stack.enter_async_context(
                ClientSession(read, write, read_timeout_seconds=CALL_TIMEOUT))
            await self.session.initialize()
        else:
            from mcp import Client

            self.http = HttpServer()
            url = self.http.url("sse" if self.transport == "sse" else "json")
            self.session = await self.stack.enter_async_context(Client(url, mode="legacy"))  # type: ignore[arg-type]
        return self

    async def __aexit__(self, *exc: Any) -> None:
        try:
            await self.stack.__aexit__(*exc)
        finally:
            if self.http is not None:
                self.http.stop()

    async def tool(self, name: str, args: Dict[str, Any]) -> str:
        result = await self.session.call_tool(name, args)
        return str(getattr(result.content[0], "text", ""))

    async def list_tools(self) -> int:
        return len((await self.session.list_tools()).tools)


# --------------------------------------------------------------------------
# Workers (``--worker SPEC_JSON``, each in a fresh child process)
# --------------------------------------------------------------------------


def _drive_threads(call: Callable[[], Any], threads: int, total: int) -> Dict[str, float]:
    """``total`` calls spread over ``threads`` OS threads released together; per-call latency kept."""
    lat: List[List[float]] = [[] for _ in range(threads)]
    errors: List[str] = []
    barrier = threading.Barrier(threads + 1)
    perf = time.perf_counter

    def work(k: int, mine: List[float]) -> None:
        try:
            barrier.wait(timeout=120)
            for _ in range(k):
                t = perf()
                call()
                mine.append(perf() - t)
        except BaseException as exc:  # reported, not raised in a thread
            errors.append(repr(exc))

    pool = [threading.Thread(target=work, args=(k, lat[i]), daemon=True)
            for i, k in enumerate(_split(total, threads))]
    for th in pool:
        th.start()
    barrier.wait(timeout=120)
    c0, t0 = time.process_time(), perf()
    for th in pool:
        th.join(CALL_TIMEOUT)
    wall, cpu = perf() - t0, time.process_time() - c0
    if errors or any(th.is_alive() for th in pool):
        raise RuntimeError("%d-thread phase failed: %s" % (threads, "; ".join(errors[:3]) or "threads hung"))
    samples = sorted(itertools.chain.from_iterable(lat))
    return {"threads": threads, "calls": total, "calls_per_s": total / wall, "p50_us": _pct(samples, 0.5) * 1e6,
            "p99_us": _pct(samples, 0.99) * 1e6, "cpu_per_call_us": cpu / total * 1e6}


def _w_threads(spec: Dict[str, Any]) -> Dict[str, Any]:
    levels, calls, per_thread = spec["levels"], spec["calls"], spec.get("per_thread", PER_THREAD)
    if spec["client"] == "official":
        import asyncio

        async def main() -> List[Dict[str, float]]:
            async with Official(spec["transport"]) as o:
                for _ in range(100):
                    await o.tool("echo", ECHO)
                out = []
                for n in levels:
                    total = max(calls, per_thread * n)
                    lat: List[float] = []
                    perf = time.perf_counter

                    async def work(k: int) -> None:
                        for _ in range(k):
                            t = perf()
                            await o.tool("echo", ECHO)
                            lat.append(perf() - t)

                    c0, t0 = time.process_time(), perf()
                    await asyncio.gather(*(work(k) for k in _split(total, n)))
                    wall, cpu = perf() - t0, time.process_time() - c0
                    lat.sort()
                    out.append({"threads": n, "calls": total, "calls_per_s": total / wall,
                                "p50_us": _pct(lat, 0.5) * 1e6, "p99_us": _pct(lat, 0.99) * 1e6,
                                "cpu_per_call_us": cpu / total * 1e6})
                return out

        return {"levels": asyncio.run(main())}
    target = SyncTarget(spec["client"], spec["transport"])
    try:
        client = target.client
        for _ in range(100):
            client.tool("echo", ECHO)
        return {"levels": [_drive_threads(lambda: client.tool("echo", ECHO), n, max(calls, per_thread * n))
                           for n in levels]}
    finally:
        target.close()


def _fresh_latency(call: Callable[[], Any], n: int) -> Dict[str, float]:
    lat = []
    for _ in range(n):
        t = time.perf_counter()
        call()
        lat.append(time.perf_counter() - t)
    lat.sort()
    return {"median_us": statistics.median(lat) * 1e6, "p99_us": _pct(lat, 0.99) * 1e6}


def _w_pending(spec: Dict[str, Any]) -> Dict[str, Any]:
    levels, fresh = spec["levels"], spec["fresh"]
    out: List[Dict[str, Any]] = []
    if spec["client"] == "bare":  # the cost of a parked thread alone: no connection, no request
        for n in levels:
            gate = threading.Event()
            gc.collect()
            rss0 = _rss_kib()
            pool = [threading.Thread(target=gate.wait, daemon=True) for _ in range(n)]
            for th in pool:
                th.start()
            rss1 = _rss_kib()
            gate.set()
            for th in pool:
                th.join()
            out.append({"pending": n, "kib_per_pending": (rss1 - rss0) / n})
        return {"levels": out}
    if spec["client"] == "official":
        import asyncio

        async def main() -> None:
            async with Official("stdio") as o:
                for _ in range(50):
                    await o.tool("echo", ECHO)
                for n in levels:
                    lat = []
                    for _ in range(fresh):
                        t = time.perf_counter()
                        await o.tool("echo", ECHO)
                        lat.append(time.perf_counter() - t)
                    idle = statistics.median(lat) * 1e6
                    gc.collect()
                    rss0 = _rss_kib()
                    holders = [asyncio.ensure_future(o.tool("hold", {})) for _ in range(n)]
                    deadline = time.monotonic() + 120
                    while int(await o.tool("held", {})) < n:
                        if time.monotonic() > deadline:
                            raise RuntimeError("the server never held %d requests" % n)
                        await asyncio.sleep(0.01)
                    rss1 = _rss_kib()
                    lat = []
                    for _ in range(fresh):
                        t = time.perf_counter()
                        await o.tool("echo", ECHO)
                        lat.append(time.perf_counter() - t)
                    lat.sort()
                    t = time.perf_counter()
                    await o.tool("release", {})
                    await asyncio.gather(*holders)
                    out.append({"pending": n, "kib_per_pending": (rss1 - rss0) / n, "idle_us": idle,
                                "fresh_median_us": statistics.median(lat) * 1e6, "fresh_p99_us": _pct(lat, 0.99) * 1e6,
                                "release_s": time.perf_counter() - t})

        asyncio.run(main())
        return {"levels": out}
    target = SyncTarget(spec["client"], "stdio")
    try:
        client = target.client
        for _ in range(50):
            client.tool("echo", ECHO)
        for n in levels:
            idle = _fresh_latency(lambda: client.tool("echo", ECHO), fresh)["median_us"]
            errors: List[str] = []

            def hold() -> None:
                try:
                    client.tool("hold", {})
                except BaseException as exc:
                    errors.append(repr(exc))

            gc.collect()
            rss0 = _rss_kib()
            pool = [threading.Thread(target=hold, daemon=True) for _ in range(n)]
            for th in pool:
                th.start()
            deadline = time.monotonic() + 120
            while int(client.tool("held", {})) < n:
                if time.monotonic() > deadline or errors:
                    raise RuntimeError("the server never held %d requests: %s" % (n, errors[:2]))
                time.sleep(0.01)
            rss1 = _rss_kib()
            busy = _fresh_latency(lambda: client.tool("echo", ECHO), fresh)
            t = time.perf_counter()
            client.tool("release", {})
            for th in pool:
                th.join(CALL_TIMEOUT)
            if errors:
                raise RuntimeError("held calls failed: %s" % errors[:2])
            out.append({"pending": n, "kib_per_pending": (rss1 - rss0) / n, "idle_us": idle,
                        "fresh_median_us": busy["median_us"], "fresh_p99_us": busy["p99_us"],
                        "release_s": time.perf_counter() - t})
        return {"levels": out}
    finally:
        target.close()


def _manager_argv(i: int) -> List[str]:
    # -S: no site import; the cheapest interpreter start for a stdlib-only server
    return ["-S", SERVER, "--name", "s%03d" % i, "--tools", "5"]


def _w_manager(spec: Dict[str, Any]) -> Dict[str, Any]:
    n = spec["servers"]
    res: Dict[str, Any] = {"servers": n}
    if spec["client"] == "official":
        import asyncio

        from mcp import StdioServerParameters
        from mcp.client.session_group import ClientSessionGroup

        async def main() -> None:
            _reset_peak()
            rss0, fds0, th0 = _rss_kib(), _fds(), _os_threads()
            t0, c0 = time.perf_counter(), time.process_time()
            group = ClientSessionGroup(component_name_hook=lambda name, info: "%s_%s" % (info.name, name))
            await group.__aenter__()
            try:
                # One after another, as documented: each connect enters anyio cancel scopes that must
                # be left by the task that entered them, so asyncio.gather over connects can't close.
                for i in range(n):
                    await group.connect_to_server(StdioServerParameters(command=sys.executable,
                                                                        args=_manager_argv(i)))
                res["ready_s"], res["cpu_s"] = time.perf_counter() - t0, time.process_time() - c0
                res["tools"] = len(group.tools)
                res["rss_now_kib"], res["fds"], res["os_threads"] = _rss_kib(), _fds(), _os_threads()
            finally:
                t = time.perf_counter()
                await group.__aexit__(None, None, None)
                res["close_s"] = time.perf_counter() - t
            res.update(rss0_kib=rss0, fds0=fds0, os_threads0=th0, peak_kib=_status_kib("VmHWM"))

        asyncio.run(main())
    else:
        from mcpsync.manager import Manager

        cfg = {"mcpServers": {"s%03d" % i: {"command": sys.executable, "args": _manager_argv(i)} for i in range(n)}}
        _reset_peak()
        rss0, fds0, th0 = _rss_kib(), _fds(), _os_threads()
        t0, c0 = time.perf_counter(), time.process_time()
        manager = Manager(cfg, cache=False)
        try:
            manager.connect_all(startup_timeout=CALL_TIMEOUT)
            res["ready_s"], res["cpu_s"] = time.perf_counter() - t0, time.process_time() - c0
            res["tools"] = len(manager.tools())
            res["rss_now_kib"], res["fds"], res["os_threads"] = _rss_kib(), _fds(), _os_threads()
            names: Dict[str, int] = {}
            for th in threading.enumerate():
                key = th.name.rstrip("0123456789").rstrip("-_ ") or th.name
                for i in range(n):
                    key = key.replace("s%03d" % i, "<server>")
                names[key] = names.get(key, 0) + 1
            res["thread_names"] = names
            # Threads named for one server (its own), apart from the manager's shared ones.
            res["server_threads"] = sum(count for key, count in names.items() if "<server>" in key)
        finally:
            t = time.perf_counter()
            manager.close()
            res["close_s"] = time.perf_counter() - t
        res.update(rss0_kib=rss0, fds0=fds0, os_threads0=th0, peak_kib=_status_kib("VmHWM"))
        time.sleep(0.2)
        res["os_threads_after_close"], res["fds_after_close"] = _os_threads(), _fds()
    return res


def _reps(size: int) -> int:
    return 3 if size <= 1_000_000 else 2 if size <= 10_000_000 else 1


def _projected_past(done: List[Dict[str, Any]], size: int, limit: float) -> str:
    """Why ``size`` is not worth trying: the time grown from the last two sizes at their measured
    rate (time ~ size**k) would pass ``limit``; "" when it would not, or can't be told."""
    if len(done) < 2 or "seconds" not in done[-1] or "seconds" not in done[-2]:
        return ""
    import math

    (s1, t1), (s2, t2) = [(p["bytes"], p["seconds"]) for p in done[-2:]]
    k = max(1.0, math.log(t2 / t1) / math.log(s2 / s1))
    projected = t2 * (size / s2) ** k
    if projected <= limit:
        return ""
    return "not run: time grew as size^%.2f, projected %.0f s > %.0f s" % (k, projected, limit)


def _w_results(spec: Dict[str, Any]) -> Dict[str, Any]:
    sizes, transport = spec["sizes"], spec["transport"]
    out: List[Dict[str, Any]] = []
    can_reset = _reset_peak()

    def point(size: int, times: List[float], base: float) -> Dict[str, Any]:
        peak = _status_kib("VmHWM") if can_reset else None
        t = statistics.median(times)
        return {"bytes": size, "seconds": t, "mb_per_s": size / 1e6 / t,
                "peak_x": (peak - base) * 1024 / size if peak is not None else None}

    if spec["client"] == "official":
        import asyncio

        async def main() -> None:
            async with Official(transport) as o:
                for _ in range(3):
                    await o.tool("big", {"bytes": 1000})
                for size in sizes:
                    skip = _projected_past(out, size, spec["call_timeout"])
                    if skip:
                        out.append({"bytes": size, "error": skip})
                        return
                    gc.collect()
                    _reset_peak()
                    base = _rss_kib()
                    times = []
                    for _ in range(_reps(size)):
                        t = time.perf_counter()
                        try:
                            text = await asyncio.wait_for(o.tool("big", {"bytes": size}), spec["call_timeout"])
                        except asyncio.TimeoutError:
                            out.append({"bytes": size, "error": "no answer in %.0f s" % spec["call_timeout"]})
                            return
                        except Exception as exc:  # e.g. a size limit: it can't do this work, nor any larger
                            out.append({"bytes": size, "error": _short_error(exc)})
                            return
                        times.append(time.perf_counter() - t)
                        if len(text) != size:
                            raise RuntimeError("short result")
                        del text
                    out.append(point(size, times, base))

        asyncio.run(main())
        return {"sizes": out}
    options: Dict[str, Any] = {} if spec["client"] == "floor" else {"max_message_size": BIG_LIMIT}
    target = SyncTarget(spec["client"], transport, **options)
    try:
        client = target.client
        for _ in range(3):
            client.tool("big", {"bytes": 1000})
        for size in sizes:
            gc.collect()
            _reset_peak()
            base = _rss_kib()
            times = []
            for _ in range(_reps(size)):
                t = time.perf_counter()
                text = client.tool("big", {"bytes": size})
                times.append(time.perf_counter() - t)
                if len(text) != size:
                    raise RuntimeError("short result")
                del text
            out.append(point(size, times, base))
        return {"sizes": out}
    finally:
        target.close()


def _short_error(exc: BaseException) -> str:
    """The innermost message of ``exc`` (anyio wraps errors in exception groups)."""
    while getattr(exc, "exceptions", None):
        exc = exc.exceptions[0]  # type: ignore[attr-defined]
    return ("%s: %s" % (type(exc).__name__, exc))[:120]


def _median_time(fn: Callable[[], Any], reps: int) -> float:
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def _w_catalog(spec: Dict[str, Any]) -> Dict[str, Any]:
    out: List[Dict[str, Any]] = []
    for count in spec["tools"]:
        reps = 5 if count <= 1000 else 3
        server_args = ("--name", "cat", "--tools", str(count))
        row: Dict[str, Any] = {"tools": count}
        if spec["client"] == "official":
            import asyncio

            async def main() -> None:
                async with Official("stdio", server_args) as o:
                    if await o.list_tools() != count:
                        raise RuntimeError("wrong tool count")
                    times = []
                    for _ in range(reps):
                        t = time.perf_counter()
                        await o.list_tools()
                        times.append(time.perf_counter() - t)
                    row["list_s"] = statistics.median(times)

            asyncio.run(main())
            out.append(row)
            continue
        target = SyncTarget(spec["client"], "stdio", server_args)
        try:
            client = target.client
            if client.list_tools() != count:
                raise RuntimeError("wrong tool count")
            row["list_s"] = _median_time(client.list_tools, reps)
            if spec["client"] == "mcpsync":
                from mcpsync._fleet.index import ToolIndex
                from mcpsync.manager import Manager

                tools = client.client.list_tools()
                row["index_s"] = _median_time(lambda: ToolIndex().apply_locked(["cat"], "cat", tools, False), reps)
                dicts = [tool.to_dict() for tool in tools]
                with tempfile.TemporaryDirectory(prefix="mcpsync-scale-") as tmp:
                    cache = Manager(None, cache=tmp).cache  # the manager's own cache object, built as it builds it
                    assert cache is not None
                    row["cache_write_s"] = _median_time(lambda: cache.put("cat", "hash", dicts), reps)
                    row["cache_read_s"] = _median_time(lambda: cache.get("cat", "hash"), reps)
                    cfg = {"mcpServers": {"cat": {"command": sys.executable, "args": [SERVER, *server_args]}}}
                    manager = Manager(cfg, cache=tmp)
                    try:
                        manager.connect_all(startup_timeout=CALL_TIMEOUT)
                        if len(manager.tools()) != count:
                            raise RuntimeError("the manager lists %d tools" % len(manager.tools()))
                        row["manager_tools_s"] = _median_time(manager.tools, reps)
                    finally:
                        manager.close()
        finally:
            target.close()
        out.append(row)
    return {"tools": out}


WORKERS: Dict[str, Callable[[Dict[str, Any]], Dict[str, Any]]] = {
    "threads": _w_threads, "pending": _w_pending, "manager": _w_manager, "results": _w_results,
    "catalog": _w_catalog,
}


def _worker_main(spec: Dict[str, Any]) -> int:
    # A hung worker dumps its stacks and exits by itself, before the parent's timeout kills it.
    faulthandler.dump_traceback_later(max(5.0, spec["timeout"] - 5.0), exit=True)
    parent = os.getppid()

    def orphaned() -> None:  # the parent died (Ctrl-C, kill): don't outlive it
        while True:
            time.sleep(0.5)
            if os.getppid() != parent:
                os._exit(1)

    threading.Thread(target=orphaned, daemon=True).start()
    t = time.perf_counter()
    try:
        res = WORKERS[spec["kind"]](spec)
        res["ok"] = True
    except BaseException as exc:  # report every failure, including a missing library
        import traceback

        res = {"ok": False, "error": "%s: %s" % (type(exc).__name__, exc), "trace": traceback.format_exc()[-2000:]}
    res["worker_s"] = time.perf_counter() - t
    print(RESULT_MARK + json.dumps(res), flush=True)
    os._exit(0)  # no waiting on daemon threads or on a stuck interpreter shutdown


# --------------------------------------------------------------------------
# Parent: run the workers, aggregate, report
# --------------------------------------------------------------------------


def _run_worker(spec: Dict[str, Any], timeout: float) -> Dict[str, Any]:
    spec = dict(spec, timeout=timeout)
    rc, out, err = _run([sys.executable, os.path.abspath(__file__), "--worker", json.dumps(spec)], timeout)
    for line in out.splitlines():
        if line.startswith(RESULT_MARK):
            parsed: Dict[str, Any] = json.loads(line[len(RESULT_MARK):])
            return parsed
    return {"ok": False, "error": "timed out" if rc is None else "worker exited %s without a result" % rc,
            "stderr_tail": _tail(err)}


def _probe(module: str) -> Tuple[bool, str]:
    rc, out, err = _run([sys.executable, "-c", "import %s" % module], 60)
    return rc == 0, "" if rc == 0 else _tail(err, 1)


def _median_rows(runs: List[List[Dict[str, Any]]], key: str) -> List[Dict[str, Any]]:
    """Per point (matched on ``key``), the median of every numeric field across rounds."""
    points: Dict[Any, List[Dict[str, Any]]] = {}
    for rows in runs:
        for row in rows:
            points.setdefault(row[key], []).append(row)
    merged = []
    for value, rows in points.items():
        m: Dict[str, Any] = {key: value, "rounds": len(rows)}
        for field in rows[0]:
            if field == key:
                continue
            nums = [r[field] for r in rows if isinstance(r.get(field), (int, float)) and not isinstance(r[field], bool)]
            if nums:
                m[field] = statistics.median(nums)
            elif field not in m:
                m[field] = rows[0][field]
        merged.append(m)
    return merged


def _rounds(section: str, units: List[Tuple[str, Dict[str, Any]]], rounds: int, timeout: float,
            list_key: str, point_key: str) -> Dict[str, Any]:
    """Run every unit once per round, rotating their order; the median of each point across rounds."""
    runs: Dict[str, List[List[Dict[str, Any]]]] = {name: [] for name, _ in units}
    failed: Dict[str, Dict[str, Any]] = {}
    for rnd in range(rounds):
        order = units[rnd % len(units):] + units[:rnd % len(units)]
        for name, spec in order:
            if name in failed:
                continue
            _log("[%s] %s, round %d/%d ..." % (section, name, rnd + 1, rounds))
            res = _run_worker(spec, timeout)
            if res.get("ok"):
                runs[name].append(res[list_key])
            else:
                failed[name] = res
                _log("[%s] %s FAILED: %s %s" % (section, name, res.get("error"), res.get("stderr_tail", "")))
    out: Dict[str, Any] = {}
    for name, _ in units:
        if name in failed and not runs[name]:
            out[name] = {"ok": False, "error": failed[name].get("error"),
                         "detail": failed[name].get("trace") or failed[name].get("stderr_tail")}
        else:
            out[name] = {"ok": True, "rounds": len(runs[name]), "points": _median_rows(runs[name], point_key)}
            if name in failed:
                out[name]["error_later_round"] = failed[name].get("error")
    return out


def _clients(official: bool) -> List[str]:
    return ["floor", "mcpsync"] + (["official"] if official else [])


def threads_units(plan: Dict[str, Any], official: bool) -> List[Tuple[str, Dict[str, Any]]]:
    """The threads section's units: (name, worker spec) per client and transport."""
    # At least PER_THREAD calls per thread, on both transports and for every client (the official SDK's
    # tasks too): with two each, 1,024 threads spent the phase being released from the barrier and
    # draining, so the figure measured thread start-up, not throughput.
    return [("%s/%s" % (c, tr), {"kind": "threads", "client": c, "transport": tr, "levels": plan["threads"],
                                 "calls": plan["calls" if tr == "stdio" else "http_calls"],
                                 "per_thread": PER_THREAD})
            for tr in ("stdio", "http") for c in _clients(official)]


def _section_threads(plan: Dict[str, Any], args: argparse.Namespace, official: bool) -> Dict[str, Any]:
    return _rounds("threads", threads_units(plan, official), plan["rounds"], args.timeout, "levels", "threads")


def _section_pending(plan: Dict[str, Any], args: argparse.Namespace, official: bool) -> Dict[str, Any]:
    units = [(c, {"kind": "pending", "client": c, "levels": plan["pending"], "fresh": plan["fresh"]})
             for c in ["bare"] + _clients(official)]
    rounds = max(1, min(plan["rounds"], 2))  # 10,000 threads per unit: two rounds at most
    return _rounds("pending", units, rounds, args.timeout, "levels", "pending")


def _spawn_cost(runs: int = 5) -> Dict[str, float]:
    """CPU and wall time of starting one cheap server that exits at once (stdin at EOF)."""
    cpu, wall = [], []
    for _ in range(runs):
        t = time.perf_counter()
        proc = subprocess.Popen([sys.executable, *_manager_argv(0)], stdin=subprocess.DEVNULL)
        _, _, usage = os.wait4(proc.pid, 0)
        proc.returncode = 0
        wall.append(time.perf_counter() - t)
        cpu.append(usage.ru_utime + usage.ru_stime)
    return {"cpu_s": statistics.median(cpu), "wall_s": statistics.median(wall)}


def _section_manager(plan: Dict[str, Any], args: argparse.Namespace, official: bool) -> Dict[str, Any]:
    units = [("%s/%d" % (c, n), {"kind": "manager", "client": c, "servers": n})
             for n in plan["servers"] for c in ["mcpsync"] + (["official"] if official else [])]
    runs: Dict[str, List[Dict[str, Any]]] = {name: [] for name, _ in units}
    errors: Dict[str, str] = {}
    rounds = max(1, min(plan["rounds"], 2))  # 100 interpreters per unit: two rounds at most
    for rnd in range(rounds):
        order = units[rnd % len(units):] + units[:rnd % len(units)]
        for name, spec in order:
            if name in errors:
                continue
            _log("[manager] %s servers, round %d/%d ..." % (name, rnd + 1, rounds))
            res = _run_worker(spec, args.timeout)
            if res.get("ok"):
                runs[name].append(res)
            else:
                errors[name] = "%s %s" % (res.get("error"), res.get("stderr_tail", "") or res.get("trace", "")[-300:])
                _log("[manager] %s FAILED: %s" % (name, errors[name]))
    out: Dict[str, Any] = {"spawn": _spawn_cost(), "cores": os.cpu_count() or 1}
    for client in ["mcpsync"] + (["official"] if official else []):
        points = []
        for n in plan["servers"]:
            name = "%s/%d" % (client, n)
            if not runs[name]:
                points.append({"servers": n, "error": errors.get(name, "not run")})
                continue
            merged = _median_rows([[r] for r in runs[name]], "servers")[0]
            merged.pop("ok", None)
            merged["thread_names"] = runs[name][0].get("thread_names")
            points.append(merged)
        out[client] = {"ok": True, "points": points}
    return out


def _section_results(plan: Dict[str, Any], args: argparse.Namespace, official: bool) -> Dict[str, Any]:
    units = [("%s/%s" % (c, tr), {"kind": "results", "client": c, "transport": tr, "sizes": plan["sizes"],
                                  "call_timeout": 20.0})
             for tr in ("stdio", "json", "sse") for c in _clients(official)]
    rounds = max(1, min(plan["rounds"], 2))  # the big results dominate: two rounds at most
    return _rounds("results", units, rounds, args.timeout, "sizes", "bytes")


def _section_catalog(plan: Dict[str, Any], args: argparse.Namespace, official: bool) -> Dict[str, Any]:
    units = [(c, {"kind": "catalog", "client": c, "tools": plan["tools"]}) for c in _clients(official)]
    return _rounds("catalog", units, plan["rounds"], args.timeout, "tools", "tools")


# --------------------------------------------------------------------------
# Targets and the report
# --------------------------------------------------------------------------


def _points(section: Dict[str, Any], name: str) -> Dict[Any, Dict[str, Any]]:
    unit = section.get(name) or {}
    if not unit.get("ok"):
        return {}
    key = next((k for k in ("threads", "pending", "servers", "bytes", "tools") if unit["points"]
                and k in unit["points"][0]), None)
    return {p[key]: p for p in unit["points"]} if key else {}


def _target(rows: List[Dict[str, Any]], name: str, value: Optional[float], op: str, limit: float,
            detail: str = "") -> None:
    if value is None:
        rows.append({"name": name, "status": "SKIP", "value": None, "op": op, "limit": limit,
                     "detail": detail or "not measured"})
        return
    ok = value >= limit if op == ">=" else value <= limit
    rows.append({"name": name, "status": "PASS" if ok else "MISS", "value": value, "op": op, "limit": limit,
                 "detail": detail})


def _ratio(a: Optional[float], b: Optional[float]) -> Optional[float]:
    return a / b if a is not None and b else None


def _get(points: Dict[Any, Dict[str, Any]], key: Any, field: str) -> Optional[float]:
    value = (points.get(key) or {}).get(field)
    return float(value) if isinstance(value, (int, float)) else None


def _targets(results: Dict[str, Any]) -> List[Dict[str, Any]]:
    rows: List[Dict[str, Any]] = []
    s = results["sections"]
    if "threads" in s:
        sec = s["threads"]
        for tr in ("stdio", "http"):
            ours = _points(sec, "mcpsync/" + tr)
            top = max(ours) if ours else None
            if top is not None and top > 8:
                _target(rows, "threads %s: throughput %d/8 threads" % (tr, top),
                        _ratio(_get(ours, top, "calls_per_s"), _get(ours, 8, "calls_per_s")), ">=", 0.9,
                        "does not fall (0.1 allowed for noise)")
            theirs = _points(sec, "official/" + tr)
            common = sorted(set(ours) & set(theirs))
            worst = min((_ratio(_get(ours, n, "calls_per_s"), _get(theirs, n, "calls_per_s")) or 0.0, n)
                        for n in common) if common else None
            _target(rows, "threads %s: mcpsync/official throughput, every point" % tr,
                    worst[0] if worst else None, ">=", 1.0, "worst at %d" % worst[1] if worst else "")
        ours, theirs, floor = (_points(sec, "mcpsync/stdio"), _points(sec, "official/stdio"),
                               _points(sec, "floor/stdio"))
        _target(rows, "threads stdio: 8-thread throughput mcpsync/official",
                _ratio(_get(ours, 8, "calls_per_s"), _get(theirs, 8, "calls_per_s")), ">=", 4.0)
        _target(rows, "threads stdio: 8-thread throughput mcpsync/threaded floor",
                _ratio(_get(ours, 8, "calls_per_s"), _get(floor, 8, "calls_per_s")), ">=", 1.5)
    if "pending" in s:
        ours = _points(s["pending"], "mcpsync")
        top = max(ours) if ours else None
        if top is not None:
            _target(rows, "pending: fresh-call latency with %d pending / idle" % top,
                    _ratio(_get(ours, top, "fresh_median_us"), _get(ours, top, "idle_us")), "<=", 2.0)
            theirs = _points(s["pending"], "official")
            _target(rows, "pending: memory per pending request mcpsync/official at %d" % top,
                    _ratio(_get(ours, top, "kib_per_pending"), _get(theirs, top, "kib_per_pending")), "<=", 1.0,
                    "ahead of the official SDK (threads vs tasks)")
    if "manager" in s:
        sec = s["manager"]
        ours = {p["servers"]: p for p in (sec.get("mcpsync") or {}).get("points", []) if "ready_s" in p}
        if ours:
            top, single = max(ours), ours.get(min(ours))
            spawn = sec["spawn"]["cpu_s"]
            if single is not None and top > 1:
                budget = single["ready_s"] + top * spawn / sec["cores"]
                _target(rows, "manager: %d servers ready / (single start + spawn CPU / %d cores)" % (top, sec["cores"]),
                        ours[top]["ready_s"] / budget, "<=", 1.5,
                        "budget %.2f s = %.3f + %d x %.3f / %d" % (budget, single["ready_s"], top, spawn, sec["cores"]))
            p = ours[top]
            _target(rows, "manager: client RSS per server at %d (MiB)" % top,
                    (p["rss_now_kib"] - p["rss0_kib"]) / top / 1024.0, "<=", 2.0)
            own = p.get("server_threads")
            added = p["os_threads"] - p["os_threads0"]
            _target(rows, "manager: client threads of each server at %d" % top,
                    own / top if own is not None else None, "<=", 2.0,
                    "a stdout reader and a stderr reader are what a stdio server needs; besides them %d shared "
                    "(the manager's connect pool, the exit watcher): %.2f per server in all"
                    % (added - own, added / top) if own is not None else "")
            theirs = {q["servers"]: q for q in (sec.get("official") or {}).get("points", []) if "ready_s" in q}
            common = sorted(set(ours) & set(theirs))
            worst = max((ours[n]["ready_s"] / theirs[n]["ready_s"], n) for n in common) if common else None
            _target(rows, "manager: ready time mcpsync/official, every point", worst[0] if worst else None, "<=", 1.0,
                    "worst at %d servers" % worst[1] if worst else "")
    if "results" in s:
        sec = s["results"]
        for tr in ("stdio", "json", "sse"):
            ours = _points(sec, "mcpsync/" + tr)
            sizes = sorted(k for k, p in ours.items() if "seconds" in p)
            if not sizes:
                _target(rows, "results %s" % tr, None, "<=", 1.0)
                continue
            top, ref = sizes[-1], min(sizes, key=lambda k: abs(k - 1_000_000))
            if top > ref:
                _target(rows, "results %s: time per byte at %s / at %s" % (tr, _size(top), _size(ref)),
                        _ratio(_get(ours, top, "seconds") / top, _get(ours, ref, "seconds") / ref), "<=", 1.5,
                        "linear in the size")
            _target(rows, "results %s: peak RSS / result size at %s" % (tr, _size(top)),
                    _get(ours, top, "peak_x"), "<=", 3.0)
            theirs = _points(sec, "official/" + tr)
            common = [k for k in sizes if "seconds" in (theirs.get(k) or {})]
            worst = min((_ratio(_get(ours, k, "mb_per_s"), _get(theirs, k, "mb_per_s")) or 0.0, k)
                        for k in common) if common else None
            _target(rows, "results %s: MB/s mcpsync/official, every point" % tr, worst[0] if worst else None,
                    ">=", 1.0, "worst at %s" % _size(worst[1]) if worst else "")
    if "catalog" in s:
        ours = _points(s["catalog"], "mcpsync")
        counts = sorted(ours)
        if len(counts) >= 2:
            top, ref = counts[-1], counts[-2]
            for field, label in (("list_s", "list_tools"), ("index_s", "index + qualified names"),
                                 ("cache_write_s", "cache write"), ("cache_read_s", "cache read")):
                per_top, per_ref = _get(ours, top, field), _get(ours, ref, field)
                _target(rows, "catalog: %s time per tool at %d / at %d" % (label, top, ref),
                        _ratio(per_top / top if per_top is not None else None,
                               per_ref / ref if per_ref is not None else None), "<=", 1.5, "linear in the tools")
        theirs = _points(s["catalog"], "official")
        common = sorted(set(ours) & set(theirs))
        worst = max((_ratio(_get(ours, n, "list_s"), _get(theirs, n, "list_s")) or 0.0, n)
                    for n in common) if common else None
        _target(rows, "catalog: list_tools time mcpsync/official, every point", worst[0] if worst else None,
                "<=", 1.0, "worst at %d tools" % worst[1] if worst else "")
    return rows


def _size(n: float) -> str:
    for unit, div in (("MB", 1e6), ("KB", 1e3)):
        if n >= div:
            return "%g %s" % (n / div, unit)
    return "%d B" % n


def _fmt(v: Any, spec: str = "{:,.1f}") -> str:
    return "-" if not isinstance(v, (int, float)) else spec.format(v)


def _table(title: str, header: List[str], rows: List[List[str]]) -> None:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
    print()
    print(title)
    line = "  ".join(h.rjust(w) if i else h.ljust(w) for i, (h, w) in enumerate(zip(header, widths)))
    print(line)
    print("-" * len(line))
    for r in rows:
        print("  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))))


def _failures(sec: Dict[str, Any]) -> None:
    for name, unit in sec.items():
        if isinstance(unit, dict) and unit.get("ok") is False:
            print("  %s FAILED: %s" % (name, unit.get("error")))


def _print_report(results: Dict[str, Any]) -> None:
    s, meta = results["sections"], results["meta"]
    print("\nmcpsync scale benchmark (%s mode): python %s, %s, %s CPUs, mcp %s; medians over %d round(s)"
          % (meta["mode"], meta["python"], meta["platform"], meta["cpus"], meta["mcp"] or "not installed",
             meta["rounds"]))
    if "threads" in s:
        sec = s["threads"]
        rows = []
        for name in sec:
            for n, p in sorted(_points(sec, name).items()):
                rows.append([name, str(n), _fmt(p["calls_per_s"], "{:,.0f}"), _fmt(p["p50_us"], "{:,.0f}"),
                             _fmt(p["p99_us"], "{:,.0f}"), _fmt(p["cpu_per_call_us"], "{:,.1f}")])
        _table("1. threads on one client (official SDK: asyncio tasks)",
               ["client/transport", "threads", "calls/s", "p50 us", "p99 us", "CPU/call us"], rows)
        _failures(sec)
    if "pending" in s:
        sec = s["pending"]
        rows = []
        for name in sec:
            for n, p in sorted(_points(sec, name).items()):
                rows.append([name, "{:,}".format(n), _fmt(p.get("kib_per_pending")), _fmt(p.get("idle_us"), "{:,.0f}"),
                             _fmt(p.get("fresh_median_us"), "{:,.0f}"), _fmt(p.get("fresh_p99_us"), "{:,.0f}"),
                             _fmt(_ratio(p.get("fresh_median_us"), p.get("idle_us")), "{:.2f}"),
                             _fmt(p.get("release_s"), "{:.3f}")])
        _table("2. requests in flight on one stdio connection (bare = parked threads, no client)",
               ["client", "pending", "KiB/pending", "idle us", "fresh us", "fresh p99", "fresh/idle", "release s"],
               rows)
        _failures(sec)
    if "manager" in s:
        sec = s["manager"]
        rows = []
        for client in ("mcpsync", "official"):
            for p in (sec.get(client) or {}).get("points", []):
                n = p["servers"]
                if "ready_s" not in p:
                    rows.append([client, str(n), "FAILED: " + str(p.get("error"))[:60]] + [""] * 7)
                    continue
                rows.append([client, str(n), _fmt(p["ready_s"], "{:.3f}"), _fmt(p.get("cpu_s", 0) / n * 1e3, "{:.1f}"),
                             _fmt(p["peak_kib"] / 1024, "{:.1f}"),
                             _fmt((p["rss_now_kib"] - p["rss0_kib"]) / n / 1024, "{:.2f}"),
                             _fmt((p["os_threads"] - p["os_threads0"]) / n, "{:.2f}"),
                             _fmt((p["fds"] - p["fds0"]) / n, "{:.2f}"), _fmt(p["close_s"], "{:.3f}"),
                             "%d/%d" % (p.get("os_threads_after_close", 0), p.get("fds_after_close", 0))
                             if "fds_after_close" in p else "-"])
        _table("3. servers in one Manager (official: ClientSessionGroup, connected one by one)",
               ["client", "servers", "ready s", "CPU ms/srv", "peak MiB", "MiB/server", "threads/srv", "fds/srv", "close s",
                "thr/fds after"], rows)
        print("  one server spawn: %.1f ms CPU, %.1f ms wall" % (sec["spawn"]["cpu_s"] * 1e3,
                                                               sec["spawn"]["wall_s"] * 1e3))
        top = [p for p in (sec.get("mcpsync") or {}).get("points", []) if p.get("thread_names")]
        if top:
            print("  mcpsync threads at %d servers: %s" % (top[-1]["servers"], ", ".join(
                "%s x%d" % kv for kv in sorted(top[-1]["thread_names"].items()))))
    if "results" in s:
        sec = s["results"]
        rows = []
        for name in sec:
            for size, p in sorted(_points(sec, name).items()):
                if "error" in p:
                    rows.append([name, _size(size), p["error"], "", ""])
                    continue
                rows.append([name, _size(size), _fmt(p["seconds"] * 1e3, "{:,.2f}"), _fmt(p["mb_per_s"], "{:,.1f}"),
                             _fmt(p.get("peak_x"), "{:.2f}") if size >= 1_000_000 else "-"])
        _table("4. result size (stdio, Streamable HTTP JSON, SSE)",
               ["client/transport", "result", "ms", "MB/s", "peak RSS / size"], rows)
        _failures(sec)
    if "catalog" in s:
        sec = s["catalog"]
        rows = []
        for name in sec:
            for n, p in sorted(_points(sec, name).items()):
                rows.append([name, "{:,}".format(n)] + [_fmt((p.get(f) or None) and p[f] * 1e3, "{:,.2f}")
                                                        for f in ("list_s", "index_s", "cache_write_s",
                                                                  "cache_read_s", "manager_tools_s")])
        _table("5. catalog size (ms)", ["client", "tools", "list_tools", "index+names", "cache write",
                                        "cache read", "mgr.tools()"], rows)
        _failures(sec)
    print("\n  section times: %s" % ", ".join("%s %.0f s" % (name, meta["%s_s" % name]) for name in SECTIONS
                                            if "%s_s" % name in meta))
    print("\nTargets (issue 16; report only):")
    for t in results["targets"]:
        value = "-" if t["value"] is None else "%.2f" % t["value"]
        print("  %-4s  %-66s %8s  (target %s %g)%s" % (t["status"], t["name"], value, t["op"], t["limit"],
                                                       "  " + t["detail"] if t["detail"] else ""))


# --------------------------------------------------------------------------
# Plots (optional: matplotlib)
# --------------------------------------------------------------------------


def _plot(results: Dict[str, Any], directory: str) -> List[str]:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        _log("--plot needs matplotlib, an optional benchmark dependency: pip install matplotlib")
        return []
    os.makedirs(directory, exist_ok=True)
    s, written = results["sections"], []
    styles = {"floor": ("#7f7f7f", "--"), "mcpsync": ("#1f77b4", "-"), "official": ("#d62728", ":"),
              "bare": ("#2ca02c", "-.")}

    def style(name: str) -> Dict[str, Any]:
        color, dash = styles.get(name.split("/")[0], ("k", "-"))
        marks = {"stdio": "o", "http": "s", "json": "s", "sse": "^"}
        return {"color": color, "linestyle": dash, "marker": marks.get(name.split("/")[-1], "o")}

    def save(fig: Any, name: str, title: str) -> None:
        fig.suptitle(title)
        fig.tight_layout()
        path = os.path.join(directory, name)
        fig.savefig(path, dpi=100)
        plt.close(fig)
        written.append(path)

    def lines(ax: Any, sec: Dict[str, Any], field: str, scale: float = 1.0, least: float = 0.0) -> None:
        for name in sec:
            pts = sorted((k, p[field] * scale) for k, p in _points(sec, name).items()
                         if isinstance(p.get(field), (int, float)) and p[field] > 0 and k >= least)
            if pts:
                ax.plot([k for k, _ in pts], [v for _, v in pts], label=name, **style(name))

    if "threads" in s:
        fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
        lines(axes[0], s["threads"], "calls_per_s")
        lines(axes[1], s["threads"], "p99_us", 1e-3)
        levels = sorted({n for name in s["threads"] for n in _points(s["threads"], name)})
        for ax, label in zip(axes, ("calls/s", "p99 latency (ms)")):
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_xticks(levels)
            ax.set_xticklabels([str(n) for n in levels])
            ax.set_xlabel("threads (official SDK: tasks)")
            ax.set_ylabel(label)
            ax.grid(True, alpha=0.3, which="both")
        axes[0].legend(fontsize=8)
        save(fig, "threads.png", "Threads sharing one client")
    if "pending" in s:
        fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
        lines(axes[0], s["pending"], "kib_per_pending")
        for name in s["pending"]:
            pts = sorted((k, p["fresh_median_us"] / p["idle_us"]) for k, p in _points(s["pending"], name).items()
                         if p.get("idle_us"))
            if pts:
                axes[1].plot([k for k, _ in pts], [v for _, v in pts], label=name, **style(name))
        axes[1].axhline(2.0, color="k", linewidth=0.8, alpha=0.5)
        for ax, label in zip(axes, ("client RSS per pending request (KiB)", "fresh-call latency / idle")):
            ax.set_xscale("log")
            ax.set_xlabel("pending requests")
            ax.set_ylabel(label)
            ax.grid(True, alpha=0.3)
        axes[0].legend(fontsize=8)
        save(fig, "pending.png", "Requests in flight on one stdio connection")
    if "manager" in s:
        fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
        for client in ("mcpsync", "official"):
            runs: List[Dict[str, Any]] = [q for q in (s["manager"].get(client) or {}).get("points", [])
                                          if "ready_s" in q]
            if runs:
                xs = [q["servers"] for q in runs]
                axes[0].plot(xs, [q["ready_s"] for q in runs], label=client, **style(client))
                axes[1].plot(xs, [(q["rss_now_kib"] - q["rss0_kib"]) / q["servers"] / 1024 for q in runs],
                             label=client, **style(client))
        axes[1].axhline(2.0, color="k", linewidth=0.8, alpha=0.5)
        for ax, label in zip(axes, ("seconds until every tool is listed", "client RSS per server (MiB)")):
            ax.set_xlabel("stdio servers")
            ax.set_ylabel(label)
            ax.grid(True, alpha=0.3)
        axes[0].legend(fontsize=8)
        save(fig, "manager.png", "Servers in one Manager")
    if "results" in s:
        fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
        lines(axes[0], s["results"], "mb_per_s")
        lines(axes[1], s["results"], "peak_x", least=1_000_000)  # below 1 MB, pages and noise, not the result
        axes[1].axhline(3.0, color="k", linewidth=0.8, alpha=0.5)
        for ax, label in zip(axes, ("MB/s", "peak RSS / result size (from 1 MB)")):
            ax.set_xscale("log")
            ax.set_xlabel("result size (bytes)")
            ax.set_ylabel(label)
            ax.grid(True, alpha=0.3)
        axes[0].set_yscale("log")
        axes[1].set_yscale("log")
        axes[0].legend(fontsize=7, ncol=3)
        save(fig, "results.png", "Tool result size")
    if "catalog" in s:
        fig, ax = plt.subplots(figsize=(7, 4.2))
        lines(ax, {k: v for k, v in s["catalog"].items()}, "list_s", 1e3)
        ours = _points(s["catalog"], "mcpsync")
        for field, label, color in (("index_s", "mcpsync index+names", "#9467bd"),
                                    ("cache_write_s", "mcpsync cache write", "#8c564b"),
                                    ("cache_read_s", "mcpsync cache read", "#e377c2")):
            pts = sorted((k, p[field] * 1e3) for k, p in ours.items() if isinstance(p.get(field), (int, float)))
            if pts:
                ax.plot([k for k, _ in pts], [v for _, v in pts], label=label, color=color, marker=".")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("tools on the server")
        ax.set_ylabel("ms")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
        save(fig, "catalog.png", "Catalog size (list_tools: floor, mcpsync, official)")
    return written


# --------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------


def _parent_main(args: argparse.Namespace) -> int:
    only = [x.strip() for x in args.only.split(",") if x.strip()] if args.only else list(SECTIONS)
    unknown = set(only) - set(SECTIONS)
    if unknown:
        _log("unknown section(s): %s (choose from %s)" % (", ".join(sorted(unknown)), ", ".join(SECTIONS)))
        return 2
    plan = dict(PLAN["quick" if args.quick else "default"])
    if args.rounds:
        plan["rounds"] = args.rounds
    t0 = time.perf_counter()
    official, why = _probe("mcp.client.session_group")
    version = None
    if official:
        from importlib.metadata import version as dist_version

        try:
            version = dist_version("mcp")
        except Exception:
            version = "?"
    else:
        _log("official SDK (mcp) not importable, its columns are skipped: %s" % why)
    results: Dict[str, Any] = {
        "meta": {"mode": "quick" if args.quick else "default", "python": platform.python_version(),
                 "platform": platform.platform(terse=True), "cpus": os.cpu_count(), "mcp": version,
                 "rounds": plan["rounds"], "plan": plan},
        "sections": {},
    }
    runners = {"threads": _section_threads, "pending": _section_pending, "manager": _section_manager,
               "results": _section_results, "catalog": _section_catalog}
    for section in SECTIONS:
        if section in only:
            t = time.perf_counter()
            results["sections"][section] = runners[section](plan, args, official)
            results["meta"]["%s_s" % section] = time.perf_counter() - t
    results["targets"] = _targets(results)
    results["meta"]["total_s"] = time.perf_counter() - t0
    if args.plot:
        results["meta"]["plots"] = _plot(results, args.plot)
    if args.json:
        print(json.dumps(results, indent=2, sort_keys=True))
    else:
        _print_report(results)
        for path in results["meta"].get("plots", []):
            print("wrote %s" % path)
        print("total benchmark time: %.1f s" % results["meta"]["total_s"])
    return 0


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    p.add_argument("--quick", action="store_true", help="smoke run: small sizes, one round (about a minute)")
    p.add_argument("--only", default="", help="comma-separated subset of sections: " + ",".join(SECTIONS))
    p.add_argument("--rounds", type=int, default=0, help="interleaved rounds (default: 1 quick, 3 default)")
    p.add_argument("--timeout", type=float, default=180.0, help="kill any one child after this many seconds")
    p.add_argument("--json", action="store_true", help="print machine-readable JSON instead of the tables")
    p.add_argument("--plot", metavar="DIR", help="also write PNG charts to DIR (needs matplotlib)")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        return _worker_main(json.loads(args.worker))

    def on_term(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_term)
    try:
        return _parent_main(args)
    except KeyboardInterrupt:
        _log("interrupted: stopping every child")
        return 130
    finally:
        for proc in list(_LIVE):
            _kill_group(proc)


if __name__ == "__main__":
    sys.exit(main())
