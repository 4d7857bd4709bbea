#!/usr/bin/env python
"""HTTP round-trip benchmark: raw requests and http.client floors vs mcpsync vs the official MCP SDK.

    python benchmarks/http_roundtrip.py                 # table, ratios and PASS/FAIL per target
    python benchmarks/http_roundtrip.py --calls 3000 --rounds 5
    python benchmarks/http_roundtrip.py --only raw,mcpsync --json

One echo server (stdlib, in a child process, HTTP/1.1 keep-alive, a thread
per connection) answers Streamable HTTP POSTs on ``/json`` (JSON answers) and
``/sse`` (SSE answers, chunked). Each client then runs, in this one process:

  requests     the floor: one requests.Session, one POST + json per call
  http.client  a lower floor: one HTTPConnection, request + read + json
  mcpsync      mcpsync.connect(url).call_tool("echo", ...)
  official     mcp.Client(url, mode="legacy") under asyncio (skipped if mcp is not installed)

for each response mode, sequentially and with 8 threads (8 tasks for the
official SDK). Figures are medians over interleaved rounds: sequential
latency per call, client CPU per call (this process's CPU time: the server is
another process), 8-way throughput; plus one 20 MiB SSE tool result through
mcpsync. The script never asserts and always exits 0: it reports.

Targets: sequential latency <= 1.2x the raw requests loop; client CPU per
call <= 0.6x the official SDK's; the 20 MiB SSE result at >= 50 MB/s.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from typing import Any, Callable, Dict, List, Optional

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

MODES = ("json", "sse")
CLIENTS = ("requests", "http.client", "mcpsync", "official")
BIG_MB = 20


# -- the server (child process) -----------------------------------------------------------

def serve(port_file: str) -> None:
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    big_cache: Dict[int, bytes] = {}

    def answer(message: Dict[str, Any]) -> Optional[Dict[str, Any]]:
        method, rid = message.get("method"), message.get("id")
        if rid is None or method is None:
            return None
        if method == "initialize":
            result: Any = {"protocolVersion": message["params"].get("protocolVersion", "2025-11-25"),
                           "capabilities": {"tools": {}}, "serverInfo": {"name": "bench-echo", "version": "1"}}
        elif method == "tools/list":
            result = {"tools": [{"name": "echo", "inputSchema": {"type": "object",
                                                                  "properties": {"text": {"type": "string"}}}}]}
        elif method == "tools/call":
            args = message["params"].get("arguments") or {}
            result = {"content": [{"type": "text", "text": args.get("text", "")}], "isError": False}
        elif method == "ping":
            result = {}
        else:
            return {"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "Method not found"}}
        return {"jsonrpc": "2.0", "id": rid, "result": result}

    def big_event(rid: int, mb: int) -> bytes:
        if mb not in big_cache:
            text = "x" * (mb * 1024 * 1024)
            big_cache[mb] = json.dumps({"content": [{"type": "text", "text": text}], "isError": False}).encode()
        return b'data: {"jsonrpc":"2.0","id":%d,"result":%s}\n\n' % (rid, big_cache[mb])

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True

        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            self.wfile.write(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")

        def do_DELETE(self) -> None:
            self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            message = json.loads(body)
            params = message.get("params") or {}
            if message.get("method") == "tools/call" and params.get("name") == "big":
                return self._stream(big_event(message["id"], int(params["arguments"]["mb"])))
            reply = answer(message)
            if reply is None:
                self.wfile.write(b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n")
                return
            data = json.dumps(reply, separators=(",", ":")).encode()
            if self.path.startswith("/sse"):
                return self._stream(b"event: message\ndata: " + data + b"\n\n")
            # one write for head and body: no Nagle/delayed-ACK stall between them
            self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"
                             b"Mcp-Session-Id: bench-session\r\n\r\n%s" % (len(data), data))

        def _stream(self, payload: bytes) -> None:
            head = (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
                    b"Mcp-Session-Id: bench-session\r\nTransfer-Encoding: chunked\r\n\r\n")
            self.wfile.write(head + b"%x\r\n" % len(payload) + payload + b"\r\n0\r\n\r\n")

    class Server(ThreadingHTTPServer):
        daemon_threads = True

        def handle_error(self, request: Any, client_address: Any) -> None:
            pass

    httpd = Server(("127.0.0.1", 0), Handler)
    with open(port_file + ".tmp", "w") as f:
        f.write(str(httpd.server_address[1]))
    os.replace(port_file + ".tmp", port_file)
    httpd.serve_forever(poll_interval=0.2)


class ServerProcess:
    def __init__(self) -> None:
        import tempfile

        self.dir = tempfile.mkdtemp(prefix="mcpsync-bench-")
        port_file = os.path.join(self.dir, "port")
        self.proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--serve", port_file],
                                     stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 20
        while not os.path.exists(port_file):
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise RuntimeError("the echo server did not start")
            time.sleep(0.02)
        with open(port_file) as f:
            self.port = int(f.read())

    def url(self, mode: str) -> str:
        return f"http://127.0.0.1:{self.port}/{mode}"

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
        import shutil

        shutil.rmtree(self.dir, ignore_errors=True)


# -- the clients ---------------------------------------------------------------------------------

HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
           "MCP-Protocol-Version": "2025-11-25", "Mcp-Session-Id": "bench-session"}


def _decode(content_type: str, data: bytes) -> Any:
    if content_type.startswith("text/event-stream"):
        for line in data.split(b"\n"):
            if line.startswith(b"data:"):
                return json.loads(line[5:])
        raise ValueError("no data line")
    return json.loads(data)


def _body(n: int) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": n, "method": "tools/call",
                       "params": {"name": "echo", "arguments": {"text": "hi"}}}).encode()


class RequestsClient:
    def __init__(self, url: str) -> None:
        import requests

        self.url = url
        self.local = threading.local()
        self.sessions: List[Any] = []
        self._requests = requests
        self.n = 0

    def _session(self) -> Any:
        session = getattr(self.local, "session", None)
        if session is None:
            session = self.local.session = self._requests.Session()
            self.sessions.append(session)
        return session

    def call(self) -> None:
        self.n += 1
        response = self._session().post(self.url, data=_body(self.n), headers=HEADERS)
        reply = _decode(response.headers.get("Content-Type", ""), response.content)
        assert reply["result"]["content"][0]["text"] == "hi"

    def close(self) -> None:
        for session in self.sessions:
            session.close()


class HTTPClientClient:
    def __init__(self, url: str) -> None:
        from urllib.parse import urlsplit

        parts = urlsplit(url)
        self.host, self.port, self.path = parts.hostname, parts.port, parts.path
        self.local = threading.local()
        self.conns: List[Any] = []
        self.n = 0

    def call(self) -> None:
        import http.client

        conn = getattr(self.local, "conn", None)
        if conn is None:
            conn = self.local.conn = http.client.HTTPConnection(self.host, self.port)
            self.conns.append(conn)
        self.n += 1
        conn.request("POST", self.path, body=_body(self.n), headers=HEADERS)
        response = conn.getresponse()
        reply = _decode(response.getheader("Content-Type", ""), response.read())
        assert reply["result"]["content"][0]["text"] == "hi"

    def close(self) -> None:
        for conn in self.conns:
            conn.close()


class MCPSyncClient:
    def __init__(self, url: str) -> None:
        import mcpsync

        self.client = mcpsync.connect({"type": "http", "url": url})

    def call(self) -> None:
        assert self.client.call_tool("echo", {"text": "hi"}).text == "hi"

    def close(self) -> None:
        self.client.close()


def run_official(url: str, calls: int, warmup: int, threads: int) -> Dict[str, Any]:
    """The official SDK in its own event loop: sequential calls, or ``threads`` concurrent tasks."""
    import asyncio

    from mcp import Client

    async def main() -> Dict[str, Any]:
        async with Client(url, mode="legacy") as client:
            for _ in range(warmup):
                await client.call_tool("echo", {"text": "hi"})
            if threads == 1:
                times = []
                cpu0, t0 = time.process_time(), time.perf_counter()
                for _ in range(calls):
                    start = time.perf_counter()
                    result = await client.call_tool("echo", {"text": "hi"})
                    times.append(time.perf_counter() - start)
                    assert result.content[0].text == "hi"
                return {"lat": times, "cpu": time.process_time() - cpu0, "wall": time.perf_counter() - t0}

            async def worker(n: int) -> None:
                for _ in range(n):
                    await client.call_tool("echo", {"text": "hi"})

            cpu0, t0 = time.process_time(), time.perf_counter()
            await asyncio.gather(*(worker(calls // threads) for _ in range(threads)))
            return {"cpu": time.process_time() - cpu0, "wall": time.perf_counter() - t0,
                    "calls": (calls // threads) * threads}

    return asyncio.run(main())


def measure(factory: Callable[[], Any], calls: int, warmup: int, threads: int) -> Dict[str, Any]:
    client = factory()
    try:
        for _ in range(warmup):
            client.call()
        if threads == 1:
            times = []
            cpu0, t0 = time.process_time(), time.perf_counter()
            for _ in range(calls):
                start = time.perf_counter()
                client.call()
                times.append(time.perf_counter() - start)
            return {"lat": times, "cpu": time.process_time() - cpu0, "wall": time.perf_counter() - t0}
        per = calls // threads
        barrier = threading.Barrier(threads + 1)

        def work() -> None:
            barrier.wait()
            for _ in range(per):
                client.call()

        workers = [threading.Thread(target=work) for _ in range(threads)]
        for worker in workers:
            worker.start()
        cpu0, t0 = time.process_time(), time.perf_counter()
        barrier.wait()
        for worker in workers:
            worker.join()
        return {"cpu": time.process_time() - cpu0, "wall": time.perf_counter() - t0, "calls": per * threads}
    finally:
        client.close()


def summarize(raw: Dict[str, Any], calls: int) -> Dict[str, float]:
    if "lat" in raw:
        lat = sorted(raw["lat"])
        return {"median_us": statistics.median(lat) * 1e6, "p99_us": lat[int(len(lat) * 0.99) - 1] * 1e6,
                "cpu_us": raw["cpu"] / calls * 1e6}
    done = raw["calls"]
    return {"calls_per_s": done / raw["wall"], "cpu_us": raw["cpu"] / done * 1e6}


def big_sse(url: str, rounds: int) -> Dict[str, float]:
    import mcpsync

    rates = []
    with mcpsync.connect({"type": "http", "url": url}, timeout=120) as client:
        client.call_tool("big", {"mb": 1})
        for _ in range(rounds):
            start = time.perf_counter()
            result = client.call_tool("big", {"mb": BIG_MB})
            elapsed = time.perf_counter() - start
            assert len(result.text) == BIG_MB * 1024 * 1024
            rates.append(BIG_MB * 1024 * 1024 / elapsed / 1e6)
    return {"mb_per_s": statistics.median(rates), "seconds": BIG_MB * 1024 * 1024 / 1e6 / statistics.median(rates)}


# -- the run ----------------------------------------------------------------------------------

def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=1000, help="calls per phase (default 1000)")
    parser.add_argument("--warmup", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds; medians are reported")
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--only", default=",".join(CLIENTS), help="comma-separated subset of " + ",".join(CLIENTS))
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--serve", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve)
        return

    wanted = [c for c in args.only.split(",") if c in CLIENTS]
    skipped: Dict[str, str] = {}
    if "official" in wanted:
        try:
            import mcp  # noqa: F401
        except Exception as exc:  # not installed, or broken
            skipped["official"] = f"mcp not importable: {exc}"
            wanted.remove("official")

    factories = {"requests": RequestsClient, "http.client": HTTPClientClient, "mcpsync": MCPSyncClient}
    server = ServerProcess()
    results: Dict[str, Dict[str, Dict[str, List[Dict[str, float]]]]] = {}
    try:
        for round_no in range(args.rounds):
            order = wanted[round_no % len(wanted):] + wanted[:round_no % len(wanted)]
            for mode in MODES:
                url = server.url(mode)
                for name in order:
                    for phase, threads in (("seq", 1), ("conc", args.threads)):
                        print(f"round {round_no + 1}/{args.rounds}: {name:<11} {mode:<4} {phase}", file=sys.stderr)
                        try:
                            if name == "official":
                                raw = run_official(url, args.calls, args.warmup, threads)
                            else:
                                raw = measure(lambda: factories[name](url), args.calls, args.warmup, threads)
                            summary = summarize(raw, args.calls)
                        except Exception as exc:
                            summary = {"error": f"{type(exc).__name__}: {exc}"}  # type: ignore[dict-item]
                        results.setdefault(name, {}).setdefault(mode, {}).setdefault(phase, []).append(summary)
        big = big_sse(server.url("sse"), max(1, args.rounds)) if "mcpsync" in wanted else None
    finally:
        server.stop()

    table = {name: {mode: {phase: _median(rows) for phase, rows in phases.items()}
                    for mode, phases in modes.items()} for name, modes in results.items()}
    targets = _targets(table, big)
    if args.json:
        print(json.dumps({"results": table, "big_sse": big, "targets": targets, "skipped": skipped}, indent=2))
        return
    _print(table, big, targets, skipped, args)


def _median(rows: List[Dict[str, float]]) -> Dict[str, float]:
    good = [r for r in rows if "error" not in r]
    if not good:
        return rows[0]
    return {key: statistics.median(r[key] for r in good) for key in good[0]}


def _get(table: Dict[str, Any], name: str, mode: str, phase: str, key: str) -> Optional[float]:
    value = table.get(name, {}).get(mode, {}).get(phase, {}).get(key)
    return float(value) if isinstance(value, (int, float)) else None


def _targets(table: Dict[str, Any], big: Optional[Dict[str, float]]) -> List[Dict[str, Any]]:
    rows: List[Dict[str, Any]] = []

    def add(label: str, a: Optional[float], b: Optional[float], limit: float, better: str) -> None:
        if a is None or b is None:
            rows.append({"target": label, "status": "SKIP"})
            return
        ratio = a / b
        ok = ratio <= limit if better == "<=" else ratio >= limit
        rows.append({"target": label, "ratio": round(ratio, 3), "limit": f"{better} {limit}",
                     "status": "PASS" if ok else "FAIL"})

    for mode in MODES:
        add(f"seq latency mcpsync/requests ({mode})", _get(table, "mcpsync", mode, "seq", "median_us"),
            _get(table, "requests", mode, "seq", "median_us"), 1.2, "<=")
        add(f"client CPU/call mcpsync/official ({mode})", _get(table, "mcpsync", mode, "seq", "cpu_us"),
            _get(table, "official", mode, "seq", "cpu_us"), 0.6, "<=")
    if big is not None:
        ok = big["mb_per_s"] >= 50
        rows.append({"target": f"{BIG_MB} MiB SSE tool result through mcpsync", "ratio": round(big["mb_per_s"], 1),
                     "limit": ">= 50 MB/s", "status": "PASS" if ok else "FAIL"})
    return rows


def _print(table: Dict[str, Any], big: Optional[Dict[str, float]], targets: List[Dict[str, Any]],
           skipped: Dict[str, str], args: Any) -> None:
    print(f"\nHTTP round trip, {args.calls} calls per phase, median of {args.rounds} rounds, "
          f"{args.threads} threads for the concurrent phase\n")
    header = f"{'client':<12} {'mode':<5} {'seq med µs':>11} {'seq p99 µs':>11} {'CPU/call µs':>12} " \
             f"{'8-way calls/s':>14} {'8-way CPU µs':>13}"
    print(header)
    print("-" * len(header))
    for name in CLIENTS:
        for mode in MODES:
            seq = table.get(name, {}).get(mode, {}).get("seq")
            conc = table.get(name, {}).get(mode, {}).get("conc")
            if seq is None:
                continue
            if "error" in seq:
                print(f"{name:<12} {mode:<5} FAIL {seq['error']}")
                continue
            c_rate = f"{conc['calls_per_s']:14.0f}" if conc and "calls_per_s" in conc else f"{'-':>14}"
            c_cpu = f"{conc['cpu_us']:13.0f}" if conc and "cpu_us" in conc else f"{'-':>13}"
            print(f"{name:<12} {mode:<5} {seq['median_us']:11.0f} {seq['p99_us']:11.0f} {seq['cpu_us']:12.0f} "
                  f"{c_rate} {c_cpu}")
    for name, why in skipped.items():
        print(f"{name:<12} SKIP  {why}")
    print("\nRatios")
    for mode in MODES:
        base = _get(table, "requests", mode, "seq", "median_us")
        for name in ("http.client", "mcpsync", "official"):
            value = _get(table, name, mode, "seq", "median_us")
            if base and value:
                print(f"  seq latency {name}/requests ({mode}): {value / base:.2f}x")
        ours, theirs = _get(table, "mcpsync", mode, "seq", "cpu_us"), _get(table, "official", mode, "seq", "cpu_us")
        if ours and theirs:
            print(f"  client CPU/call mcpsync/official ({mode}): {ours / theirs:.2f}x")
        ours, theirs = (_get(table, "mcpsync", mode, "conc", "calls_per_s"),
                        _get(table, "official", mode, "conc", "calls_per_s"))
        if ours and theirs:
            print(f"  8-way throughput mcpsync/official ({mode}): {ours / theirs:.2f}x")
    if big is not None:
        print(f"  {BIG_MB} MiB SSE tool result through mcpsync: {big['mb_per_s']:.0f} MB/s ({big['seconds']:.2f} s)")
    print("\nTargets")
    for row in targets:
        detail = f"{row['ratio']} (limit {row['limit']})" if "ratio" in row else ""
        print(f"  {row['status']:<5} {row['target']}: {detail}")


if __name__ == "__main__":
    main()
