"""The watchdog: a small process that ends a client's stdio servers when the client dies.

A client killed by SIGKILL, or by SIGTERM or SIGHUP left at their default action, runs no
code of its own: no ``close()``, no ``atexit``. Its servers see their stdin reach end of file,
but a server that does not exit then, and every process a server started, would be left
running. So on Linux a client process starts this program (``python -I -S -c LAUNCH``, which
imports this module by itself, in a session of its own) when it starts its first stdio server,
and tells it on its stdin about each server's process group. The client holds the only
writing end of that pipe, so end of file means the client process is gone, whichever of its
threads started the servers (unlike ``PR_SET_PDEATHSIG``, which fires when the *thread* that forked exits). The watchdog
then ends each group still guarded the way ``close()`` would: it gives the server its grace
period to exit by itself, then sends SIGTERM to the group, waits again, and sends SIGKILL.
With no group left to guard, the client closes the pipe and the watchdog exits at once.

The lines on stdin: ``+ PGID GRACE START`` guards a group, ``- PGID`` forgets it. START is
when the group's leader (the server, whose pid is the group's number) started, as
``/proc/PID/stat`` gives it: the client reads it right after starting the server, while the
server is its unreaped child, so its number cannot yet belong to anyone else. SIGTERM and
SIGHUP to the watchdog end its groups at once, as end of file does.

The watchdog never signals a group whose leader it could not identify (:meth:`Guarded.identified`):
the process under the group's number must have started at START; or, once the leader has
exited and its children linger in the group, the watchdog must itself have seen the leader
running with that start time, and the group alive at every check since (every
:data:`PRUNE_EVERY` seconds it forgets groups that have ended, and groups whose number now
belongs to another process). A line without START, or a START that does not match what runs
under the number when the line arrives, guards nothing that will ever be signalled. The one
case left: within one check interval the whole group ends, its number is taken by a new
process that makes it a group and exits leaving others in it, and then the client dies; the
kernel hands out numbers in order, so that needs the process numbers to wrap round in seconds.

This module imports only the standard library: it runs as a script, outside the package,
and the transport's process code uses its ``/proc`` readers.
"""

from __future__ import annotations

import os
import select
import sys
import time

TYPE_CHECKING = False
if TYPE_CHECKING:  # not at run time: typing (with re and collections.abc) would triple its start-up
    import signal
    from typing import Dict, List, Optional, Set, Tuple
else:
    try:  # signal's C core: the same calls and numbers, without signal.py's enums (enum, functools)
        import _signal as signal
    except ImportError:  # an interpreter without it
        import signal

SCRIPT = os.path.abspath(__file__)

#: What ``python -I -S -c`` runs to start the watchdog: this module imported from its folder, so
#: that its cached bytecode is used (run as a script, it would be compiled anew every time).
LAUNCH = ("import sys; sys.path.append(%r); import _watchdog; sys.exit(_watchdog.main())"
          % os.path.dirname(SCRIPT))

#: How often (seconds) the watchdog forgets groups that have ended.
PRUNE_EVERY = 2.0
_POLL = 0.01


def _stat(pid: int) -> Optional[List[str]]:
    """The fields of ``/proc/PID/stat`` after the command name (state, ppid, pgrp, ...), or None."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def running_groups() -> Optional[Set[int]]:
    """The process group of every running process (zombies are already dead: not counted).

    None where there is no ``/proc`` to read.
    """
    try:
        entries = os.listdir("/proc")
    except OSError:
        return None
    groups = set()
    for entry in entries:
        if entry.isdigit():
            fields = _stat(int(entry))
            if fields is not None and fields[0] not in ("Z", "X"):
                groups.add(int(fields[2]))
    return groups


def started_at(pid: int) -> Optional[str]:
    """When ``pid`` started (clock ticks since boot, as text), or None if it is not running."""
    fields = _stat(pid)
    if fields is None or fields[0] in ("Z", "X") or len(fields) < 20:
        return None
    return fields[19]


class _Stop(Exception):
    """SIGTERM or SIGHUP to the watchdog: end the groups now."""


def _stop(signum: int, frame: object) -> None:
    raise _Stop()


def _killpg(pgid: int, sig: int) -> bool:
    try:
        os.killpg(pgid, sig)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def leader_start(pid: int) -> Optional[str]:
    """When ``pid`` started, also while it is a zombie (the client's unreaped child): what the
    client sends as START. None where there is no ``/proc`` or no such process."""
    fields = _stat(pid)
    if fields is None or len(fields) < 20:
        return None
    return fields[19]


class Guarded:
    """One server's group, with what the watchdog needs to end it safely.

    ``leader_started`` is the leader's start time as the client read it (None: unknown, so the
    group is never signalled). ``seen`` says whether the watchdog has itself seen that leader
    running; it is checked when the group is guarded and at every prune.
    """

    def __init__(self, pgid: int, grace: float, leader_started: Optional[str] = None) -> None:
        self.pgid = pgid
        self.grace = grace
        self.leader_started = leader_started
        self.seen = False
        self.check()

    def check(self) -> bool:
        """Look at the process under the group's number; False if it is not the leader (the number
        was taken by another process, so the group is no longer ours)."""
        now = started_at(self.pgid)
        if now is None:
            return True  # the leader has exited (its group may live on) or the group has ended
        if self.leader_started is not None and now == self.leader_started:
            self.seen = True
            return True
        return False

    def leader_running(self) -> bool:
        """Whether the server itself (not a process that reused its number) still runs."""
        now = started_at(self.pgid)
        return now is not None and now == self.leader_started

    def identified(self) -> bool:
        """Whether the group may be signalled: its leader runs with the recorded start time, or the
        watchdog saw it so and the group has lived on since (see the module text)."""
        if self.leader_started is None:
            return False
        now = started_at(self.pgid)
        if now is not None:
            return now == self.leader_started
        return self.seen


def apply(groups: Dict[int, Guarded], line: bytes) -> None:
    """Take one line of the protocol; a malformed one is ignored."""
    words = line.split()
    try:
        if len(words) == 4 and words[0] == b"+" and words[3].isdigit():
            pgid = int(words[1])
            if pgid > 1:
                groups[pgid] = Guarded(pgid, max(0.0, float(words[2])), words[3].decode("ascii"))
        elif len(words) == 2 and words[0] == b"-":
            groups.pop(int(words[1]), None)
    except ValueError:
        pass


def prune(groups: Dict[int, Guarded]) -> None:
    """Forget the groups that have ended (one signal-0 probe each), and those whose number another
    process now has (they are no longer ours)."""
    for pgid, guarded in list(groups.items()):
        if not _killpg(pgid, 0) or not guarded.check():
            del groups[pgid]


def end_groups(groups: List[Guarded], poll: float = _POLL) -> None:
    """End every group: its grace for the server to exit, SIGTERM to the group, grace, SIGKILL."""
    stages: Dict[int, Tuple[int, float]] = {}  # pgid -> (0 waiting, 1 SIGTERM sent, 2 SIGKILL sent; since)
    start = time.monotonic()
    pending = [g for g in groups if g.identified()]  # never a group whose leader is not known
    for guarded in pending:
        stages[guarded.pgid] = (0, start)
    while pending:
        now = time.monotonic()
        live = running_groups()
        pending = [guarded for guarded in pending if _advance(guarded, stages, live, now)]
        if pending:
            time.sleep(poll)  # a separate process: nothing else waits on it


def _advance(guarded: Guarded, stages: Dict[int, Tuple[int, float]], live: Optional[Set[int]], now: float) -> bool:
    """One look at a group being ended: the next signal once its stage's wait is over. False when
    the group has ended, or is given up on (SIGKILL went unanswered: uninterruptible sleep)."""
    if _ended(guarded.pgid, live):
        return False
    stage, since = stages[guarded.pgid]
    waited = now - since
    if stage == 0 and (waited >= guarded.grace or not guarded.leader_running()):
        _signal(guarded, signal.SIGTERM)
        stages[guarded.pgid] = (1, now)
    elif stage == 1 and waited >= guarded.grace:
        _signal(guarded, signal.SIGKILL)
        stages[guarded.pgid] = (2, now)
    elif stage == 2 and waited >= max(guarded.grace, 1.0):
        return False
    return True


def _ended(pgid: int, live: Optional[Set[int]]) -> bool:
    """The group has no process left: by the listing ``live`` of running groups, or a signal-0 probe."""
    return pgid not in live if live is not None else not _killpg(pgid, 0)


def _signal(guarded: Guarded, sig: int) -> None:
    if guarded.identified():  # checked again before each signal: the number may be another group's by now
        _killpg(guarded.pgid, sig)


def main() -> int:
    """Guard the groups named on stdin until it reaches end of file, then end those left."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGHUP, _stop)
    groups: Dict[int, Guarded] = {}
    pending = b""
    last_prune = time.monotonic()
    try:
        while True:
            ready, _, _ = select.select([0], [], [], PRUNE_EVERY)
            if ready:
                chunk = os.read(0, 65536)
                if not chunk:
                    break  # the client is gone (or closed the pipe: then nothing is guarded)
                *lines, pending = (pending + chunk).split(b"\n")
                for line in lines:
                    apply(groups, line)
            if time.monotonic() - last_prune >= PRUNE_EVERY:
                prune(groups)
                last_prune = time.monotonic()
    except (_Stop, OSError):
        pass
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    end_groups(list(groups.values()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
