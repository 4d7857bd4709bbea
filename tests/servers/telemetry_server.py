"""A FakeServer over stdio for the telemetry tests: ``python telemetry_server.py [--legacy-only]``.

    meta()          the JSON of the request's ``_meta`` (the trace context the server received)
    fail()          a tool that raises: a CallToolResult with ``isError``
    stall()         waits until the client cancels it (or 30 s)
    die()           the server process exits at once (status 3)
    resource ``demo://note``, prompt ``greet(name)``

``--legacy-only`` speaks only the versions before 2026-07-28 (the ``initialize`` handshake).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run from a checkout without installing

from mcpsync.testing import Context, FakeServer  # noqa: E402

options = argparse.ArgumentParser()
options.add_argument("--legacy-only", action="store_true")
args = options.parse_args()

server = FakeServer("telemetry", versions=["2025-06-18", "2025-11-25"] if args.legacy_only else None)


@server.tool()
def meta(ctx: Context) -> str:
    """The request's _meta, as JSON."""
    return json.dumps(ctx.meta)


@server.tool()
def fail() -> str:
    """Always fails."""
    raise ValueError("this tool always fails")


@server.tool()
def stall(ctx: Context) -> str:
    """Waits until cancelled."""
    ctx.wait_cancelled(30)
    return "cancelled" if ctx.cancelled else "not cancelled"


@server.tool()
def die() -> str:
    """Ends the server process."""
    os._exit(3)


@server.resource("demo://note")
def note() -> str:
    return "a note"


@server.prompt()
def greet(name: str) -> str:
    """Greet someone."""
    return f"Hello, {name}!"


if __name__ == "__main__":
    server.run_stdio()
