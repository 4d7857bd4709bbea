"""Progress notifications, and timeouts that progress keeps alive.

    python examples/progress.py
"""

import sys
from pathlib import Path
from typing import Optional

import mcpsync

DEMO_SERVER = Path(__file__).with_name("demo_server.py")


def show(progress: float, total: Optional[float], message: Optional[str]) -> None:
    # Runs on mcpsync's dispatcher thread, in arrival order, before the call returns.
    print(f"  {progress:g}/{total:g} {message or ''}" if total else f"  {progress:g} {message or ''}")


def main() -> None:
    with mcpsync.connect([sys.executable, str(DEMO_SERVER)]) as client:
        result = client.call_tool(
            "countdown", {"n": 5, "delay": 0.2},
            on_progress=show,
            timeout=0.5,                     # no single step may take longer than this...
            reset_timeout_on_progress=True,  # ...because each progress restarts the clock...
            max_total_timeout=10.0,          # ...but the whole call is still bounded.
        )
        print(result.text)


if __name__ == "__main__":
    main()
