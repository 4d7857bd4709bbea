#!/usr/bin/env python
"""Instructions per tool call on the hot path, counted by valgrind's callgrind (stdio and HTTP).

    python benchmarks/callgrind_calls.py                     # both transports, a table
    python benchmarks/callgrind_calls.py --only stdio --json
    python benchmarks/callgrind_calls.py --source /path/to/other/checkout   # count another tree

Wall time on a shared machine varies by tens of percent; the instructions a process executes
barely do. So each transport's client runs twice under ``valgrind --tool=callgrind`` (the servers
are other processes and are not counted): once making ``--base`` calls after connecting, once
making ``--base + --calls``. The difference, divided by ``--calls``, is the client's instructions
per ``call_tool``: start-up, imports, the handshake and close cancel out. The servers are the
stdio echo server (``echo_server.py``) and the HTTP echo server of ``http_roundtrip.py`` (JSON
answers). The script only reports; it never asserts.

A change to the hot path is compared by running this on both trees (``--source``): a rise over
3 % is explained or undone.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from typing import Dict, List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
ECHO_STDIO = os.path.join(HERE, "echo_server.py")
TRANSPORTS = ("stdio", "http")


def client(transport: str, target: str, calls: int) -> None:
    """The measured process: connect, warm up, ``calls`` echo calls, close."""
    import mcpsync

    with mcpsync.connect(json.loads(target) if transport == "stdio" else target) as c:
        for _ in range(20):  # warm: caches, lazily built paths, the tool list
            c.call_tool("echo", {"text": "hi"})
        for _ in range(calls):
            c.call_tool("echo", {"text": "hi"})


def count(source: str, transport: str, target: str, calls: int) -> int:
    """Total instructions (callgrind's Ir) of one client process making ``calls`` calls."""
    with tempfile.TemporaryDirectory(prefix="mcpsync-callgrind-") as tmp:
        out = os.path.join(tmp, "callgrind.out")
        env = dict(os.environ, PYTHONPATH=source, PYTHONHASHSEED="0")
        cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", "--trace-children=no",
               sys.executable, os.path.abspath(__file__), "--client", transport, "--target", target,
               "--calls", str(calls)]
        done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800)
        if done.returncode != 0:
            raise RuntimeError(f"the {transport} client failed under valgrind:\n{done.stderr[-2000:]}")
        match = re.search(r"Collected\s*:\s*(\d+)", done.stderr)
        if match is None:
            raise RuntimeError(f"callgrind printed no total:\n{done.stderr[-2000:]}")
        return int(match.group(1))


def per_call(source: str, transport: str, target: str, base: int, calls: int) -> float:
    return (count(source, transport, target, base + calls) - count(source, transport, target, base)) / calls


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=",".join(TRANSPORTS), help="stdio,http")
    parser.add_argument("--calls", type=int, default=400, help="calls counted (the difference)")
    parser.add_argument("--base", type=int, default=50, help="calls in the shorter run")
    parser.add_argument("--source", default=ROOT, help="the checkout whose mcpsync is counted")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--client", help=argparse.SUPPRESS)
    parser.add_argument("--target", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.client:
        client(args.client, args.target, args.calls)
        return 0
    results: Dict[str, float] = {}
    for transport in args.only.split(","):
        if transport == "stdio":
            results["stdio"] = per_call(args.source, "stdio", json.dumps([sys.executable, ECHO_STDIO]),
                                        args.base, args.calls)
        elif transport == "http":
            sys.path.insert(0, HERE)
            from http_roundtrip import ServerProcess

            server = ServerProcess()
            try:
                results["http"] = per_call(args.source, "http", server.url("json"), args.base, args.calls)
            finally:
                server.stop()
        else:
            parser.error(f"unknown transport {transport!r}: choose from {', '.join(TRANSPORTS)}")
    if args.json:
        print(json.dumps({"source": args.source, "instructions_per_call": results}))
    else:
        for transport, value in results.items():
            print(f"{transport:6} {value:12,.0f} instructions per call_tool ({args.source})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
