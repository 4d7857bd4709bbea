"""The stdio transport against faulty servers (tests/servers/misbehaving.py and env_server.py).

Every test synchronises on events, log records or process exits, never on sleeps;
short per-call timeouts are used only where the behaviour under test is a timeout.
"""

from __future__ import annotations

import gc
import inspect
import json
import logging
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, List, Optional

import pytest

import mcpsync
from mcpsync import (
    CancelToken, ConnectError, RequestCancelled, RequestTimeout, TransportClosed, UnsupportedProtocolVersion,
)

from ..conftest import PY, ROOT, _children, server_argv

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX process groups, signals and /proc")

SERVER_LOG = "mcpsync.server.misbehaving"  # the default name of a server run as `python misbehaving.py`
STDIO_LOG = "mcpsync.transport.stdio"
MB = 1024 * 1024
DEFAULT_SHUTDOWN = inspect.signature(mcpsync.StdioTransport).parameters["shutdown_timeout"].default


def misbehaving(mode: str) -> List[str]:
    return server_argv("misbehaving.py", mode)


def process_state(pid: int) -> Optional[str]:
    """The state letter of ``pid`` from /proc (``"Z"`` for a zombie), or None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def is_dead(pid: int) -> bool:
    """A zombie counts as dead: it has exited and only waits for whoever reaps it."""
    return process_state(pid) in (None, "Z")


def record_of(logs, message: str) -> logging.LogRecord:
    return next(r for r in list(logs.records) if r.getMessage() == message)


def request_id_of(recv_line: str) -> str:
    """The id from the silent server's ``RECV <method> <id>`` line."""
    return recv_line.split()[-1]


# -- garbage on stdout -----------------------------------------------------------------


def test_garbage_lines_are_skipped_with_a_previewed_warning_and_counted(logs):
    with mcpsync.connect(misbehaving("garbage"), protocol="legacy") as client:
        assert client.call_tool("echo", {"text": "still fine"}).text == "still fine"
        assert [tool.name for tool in client.list_tools()] == ["echo"]
        skipped = client.transport.skipped_lines
    skipped_warnings = [r.getMessage() for r in logs.records
                        if r.name == STDIO_LOG and r.levelno == logging.WARNING]
    assert all(w.startswith("[misbehaving] Skipping a line from the server: ") for w in skipped_warnings)
    previews = Counter(w.rsplit("; line: ", 1)[1] for w in skipped_warnings)
    # The same garbage came before each of the three responses (initialize, tools/call, tools/list);
    # the empty line that ends it is not garbage.
    assert previews == {
        "'this is not json'": 3,
        "'\ufffd\ufffd\ufffd bad'": 3,  # invalid UTF-8, shown with replacement characters
        "'[1,2,3]'": 3,
        "'\"str\"'": 3,
        "'{\"foo\":1}'": 3,
    }
    assert skipped == len(skipped_warnings) == 3 * 5  # each skipped line is counted once and warned about once
    assert any("not valid UTF-8" in w for w in skipped_warnings)
    assert any("not valid JSON" in w for w in skipped_warnings)
    assert any("missing jsonrpc" in w for w in skipped_warnings)


def test_a_json_array_that_is_not_a_batch_is_skipped_like_any_other_bad_line(logs):
    # [1,2,3] used to be taken for a batch: each item warned about on mcpsync.engine, without a
    # preview of the line, and the line was not counted.
    with mcpsync.connect(misbehaving("garbage"), protocol="legacy") as client:
        assert client.call_tool("echo", {"text": "x"}).text == "x"
        # Two responses, each after five non-empty garbage lines, [1,2,3] included.
        assert client.transport.skipped_lines == 2 * 5
    assert not [r for r in logs.records if "batch item" in r.getMessage()]
    skipped_warnings = [r.getMessage() for r in logs.records
                        if r.name == STDIO_LOG and r.levelno == logging.WARNING]
    assert sum(w.endswith("; line: '[1,2,3]'") for w in skipped_warnings) == 2


def test_responses_with_unknown_ids_are_dropped_counted_and_logged_at_debug(logs):
    with mcpsync.connect(misbehaving("unknown-ids"), protocol="legacy") as client:
        assert client.call_tool("echo", {"text": "mine"}).text == "mine"
        client.ping()
        # Before each of the three responses: a result for id 999999 and an error for id "bogus".
        assert client.transport._engine.unknown_responses == 3 * 2
    dropped = [r for r in logs.records if "Dropping response for unknown or finished request id" in r.getMessage()]
    assert {r.levelno for r in dropped} == {logging.DEBUG}
    assert sorted(r.getMessage().rsplit(" ", 1)[1] for r in dropped) == ["'bogus'"] * 3 + ["999999"] * 3


# -- oversized lines ---------------------------------------------------------------------


def test_a_huge_line_is_discarded_with_a_warning_and_the_connection_goes_on(logs):
    with mcpsync.connect(misbehaving("huge-line")) as client:
        limit = client.transport.max_message_size
        assert limit == 64 * MB
        with pytest.raises(RequestTimeout):
            client.call_tool("huge", {"mb": 100}, timeout=0.5)  # its only answer is the huge line
        warning = logs.wait_for(lambda m: "Discarded a" in m, timeout=30)
        assert f"longer than max_message_size ({limit} bytes)" in warning
        size = int(re.search(r"Discarded a (\d+)-byte line", warning).group(1))
        assert 100 * MB < size < 101 * MB
        assert record_of(logs, warning).levelno == logging.WARNING
        assert client.call_tool("echo", {"text": "after"}).text == "after"
        assert client.connected


def test_a_normal_response_longer_than_max_message_size_is_discarded(logs):
    with mcpsync.connect(misbehaving("good"), max_message_size=1024) as client:
        with pytest.raises(RequestTimeout):
            client.call_tool("echo", {"text": "x" * 2000}, timeout=0.5)
        warning = logs.wait_for(lambda m: "Discarded a" in m)
        assert "longer than max_message_size (1024 bytes)" in warning
        assert int(re.search(r"Discarded a (\d+)-byte line", warning).group(1)) > 2000
        assert client.call_tool("echo", {"text": "small"}).text == "small"


# Peak memory is measured in a fresh interpreter: in-process, ru_maxrss is a high-water mark
# for the whole test run, blurred by every earlier test. Even a fresh child does not get a clean
# ru_maxrss on Linux: it inherits the RSS of the process that spawned it (pytest's, large after
# the in-process huge-line test). So on Linux the probe reads its own mm's VmRSS (baseline) and
# VmHWM (peak) from /proc/self/status; elsewhere it falls back to ru_maxrss before/after.
MEMORY_PROBE = r"""
import json, resource, sys
import mcpsync

argv, options = json.loads(sys.argv[1]), json.loads(sys.argv[2])


def status(key):
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * 1024  # kB
    except OSError:
        pass
    scale = 1 if sys.platform == "darwin" else 1024  # ru_maxrss is in bytes on macOS, KiB elsewhere
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale


with mcpsync.connect(argv, **options) as client:
    before = status("VmRSS")
    try:
        client.call_tool("huge", {"mb": 100}, timeout=0.5)
    except mcpsync.RequestTimeout:
        pass
    else:
        raise SystemExit("the huge answer was not discarded")
    assert client.call_tool("echo", {"text": "after"}).text == "after"
    after = status("VmHWM")
print(json.dumps({"growth": after - before}))
"""


def peak_memory_growth_reading_a_100mb_line(**options) -> int:
    done = subprocess.run([PY, "-c", MEMORY_PROBE, json.dumps(misbehaving("huge-line")), json.dumps(options)],
                          cwd=str(ROOT), capture_output=True, timeout=45)
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
    return int(json.loads(done.stdout.decode().strip().splitlines()[-1])["growth"])


def test_discarding_a_huge_line_keeps_memory_bounded():
    # A small limit: the 100 MB line is read and thrown away piece by piece.
    growth = peak_memory_growth_reading_a_100mb_line(max_message_size=1 * MB)
    assert growth < 50 * MB, f"peak RSS grew by {growth / MB:.0f} MB"


def test_discarding_a_huge_line_costs_less_memory_than_the_line_itself():
    # With the default limit (64 MiB) the reader used to hold the 64 MiB prefix twice (~130 MB).
    growth = peak_memory_growth_reading_a_100mb_line()
    assert growth < 100 * MB, f"peak RSS grew by {growth / MB:.0f} MB"


# -- the server dies ---------------------------------------------------------------------


def test_a_crash_fails_the_pending_call_with_the_exit_code_and_stderr_tail():
    closed = threading.Event()
    calls = []

    def on_close():
        calls.append(1)
        closed.set()

    client = mcpsync.connect(misbehaving("crash"))
    try:
        client.transport.on_close = on_close
        with pytest.raises(TransportClosed) as info:
            client.call_tool("crash", timeout=30)
        error = info.value
        assert "exited with code 3" in str(error)
        assert "fatal: crashing now" in str(error)
        assert error.returncode == 3
        assert error.stderr_tail[-1] == "fatal: crashing now"
        assert 10 <= len(error.stderr_tail) <= 50  # a bounded tail: the oldest of the 61 lines are gone
        assert "stderr line 1" not in error.stderr_tail
        assert not client.connected
        assert client.transport.returncode == 3

        # At once: waiting for the timeout would have ended in RequestTimeout, not TransportClosed.
        with pytest.raises(TransportClosed) as later:
            client.ping(timeout=10)
        assert later.value.returncode == 3 and "exited with code 3" in str(later.value)
        assert closed.wait(10)
    finally:
        client.close()
    assert calls == [1]  # and the final close did not call it again


def test_close_after_the_server_exited_by_itself_releases_its_pipes():
    # Once the reader has seen the server go, close() has nothing left to do, yet it must
    # return only when every pipe is released (the reader used to leave stdout open).
    client = mcpsync.connect(misbehaving("crash"))
    with pytest.raises(TransportClosed):
        client.call_tool("crash", timeout=30)
    client.close()
    proc = client.transport._proc
    assert [proc.stdin.closed, proc.stdout.closed, proc.stderr.closed] == [True, True, True]


def test_a_crash_is_noticed_even_when_a_descendant_keeps_stdout_open():
    # Like a launcher script that starts a helper and then execs the server: the helper (sleep)
    # inherits the server's stdout and stderr and outlives it.
    argv = ["sh", "-c", 'sleep 60 & exec "$0" "$@"', *misbehaving("crash")]
    client = mcpsync.connect(argv, name="misbehaving", shutdown_timeout=0.3)
    try:
        # Noticed means TransportClosed well before the helper lets go of stdout (60 s): a
        # reader waiting for EOF would end in RequestTimeout. The timeout only has to stay below
        # that; 2 s was too tight for a loaded machine (the free-threaded CI run).
        with pytest.raises(TransportClosed) as info:
            client.call_tool("crash", timeout=20)
        assert info.value.returncode == 3
        assert "fatal: crashing now" in str(info.value)
        assert not client.connected
    finally:
        client.close()


def test_a_server_that_exits_before_the_handshake_reports_its_exit_code_and_stderr():
    with pytest.raises(TransportClosed) as info:
        mcpsync.connect(misbehaving("exit-early"))
    assert info.value.returncode == 2
    assert "exited with code 2" in str(info.value)
    assert "cannot start: missing config" in str(info.value)
    assert info.value.stderr_tail == ["cannot start: missing config"]


class GatedLock:
    """Stands in for the stdin writer's lock: a writer says it is there, then waits for the gate."""

    def __init__(self) -> None:
        self.writer_arrived = threading.Event()
        self.gate = threading.Event()
        self._lock = threading.Lock()

    def __enter__(self) -> None:
        self.writer_arrived.set()
        self.gate.wait(30)
        self._lock.acquire()

    def __exit__(self, *exc_info) -> None:
        self._lock.release()

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        self.__enter__()
        return True

    def release(self) -> None:
        self.__exit__()


def test_a_write_racing_the_servers_exit_still_reports_its_exit_code_and_stderr():
    # A server that exits at once (e.g. `sh -c 'echo missing config >&2; exit 2'`) often wins this
    # race on its own (the write then failed with a bare "Broken pipe"); here the gate makes the order
    # certain: the handshake is written only after the server has exited and the reader has closed
    # the transport.
    argv = misbehaving("exit-early")
    transport = mcpsync.StdioTransport(argv[0], argv[1:])
    gated = GatedLock()
    transport._writer._lock = gated
    outcome = {}

    def run():
        try:
            mcpsync.connect(transport)
        except BaseException as exc:  # noqa: B036 - handed to the test thread
            outcome["error"] = exc

    thread = threading.Thread(target=run, name="test-connect")
    thread.start()
    try:
        assert gated.writer_arrived.wait(10)
        assert transport._released.wait(10)
    finally:
        gated.gate.set()
        thread.join(10)
    error = outcome["error"]
    assert isinstance(error, TransportClosed)
    assert error.returncode == 2, str(error)
    assert "cannot start: missing config" in str(error)


def test_a_command_that_does_not_exist_raises_connect_error_naming_it():
    with pytest.raises(ConnectError) as info:
        mcpsync.connect(["mcpsync-no-such-command-4711", "--flag"])
    assert "mcpsync-no-such-command-4711" in str(info.value)
    assert not isinstance(info.value, TransportClosed)


# -- cancellation reaches the server -----------------------------------------------------


def test_a_timeout_sends_notifications_cancelled_to_the_server(logs):
    with mcpsync.connect(misbehaving("silent")) as client:
        with pytest.raises(RequestTimeout):
            client.call_tool("echo", {"text": "never answered"}, timeout=0.2)
        request_id = request_id_of(logs.wait_for(lambda m: m.startswith("RECV tools/call ")))
        cancelled = logs.wait_for(lambda m: m.startswith("CANCELLED "))
        assert cancelled == f"CANCELLED {request_id} Request timed out"
        record = record_of(logs, cancelled)
        assert (record.name, record.levelno) == (SERVER_LOG, logging.INFO)
        client.ping()


def test_a_cancel_token_sends_notifications_cancelled_to_the_server(logs):
    token = CancelToken()

    def cancel_once_received():
        logs.wait_for(lambda m: m.startswith("RECV tools/call "))
        token.cancel("user pressed stop")

    with mcpsync.connect(misbehaving("silent")) as client:
        canceller = threading.Thread(target=cancel_once_received, name="test-canceller")
        canceller.start()
        try:
            with pytest.raises(RequestCancelled) as info:
                client.call_tool("echo", {"text": "x"}, cancel=token, timeout=30)
        finally:
            canceller.join(10)
        assert info.value.reason == "user pressed stop"
        request_id = request_id_of(logs.wait_for(lambda m: m.startswith("RECV tools/call ")))
        assert logs.wait_for(lambda m: m.startswith("CANCELLED ")) == f"CANCELLED {request_id} user pressed stop"
        client.ping()


@pytest.fixture
def ctrl_c():
    """Python's own SIGINT handler for the test, even where SIGINT is ignored (e.g. a background job)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


@contextmanager
def entering(function_name: str, module: str = "mcpsync._rpc.engine") -> Iterator[threading.Event]:
    """An Event set when this thread enters ``module.function_name`` (a profile hook: no polling)."""
    entered = threading.Event()
    previous = sys.getprofile()

    def hook(frame, event, arg):
        if event == "call" and frame.f_code.co_name == function_name and frame.f_globals.get("__name__") == module:
            entered.set()

    sys.setprofile(hook)
    try:
        yield entered
    finally:
        sys.setprofile(previous)


def test_keyboard_interrupt_cancels_the_call_on_the_server_and_the_client_stays_usable(logs, ctrl_c):
    assert threading.current_thread() is threading.main_thread()

    def interrupt_once_parked(parked: threading.Event):
        logs.wait_for(lambda m: m.startswith("RECV tools/call "))
        # Also wait until the call has finished sending and waits for its answer: a Ctrl-C
        # landing inside the send is the next test's case.
        parked.wait(10)
        os.kill(os.getpid(), signal.SIGINT)  # a real Ctrl-C

    with mcpsync.connect(misbehaving("silent")) as client:
        with entering("_wait") as parked:
            interrupter = threading.Thread(target=interrupt_once_parked, args=(parked,), name="test-interrupter")
            interrupter.start()
            try:
                with pytest.raises(KeyboardInterrupt):
                    client.call_tool("echo", {"text": "x"}, timeout=15)
            finally:
                interrupter.join(10)
        request_id = request_id_of(logs.wait_for(lambda m: m.startswith("RECV tools/call ")))
        assert logs.wait_for(lambda m: m.startswith("CANCELLED ")) == f"CANCELLED {request_id} KeyboardInterrupt"
        assert client.connected
        client.ping()


class InterruptAfterWrite:
    """Stands in for the stdin writer's lock: once armed, the next write by the main thread is
    followed at once by a real SIGINT, as if Ctrl-C landed just after the bytes left."""

    def __init__(self) -> None:
        self.armed = False
        self._lock = threading.Lock()

    def __enter__(self) -> None:
        self._lock.acquire()

    def __exit__(self, *exc_info) -> None:
        self._lock.release()
        if self.armed and threading.current_thread() is threading.main_thread():
            self.armed = False
            signal.raise_signal(signal.SIGINT)  # the KeyboardInterrupt is raised right here

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        self.__enter__()
        return True

    def release(self) -> None:
        self.__exit__()


def test_a_ctrl_c_landing_just_after_the_request_was_written_still_cancels_it(logs, ctrl_c):
    # It used to be skipped: Engine.request only counted the request as sent after _send returned.
    assert threading.current_thread() is threading.main_thread()
    with mcpsync.connect(misbehaving("silent")) as client:
        interrupt = InterruptAfterWrite()
        client.transport._writer._lock = interrupt
        interrupt.armed = True
        with pytest.raises(KeyboardInterrupt):
            client.call_tool("echo", {"text": "x"}, timeout=15)
        request_id = request_id_of(logs.wait_for(lambda m: m.startswith("RECV tools/call ")))
        client.ping()
        # The server logs in the order it reads: any cancellation came before this ping.
        logs.wait_for(lambda m: m.startswith("RECV ping "))
        assert f"CANCELLED {request_id} KeyboardInterrupt" in logs.messages(SERVER_LOG)


# -- stderr, process groups, shutdown ----------------------------------------------------


class _WaitForLine(logging.Handler):
    """Counts server stderr lines and sets ``seen`` on one exact line (cheap for 20 000 lines)."""

    def __init__(self, text: str) -> None:
        super().__init__(logging.INFO)
        self.text = text
        self.lines = 0
        self.seen = threading.Event()

    def emit(self, record: logging.LogRecord) -> None:
        self.lines += 1
        if record.getMessage() == self.text:
            self.seen.set()


@contextmanager
def server_stderr_watch(text: str) -> Iterator[_WaitForLine]:
    logger = logging.getLogger(SERVER_LOG)
    watch = _WaitForLine(text)
    old = (logger.level, logger.propagate)
    logger.setLevel(logging.INFO)
    logger.propagate = False  # keep 20 MB of flood out of pytest's own log capture
    logger.addHandler(watch)
    try:
        yield watch
    finally:
        logger.removeHandler(watch)
        logger.setLevel(old[0])
        logger.propagate = old[1]


def test_calls_keep_working_while_the_server_floods_stderr():
    with server_stderr_watch("FLOOD DONE") as watch:
        with mcpsync.connect(misbehaving("stderr-flood")) as client:
            calls = 0
            while True:
                assert client.call_tool("echo", {"text": str(calls)}, timeout=10).text == str(calls)
                calls += 1
                if watch.seen.is_set():
                    break
                assert calls < 100_000
            assert watch.seen.wait(30)
            assert watch.lines == 20_001  # every line was drained and logged
            assert client.transport.stderr_tail[-1] == "FLOOD DONE"
            assert client.call_tool("echo", {"text": "after"}, timeout=10).text == "after"


def test_close_ends_a_grandchild_the_server_left_behind():
    shutdown = 0.3
    client = mcpsync.connect(misbehaving("grandchild"), shutdown_timeout=shutdown)
    try:
        grandchild = int(client.call_tool("pid").text)
        assert not is_dead(grandchild)
    finally:
        client.close()  # bounded by pytest-timeout: a close waiting on the grandchild's pipes hangs
    assert is_dead(grandchild), process_state(grandchild)


def test_close_escalates_to_sigkill_for_a_server_that_ignores_eof_and_sigterm(logs):
    shutdown = 0.3
    client = mcpsync.connect(misbehaving("ignore-close"), shutdown_timeout=shutdown)
    client.ping()
    started = time.monotonic()
    client.close()
    elapsed = time.monotonic() - started
    assert client.transport.returncode == -signal.SIGKILL
    # The server had its grace after EOF and after SIGTERM (never too early: a lower bound is not
    # noise), and those waits were the given `shutdown`, not the default's: with the default
    # shutdown_timeout the two waits alone take 2 x DEFAULT_SHUTDOWN.
    assert 2 * shutdown <= elapsed < 2 * DEFAULT_SHUTDOWN, elapsed
    logs.wait_for(lambda m: m == "stdin closed; ignoring it")  # it did see EOF, and carried on


# -- the handshake ------------------------------------------------------------------------


def test_a_ping_from_the_server_during_initialize_is_answered(logs):
    with mcpsync.connect(misbehaving("ping-first")) as client:
        pong = logs.wait_for(lambda m: m.startswith("PONG "))
        assert json.loads(pong[len("PONG "):]) == {"jsonrpc": "2.0", "id": "srv-1", "result": {}}
        assert client.server_info.name == "misbehaving"
        client.ping()


def test_server_requests_are_answered_with_their_ids_json_type():
    sampled = {"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "test-model",
               "stopReason": "endTurn"}
    seen = []

    def sampling_handler(params):
        seen.append(params)
        return sampled

    with mcpsync.connect(misbehaving("server-requests"), roots=["/tmp"],
                         sampling_handler=sampling_handler) as client:
        replies = json.loads(client.call_tool("ask", timeout=10).text)
    assert replies["r1"] == {"jsonrpc": "2.0", "id": "r1", "result": {"roots": [{"uri": Path("/tmp").as_uri()}]}}
    assert replies["r1"]["result"]["roots"][0]["uri"] == "file:///tmp"
    assert replies["77"] == {"jsonrpc": "2.0", "id": 77, "result": sampled}
    assert type(replies["77"]["id"]) is int and type(replies["r1"]["id"]) is str
    assert replies["78"]["id"] == 78 and "result" not in replies["78"]
    assert replies["78"]["error"]["code"] == -32601
    assert seen and seen[0]["maxTokens"] == 16


def test_an_older_protocol_version_is_accepted():
    with mcpsync.connect(misbehaving("version-old")) as client:
        assert client.protocol_version == "2024-11-05"
        client.ping()


def test_an_unsupported_protocol_version_fails_and_ends_the_server():
    before = _children()
    with pytest.raises(UnsupportedProtocolVersion) as info:
        mcpsync.connect(misbehaving("version-bad"))
    assert info.value.offered == "1999-01-01"
    assert _children() - before == set()  # ended and reaped by the time connect raised


# -- notifications ------------------------------------------------------------------------


def test_log_messages_list_changed_and_progress_are_routed(logs):
    list_changed = threading.Event()
    progress = []
    with mcpsync.connect(misbehaving("notify")) as client:
        client.on_notification("notifications/tools/list_changed", lambda params: list_changed.set())
        result = client.call_tool("notify", on_progress=lambda *args: progress.append(args))
        assert result.text == "notified"
        assert progress == [(1, 1, None)]  # progress callbacks have run before the call returns
        assert list_changed.wait(10)
        hello = record_of(logs, logs.wait_for(lambda m: m == "hello"))
        assert (hello.name, hello.levelno) == (SERVER_LOG, logging.INFO)


# -- the environment ------------------------------------------------------------------------


def server_environment(**options) -> dict:
    with mcpsync.connect(server_argv("env_server.py"), **options) as client:
        return json.loads(client.call_tool("env").text)


def test_a_server_gets_only_the_safe_environment_plus_env(monkeypatch):
    monkeypatch.setenv("MCPSYNC_SECRET_TEST", "xyz")
    env = server_environment(env={"EXTRA": "1"})
    assert "MCPSYNC_SECRET_TEST" not in env
    assert env["EXTRA"] == "1"
    assert env.get("PATH") == os.environ.get("PATH")  # allow-listed


def test_inherit_env_hands_the_whole_environment_to_the_server(monkeypatch):
    monkeypatch.setenv("MCPSYNC_SECRET_TEST", "xyz")
    env = server_environment(inherit_env=True, env={"EXTRA": "1"})
    assert env["MCPSYNC_SECRET_TEST"] == "xyz"
    assert env["EXTRA"] == "1"


# -- closing ------------------------------------------------------------------------------


def test_close_is_idempotent_and_calls_on_close_exactly_once():
    calls = []
    client = mcpsync.connect(misbehaving("good"))
    client.transport.on_close = lambda: calls.append(1)
    client.close()
    client.close()
    client.transport.close()
    assert calls == [1]
    assert client.transport.returncode == 0  # it exited by itself once stdin closed
    assert not client.connected
    with pytest.raises(TransportClosed):
        client.ping()


def test_leaving_a_with_block_closes_the_client():
    with mcpsync.connect(misbehaving("good")) as client:
        client.ping()
        assert client.transport.returncode is None
    assert not client.connected
    assert client.transport.returncode is not None


def test_an_unclosed_client_warns_and_ends_its_server_when_collected():
    client = mcpsync.connect(misbehaving("good"))
    pid = client.transport.pid
    assert process_state(pid) not in (None, "Z")
    with pytest.warns(ResourceWarning, match="unclosed"):
        del client
        gc.collect()
    assert process_state(pid) is None  # ended and reaped


def test_a_script_that_exits_without_closing_ends_its_server_quietly():
    # Interpreter exit tears modules down before the last objects are collected: the cleanup
    # must end the server without printing "Exception ignored in ... __del__" on the way out.
    script = ("import sys, mcpsync\n"
              f"client = mcpsync.connect({misbehaving('good')!r})\n"
              "print(client.transport.pid, flush=True)\n")
    done = subprocess.run([PY, "-X", "dev", "-c", script], capture_output=True, text=True, timeout=60,
                          cwd=str(ROOT))
    assert done.returncode == 0, done.stderr
    assert "Exception ignored" not in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert process_state(int(done.stdout.split()[0])) is None
