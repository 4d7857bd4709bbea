"""A large stdio answer is held at most twice while it is read and parsed (its text and its value)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from .conftest import PY, ROOT, server_argv

MB = 1024 * 1024

PROBE = r"""
import gc, json, sys
import mcpsync

argv = json.loads(sys.argv[1])
megabytes = int(sys.argv[2])


def status(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024


with mcpsync.connect(argv, max_message_size=4 * megabytes * 1024 * 1024) as client:
    client.call_tool("echo", {"text": "warm"})
    gc.collect()
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # reset the peak to the current RSS
    before = status("VmRSS")
    result = client.call_tool("huge", {"mb": megabytes}, timeout=60)
    peak = status("VmHWM")
    assert len(result.text) == megabytes * 1024 * 1024
print(json.dumps({"growth": peak - before}))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads and resets the peak RSS in /proc")
def test_a_large_answer_is_held_at_most_twice_while_it_is_parsed():
    megabytes = 40
    done = subprocess.run([PY, "-c", PROBE, json.dumps(server_argv("misbehaving.py", "huge-line")), str(megabytes)],
                          cwd=str(ROOT), capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
    growth = json.loads(done.stdout.decode().strip().splitlines()[-1])["growth"]
    # Before: the line's bytes, its text and the parsed value were all alive at once (3.0x).
    assert growth < 2.5 * megabytes * MB, f"peak RSS grew by {growth / MB:.0f} MB for a {megabytes} MB answer"
