"""A stdio server whose outages a test controls: ``python outage_stdio.py STATE_DIR``.

Every start appends a line to ``STATE_DIR/starts``. While ``STATE_DIR/down`` exists the
process exits at once with code 1 (a server that cannot start); otherwise it serves a
FakeServer with ``echo(text)``.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run from a checkout without installing

from mcpsync.testing import FakeServer  # noqa: E402

STATE = Path(sys.argv[1])
with open(STATE / "starts", "a") as out:
    out.write("start\n")
if (STATE / "down").exists():
    sys.exit(1)

server = FakeServer("outage")


@server.tool()
def echo(text: str) -> str:
    """The text."""
    return text


if __name__ == "__main__":
    server.run_stdio()
