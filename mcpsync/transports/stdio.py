"""StdioTransport: an MCP server run as a child process, spoken to over its stdin and stdout.

Threads: one reader (stdout lines → engine) and one stderr drain (lines → the
``mcpsync.server.<name>`` logger and a bounded tail) per server; the exit watcher,
for a server that dies while a descendant holds its stdout open, is one thread
shared by every server where the platform allows (see :mod:`._exit_watch`). Writes
happen on the calling threads, one at a time (see :mod:`._pipe_writer`), so
lines from different threads never interleave; a flusher thread exists only
while the server is slow to read lines that other threads queued.
"""

from __future__ import annotations

import codecs
import collections
import functools
import os
import re
import threading
import weakref
from typing import IO, TYPE_CHECKING, Any, Callable, Deque, Dict, List, Mapping, Optional, Sequence, Tuple, Union

if TYPE_CHECKING:
    import subprocess  # annotations only: it loads when a server starts

from .._log import Logger, getLogger
from .. import _fork
from .._live import LiveSet
from .._rpc import jsonrpc as rpc
from .._rpc.engine import DEFAULT_TIMEOUT
from .._rpc.wire import Receiver
from .._rpc.jsonrpc import JSONObject
from .._rpc.workers import DropReport, join_quietly
from ..exceptions import ConnectError, ConnectionLost, ProtocolError, TransportClosed
from . import _exit_watch, _process
from ._pipe_writer import PipeWriter
from .base import Transport, safe_name, weak_method

log = getLogger("mcpsync.transport.stdio")

DEFAULT_MAX_MESSAGE_SIZE = 64 * 1024 * 1024
STDERR_TAIL_LINES = 50
_READ_CHUNK = 1024 * 1024
_STDERR_LINE_LIMIT = 16 * 1024
_SKIPS_LOGGED = 100  # lines skipped that are each logged; after that, every thousandth (or one per 10 s)

_live: "LiveSet[StdioTransport]" = LiveSet()
_fork.on_child(_live.reset_after_fork)


class StdioTransport(Transport):
    """Runs ``command args...`` and speaks newline-delimited JSON-RPC over its pipes.

    Args:
        command: the program to run (looked up on ``PATH``).
        args: its arguments.
        env: extra environment variables for the server.
        cwd: its working directory.
        inherit_env: pass the parent's whole environment instead of the safe
            allow-list (HOME, PATH, USER, LOGNAME, SHELL, TERM, LANG, LC_*, TMPDIR, TZ).
        name: a label for logs and threads (default: the command's base name).
        timeout: default per-request timeout in seconds.
        max_message_size: longest stdout line accepted, in bytes; longer lines
            are discarded without ever being held whole in memory.
        shutdown_timeout: how long each step of the shutdown waits (stdin
            closed, then SIGTERM, then SIGKILL).

    Thread safety: see :class:`Transport`. The server's process group never
    outlives this object: :meth:`close`, garbage collection and interpreter
    exit all end it, and on Linux so does this process's watchdog if the process
    dies without running any of them (``MCPSYNC_WATCHDOG=0`` turns it off).
    """

    kind = "stdio"
    #: The keys of a server config dict it takes (the factory reads them; ``timeout`` aside).
    config_keys: Tuple[str, ...] = ("env", "cwd", "inherit_env", "name")

    def __init__(
        self,
        command: str,
        args: Sequence[str] = (),
        *,
        env: Optional[Mapping[str, str]] = None,
        cwd: Optional[str] = None,
        inherit_env: bool = False,
        name: Optional[str] = None,
        timeout: Optional[float] = DEFAULT_TIMEOUT,
        max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
        shutdown_timeout: float = 2.0,
        max_workers: int = 4,
    ) -> None:
        if not command:
            raise ValueError("StdioTransport needs a command")
        label = safe_name(name or default_name(command, args))
        # The pipe writer is the engine's wire: the hot path calls its write directly.
        self._writer = PipeWriter(label, explain_break=weak_method(self, "_explain_break"))
        super().__init__(name=label, timeout=timeout, max_workers=max_workers, wire=self._writer)
        self.command = command
        self.args = [str(a) for a in args]
        self.env = dict(env or {})
        self.cwd = cwd
        self.inherit_env = inherit_env
        self.max_message_size = max_message_size
        self.shutdown_timeout = shutdown_timeout
        self.max_workers = max_workers
        self.server_log = getLogger(f"mcpsync.server.{safe_name(self.name)}")
        self._proc: "Optional[subprocess.Popen[bytes]]" = None
        self._stderr_tail: Deque[str] = collections.deque(maxlen=STDERR_TAIL_LINES)
        self._reader: Optional[threading.Thread] = None
        self._drain: Optional[threading.Thread] = None
        self._watcher: Optional[_exit_watch.Watch] = None
        self._shutting_down = threading.Event()
        self._lost_cause = False  # the close had a cause: its error carries the exit code and stderr tail
        self.skipped_lines = 0
        #: The first skipped stdout line, shortened (for :meth:`timeout_hint`); None while there is none.
        self.first_skipped_line: Optional[str] = None

    def __repr__(self) -> str:
        pid = f" pid={self._proc.pid}" if self._proc is not None else ""
        return f"{super().__repr__()[:-1]}{pid}>"

    @property
    def pid(self) -> Optional[int]:
        """The server's process id, once started."""
        return self._proc.pid if self._proc is not None else None

    @property
    def returncode(self) -> Optional[int]:
        """The server's exit status once it has exited, else ``None``."""
        return self._proc.poll() if self._proc is not None else None

    @property
    def stderr_tail(self) -> List[str]:
        """The last lines (about 50) the server wrote to stderr."""
        return list(self._stderr_tail)

    def settings(self) -> Dict[str, Any]:
        """The command, arguments, environment, working directory and options (see :meth:`Transport.settings`)."""
        return {"command": self.command, "args": list(self.args), "env": dict(self.env), "cwd": self.cwd,
                "inherit_env": self.inherit_env, "name": self.name, "timeout": self.timeout,
                "max_message_size": self.max_message_size, "shutdown_timeout": self.shutdown_timeout,
                "max_workers": self.max_workers}

    # -- lifecycle ---------------------------------------------------------------------

    def _open(self) -> None:
        argv = [self.command, *self.args]
        import shutil  # when a server starts, not at `import mcpsync`

        resolved = shutil.which(self.command, path=(self.env.get("PATH") or os.environ.get("PATH")))
        if resolved is not None:
            argv[0] = resolved
        try:
            self._proc = _process.spawn(argv, _process.build_env(self.env, self.inherit_env), self.cwd,
                                        grace=self.shutdown_timeout)
        except (OSError, ValueError) as exc:
            why = (f"no program {self.command!r} was found on PATH; install it, or give its full path"
                   if isinstance(exc, FileNotFoundError) and resolved is None
                   and (self.cwd is None or os.path.isdir(self.cwd)) else str(exc))
            raise ConnectError(f"Cannot start MCP server {self.command!r}: {why}") from exc
        _live.add(self)
        self._writer.attach(self._proc.stdin, self._engine)
        me = weakref.ref(self)
        lost = weak_method(self, "_lost")
        assert self._proc.stdout is not None and self._proc.stderr is not None
        self._reader = threading.Thread(
            target=_read_stdout, args=(me, lost, self._proc.stdout, self._engine, self.max_message_size, self.name),
            name=f"mcpsync-stdio-reader[{self.name}]", daemon=True,
        )
        self._drain = threading.Thread(
            target=_drain_stderr, args=(self._proc.stderr, self._stderr_tail, self.server_log),
            name=f"mcpsync-stdio-stderr[{self.name}]", daemon=True,
        )
        self._drain.start()
        self._reader.start()
        self._watcher = _exit_watch.watch(self._proc, functools.partial(lost, _EndOfStream(_HELD_OPEN)),
                                          self.shutdown_timeout, self._shutting_down)
        # Arguments often hold secrets (expanded from ${VAR}): log the program and their count, never their values.
        log.debug("[%s] Started %s with %d argument(s), not shown (pid %d)", self.name, argv[0], len(argv) - 1,
                  self._proc.pid)

    def _write(self, message: JSONObject) -> None:
        self._writer.write(message)

    def _release(self, cause: Optional[BaseException]) -> None:
        """Close stdin, end the process group (SIGTERM, then SIGKILL), join the threads, close the pipes."""
        proc = self._proc
        if proc is None:
            return
        self._lost_cause = cause is not None
        self._shutting_down.set()
        on_reader = threading.current_thread() is self._reader
        self._writer.detach()
        if proc.stdin is not None:
            with _suppress():
                proc.stdin.close()
        _process.terminate(proc, self.shutdown_timeout)
        if not on_reader:
            join_quietly(self._reader, self.shutdown_timeout)
        join_quietly(self._drain, self.shutdown_timeout)
        if self._watcher is not None:
            self._watcher.cancel()
            self._watcher.join(self.shutdown_timeout)
        self._writer.join(self.shutdown_timeout)
        for stream, thread in ((proc.stdout, self._reader), (proc.stderr, self._drain)):
            # A pipe is closed here only once its thread is done with it (or is this thread);
            # a thread still blocked on it (a process that escaped the group holds the other
            # end) closes it itself when it ends.
            if stream is not None and (thread is None or thread is threading.current_thread()
                                       or not thread.is_alive()):
                with _suppress():
                    stream.close()
        _live.discard(self)

    def timeout_hint(self) -> str:
        """Says so when the server wrote lines on stdout that were not JSON-RPC, quoting the first."""
        count, first = self.skipped_lines, self.first_skipped_line
        if not count or first is None:
            return ""
        lines = f"{count} line that was" if count == 1 else f"{count} lines that were"
        return (f"It wrote {lines} not JSON-RPC on stdout (skipped), the first: {first}. An MCP stdio server "
                "must write only JSON-RPC messages on stdout: make it send its banners and logs to stderr")

    def _release_inherited(self) -> None:
        """In a forked child: the server is the parent's. Close this process's copies of its three
        pipes (so the server still sees end-of-file when the parent closes), never signal or wait
        for it, and leave the exit hook nothing to end."""
        _live.discard(self)
        proc, self._proc = self._proc, None
        self._reader = self._drain = self._watcher = None  # those threads did not survive the fork
        if proc is None:
            return
        # Not this process's child: its Popen must neither warn about it nor wait for it when collected.
        setattr(proc, "_child_created", False)
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            _process.close_copy(stream)

    def _describe_close(self, cause: Optional[BaseException]) -> str:
        proc = self._proc
        if proc is None:
            return super()._describe_close(None)
        return _describe_exit(proc.returncode, list(self._stderr_tail), cause)

    def _explain_break(self, exc: BaseException) -> Optional[TransportClosed]:
        """A write failed: the server is most likely gone. Wait (bounded) for the reader to
        see it exit, so the error can carry the exit code and stderr tail."""
        if threading.current_thread() is not self._reader:
            self._released.wait(self.shutdown_timeout + 1.0)
            if not self._engine.closed and self.connected:
                # It runs but reads nothing (it closed its stdin): no request can reach it again,
                # so the connection is lost, as if it had exited (a manager reconnects it).
                self._lost(_StoppedReading(f"the server stopped reading its input ({exc}) but still runs"))
        return self._engine.closed_error() if self._engine.closed else None

    def _closed_error(self) -> TransportClosed:
        if not self._lost_cause:
            return TransportClosed(self._close_message)  # a deliberate close: nothing more to say
        proc = self._proc
        return ConnectionLost(
            self._close_message,
            returncode=proc.returncode if proc is not None else None,
            stderr_tail=list(self._stderr_tail),
        )


_LAUNCHER = re.compile(r"^(python[0-9.]*|pythonw|py|node|uv|uvx|npx|bun|deno|bash|sh|java|ruby|perl)$")


def default_name(command: str, args: Sequence[str]) -> str:
    """A readable label: the script for ``python server.py``, the module for ``python -m pkg.server``,
    else the command's base name (also for inline code: ``python -c ...``, ``node -e ...``).

    A label, not a checked name: it may hold any character a path may (``server#1``); a caller
    that needs a valid config name passes it through ``mcpsync.config.valid_name``.
    """
    base = os.path.basename(command)
    stem = base.lower()[:-4] if base.lower().endswith(".exe") else base.lower()
    if _LAUNCHER.match(stem):
        module = False
        skip = False
        for arg in args:
            if skip:
                skip = False
            elif arg in _INLINE_CODE:
                return base  # what follows is code, not a file name
            elif arg in _OPTION_WITH_VALUE:
                skip = True
            elif arg == "-m":
                module = True
            elif not arg.startswith("-"):
                name = str(arg).rsplit(".", 1)[-1] if module else os.path.splitext(os.path.basename(arg))[0]
                return name or base
    return base


# Launcher options whose next argument is code, and options whose next argument is a value (python's).
_INLINE_CODE = frozenset(["-c", "-e", "--eval", "-p", "--print"])
_OPTION_WITH_VALUE = frozenset(["-W", "-X", "--check-hash-based-pycs"])


def _describe_exit(returncode: Optional[int], tail: List[str], cause: Optional[BaseException]) -> str:
    if cause is None:
        return "Transport closed"
    if returncode is None or isinstance(cause, _StoppedReading):
        text = f"Transport closed: {cause}"
    elif returncode < 0:
        text = f"Transport closed: server process killed by signal {-returncode}"
    else:
        text = f"Transport closed: server process exited with code {returncode}"
    if tail:
        text += "\nLast lines on the server's stderr:\n" + "\n".join("  " + line for line in tail)
    return text


class _suppress:
    """Swallow OSError/ValueError from closing pipes that may already be gone."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: Any, value: Any, tb: Any) -> bool:
        return kind is not None and issubclass(kind, (OSError, ValueError))


class _EndOfStream(Exception):
    pass


class _StoppedReading(_EndOfStream):
    """The server closed its stdin while running: its exit status is ours (we ended it), not news."""


_HELD_OPEN = "server process exited but its stdout is still held open"


def _read_stdout(me: "weakref.ref[StdioTransport]", lost: Callable[[Optional[BaseException]], None], stream: IO[bytes],
                 engine: Receiver, limit: int, name: str) -> None:
    """Reader thread: one JSON-RPC message per line, until EOF, each handed to ``engine``; then
    ``lost(cause)`` closes the transport."""
    cause: Optional[BaseException] = _EndOfStream("server closed its stdout")
    skips = DropReport(first=_SKIPS_LOGGED)  # a flood of garbage must not become a flood of log lines
    try:
        while True:
            try:
                line, size = _read_line(stream, limit)
            except _Oversized as exc:
                log.warning("[%s] Discarded a %d-byte line from the server: longer than max_message_size "
                            "(%d bytes)", name, exc.size, limit)
                continue
            if not line:
                break
            if line.isspace():
                continue
            raw: Union[str, bytes] = line
            if isinstance(line, bytes):
                try:
                    raw = line.decode("utf-8")
                except UnicodeDecodeError:
                    pass  # the bytes: rpc.decode says what is wrong with them
            # Only the text is kept while it is parsed, and nothing once it is delivered: a large
            # answer is held at most twice (text and value), never also as bytes, nor while the
            # next read waits.
            line = b""
            try:
                engine.receive(rpc.decode(raw), size)
            except ProtocolError as exc:
                if isinstance(exc, rpc.NestedTooDeeply):
                    engine.refuse(exc.value, exc)  # a too-deep answer fails its call now
                transport = me()
                if transport is not None:
                    transport.skipped_lines += 1
                    if transport.first_skipped_line is None:
                        transport.first_skipped_line = rpc.preview(raw, 80)
                if skips.note():
                    more = "" if skips.count <= _SKIPS_LOGGED else f" ({skips.count} skipped so far; not all logged)"
                    log.warning("[%s] Skipping a line from the server: %s%s; line: %s", name, exc, more,
                                rpc.preview(raw))
            raw = b""
    except (OSError, ValueError) as exc:
        cause = exc
    try:
        lost(cause)
    except TransportClosed:
        pass  # the transport was garbage collected: its own close ended everything
    with _suppress():
        stream.close()  # the reader owns stdout: release the pipe as soon as reading ends


def _read_line(stream: IO[bytes], limit: int) -> Tuple[Union[bytes, str], int]:
    """One line (with its newline; the last may lack it) and its size in bytes; b"" at EOF.

    A line that fits in one chunk comes back as bytes. A longer one is decoded chunk by
    chunk as it is read and comes back as text (as bytes if it is not UTF-8, for the
    decoder to say so), so it is never held as bytes and as text at once. Reads in chunks,
    so a line longer than ``limit`` is never held whole: at most ``limit`` bytes of it are,
    and then it is skipped to its end (raising _Oversized).
    """
    step = min(_READ_CHUNK, limit + 1)
    first = stream.readline(step)
    if not first or first.endswith(b"\n"):
        if len(first) > limit + 1:
            raise _Oversized(len(first))
        return first, len(first)  # the common case: the whole line in one chunk
    line = _LongLine(first)
    size = len(first)
    last = first
    while True:
        chunk = stream.readline(step)
        if not chunk:
            break
        size += len(chunk)
        if size > limit + 1:
            line.clear()
            dropped = size + _discard_rest_of_line(stream) if not chunk.endswith(b"\n") else size
            raise _Oversized(dropped)
        line.add(chunk)
        last = chunk
        if chunk.endswith(b"\n"):
            break
    if size > limit + 1 or (size > limit and not last.endswith(b"\n")):
        raise _Oversized(size)
    return line.whole(), size


class _LongLine:
    """A line read in chunks: decoded to text as it comes, or kept as bytes once it is not UTF-8."""

    def __init__(self, first: bytes) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")()
        self._text: List[str] = []
        self._raw: Optional[List[bytes]] = None  # set once a chunk is not UTF-8
        self.add(first)

    def add(self, chunk: bytes) -> None:
        if self._raw is None:
            pending = self._decoder.getstate()[0]
            try:
                self._text.append(self._decoder.decode(chunk))
                return
            except UnicodeDecodeError:  # from here on, bytes: the JSON decoder reports it
                self._raw = ["".join(self._text).encode("utf-8"), pending]
                self._text.clear()
        self._raw.append(chunk)

    def clear(self) -> None:
        self._text.clear()
        self._raw = None

    def whole(self) -> Union[bytes, str]:
        if self._raw is None:
            try:
                self._text.append(self._decoder.decode(b"", True))
            except UnicodeDecodeError:  # it ends inside a character
                return "".join(self._text).encode("utf-8") + self._decoder.getstate()[0]
            text = "".join(self._text)
            self._text.clear()
            return text
        raw = b"".join(self._raw)
        self._raw.clear()
        return raw


class _Oversized(Exception):
    def __init__(self, size: int) -> None:
        super().__init__(size)
        self.size = size


def _discard_rest_of_line(stream: IO[bytes]) -> int:
    dropped = 0
    while True:
        chunk = stream.readline(_READ_CHUNK)
        dropped += len(chunk)
        if not chunk or chunk.endswith(b"\n"):
            return dropped


def _drain_stderr(stream: IO[bytes], tail: Deque[str], server_log: Logger) -> None:
    """Stderr thread: keep the server from blocking on a full pipe; log and remember lines."""
    try:
        while True:
            raw = stream.readline(_STDERR_LINE_LIMIT)
            if not raw:
                return
            line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
            tail.append(line)
            server_log.info("%s", line)
    except (OSError, ValueError):
        return
    finally:
        with _suppress():
            stream.close()


def _close_all_at_exit() -> None:
    for transport in _live.snapshot():
        transport.shutdown_timeout = min(transport.shutdown_timeout, 0.5)
        with _suppress():
            transport.close()


import atexit  # noqa: E402  (registered once the module is ready)

atexit.register(_close_all_at_exit)
