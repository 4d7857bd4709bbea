"""Quickstart: start the demo server, list its tools, call one.

    python examples/quickstart.py
"""

import sys
from pathlib import Path

import mcpsync

DEMO_SERVER = Path(__file__).with_name("demo_server.py")


def main() -> None:
    # An argv list means "run this over stdio". The server is ended when the block exits.
    with mcpsync.connect([sys.executable, str(DEMO_SERVER)]) as client:
        print(f"Connected to {client.server_info.name} (protocol {client.protocol_version})")
        for tool in client.list_tools():
            print(f"  tool {tool.name}: {tool.description}")
        result = client.call_tool("add", {"a": 2, "b": 40})
        print(f"add(2, 40) -> {result.text}  structured: {result.structured_content}")


if __name__ == "__main__":
    main()
