"""Opt-in signal handling: SIGTERM, SIGHUP and SIGINT become an orderly exit.

mcpsync installs no signal handler by itself. A program that wants ``kill`` (SIGTERM) or a
closed terminal (SIGHUP) to close its clients the way the end of a ``with`` block does calls
:func:`install_signal_handlers` once, from the main thread. The ``mcpsync`` command does.

It imports only :class:`~mcpsync.SignalExit`, which lives with every other exception.
"""

from __future__ import annotations

import signal
import threading
from typing import Any, Callable, Dict, Iterable, List, Optional

from .exceptions import SignalExit

__all__ = ["SignalExit", "install_signal_handlers"]

Handler = Any  # what signal.getsignal returns: a callable, SIG_DFL, SIG_IGN or None


def default_signals() -> List[int]:
    """SIGTERM, SIGHUP (where the platform has it) and SIGINT."""
    names = ("SIGTERM", "SIGHUP", "SIGINT")
    return [int(getattr(signal, name)) for name in names if hasattr(signal, name)]


def install_signal_handlers(signals: Optional[Iterable[int]] = None) -> Callable[[], None]:
    """Make SIGTERM, SIGHUP and SIGINT (or ``signals``) end this program in an orderly way.

    The first of them raises an exception in the main thread, wherever it is: SIGINT raises
    ``KeyboardInterrupt`` (as Python does by default), the others :class:`SignalExit`, a
    ``SystemExit`` with code 128 + the signal's number. So ``with`` blocks and ``finally``
    clauses run, clients and managers close (their servers get their stdin closed, then
    SIGTERM, then SIGKILL, each after the transport's ``shutdown_timeout``) and ``atexit``
    closes any left open. It also puts every signal handled here back to its default
    action, so a second signal ends the program at once (on Linux the watchdog still ends the
    servers then).

    A signal that is ignored when this is called (``nohup`` ignores SIGHUP; a shell ignores
    SIGINT for a program it runs in the background) stays ignored. Call it from the main
    thread (Python runs signal handlers only there), once, early; it is not needed for
    servers not to outlive a killed program on Linux (the watchdog does that), only for the
    orderly close.

    Returns:
        A function that puts back the handlers that were there before (where nothing else
        has replaced them since).

    Raises:
        ValueError: called from another thread than the main one, or a signal this platform
            does not let a program handle (SIGKILL).
    """
    if threading.current_thread() is not threading.main_thread():
        raise ValueError("install_signal_handlers() must be called from the main thread: Python runs signal "
                         "handlers only there. Call it at the start of the program")
    chosen = default_signals() if signals is None else [int(s) for s in signals]
    previous: Dict[int, Handler] = {}
    fired: List[int] = []

    def handler(signum: int, frame: Any) -> None:
        if not fired:
            fired.append(signum)
            for other in previous:
                signal.signal(other, signal.SIG_DFL)  # a second signal ends the program at once
        if signum == signal.SIGINT:
            raise KeyboardInterrupt
        raise SignalExit(signum)

    for signum in chosen:
        before = signal.getsignal(signum)
        if before is signal.SIG_IGN:
            continue
        signal.signal(signum, handler)
        previous[signum] = before

    def restore() -> None:
        for signum, before in previous.items():
            now = signal.getsignal(signum)
            if now is handler or (fired and now is signal.SIG_DFL):
                signal.signal(signum, signal.SIG_DFL if before is None else before)
        previous.clear()

    return restore
