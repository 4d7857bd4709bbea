#!/usr/bin/env python3
"""How the tools cache's read time grows with the number of tools, beyond the points scale.py takes.

    python benchmarks/cache_read.py                       # 1,000 to 40,000 tools, min of 9 reads each
    python benchmarks/cache_read.py --counts 1000,10000 --reads 15 --json

``scale.py`` compares the time per tool of a cache read at 10,000 tools with
the one at 1,000. Two points can't tell a step from a growth, so this script
reads the same kind of catalog (the tools of ``scale_server.py``) at more
counts, in one process and in increasing order as ``scale.py`` does, and
prints for each count the fastest and the median read, the time per tool, its
ratio to the count before, and the minor page faults of one read (from
``getrusage``): memory the read had to map afresh. The fastest read is the one
least disturbed by the rest of the machine, so the ratios use it.

A cost that grows faster than the tools keeps raising the time per tool from
one count to the next; a cost that is linear keeps it flat. The script only
reports and always exits 0.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import tempfile
import time
from typing import Any, Dict, List

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

from scale_server import Tools  # noqa: E402  the same tools scale.py's catalog section lists

from mcpsync._fleet.toolcache import ToolCache  # noqa: E402


def _faults() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def measure(counts: List[int], reads: int) -> List[Dict[str, Any]]:
    rows: List[Dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="mcpsync-cache-read-") as tmp:
        cache = ToolCache(tmp)
        for count in counts:
            if not cache.put("cat", "hash", Tools("cat", count).list_result["tools"]):
                raise RuntimeError("could not write the cache")
            times, faults = [], []
            for _ in range(reads):
                f0, t0 = _faults(), time.perf_counter()
                cache.get("cat", "hash")  # the result is dropped inside the timing, as in scale.py
                times.append(time.perf_counter() - t0)
                faults.append(_faults() - f0)
            rows.append({"tools": count, "bytes": os.path.getsize(cache.path_for("cat")),
                         "min_s": min(times), "median_s": statistics.median(times),
                         "us_per_tool": min(times) / count * 1e6, "faults_per_read": statistics.median(faults)})
    for before, row in zip(rows, rows[1:]):
        row["per_tool_vs_before"] = row["us_per_tool"] / before["us_per_tool"]
    return rows


def main(argv: Any = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    p.add_argument("--counts", default="1000,2000,5000,10000,20000,40000", help="tool counts, comma-separated")
    p.add_argument("--reads", type=int, default=9, help="reads per count (default 9)")
    p.add_argument("--json", action="store_true", help="print JSON instead of the table")
    args = p.parse_args(argv)
    rows = measure([int(c) for c in args.counts.split(",") if c.strip()], max(1, args.reads))
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print("tools cache read, %d reads per count (python %s)" % (args.reads, sys.version.split()[0]))
    print("%8s %10s %9s %9s %9s %10s %12s" % ("tools", "file KB", "min ms", "median ms", "us/tool",
                                             "x before", "faults/read"))
    for row in rows:
        print("%8s %10.0f %9.2f %9.2f %9.3f %10s %12.0f" % (
            "{:,}".format(row["tools"]), row["bytes"] / 1e3, row["min_s"] * 1e3, row["median_s"] * 1e3,
            row["us_per_tool"], "%.2f" % row["per_tool_vs_before"] if "per_tool_vs_before" in row else "-",
            row["faults_per_read"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
