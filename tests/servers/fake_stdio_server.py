"""A FakeServer served over stdio: ``python fake_stdio_server.py [--crash-at N] [--legacy-only]``.

The tools cover what the stdio tests need: plain results, progress, logging,
the server's own sampling/elicitation/roots requests, a stray ``print`` and a
slow tool that notices cancellation.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run from a checkout without installing

from mcpsync.testing import Context, FakeServer  # noqa: E402

options = argparse.ArgumentParser()
options.add_argument("--crash-at", type=int)
options.add_argument("--crash-tool")
options.add_argument("--legacy-only", action="store_true")
args = options.parse_args()

server = FakeServer("fake-stdio", version="2.0.0", instructions="A fake server for the stdio tests.",
                    versions=["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"] if args.legacy_only else None)


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def countdown(ctx: Context, n: int = 3) -> str:
    """Report progress n times, log once, then answer."""
    for step in range(1, n + 1):
        ctx.progress(step, n, f"step {step}")
    ctx.log("info", {"counted": n}, logger="countdown")
    return "liftoff"


@server.tool()
def ask(ctx: Context, question: str = "Capital of France?") -> dict:
    """Ask the client's model, its user and its roots."""
    sampled = ctx.sample(question, max_tokens=20)
    answer = ctx.elicit("Proceed?", {"type": "object", "properties": {"ok": {"type": "boolean"}}})
    roots = ctx.list_roots()
    return {"sampled": sampled["content"]["text"], "elicited": answer, "roots": [root["uri"] for root in roots]}


@server.tool()
def chatty(text: str) -> str:
    """Prints to stdout, which must not corrupt the protocol stream."""
    print("this goes to stderr, not the protocol stream")
    return text.upper()


@server.tool()
def stall(ctx: Context) -> str:
    """Waits until cancelled, and says on stderr that it was."""
    ctx.wait_cancelled(60)
    sys.stderr.write(f"stall cancelled: {ctx.cancelled}\n")
    sys.stderr.flush()
    return "too late"


@server.resource("memo://today", mime_type="text/plain")
def today() -> str:
    return "Buy milk."


@server.prompt()
def greet(name: str) -> str:
    """Greets someone."""
    return f"Hello, {name}!"


if __name__ == "__main__":
    if args.crash_at:
        server.crash_at(args.crash_at, tool=args.crash_tool, exit_code=3)
    server.run_stdio()
