"""What the engine processes share with the tests that start them (importable by every worker).

An engine run is marked by the environment variable ``MCPSYNC_ENGINE_RUN``: the engine's own
processes inherit it, and the stdio servers the mcpsync clients start get it too (through the
server config's ``env``), so the test can find every process a run left behind, whatever its
parent or session. Each process tells the test what it saw by appending one JSON line to the
file named by ``MCPSYNC_ENGINE_NOTES`` (one ``write`` of a short line on an ``O_APPEND`` file:
lines of concurrent writers never interleave).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional

import mcpsync

DEMO = str(Path(__file__).parent.parent.parent / "examples" / "demo_server.py")
MARK = "MCPSYNC_ENGINE_RUN"
NOTES = "MCPSYNC_ENGINE_NOTES"


def demo_config() -> Dict[str, Any]:
    """The demo server as a server config: marked with this run's mark."""
    return {"command": sys.executable, "args": [DEMO], "env": {MARK: os.environ.get(MARK, "")}}


def manager_config() -> Dict[str, Any]:
    return {"mcpServers": {"demo": demo_config()}}


def note(kind: str, **fields: Any) -> None:
    """Append one line ``{"kind": kind, "pid": <this process>, ...fields}`` to the run's notes."""
    path = os.environ.get(NOTES)
    if not path:
        return
    line = json.dumps({"kind": kind, "pid": os.getpid(), **fields}) + "\n"
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


def read_notes(path: "os.PathLike[str] | str") -> List[Dict[str, Any]]:
    try:
        text = Path(path).read_text()
    except FileNotFoundError:
        return []
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def echo_through(client: mcpsync.Client, token: str) -> Dict[str, Any]:
    """One echo call: what was asked, what came back, this process and the server that answered."""
    answer = client.call_tool("echo", {"text": token}).text
    return {"token": token, "answer": answer, "worker": os.getpid(), "server": _server_pid(client)}


def _server_pid(client: mcpsync.Client) -> Optional[int]:
    pid = getattr(client.transport, "pid", None)
    return pid if isinstance(pid, int) else None
