"""mcpsync works where sys.stdin/stdout/stderr have no file descriptor (Jupyter, IDLE, services)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from .conftest import ROOT, SERVERS


def test_a_client_works_when_the_standard_streams_have_no_file_descriptors(tmp_path):
    result_file = tmp_path / "result.json"
    script = textwrap.dedent(f"""
        import io, json, os, sys
        # Like a notebook kernel: Python-level streams without file descriptors,
        # and the real descriptors 0, 1 and 2 closed.
        sys.stdin, sys.stdout, sys.stderr = io.StringIO(), io.StringIO(), io.StringIO()
        for fd in (0, 1, 2):
            os.close(fd)
        import mcpsync
        with mcpsync.connect([sys.executable, {str(SERVERS / "misbehaving.py")!r}, "good"], timeout=20) as client:
            text = client.call_tool("echo", {{"text": "no fds"}}).text
            tail = client.transport.stderr_tail
        with open({str(result_file)!r}, "w") as f:
            json.dump({{"text": text}}, f)
    """)
    subprocess.run([sys.executable, "-c", script], cwd=str(ROOT), timeout=60,
                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    assert json.loads(result_file.read_text()) == {"text": "no fds"}
