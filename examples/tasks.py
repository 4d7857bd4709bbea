"""Run a slow tool as a task: start it, check on it, wait for it, cancel another.

    python examples/tasks.py

``call_tool(..., task=True)`` returns a ``Task`` at once; the server goes on
working. ``task.status()`` asks once, ``task.wait()`` polls at the server's
pace, ``task.result()`` waits and returns the ``CallToolResult``, and
``task.cancel()`` asks the server to stop. It works the same with 2025-11-25
servers and with 2026-07-28 servers that offer the tasks extension. A tool that
*requires* a task runs as one inside a plain ``call_tool`` too.
"""

import sys
from pathlib import Path

import mcpsync

SERVER = Path(__file__).with_name("asking_server.py")


def main() -> None:
    with mcpsync.connect([sys.executable, str(SERVER)]) as client:
        task = client.call_tool("render", {"frames": 5}, task=True)
        print(f"started task {task.id}: {task.status()} ({task.info.status_message})")

        other = client.call_tool("render", {"frames": 50}, task=True)
        other.cancel()
        print(f"cancelled the other one: {other.wait(timeout=10)}")

        print("waiting for the first...")
        print(task.result(timeout=60).text, f"(status {task.info.status})")

        for info in client.list_tasks():
            print(f"  {info.task_id}: {info.status}")


if __name__ == "__main__":
    main()
