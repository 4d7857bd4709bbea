"""A FakeServer over stdio that counts its tool runs in a file: ``python counting_stdio.py COUNT_FILE``.

    slow(seconds)   appends "slow" to COUNT_FILE when it starts, then sleeps (cancellable)
    echo(text)      the text

For tests that a call is never run twice across a server restart: every process started
with the same file adds to the one count.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run from a checkout without installing

from mcpsync.testing import Context, FakeServer  # noqa: E402

COUNT_FILE = Path(sys.argv[1])
server = FakeServer("counting")


@server.tool()
def slow(ctx: Context, seconds: float = 30.0) -> str:
    """Note the run, then sleep."""
    with open(COUNT_FILE, "a") as out:
        out.write("slow\n")
    ctx.sleep(seconds)
    return "slept"


@server.tool()
def echo(text: str) -> str:
    """The text."""
    return text


if __name__ == "__main__":
    server.run_stdio()
