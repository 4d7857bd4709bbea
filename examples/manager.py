"""Manager: several servers from one config, their tools under one namespace, kept connected.

    python examples/manager.py

The config below is what you would keep in a project's ``.mcp.json`` (or any
of the files ``mcpsync.Manager.discover()`` reads; see the README). Two
copies of the demo server stand in for your real servers; ``${DEMO_GREETING}``
shows variable expansion (with a default, since it is probably unset).
"""

import sys
from pathlib import Path

import mcpsync

DEMO_SERVER = str(Path(__file__).with_name("demo_server.py"))

CONFIG = {
    "mcpServers": {
        "demo": {"command": sys.executable, "args": [DEMO_SERVER]},
        "Demo Two": {"command": sys.executable, "args": [DEMO_SERVER],
                     "env": {"GREETING": "${DEMO_GREETING:-hello}"}},
        "missing": {"command": "no-such-mcp-server"},  # fails alone; the others carry on
    }
}


def main() -> None:
    def tools_changed(server: str) -> None:
        print(f"  (tools of {server!r} changed)")

    # The tools cache makes the next start instant even for slow servers; cache=False skips it.
    with mcpsync.Manager(CONFIG, on_tools_changed=tools_changed) as manager:  # connects all, in parallel
        manager.wait(10)  # only for the demo: startup itself never waits for the slowest server
        for name, status in manager.status().items():
            error = f" - {status.last_error.splitlines()[0]}" if status.last_error else ""
            print(f"{name:10} {status.state:10} {status.tools} tools{error}")

        for tool in manager.tools():
            print(f"  {tool.qualified_name:28} -> {tool.server}/{tool.name}: {tool.description}")

        result = manager.call_tool("mcp_demo_add", {"a": 2, "b": 40})
        print("mcp_demo_add ->", result.text)
        result = manager.call_tool("mcp_demo_two_echo", {"text": "routed by name"})
        print("mcp_demo_two_echo ->", result.text)

        try:
            manager.client("missing")
        except mcpsync.ServerNotConnected as exc:
            print("missing ->", str(exc).splitlines()[0])


if __name__ == "__main__":
    main()
