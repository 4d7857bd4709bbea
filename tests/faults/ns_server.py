#!/usr/bin/env python
"""Test peer: the faults suite's counting SDK server over Streamable HTTP on a given address, in its own process.

``python tests/faults/ns_server.py HOST PORT [--json]``: the partition test runs it inside a network
namespace (``ip netns exec``), on the namespace's veth address. Tools as in tests/faults/conftest.py:
``work(tag, seconds)`` counts its runs, ``runs(tag)`` tells the count.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent.parent.parent))
sys.path.insert(0, str(Path(__file__).parent.parent / "servers"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("host")
    parser.add_argument("port", type=int)
    parser.add_argument("--json", action="store_true", help="JSON answers (default: SSE)")
    args = parser.parse_args()
    import uvicorn

    from tests.faults.conftest import build_counting_server

    # host: the SDK then accepts requests whose Host header names this address (its DNS-rebinding guard)
    app = build_counting_server().streamable_http_app(json_response=args.json, host=args.host)
    uvicorn.run(app, host=args.host, port=args.port, log_level="critical", ws="none")


if __name__ == "__main__":
    main()
