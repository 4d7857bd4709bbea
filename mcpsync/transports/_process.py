"""Child-process plumbing for the stdio transport: environment, spawning, ending.

Kept apart from the transport so the platform differences live in one place. On Linux every
server spawned here is also guarded by this process's watchdog (:mod:`._watchdog`), which ends
the server's process group if this process dies without closing it.
"""

from __future__ import annotations

import os
import re
import select
import signal
import sys
import threading
import time
from typing import IO, TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Tuple

if TYPE_CHECKING:
    import subprocess  # the module loads when a server starts (see spawn)

from .._log import getLogger
from .. import _fork
from . import _watchdog

IS_WINDOWS = sys.platform == "win32"

log = getLogger("mcpsync.transport.stdio")

#: Set to 0 (or off, false, no) to start stdio servers without the watchdog.
WATCHDOG_ENV = "MCPSYNC_WATCHDOG"
#: How long closing the last guarded server waits for the watchdog to exit before killing it.
_RETIRE_TIMEOUT = 5.0
_PYTHON = re.compile(r"^(python|pypy)[0-9.]*(-[a-z]+)?$")

#: Variables a stdio server inherits from the parent unless ``inherit_env=True``.
#: Everything else (API keys, tokens, cloud credentials) stays in the parent.
POSIX_ENV_ALLOWLIST = ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "TMPDIR", "TZ")
WINDOWS_ENV_ALLOWLIST = (
    "APPDATA", "COMSPEC", "HOMEDRIVE", "HOMEPATH", "LOCALAPPDATA", "PATH", "PATHEXT",
    "PROCESSOR_ARCHITECTURE", "PROGRAMDATA", "PROGRAMFILES", "SYSTEMDRIVE", "SYSTEMROOT",
    "TEMP", "TMP", "USERNAME", "USERPROFILE", "WINDIR",
)


def build_env(extra: Optional[Mapping[str, str]], inherit: bool,
              parent: Optional[Mapping[str, str]] = None) -> Dict[str, str]:
    """The environment for a server: the allow-listed (or whole) parent env plus ``extra``."""
    source = os.environ if parent is None else parent
    env = dict(source) if inherit else _allowed(source)
    for key, value in (extra or {}).items():
        env[str(key)] = str(value)
    return env


def _allowed(source: Mapping[str, str]) -> Dict[str, str]:
    """The allow-listed variables of ``source`` (``LC_*`` too), never an exported shell function."""
    allow = WINDOWS_ENV_ALLOWLIST if IS_WINDOWS else POSIX_ENV_ALLOWLIST
    env = {}
    for key, value in source.items():
        name = key.upper() if IS_WINDOWS else key
        if (name in allow or name.startswith("LC_")) and not value.startswith("()"):
            # "()" marks an exported shell function: never hand those on.
            env[key] = value
    return env


def spawn(argv: List[str], env: Dict[str, str], cwd: Optional[str],
          grace: float = 2.0) -> "subprocess.Popen[bytes]":
    """Start ``argv`` with three pipes in its own process group (session on POSIX).

    On Linux the watchdog then guards the group (unless ``MCPSYNC_WATCHDOG=0``): should this
    process die without :func:`terminate` being called, the watchdog gives the server
    ``grace`` seconds to exit, then ends its group with SIGTERM and, ``grace`` later, SIGKILL.
    """
    import subprocess  # when a server starts, not at `import mcpsync`
    kwargs: Dict[str, object] = {}
    if IS_WINDOWS:
        kwargs["creationflags"] = subprocess.CREATE_NEW_PROCESS_GROUP  # type: ignore[attr-defined]
    else:
        kwargs["start_new_session"] = True
    proc: "subprocess.Popen[bytes]" = subprocess.Popen(  # argv list, never a shell
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env=env, cwd=cwd, close_fds=True, **kwargs,  # type: ignore[call-overload]
    )
    if watchdog_wanted():
        # Read now, while the server is our unreaped child: its number is surely still its own.
        WATCHDOG.guard(proc.pid, grace, _watchdog.leader_start(proc.pid))
    return proc


def _signal_group(proc: "subprocess.Popen[bytes]", sig: int) -> bool:
    """Send ``sig`` to the child's process group; False when nobody is left in it."""
    try:
        os.killpg(proc.pid, sig)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def _group_alive(proc: "subprocess.Popen[bytes]") -> bool:
    """Whether any process of the child's group still runs (zombies waiting to be reaped
    by init do not count: they are already dead)."""
    if not _signal_group(proc, 0):
        return False
    groups = _watchdog.running_groups()
    return groups is None or proc.pid in groups  # no /proc (macOS, BSD): trust the signal


def _wait_group(proc: "subprocess.Popen[bytes]", timeout: float) -> bool:
    """Wait until the leader is reaped and the group is empty; True if so in time."""
    import subprocess  # when a server starts, not at `import mcpsync`
    deadline = time.monotonic() + timeout
    try:
        proc.wait(max(0.0, timeout))
    except subprocess.TimeoutExpired:
        return False
    delay = 0.005
    while _group_alive(proc):
        if time.monotonic() >= deadline:
            return False
        time.sleep(delay)  # polling: there is no way to wait on a group's other members
        delay = min(delay * 2, 0.05)
    return True


def terminate(proc: "subprocess.Popen[bytes]", grace: float) -> None:
    """End the child and its process group: wait ``grace``, SIGTERM, wait, SIGKILL.

    The caller has already closed the child's stdin, which well-behaved servers
    take as the signal to exit. Then the watchdog forgets the group; if ending it was
    interrupted (a KeyboardInterrupt, a signal's exception), the group stays guarded, so the
    watchdog still ends it when this process dies.
    """
    _end(proc, grace)
    WATCHDOG.forget(proc.pid)


def _end(proc: "subprocess.Popen[bytes]", grace: float) -> None:
    import subprocess  # when a server starts, not at `import mcpsync`
    if IS_WINDOWS:
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            proc.terminate()
            try:
                proc.wait(grace)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        return
    if _wait_group(proc, grace):
        return
    _signal_group(proc, signal.SIGTERM)
    if _wait_group(proc, grace):
        return
    _signal_group(proc, signal.SIGKILL)
    _wait_group(proc, grace)
    if proc.returncode is None:
        proc.kill()
        proc.wait()


def close_copy(stream: "Optional[IO[bytes]]") -> None:
    """Close this process's descriptor of a pipe inherited across fork, touching nothing else.

    The file object's buffer lock may be held by a thread of the parent that does not exist
    in the child, so the raw file under it is closed instead: that takes no lock, flushes
    nothing, and leaves the buffered object closed (its garbage collection does nothing).
    """
    if stream is None:
        return
    raw: Any = getattr(stream, "raw", stream)
    try:
        raw.close()
    except (OSError, ValueError):
        pass


def watchdog_wanted() -> bool:
    """Whether servers spawned now are guarded: on Linux, unless ``MCPSYNC_WATCHDOG`` is 0."""
    if not sys.platform.startswith("linux"):
        return False
    return os.environ.get(WATCHDOG_ENV, "").strip().lower() not in ("0", "off", "false", "no")


def _python() -> Optional[str]:
    """The Python to run the watchdog with; None where ``sys.executable`` is no plain Python
    (a frozen application, or a program embedding Python such as uWSGI)."""
    exe = sys.executable
    if not exe or getattr(sys, "frozen", False) or not _PYTHON.match(os.path.basename(exe).lower()):
        return None
    return exe if os.access(exe, os.X_OK) else None


class Watchdog:
    """This process's one watchdog process (see :mod:`._watchdog`): started when the first
    server is guarded, told about each server's group, and ended once the last one is
    forgotten (its stdin closed, then reaped once its stdout, never written, reaches end of
    file). A watchdog found dead is replaced, and told about every group. In a forked child
    the parent's watchdog is the parent's: the child closes its copy of the pipe (so the
    parent's death is still seen) and starts its own when it needs one.

    A transport collected by the garbage collector closes itself, and may do so on a thread
    that is already in here (any allocation can run the collector): such a nested ``forget``
    is done when the outer call finishes.
    """

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._proc: "Optional[subprocess.Popen[bytes]]" = None
        self._groups: Dict[int, Tuple[float, Optional[str]]] = {}  # pgid -> (grace, the leader's start)
        self._owner = os.getpid()
        self._busy = False
        self._later: List[int] = []
        self._warned = False

    @property
    def pid(self) -> Optional[int]:
        """The watchdog's process id while it runs, else None."""
        proc = self._proc
        return proc.pid if proc is not None and self._owner == os.getpid() else None

    def guarded(self) -> List[int]:
        """The process groups guarded now."""
        return sorted(self._groups) if self._owner == os.getpid() else []

    def guard(self, pgid: int, grace: float, leader_started: Optional[str] = None) -> None:
        """Guard ``pgid``: should this process die, the watchdog ends the group.

        ``leader_started`` is when the group's leader started (:func:`._watchdog.leader_start`,
        read right after it was started); without it the watchdog never signals the group.
        """
        with self._mine():
            self._busy = True
            try:
                self._groups[pgid] = (grace, leader_started)
                self._send(_guard_line(pgid, grace, leader_started))
                self._catch_up()
            finally:
                self._busy = False

    def forget(self, pgid: int) -> None:
        """Stop guarding ``pgid`` (its group has been ended); the last one ends the watchdog."""
        with self._mine():
            if self._busy:
                self._later.append(pgid)  # nested (see the class docstring)
                return
            self._busy = True
            try:
                self._later.append(pgid)
                self._catch_up()
            finally:
                self._busy = False

    def after_fork(self) -> None:
        """In a forked child: let go of the parent's watchdog without touching it."""
        proc = self._proc
        self._lock = threading.RLock()  # a parent's thread may have held the old one
        self._proc = None
        self._groups = {}
        self._later = []
        self._busy = False
        self._owner = os.getpid()
        if proc is not None:
            setattr(proc, "_child_created", False)  # not this process's child: never wait for it
            close_copy(proc.stdin)
            close_copy(proc.stdout)

    def _mine(self) -> "threading.RLock":
        if self._owner != os.getpid():  # forked without the at-fork hook (a raw fork from C)
            self.after_fork()
        return self._lock

    def _catch_up(self) -> None:
        while self._later:
            pgid = self._later.pop()
            if self._groups.pop(pgid, None) is None:
                continue
            self._send(f"- {pgid}\n")
            for other in list(self._groups):  # a group whose close was interrupted may have ended since
                if not _group_exists(other):
                    del self._groups[other]
                    self._send(f"- {other}\n")
            if not self._groups:
                self._retire()

    def _send(self, line: str) -> None:
        """Write ``line``; a watchdog that is missing or dead is replaced (while groups are
        guarded) and told about every group, which covers ``line``."""
        for _attempt in range(2):
            proc = self._proc
            if proc is not None and proc.poll() is not None:
                self._drop()
                proc = None
            if proc is None:
                proc = self._start() if self._groups else None
                if proc is None:
                    return
                line = "".join([_guard_line(pgid, grace, started)
                                for pgid, (grace, started) in list(self._groups.items())])
            if _write_all(proc, line):
                return
            self._drop()

    def _start(self) -> "Optional[subprocess.Popen[bytes]]":
        import subprocess  # when a server starts, not at `import mcpsync`
        python = _python()
        if python is None or not os.path.isfile(_watchdog.SCRIPT):
            self._warn(f"no Python program to run it with ({sys.executable!r})" if python is None
                       else f"{_watchdog.SCRIPT} is missing")
            return None
        try:
            proc: "subprocess.Popen[bytes]" = subprocess.Popen(
                [python, "-I", "-S", "-c", _watchdog.LAUNCH], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL, cwd="/", close_fds=True, start_new_session=True, bufsize=0,
            )
        except OSError as exc:
            self._warn(str(exc))
            return None
        self._proc = proc
        log.debug("Started the stdio servers' watchdog (pid %d)", proc.pid)
        return proc

    def _warn(self, why: str) -> None:
        if not self._warned:
            self._warned = True
            log.warning("Cannot start the watchdog that ends stdio servers if this process is killed: %s. "
                        "Close clients before exiting; set %s=0 to skip it without this warning",
                        why, WATCHDOG_ENV)

    def _drop(self) -> None:
        """Forget a watchdog that died or cannot be written to (reaping it)."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        close_copy(proc.stdin)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        close_copy(proc.stdout)

    def _retire(self) -> None:
        """Nothing is guarded: close the pipe, which tells the watchdog to exit, and reap it."""
        import subprocess  # when a server starts, not at `import mcpsync`
        proc, self._proc = self._proc, None
        if proc is None:
            return
        close_copy(proc.stdin)
        # The watchdog never writes on its stdout: its end of file is the watchdog's exit,
        # seen at once (Popen.wait with a timeout would poll).
        exited = _ends_within(proc.stdout, _RETIRE_TIMEOUT)
        try:
            proc.wait(1.0 if exited else 0.0)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        close_copy(proc.stdout)


def _guard_line(pgid: int, grace: float, leader_started: Optional[str]) -> str:
    """The watchdog's ``+`` line; "?" for an unknown start (the watchdog then never signals the group)."""
    return f"+ {pgid} {grace:.3f} {leader_started or '?'}\n"


def _group_exists(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


def _ends_within(stream: "Optional[IO[bytes]]", timeout: float) -> bool:
    """Whether the pipe ``stream`` (never written to) reaches end of file within ``timeout``."""
    if stream is None:
        return True
    try:
        poller = select.poll()  # not select.select: it fails for descriptors over 1023
        poller.register(stream.fileno(), select.POLLIN)
        return bool(poller.poll(timeout * 1000))
    except (OSError, ValueError):
        return True


#: The watchdog of this process.
WATCHDOG = Watchdog()
_fork.on_child(WATCHDOG.after_fork)


def _write_all(proc: "subprocess.Popen[bytes]", line: str) -> bool:
    """Write ``line`` to the watchdog's stdin, all of it; False if the pipe is broken or closed."""
    assert proc.stdin is not None
    try:
        data = line.encode("ascii")
        while data:
            written = proc.stdin.write(data)
            if not written:
                raise OSError("the watchdog's pipe took nothing")
            data = data[written:]
        return True
    except (OSError, ValueError):
        return False
