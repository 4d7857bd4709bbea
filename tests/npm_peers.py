"""Real third-party MCP servers from the npm registry, installed on first use.

Tests that talk to a server nobody here wrote (the TypeScript SDK's
``@modelcontextprotocol/server-everything``) get it from here. The package is installed once per
machine, at a pinned version, into ``~/.cache/mcpsync-npm/`` (``MCPSYNC_NPM_CACHE`` overrides),
under a file lock so parallel test processes install it once. A machine without ``node``/``npm``
skips the test with that reason; CI machines have both (``.ci/run`` relies on the Node.js the
machine image ships).
"""

from __future__ import annotations

import fcntl
import os
import select
import shutil
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Dict, Iterator, List, Optional

import pytest

EVERYTHING = "@modelcontextprotocol/server-everything"
# The TypeScript SDK's legacy-era reference server (it sends SSE event ids on Streamable HTTP).
EVERYTHING_VERSION = "2026.1.26"


def _cache_root() -> Path:
    return Path(os.environ.get("MCPSYNC_NPM_CACHE", Path.home() / ".cache" / "mcpsync-npm"))


def npm_package_dir(package: str, version: str) -> Path:
    """Install ``package@version`` (once per machine) and return its folder in node_modules."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node and npm are needed for the npm-registry peer servers")
    root = _cache_root() / f"{package.replace('/', '__')}@{version}"
    installed = root / "node_modules" / package / "package.json"
    if installed.exists():
        return installed.parent
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not installed.exists():
            done = subprocess.run(
                ["npm", "install", "--no-audit", "--no-fund", "--prefix", str(root),
                 f"{package}@{version}"],
                capture_output=True, text=True, timeout=300,
            )
            if done.returncode != 0 or not installed.exists():
                pytest.skip(f"npm could not install {package}@{version}: {done.stderr[-500:]}")
    return installed.parent


def everything_argv(mode: str = "stdio") -> List[str]:
    """argv of server-everything in ``mode`` (``stdio``, ``streamableHttp`` or ``sse``)."""
    entry = npm_package_dir(EVERYTHING, EVERYTHING_VERSION) / "dist" / "index.js"
    return [shutil.which("node") or "node", str(entry), mode]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_until_listening(proc: "subprocess.Popen[bytes]", timeout: float = 30.0) -> List[str]:
    """Read the server's stderr until it says it is listening (the line it prints once bound);
    returns what it wrote before. Raises RuntimeError if it exits or stays silent past ``timeout``."""
    assert proc.stderr is not None
    said: List[str] = []
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        ready, _, _ = select.select([proc.stderr], [], [], max(0.0, left))
        if not ready:
            raise RuntimeError(f"server did not say it was listening within {timeout}s: {said[-5:]}")
        line = proc.stderr.readline().decode("utf-8", "replace").strip()
        if not line and proc.poll() is not None:
            raise RuntimeError(f"server exited with code {proc.returncode} before listening: {said[-5:]}")
        said.append(line)
        if "listening on port" in line.lower() or "running on port" in line.lower():
            return said


@contextmanager
def everything_http(mode: str = "streamableHttp", port: Optional[int] = None) -> Iterator[str]:
    """Run server-everything over HTTP on 127.0.0.1; yields its MCP URL; stops it after."""
    argv = everything_argv(mode)
    port = port or free_port()
    env: Dict[str, str] = dict(os.environ, PORT=str(port))
    # stderr is read until the server says it is listening, then left to a pipe nobody reads:
    # server-everything writes to stderr only at start and on errors, far below a pipe's 64 KiB.
    proc = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        _wait_until_listening(proc)
        path = "/sse" if mode == "sse" else "/mcp"
        yield f"http://127.0.0.1:{port}{path}"
    finally:
        proc.kill()
        proc.wait(timeout=10)
        if proc.stderr is not None:
            proc.stderr.close()


if __name__ == "__main__":  # pragma: no cover - manual install: python tests/npm_peers.py
    print(" ".join(everything_argv(sys.argv[1] if len(sys.argv) > 1 else "stdio")))
