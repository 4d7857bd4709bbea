"""A stdio server that dies at start-up the way a misconfigured one does: a few stderr lines, exit 3.

    python dies.py            # the plain story: "FATAL: DATABASE_URL is not set"
    python dies.py hostile    # the last line carries terminal controls (a title change, a screen clear)
    python dies.py chatty     # twenty lines of stderr before the fatal one
"""

import sys

mode = sys.argv[1] if len(sys.argv) > 1 else "plain"
if mode == "chatty":
    for number in range(20):
        print(f"loading plugin {number}", file=sys.stderr)
print("starting up", file=sys.stderr)
if mode == "hostile":
    print("FATAL: \x1b]0;owned\x07\x1b[2Jcleared \u202eevil", file=sys.stderr)
else:
    print("FATAL: DATABASE_URL is not set", file=sys.stderr)
sys.stderr.flush()
sys.exit(3)
