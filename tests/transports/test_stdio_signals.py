"""No orphans (issue 12, item 3): a client ended by a signal leaves no stdio server running, nor
any process a server started.

A client killed by SIGKILL, or by SIGTERM or SIGHUP at their default action, runs no code of
its own: on Linux its watchdog process sees the client's pipe to it reach end of file and ends
each server's process group. A client ended by SIGINT closes its servers itself (Python raises
KeyboardInterrupt, then ``atexit`` runs). A program that calls
``mcpsync.install_signal_handlers()``, and the ``mcpsync`` command, close their servers in order
on SIGTERM and SIGHUP too, watchdog or not.

Every client here is a real process, and the server is ``flood_stdio.py spawn-helper``: it
starts a helper process (sleeping for an hour) that only the end of its process group ends.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
from typing import Dict, Iterator, List, Optional

import pytest

import mcpsync
from mcpsync.transports import _process, _watchdog

from ..conftest import ROOT, SERVERS, until

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the watchdog and /proc are Linux's")

HELPER_SERVER = [sys.executable, str(SERVERS / "flood_stdio.py"), "spawn-helper"]

# Signals at their default action (as a terminal starts a program), then the client's body.
PREAMBLE = """
import os, signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)
for name in ("SIGTERM", "SIGHUP"):
    signal.signal(getattr(signal, name), signal.SIG_DFL)
import mcpsync
"""

CLIENT = PREAMBLE + """
client = mcpsync.connect({server!r}, timeout=20, shutdown_timeout={grace!r})
print(client.transport.pid, client.call_tool("helper").text, flush=True)
sys.stdin.read()  # until the test signals this process
"""

# A fork that outlives the parent: the parent's death must still be seen by its watchdog.
FORKING_CLIENT = PREAMBLE + """
client = mcpsync.connect({server!r}, timeout=20)
helper = client.call_tool("helper").text
child = os.fork()
if child == 0:
    sys.stdin.read()  # the child lives on, holding its copies of every inherited descriptor
    os._exit(0)
print(client.transport.pid, helper, child, flush=True)
sys.stdin.read()
"""

# The opt-in orderly close: a `with` block closes the client, then the program exits 128 + signal.
ORDERLY_CLIENT = PREAMBLE + """
mcpsync.install_signal_handlers()
try:
    with mcpsync.connect({server!r}, timeout=20) as client:
        print(client.transport.pid, client.call_tool("helper").text, flush=True)
        sys.stdin.read()
finally:
    print("closed" if not client.connected else "still connected", flush=True)
"""

CLI = PREAMBLE + """
from mcpsync.cli import main
sys.exit(main(sys.argv[1:]))
"""

# Ignores SIGTERM, runs the server ("$@") and stays after it exits, writing nothing.
STUBBORN = """\
trap '' TERM HUP
"$@"
while :; do sleep 3600; done
"""

# Runs a helper in the server's process group, then execs the server ("$@").
WITH_HELPER = """\
"$1" -c "import time; time.sleep(3600)" </dev/null >/dev/null 2>&1 &
echo HELPER $! >&2
exec "$@"
"""


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, dead but not yet reaped, does not count)."""
    return _watchdog.started_at(pid) is not None


def parent_of(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as stat:
        return int(stat.read().rsplit(")", 1)[1].split()[1])


def end(pids: List[int]) -> None:
    """Kill what a failed test left: each process still running, and its group (a server's)."""
    for pid in pids:
        if not alive(pid):
            continue
        try:
            group = os.getpgid(pid)
            if group != os.getpgrp():  # never this test run's own group
                os.killpg(group, signal.SIGKILL)
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


class Running:
    """A Python program started by the test, its stdout read line by line, everything it
    started ended (and it reaped) at the end."""

    def __init__(self, code: str, *args: str, watchdog: bool = True) -> None:
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        env[_process.WATCHDOG_ENV] = "1" if watchdog else "0"
        self.proc = subprocess.Popen([sys.executable, "-c", code, *args], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=str(ROOT))
        self.started: List[int] = []
        self.stderr: List[str] = []
        self.drain = threading.Thread(target=self._read_stderr, daemon=True)
        self.drain.start()

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for raw in self.proc.stderr:
            self.stderr.append(raw.decode(errors="replace"))

    def pids(self, count: int) -> List[int]:
        """The first line of its stdout: ``count`` process ids."""
        assert self.proc.stdout is not None
        words = self.proc.stdout.readline().split()
        assert len(words) == count, f"the client did not start its server: {''.join(self.stderr)[-2000:]}"
        pids = [int(word) for word in words]
        self.started += pids
        return pids

    def close(self) -> None:
        end(self.started)
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)
        self.drain.join(10)
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()


@pytest.fixture
def running() -> Iterator[List[Running]]:
    programs: List[Running] = []
    yield programs
    for program in programs:
        program.close()


# -- the client's death, at each signal's default action -----------------------------------


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT, signal.SIGKILL],
                         ids=["SIGTERM", "SIGHUP", "SIGINT", "SIGKILL"])
def test_a_client_ended_by_a_signal_takes_its_servers_helpers_with_it(running: List[Running], signum: int) -> None:
    # SIGTERM, SIGHUP and SIGKILL end the client at once (no atexit): its watchdog ends the group.
    # SIGINT raises KeyboardInterrupt: the client's exit hook closes the server itself.
    client = Running(CLIENT.format(server=HELPER_SERVER, grace=2.0))
    running.append(client)
    server, helper = client.pids(2)
    assert alive(helper)
    client.proc.send_signal(signum)
    assert client.proc.wait(20) == -signum  # Python ends by the signal, SIGINT included (since 3.8)
    until(lambda: not alive(server), timeout=10)  # the server saw its stdin close, and exited
    until(lambda: not alive(helper), timeout=10)  # and its group was ended


def test_every_server_of_a_killed_client_is_ended_by_its_one_watchdog(running: List[Running]) -> None:
    code = PREAMBLE + f"""
import threading
from mcpsync.transports import _process
clients = []
def one():
    clients.append(mcpsync.connect({HELPER_SERVER!r}, timeout=20))
threads = [threading.Thread(target=one) for _ in range(4)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
pids = [str(_process.WATCHDOG.pid)]
for client in clients:
    pids += [str(client.transport.pid), client.call_tool("helper").text]
print(" ".join(pids), flush=True)
sys.stdin.read()
"""
    client = Running(code)
    running.append(client)
    watchdog, *servers = client.pids(9)
    assert all(alive(pid) for pid in servers)
    client.proc.kill()
    assert client.proc.wait(20) == -signal.SIGKILL
    until(lambda: not any(alive(pid) for pid in servers), timeout=10)
    until(lambda: not alive(watchdog), timeout=10)  # and then it exits


def test_a_server_that_ignores_its_stdin_closing_and_sigterm_is_killed_after_the_client_is(
        running: List[Running], tmp_path) -> None:
    # The group's leader ignores SIGTERM (and so do its children) and outlives its server child.
    script = tmp_path / "stubborn.sh"
    script.write_text(STUBBORN)
    server = ["sh", str(script), sys.executable, str(SERVERS / "misbehaving.py"), "good"]
    code = PREAMBLE + f"""
client = mcpsync.connect({server!r}, timeout=20, shutdown_timeout=0.3)
client.ping()
print(client.transport.pid, flush=True)
sys.stdin.read()
"""
    client = Running(code)
    running.append(client)
    [leader] = client.pids(1)
    client.proc.kill()
    assert client.proc.wait(20) == -signal.SIGKILL
    until(lambda: not alive(leader), timeout=10)  # grace, SIGTERM (ignored), grace, SIGKILL
    assert leader not in (_watchdog.running_groups() or set())  # nothing of its group is left


def test_a_forked_child_that_lives_on_does_not_keep_the_dead_parents_servers_alive(
        running: List[Running]) -> None:
    # The child inherits the parent's end of the watchdog's pipe; the at-fork hook closes it,
    # so the parent's death is still the end of the pipe.
    client = Running(FORKING_CLIENT.format(server=HELPER_SERVER))
    running.append(client)
    server, helper, child = client.pids(3)
    client.proc.kill()
    assert client.proc.wait(20) == -signal.SIGKILL
    until(lambda: not alive(helper) and not alive(server), timeout=10)
    assert alive(child)  # the child did not hold them up: it is still there


# -- the opt-in orderly close, and the command ------------------------------------------------


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_with_the_handlers_installed_a_signal_closes_the_client_in_order(running: List[Running], signum: int) -> None:
    # No watchdog: the program's own close must end the group.
    client = Running(ORDERLY_CLIENT.format(server=HELPER_SERVER), watchdog=False)
    running.append(client)
    server, helper = client.pids(2)
    client.proc.send_signal(signum)
    assert client.proc.wait(20) == 128 + signum, "".join(client.stderr)[-2000:]
    assert client.proc.stdout is not None and client.proc.stdout.read().strip() == b"closed"
    assert not alive(server) and not alive(helper)  # ended before the program exited
    assert "Traceback" not in "".join(client.stderr)


@pytest.mark.parametrize("signum,code,said", [(signal.SIGTERM, 143, "terminated by SIGTERM"),
                                              (signal.SIGHUP, 129, "terminated by SIGHUP"),
                                              (signal.SIGINT, 130, "interrupted")],
                         ids=["SIGTERM", "SIGHUP", "SIGINT"])
def test_the_command_closes_its_servers_in_order_on_a_signal(running: List[Running], tmp_path, signum: int,
                                                             code: int, said: str) -> None:
    # A server that never answers tools/call, with a helper; no watchdog: the command ends them.
    script = tmp_path / "with_helper.sh"
    script.write_text(WITH_HELPER)
    server = [sys.executable, str(SERVERS / "misbehaving.py"), "silent"]
    command = Running(CLI, "--debug", "--timeout", "60", "call", "echo", '{"text": "hi"}', "--",
                      "sh", str(script), *server, watchdog=False)
    running.append(command)
    until(lambda: any("RECV tools/call" in line for line in command.stderr), timeout=30)  # mid-call
    found = [re.search(r"HELPER (\d+)", line) for line in command.stderr]
    helper = int(next(match for match in found if match is not None).group(1))
    leader = parent_of(helper)
    command.started += [helper, leader]
    command.proc.send_signal(signum)
    assert command.proc.wait(20) == code
    command.drain.join(10)
    assert f"mcpsync: error: {said}" in "".join(command.stderr)
    assert not alive(leader) and not alive(helper)


# -- the watchdog within this process ----------------------------------------------------------


def watchdog_of_this_process() -> Optional[int]:
    return _process.WATCHDOG.pid


def test_one_watchdog_guards_every_server_of_a_process_and_ends_with_the_last(monkeypatch) -> None:
    monkeypatch.delenv(_process.WATCHDOG_ENV, raising=False)
    first = mcpsync.connect(HELPER_SERVER, timeout=20, shutdown_timeout=0.3)
    second = None
    try:
        watchdog = watchdog_of_this_process()
        assert watchdog is not None and alive(watchdog) and parent_of(watchdog) == os.getpid()
        # The transport's pid is the server's own, and it leads its group.
        assert parent_of(first.transport.pid) == os.getpid()
        assert os.getpgid(first.transport.pid) == first.transport.pid
        second = mcpsync.connect(HELPER_SERVER, timeout=20, shutdown_timeout=0.3)
        assert watchdog_of_this_process() == watchdog
        assert _process.WATCHDOG.guarded() == sorted([first.transport.pid, second.transport.pid])
        first.close()
        assert _process.WATCHDOG.guarded() == [second.transport.pid] and alive(watchdog)
    finally:
        first.close()
        if second is not None:
            second.close()
    assert watchdog_of_this_process() is None and _process.WATCHDOG.guarded() == []
    assert not alive(watchdog)  # and reaped (the leak check counts children)


def test_a_watchdog_that_died_is_replaced_and_told_about_every_server(monkeypatch) -> None:
    monkeypatch.delenv(_process.WATCHDOG_ENV, raising=False)
    first = mcpsync.connect(HELPER_SERVER, timeout=20, shutdown_timeout=0.3)
    second = None
    try:
        old = watchdog_of_this_process()
        assert old is not None
        os.kill(old, signal.SIGKILL)
        until(lambda: not alive(old))
        second = mcpsync.connect(HELPER_SERVER, timeout=20, shutdown_timeout=0.3)
        new = watchdog_of_this_process()
        assert new is not None and new != old and alive(new)
        assert _process.WATCHDOG.guarded() == sorted([first.transport.pid, second.transport.pid])
    finally:
        first.close()
        if second is not None:
            second.close()
    assert watchdog_of_this_process() is None


def test_a_server_connected_by_a_thread_that_then_exits_keeps_running(monkeypatch) -> None:
    # PR_SET_PDEATHSIG would end it here: it fires when the thread that forked exits.
    monkeypatch.delenv(_process.WATCHDOG_ENV, raising=False)
    made: Dict[str, mcpsync.Client] = {}
    thread = threading.Thread(target=lambda: made.setdefault("client", mcpsync.connect(HELPER_SERVER, timeout=20)))
    thread.start()
    thread.join(30)
    client = made["client"]
    try:
        assert not thread.is_alive()
        assert client.call_tool("helper").text.isdigit()
        assert alive(client.transport.pid) and watchdog_of_this_process() is not None
    finally:
        client.close()


def test_the_watchdog_can_be_turned_off(monkeypatch) -> None:
    monkeypatch.setenv(_process.WATCHDOG_ENV, "0")
    with mcpsync.connect(HELPER_SERVER, timeout=20, shutdown_timeout=0.3) as client:
        assert client.call_tool("helper").text.isdigit()
        assert watchdog_of_this_process() is None and _process.WATCHDOG.guarded() == []


def test_the_watchdog_ignores_malformed_lines_and_forgets_what_it_is_told_to() -> None:
    groups: Dict[int, _watchdog.Guarded] = {}
    for line in (b"+ 4242 0.5 77", b"+ 4343 x 77", b"nonsense", b"+ 1 2.0 77", b"+ 4444 1 77", b"- 4444", b"- zz",
                 b"+ 4545 0.5", b"+ 4646 0.5 ?"):  # no leader start, or an unknown one: nothing to guard
        _watchdog.apply(groups, line)
    assert sorted(groups) == [4242] and groups[4242].grace == 0.5 and groups[4242].leader_started == "77"


# -- the watchdog signals only a group whose leader it identified (issue 20) ----------------------


def sleeper(*code: str) -> "subprocess.Popen[bytes]":
    """A process leading a group of its own, as a server does (``code`` runs first in it)."""
    body = "; ".join([*code, "import time", "time.sleep(60)"])
    return subprocess.Popen([sys.executable, "-c", body], start_new_session=True, stdin=subprocess.DEVNULL)


def watchdog_told(*lines: str) -> None:
    """Run the real watchdog, tell it ``lines``, then end its stdin (as a client's death does), and wait."""
    watchdog = subprocess.Popen([sys.executable, "-I", "-S", _watchdog.SCRIPT], stdin=subprocess.PIPE)
    assert watchdog.stdin is not None
    watchdog.stdin.write("".join(lines).encode())
    watchdog.stdin.close()
    assert watchdog.wait(30) == 0


def test_the_watchdog_never_signals_a_group_whose_leader_started_at_another_time() -> None:
    """The client reads the leader's start right after starting it; a process found under the number
    later (the server died and its number was reused) is not the server, and its group is left alone."""
    stranger, server = sleeper(), sleeper()
    try:
        start = _watchdog.leader_start(stranger.pid)
        assert start is not None and start == _watchdog.leader_start(stranger.pid)
        recorded = str(int(start) - 1)  # what the client read for the server that had this number
        guarded = _watchdog.Guarded(stranger.pid, 0.0, recorded)
        assert not guarded.identified() and not guarded.check()
        groups: Dict[int, _watchdog.Guarded] = {}
        _watchdog.apply(groups, f"+ {stranger.pid} 0 {recorded}".encode())
        _watchdog.prune(groups)
        assert groups == {}  # forgotten at the first check: the number is someone else's now

        watchdog_told(f"+ {stranger.pid} 0 {recorded}\n",
                      f"+ {server.pid} 0 {_watchdog.leader_start(server.pid)}\n")
        assert server.wait(30) == -signal.SIGTERM  # the identified group is ended
        assert stranger.poll() is None and alive(stranger.pid)  # the other is never signalled
    finally:
        for proc in (stranger, server):
            if proc.poll() is None:
                proc.kill()
            proc.wait()


def test_a_group_whose_leader_exited_is_ended_only_if_the_watchdog_saw_the_leader(tmp_path) -> None:
    """Children left in a group after its leader exited are ended when the watchdog had seen that leader
    running itself; a group it was told about only after the leader was gone is never signalled."""
    for seen in (True, False):
        ready = tmp_path / f"ready-{seen}"
        leader = sleeper("import subprocess, sys",
                         "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])",
                         f"open({str(ready)!r}, 'w').close()")
        try:
            until(ready.exists, timeout=20)
            groups: Dict[int, _watchdog.Guarded] = {}
            start = _watchdog.leader_start(leader.pid)
            if seen:
                _watchdog.apply(groups, f"+ {leader.pid} 0 {start}".encode())
            leader.kill()
            leader.wait()  # the leader is gone; its child lives on in the group
            if not seen:
                _watchdog.apply(groups, f"+ {leader.pid} 0 {start}".encode())
            assert leader.pid in (_watchdog.running_groups() or set())
            _watchdog.prune(groups)
            _watchdog.end_groups(list(groups.values()))
            assert (leader.pid in (_watchdog.running_groups() or set())) is not seen
        finally:
            try:
                os.killpg(leader.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            until(lambda: leader.pid not in (_watchdog.running_groups() or set()), timeout=20)


# -- install_signal_handlers itself, in this process ---------------------------------------------


def test_the_first_signal_raises_signal_exit_and_the_second_takes_the_default_action() -> None:
    before = signal.getsignal(signal.SIGTERM)
    restore = mcpsync.install_signal_handlers([signal.SIGTERM])
    try:
        with pytest.raises(mcpsync.SignalExit) as info:
            os.kill(os.getpid(), signal.SIGTERM)
            until(lambda: False, timeout=10)  # the handler raises in this (the main) thread
        assert info.value.code == 143 and info.value.signum == signal.SIGTERM
        assert info.value.signal_name == "SIGTERM" and isinstance(info.value, SystemExit)
        assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    finally:
        restore()
    assert signal.getsignal(signal.SIGTERM) is before


def test_sigint_raises_keyboard_interrupt_and_an_ignored_signal_stays_ignored() -> None:
    old_hup = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        restore = mcpsync.install_signal_handlers()
        try:
            assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN  # as under nohup
            with pytest.raises(KeyboardInterrupt):
                os.kill(os.getpid(), signal.SIGINT)
                until(lambda: False, timeout=10)
        finally:
            restore()
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGHUP, old_hup)


def test_install_signal_handlers_off_the_main_thread_says_where_to_call_it() -> None:
    errors: List[BaseException] = []

    def attempt() -> None:
        try:
            mcpsync.install_signal_handlers()
        except ValueError as exc:
            errors.append(exc)

    thread = threading.Thread(target=attempt)
    thread.start()
    thread.join(10)
    assert errors and "main thread" in str(errors[0])
