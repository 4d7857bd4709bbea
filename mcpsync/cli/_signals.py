"""The command's signals: SIGTERM, SIGHUP and SIGINT close its servers in order, then it exits.

``main`` runs each command through :func:`run`. The first of those signals unwinds the command
(its manager closes every server: stdin closed, then SIGTERM, then SIGKILL), then the command
exits with 128 + the signal's number after one line on stderr; SIGINT is reported by ``main``
as "interrupted" (130). A second signal ends the command at once. Off the main thread (a
program calling ``main()`` from a thread of its own) nothing is installed.
"""

from __future__ import annotations

import threading
from typing import Callable

from .._signals import SignalExit, install_signal_handlers
from . import _output as out

__all__ = ["run"]


def run(command: Callable[[], int]) -> int:
    """``command()``, with the signals made an orderly close; its exit code."""
    if threading.current_thread() is not threading.main_thread():
        return command()
    restore = install_signal_handlers()
    try:
        return command()
    except SignalExit as exc:
        out.error(f"terminated by {exc.signal_name}")
        return 128 + exc.signum
    finally:
        restore()
