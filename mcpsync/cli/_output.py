"""What the ``mcpsync`` command shows: results, tables, JSON, one-line errors, logs and exit codes.

All of the command's output goes through one writer, :func:`write` (and :func:`line`), which
passes every string through the output gate (:func:`mcpsync._terminal.shown`): a control
character, bidi override or invisible format character that came from a server or a config file
is shown as a visible escape (``\\x1b``), never obeyed by the terminal. The only text written
as it is, is an :class:`Own` sequence: mcpsync's own controls (the progress line's "clear the
line"), which outside text cannot become (any ``str`` operation on an ``Own`` gives a plain,
gated ``str``). ``--json`` output is exact JSON (:func:`mcpsync._terminal.shown_json`). No other
module of the command touches stdout or stderr (tests/test_output_gate.py checks that).

Every line it prints to stderr also goes through :data:`SECRETS`, which replaces the values the
config's ``${VAR}``s expanded to (and other secrets) with ``***``. Runs on the command's one
thread (progress lines come from mcpsync's dispatcher thread); nothing here blocks beyond
writing to stdout and stderr.
"""

from __future__ import annotations

import json
import sys
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence

from .. import _log, config as mcpconfig
from .._terminal import shown, shown_json
from ..exceptions import (
    CapabilityError, ConfigError, MCPError, ProtocolError, RequestTimeout, TransportClosed, TransportError,
    UnknownServerError, UnknownToolError,
)

EXIT_OK = 0


EXIT_ERROR = 1


EXIT_USAGE = 2


EXIT_CONFIG = 3


EXIT_CONNECT = 4


EXIT_TIMEOUT = 5


EXIT_REFUSED = 6


EXIT_INTERRUPTED = 130


class UsageError(Exception):
    """Bad command-line input (exit code 2)."""


class Own(str):
    """One of mcpsync's own terminal control sequences: :func:`write` writes it as it is.

    Only constants of this module are ``Own``; a string built from one (``Own(...) + text``,
    an f-string) is a plain ``str`` again, and gated.
    """

    __slots__ = ()


CLEAR_LINE = Own("\r\033[K")  # back to the line's start, erase to its end


def _emit(text: str, err: bool) -> None:
    """The one place that touches the process's stdout and stderr (``text`` has passed the gate)."""
    stream = sys.stderr if err else sys.stdout
    if stream is None:  # pythonw and some services have no stdout or stderr at all
        return
    stream.write(text)
    if err:
        stream.flush()  # a progress line or an error is seen at once


def stderr_is_terminal() -> bool:
    """Whether stderr is a terminal (where a self-overwriting progress line makes sense)."""
    stream = sys.stderr
    try:
        return stream is not None and stream.isatty()
    except (OSError, ValueError):  # a closed stream
        return False


def write(*parts: str, err: bool = False) -> None:
    """Write ``parts`` to stdout (``err``: stderr), each through the output gate but :class:`Own` ones.

    The gate keeps newlines and tabs (multi-line results stay multi-line); a value that must
    stay on one line (a table cell, an error) is passed through :func:`shown` first by its caller.
    """
    _emit("".join(part if type(part) is Own else shown(part, lines=True) for part in parts), err)


def line(*parts: str, err: bool = False) -> None:
    """:func:`write` ``parts`` and a newline."""
    write(*parts, "\n", err=err)


def print_result(result: Any) -> None:
    printed = False
    for block in result.content:
        printed = True
        line(_block_text(block))
    if result.structured_content is not None and not result.text:
        line(json_text(result.structured_content))
    elif not printed:
        line("(no content)")


def _block_text(block: Any) -> str:
    """One content block as text: text as it is, anything else as what it is."""
    from ..types import EmbeddedResource, ImageContent, ResourceLink, TextContent

    if isinstance(block, TextContent):
        return str(block.text)
    if isinstance(block, ImageContent):
        return f"[{shown(block.mime_type)} image, {len(block.data or '') * 3 // 4} bytes]"
    if isinstance(block, ResourceLink):
        return f"[resource link {shown(block.to_dict().get('uri'))}]"
    if isinstance(block, EmbeddedResource):
        resource = block.to_dict().get("resource") or {}
        return str(resource.get("text")) if "text" in resource else f"[resource {shown(resource.get('uri'))}]"
    return json_text(block.to_dict(), indent=None)


class Progress:
    """One self-overwriting progress line on the terminal's stderr; the server's message is gated."""

    def __init__(self) -> None:
        self.shown = False

    def show(self, progress: float, total: Optional[float], message: Optional[str]) -> None:
        amount = f"{progress:g}/{total:g}" if total else f"{progress:g}"
        text = f"progress {amount}" + (f" {shown(message)}" if message else "")  # one line, escaped
        write(CLEAR_LINE, text[:200], err=True)
        self.shown = True

    def clear(self) -> None:
        if self.shown:
            write(CLEAR_LINE, err=True)


def server_lines(lines: Sequence[str], indent: str = "  ") -> None:
    """Lines a server wrote (its stderr tail, say) on stderr, each indented, escaped and kept to one line."""
    for text in lines:
        line(indent + shown(SECRETS.scrub(text)), err=True)


def print_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    """Columns padded to their widest cell; every cell is escaped and kept to one line."""
    if not rows:
        line("(none)")
        return
    cells = [[shown(cell) for cell in row] for row in [header, *rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header) - 1)]
    for row in cells:
        line("  ".join([cell.ljust(width) for cell, width in zip(row, widths)] + [row[-1]]).rstrip())


def json_text(value: Any, indent: Optional[int] = 2) -> str:
    """``value`` as exact JSON with every control, bidi and invisible character as a ``\\u`` escape."""
    return shown_json(json.dumps(value, indent=indent, ensure_ascii=False, default=str))


def print_json(value: Any) -> None:
    line(json_text(value))


def first_line(value: Any) -> str:
    """The first line of ``value``'s text; an exception with no text is named by its type."""
    text = str(value).strip()
    if text:  # lines end at a newline alone: what follows a carriage return (or \x0b, \x1c ...) is shown
        return text.split("\n", 1)[0].rstrip("\r")
    return type(value).__name__ if isinstance(value, BaseException) else ""


def timeout_advice(exc: BaseException, timeout: float) -> str:
    """For an error that is a timeout, the words that say which ``--timeout`` was waited (else "")."""
    timed_out = exit_code(exc) == EXIT_TIMEOUT
    return f" (waited --timeout {timeout:g}s; raise it if the server is only slow)" if timed_out else ""


STDERR_TAIL_SHOWN = 5


def stderr_tail(exc: Optional[BaseException]) -> List[str]:
    """The last lines a stdio server wrote to stderr before its connection closed, found on
    ``exc`` or the errors it was raised from (at most :data:`STDERR_TAIL_SHOWN`); [] when none."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, TransportClosed) and exc.stderr_tail:
            return exc.stderr_tail[-STDERR_TAIL_SHOWN:]
        exc = exc.__cause__ if exc.__cause__ is not None else exc.__context__
    return []


def server_stderr(exc: Optional[BaseException], server: Optional[str] = None) -> None:
    """After an error line: the server's last stderr lines, which usually say why it died.

    The lines are the server's own text: :func:`server_lines` scrubs and gates each one.
    """
    tail = stderr_tail(exc)
    if not tail:
        return
    server = server or getattr(exc, "server", None)
    whose = f"server {server!r}" if isinstance(server, str) and server else "the server"
    line(f"mcpsync: the last lines {shown(SECRETS.scrub(whose))} wrote to stderr:", err=True)
    server_lines(tail)


def error(text: str) -> None:
    """``mcpsync: error: <text>`` on stderr: one line, secrets scrubbed, controls escaped."""
    line(f"mcpsync: error: {shown(SECRETS.scrub(text))}", err=True)


def note(text: str) -> None:
    line(f"mcpsync: {shown(SECRETS.scrub(text))}", err=True)


def warn(text: str) -> None:
    line(f"mcpsync: warning: {shown(SECRETS.scrub(text))}", err=True)


def traceback_text(text: str) -> None:
    """A traceback (``--debug``) on stderr, secrets scrubbed; its lines kept, controls escaped."""
    write(SECRETS.scrub(text), err=True)


class Secrets:
    """What the config's ``${VAR}``s expanded to, and other values that must never be printed.

    mcpsync's own texts never quote them; this catches what foreign exceptions and log lines
    might (a traceback's urllib3 error quotes the URL with its query). Each value of four or
    more characters is replaced by ``***`` in error lines, warnings, ``--debug`` logs and tracebacks.
    """

    def __init__(self) -> None:
        self.values: List[str] = []

    def learn(self, config: "mcpconfig.Config", environ: Optional[Dict[str, str]] = None) -> None:
        import os

        source = os.environ if environ is None else environ
        found = set(self.values)
        for server in config.servers.values():
            if server.trusted:  # an untrusted entry: nothing was expanded
                found.update(_expanded_values(server, source))
        self.values = sorted((v for v in found if len(v.strip()) >= 4), key=len, reverse=True)

    def scrub(self, text: str) -> str:
        for value in self.values:
            text = text.replace(value, "***")
        return text


def _expanded_values(server: Any, source: Mapping[str, str]) -> List[str]:
    """What one trusted entry's expansion may have put in its fields: header and env values, the
    arguments that differ from what was written, the URL's query, password and fragment, and the
    value of every variable the entry names."""
    import re
    from urllib.parse import urlsplit

    found = list(server.headers.values()) + list(server.env.values())
    found += [arg for arg, written in zip(server.args, server.written_args()) if arg != written]
    parts = urlsplit(server.url or "")
    found += [value for value in (parts.query, parts.password, parts.fragment) if value]
    fields = {key: value for key, value in server.raw.items() if key not in ("command", "cwd")}  # paths
    named = re.findall(r"\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)", json.dumps(fields))
    named += _codex_variables(server.raw)  # Codex names variables without ${...}
    return found + [source[name] for name in named if source.get(name)]


def _codex_variables(raw: Dict[str, Any]) -> List[str]:
    """The variables a Codex entry reads by name (``bearer_token_env_var``, ``env_http_headers``, ``env_vars``)."""
    names = [raw.get("bearer_token_env_var")]
    headers = raw.get("env_http_headers")
    names += list(headers.values()) if isinstance(headers, dict) else []
    names += list(raw.get("env_vars") or []) if isinstance(raw.get("env_vars"), list) else []
    return [name for name in names if isinstance(name, str)]


SECRETS = Secrets()


def exit_code(exc: BaseException) -> int:
    if isinstance(exc, (ConfigError, UnknownServerError, UnknownToolError)):
        return EXIT_CONFIG
    if isinstance(exc, RequestTimeout) or isinstance(exc.__cause__, RequestTimeout):
        return EXIT_TIMEOUT  # also a server that did not answer its handshake in time
    if isinstance(exc, TransportError):
        return EXIT_CONNECT
    if isinstance(exc, (MCPError, CapabilityError, ProtocolError)):
        return EXIT_REFUSED
    return EXIT_ERROR


def configure_logging(debug: bool) -> Callable[[], None]:
    """Send mcpsync's log lines to stderr for this command; returns what undoes it.

    ``main`` undoes it on the way out, so a program (or a test) that calls ``main()``
    in-process is not left with a handler on a stream that may be closed later. Without
    ``--debug`` it waits for the first config or cache warning (:func:`mcpsync._log.configure_when_needed`):
    a command that has none never loads :mod:`logging`.
    """
    undone: List[Callable[[], None]] = []

    def configure() -> None:
        undone.append(_configure(debug))

    if debug:
        configure()
        withdraw: Callable[[], None] = lambda: None  # noqa: E731
    else:
        # Without --debug only skipped config files and cache trouble are worth a line;
        # server failures are reported by the commands themselves.
        withdraw = _log.configure_when_needed(("mcpsync.config", "mcpsync.cache"), _log.WARNING, configure)

    def undo() -> None:
        withdraw()
        for step in undone:
            step()

    return undo


def _configure(debug: bool) -> Callable[[], None]:
    import logging

    class OneLine(logging.Formatter):
        def format(self, record: logging.LogRecord) -> str:
            return f"mcpsync: warning: {SECRETS.scrub(first_line(record.getMessage()))}"

    class Scrubbed(logging.Formatter):
        def format(self, record: logging.LogRecord) -> str:
            return SECRETS.scrub(super().format(record))

    class Handler(logging.Handler):
        """Log lines to stderr through :func:`write` (a server's relayed stderr lines among them)."""

        def emit(self, record: logging.LogRecord) -> None:
            try:
                line(self.format(record), err=True)
            except Exception:
                self.handleError(record)

    handler = Handler()
    if debug:
        handler.setFormatter(Scrubbed("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        loggers, level = [logging.getLogger("mcpsync")], logging.DEBUG
    else:
        handler.setFormatter(OneLine())
        handler.setLevel(logging.WARNING)
        loggers, level = [logging.getLogger(name) for name in ("mcpsync.config", "mcpsync.cache")], None
    before = [logger.level for logger in loggers]
    for logger in loggers:
        logger.addHandler(handler)
        if level is not None:
            logger.setLevel(level)

    def undo() -> None:
        for logger, old in zip(loggers, before):
            logger.removeHandler(handler)
            logger.setLevel(old)

    return undo
