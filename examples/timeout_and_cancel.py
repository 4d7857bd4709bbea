"""Timeouts, cancel tokens and Ctrl-C.

    python examples/timeout_and_cancel.py

Every call takes ``timeout=`` (float seconds; the client default is 30 s) and
``cancel=`` (a CancelToken, the AbortSignal of mcpsync). Either way the server
is sent ``notifications/cancelled`` and the client stays usable.
"""

import sys
import threading
from pathlib import Path

import mcpsync

DEMO_SERVER = Path(__file__).with_name("demo_server.py")


def main() -> None:
    with mcpsync.connect([sys.executable, str(DEMO_SERVER)], timeout=10.0) as client:
        # 1. A per-call timeout: countdown takes ~2 s, we allow 0.3 s.
        try:
            client.call_tool("countdown", {"n": 4, "delay": 0.5}, timeout=0.3)
        except mcpsync.RequestTimeout as exc:
            print("timed out:", exc)  # "Request timeout after 300ms"

        # 2. A cancel token fired from another thread (a "Stop" button, say).
        token = mcpsync.CancelToken()
        threading.Timer(0.2, token.cancel, args=("user pressed stop",)).start()
        try:
            client.call_tool("countdown", {"n": 4, "delay": 0.5}, cancel=token)
        except mcpsync.RequestCancelled as exc:
            print("cancelled:", exc.reason)

        # 3. One token for several calls, or combine tokens like AbortSignal.any.
        shutdown = mcpsync.CancelToken()
        either = mcpsync.CancelToken.any(shutdown, mcpsync.CancelToken())
        print("still usable:", client.call_tool("echo", {"text": "hi"}, cancel=either).text)

        # 4. Ctrl-C while a call waits raises KeyboardInterrupt in your code, tells the
        #    server, and leaves the client working for the next call.
        print("Press Ctrl-C in the next 3 seconds to interrupt a call...")
        try:
            client.call_tool("countdown", {"n": 3, "delay": 1.0})
            print("(not interrupted)")
        except KeyboardInterrupt:
            print("interrupted; the client still works:", client.call_tool("echo", {"text": "ok"}).text)


if __name__ == "__main__":
    main()
