"""The engine tests: each starts a real engine (gunicorn, Celery, Dask...) in processes of its own.

The engines run in subprocesses of the test (never in the pytest process: they start threads
and processes the leak check would rightly flag), marked by :data:`~tests.engines.common.MARK`
so the end of each test can check that nothing the run started is left: no engine process, no
worker, no stdio server.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Dict, Iterator, List, Optional

import pytest

from ..conftest import until
from .common import MARK, NOTES, read_notes

ROOT = Path(__file__).parent.parent.parent


def marked(token: str) -> List[int]:
    """Pids of the live (not zombie) processes whose environment carries ``MARK=token``."""
    needle = f"{MARK}={token}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                if stat.read().rsplit(")", 1)[1].split()[0] == "Z":
                    continue
            with open(f"/proc/{entry}/environ", "rb") as environ:
                if needle in environ.read().split(b"\0"):
                    found.append(int(entry))
        except OSError:
            continue
    return found


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


class EngineRun:
    """One run of an engine: its mark, its notes file, its environment and the processes it started."""

    def __init__(self, folder: Path) -> None:
        self.token = uuid.uuid4().hex
        self.folder = folder
        self.notes_path = folder / "notes.jsonl"
        self.env: Dict[str, str] = dict(os.environ)
        self.env.update({MARK: self.token, NOTES: str(self.notes_path), "PYTHONDONTWRITEBYTECODE": "1",
                         "PYTHONPATH": os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])})
        self.procs: List["subprocess.Popen[bytes]"] = []

    def start(self, argv: List[str], name: str) -> "subprocess.Popen[bytes]":
        """Start ``argv`` in a session of its own, its output kept in ``<name>.log``."""
        with open(self.folder / f"{name}.log", "wb") as log:
            proc = subprocess.Popen(argv, cwd=ROOT, env=self.env, stdin=subprocess.DEVNULL, stdout=log,
                                    stderr=subprocess.STDOUT, start_new_session=True)
        self.procs.append(proc)
        return proc

    def log(self, name: str) -> str:
        try:
            return (self.folder / f"{name}.log").read_text(errors="replace")[-4000:]
        except FileNotFoundError:
            return ""

    def notes(self, kind: Optional[str] = None) -> List[dict]:
        return [n for n in read_notes(self.notes_path) if kind is None or n["kind"] == kind]

    def stop(self, proc: "subprocess.Popen[bytes]", sig: int = signal.SIGTERM, timeout: float = 60) -> int:
        """End ``proc`` the way its operator would (``sig``), and wait for it."""
        if proc.poll() is None:
            proc.send_signal(sig)
        return proc.wait(timeout)

    def nothing_left(self, timeout: float = 20) -> None:
        """Every process of the run has ended: the engine's, its workers' and every server's."""
        try:
            until(lambda: not marked(self.token), timeout)
        except AssertionError:
            raise AssertionError(f"processes of the run left running: {_describe(marked(self.token))}") from None

    def kill_all(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except OSError:
                    pass
                proc.wait(10)
        for pid in marked(self.token):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


def _describe(pids: List[int]) -> List[str]:
    out = []
    for pid in pids:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
                text = cmdline.read().replace(b"\0", b" ").decode(errors="replace")
            out.append(f"{pid}: {text[:200]}")
        except OSError:
            out.append(str(pid))
    return out


@pytest.fixture
def engine_run(tmp_path: Path) -> Iterator[EngineRun]:
    """An :class:`EngineRun`; whatever a failing test left running is killed afterwards."""
    run = EngineRun(tmp_path)
    try:
        yield run
    finally:
        run.kill_all()


def python(*args: str) -> List[str]:
    return [sys.executable, *args]
