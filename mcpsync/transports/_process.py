"""Child-process plumbing for the stdio transport: environment, spawning, ending.

Kept apart from the transport so the platform differences live in one place.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from typing import IO, Any, Dict, List, Mapping, Optional

IS_WINDOWS = sys.platform == "win32"

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
    if inherit:
        env = dict(source)
    else:
        allow = WINDOWS_ENV_ALLOWLIST if IS_WINDOWS else POSIX_ENV_ALLOWLIST
        env = {}
        for key, value in source.items():
            name = key.upper() if IS_WINDOWS else key
            if (name in allow or name.startswith("LC_")) and not value.startswith("()"):
                # "()" marks an exported shell function: never hand those on.
                env[key] = value
    for key, value in (extra or {}).items():
        env[str(key)] = str(value)
    return env


def spawn(argv: List[str], env: Dict[str, str], cwd: Optional[str]) -> "subprocess.Popen[bytes]":
    """Start ``argv`` with three pipes in its own process group (session on POSIX)."""
    kwargs: Dict[str, object] = {}
    if IS_WINDOWS:
        kwargs["creationflags"] = subprocess.CREATE_NEW_PROCESS_GROUP  # type: ignore[attr-defined]
    else:
        kwargs["start_new_session"] = True
    proc: "subprocess.Popen[bytes]" = subprocess.Popen(  # argv list, never a shell
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env=env, cwd=cwd, close_fds=True, **kwargs,  # type: ignore[call-overload]
    )
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
    try:
        entries = os.listdir("/proc")
    except OSError:
        return True  # no /proc (macOS, BSD): trust the signal
    group = str(proc.pid)
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        # fields: state, ppid, pgrp, ...
        if fields[2] == group and fields[0] not in ("Z", "X"):
            return True
    return False


def _wait_group(proc: "subprocess.Popen[bytes]", timeout: float) -> bool:
    """Wait until the leader is reaped and the group is empty; True if so in time."""
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
    take as the signal to exit.
    """
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
