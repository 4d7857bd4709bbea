"""A script that exits without closing its client exits quietly, on every interpreter.

At interpreter exit a finalizer may run after its module's globals were set to None (seen on
the free-threaded 3.13 build, GIL on or off): ``Client.__del__`` once printed ``Exception
ignored in: <function Client.__del__> ... TypeError: 'NoneType' object is not callable``. The
script here leaves a client unclosed in a module global (the free-threaded run in .ci/versions
is where it failed before the fix); its stderr must hold no "Exception ignored", and its server must not outlive it.
"""

from __future__ import annotations

import subprocess
import sys

from .conftest import server_argv

SCRIPT = """
import sys, mcpsync
client = mcpsync.connect({argv!r})
assert client.call_tool("work", {{"tag": "hi", "delay_ms": 0}}).text == "hi"
"""


def test_a_script_that_never_closes_its_client_exits_without_a_finalizer_error() -> None:
    argv = server_argv("hostile_stdio.py", "stress")
    done = subprocess.run([sys.executable, "-c", SCRIPT.format(argv=argv)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "Exception ignored" not in done.stderr, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
