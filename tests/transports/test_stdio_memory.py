"""A large stdio answer is held at most twice while it is read and parsed (its text and its value)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from ..conftest import PY, ROOT, server_argv

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


def test_a_long_line_is_decoded_across_its_chunks_and_one_that_is_not_utf8_stays_bytes():
    import io

    from mcpsync.transports.stdio import _Oversized, _read_line

    text = ('{"text":"' + "caf\u00e9 \u2603 " * 400_000 + '"}\n')  # about 4.4 MB: several 1 MiB chunks
    data = text.encode("utf-8")
    line, size = _read_line(io.BytesIO(data), 64 * MB)
    assert line == text and size == len(data)  # characters split between chunks come out whole

    broken = data[:2_500_000] + b"\xff" + data[2_500_000:]
    line, size = _read_line(io.BytesIO(broken), 64 * MB)
    assert line == broken and size == len(broken)  # bytes, for the JSON decoder to refuse

    cut = "x" * (3 * MB) + "\u2603"
    truncated = cut.encode("utf-8")[:-1]  # ends inside a character, with no newline (end of stream)
    line, size = _read_line(io.BytesIO(truncated), 64 * MB)
    assert line == truncated

    with pytest.raises(_Oversized):
        _read_line(io.BytesIO(data), 2 * MB)
    short, size = _read_line(io.BytesIO(b'{"a":1}\n'), 64 * MB)
    assert short == b'{"a":1}\n' and size == 8
