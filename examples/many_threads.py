"""Share one client between threads: each call blocks only its own thread.

    python examples/many_threads.py
"""

import sys
import threading
from pathlib import Path

import mcpsync

DEMO_SERVER = Path(__file__).with_name("demo_server.py")


def main() -> None:
    with mcpsync.connect([sys.executable, str(DEMO_SERVER)]) as client:
        results = {}

        def work(n: int) -> None:
            # Every thread gets exactly its own answer, whatever order they arrive in.
            results[n] = client.call_tool("add", {"a": n, "b": n}).structured_content["sum"]

        threads = [threading.Thread(target=work, args=(n,)) for n in range(16)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        print(sorted(results.items()))


if __name__ == "__main__":
    main()
