"""Record a real MCP server once, replay it in every later test run: cassettes.

    python examples/cassette.py               # runs the tests below twice: recording, then replaying
    python -m unittest examples/cassette.py   # the same, as plain unittest

The first run talks to ``examples/demo_server.py`` and writes what was said to
a cassette in the temporary directory (a project keeps its own under ``tests/cassettes/``); every later run replays that file: no process is started,
and a test that sends something the cassette does not hold fails with ``CassetteMismatch``.
Delete the file (or pass ``record_mode="all"``) to record again. The pytest version of the same
test is in the docstring of ``test_pytest_style`` (run it with ``pytest examples/cassette.py``).
"""

from __future__ import annotations

import sys
import tempfile
import unittest
from pathlib import Path

import mcpsync
from mcpsync.testing import FakeServerMixin, use_cassette

HERE = Path(__file__).resolve().parent
SERVER = [sys.executable, str(HERE / "demo_server.py")]
CASSETTE = Path(tempfile.gettempdir()) / "mcpsync-example-cassettes" / "demo.jsonl"


# -- the code under test -----------------------------------------------------------------------------


def shout(client: mcpsync.Client, text: str) -> str:
    """What the application does with the server: echo the text, louder."""
    return client.call_tool("echo", {"text": text}).text.upper() + "!"


# -- unittest ----------------------------------------------------------------------------------------


class ShoutTests(FakeServerMixin, unittest.TestCase):
    def setUp(self) -> None:
        self.cassette = self.use_cassette(CASSETTE)  # record once, then replay
        self.client = mcpsync.connect(SERVER, protocol="legacy")
        self.addCleanup(self.client.close)

    def test_shouts(self) -> None:
        self.assertEqual(shout(self.client, "hello"), "HELLO!")
        self.assertEqual(self.client.call_tool("add", {"a": 2, "b": 3}).structured_content, {"sum": 5})


# -- pytest ------------------------------------------------------------------------------------------


def test_pytest_style() -> None:
    """With pytest, the marker does the same (the file is cassettes/<test name>.jsonl next to the test)::

        @pytest.mark.mcp_cassette
        def test_shouts():
            with mcpsync.connect(SERVER, protocol="legacy") as client:
                assert shout(client, "hello") == "HELLO!"

    ``pytest --mcp-record-mode=all`` records every marked test again.
    """
    with use_cassette(CASSETTE.with_name("pytest-style.jsonl")):
        with mcpsync.connect(SERVER, protocol="legacy") as client:
            assert shout(client, "hello") == "HELLO!"


if __name__ == "__main__":
    for run in ("record" if not CASSETTE.exists() else "replay", "replay"):
        outcome = unittest.TextTestRunner(verbosity=0).run(
            unittest.defaultTestLoader.loadTestsFromTestCase(ShoutTests))
        test_pytest_style()
        print(f"{run}: {'ok' if outcome.wasSuccessful() else 'FAILED'} ({CASSETTE})")
        if not outcome.wasSuccessful():
            sys.exit(1)
