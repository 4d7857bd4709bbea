"""``benchmarks/scale.py --quick --json`` runs to the end, reports every section and leaves nothing running.

A smoke test only: the figures depend on the machine, so nothing here looks at a timing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import List

import pytest

from .conftest import ROOT, until

SCRIPT = ROOT / "benchmarks" / "scale.py"
SERVER = str(ROOT / "benchmarks" / "scale_server.py")
SECTIONS = ("threads", "pending", "manager", "results", "catalog")


def _left_behind(session: int) -> List[str]:
    """Processes still in the benchmark's session, or running its server (Linux /proc; [] elsewhere)."""
    found = []
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()  # after "pid (comm) ": state, ppid, pgrp, session...
        if fields[0] == "Z":
            continue
        if int(fields[3]) == session or SERVER in cmdline:
            found.append("%s: %s" % (entry.name, cmdline.strip()))
    return found


@pytest.mark.slow
@pytest.mark.timeout(420)
def test_the_scale_benchmark_runs_quick_and_cleans_up() -> None:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    proc = subprocess.Popen([sys.executable, str(SCRIPT), "--quick", "--json"], cwd=str(ROOT), env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=400)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, 9)
            proc.communicate()
    assert proc.returncode == 0, err[-3000:]
    results = json.loads(out)
    for section in SECTIONS:
        assert results["sections"].get(section), "section %s missing: %s" % (section, err[-2000:])
    assert isinstance(results["targets"], list) and results["targets"]
    assert all(t["status"] in ("PASS", "MISS", "SKIP") for t in results["targets"])

    if not Path("/proc/self/stat").exists():
        return
    try:
        until(lambda: not _left_behind(proc.pid), timeout=10)  # the run's children may take a moment to exit
    except AssertionError:
        pass
    assert _left_behind(proc.pid) == []


def _load_scale():
    import importlib.util

    spec = importlib.util.spec_from_file_location("scale_benchmark", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_threads_unit_makes_at_least_eight_calls_per_thread() -> None:
    # With two calls per thread, 1,024 threads timed their own release and drain, not throughput:
    # HTTP had kept two. The official SDK's tasks make as many as the threads.
    scale = _load_scale()
    seen = scale.threads_units(dict(scale.PLAN["default"]), True)
    assert {name for name, _ in seen} == {"%s/%s" % (c, t) for c in ("floor", "mcpsync", "official")
                                          for t in ("stdio", "http")}
    assert all(spec["per_thread"] >= 8 for _, spec in seen), seen


def test_the_cache_read_benchmark_reports_every_count() -> None:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "cache_read.py"), "--counts", "10,100",
                           "--reads", "2", "--json"], cwd=str(ROOT), env=env, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = json.loads(proc.stdout)
    assert [row["tools"] for row in rows] == [10, 100]
    assert "per_tool_vs_before" in rows[1] and rows[0]["bytes"] < rows[1]["bytes"]
