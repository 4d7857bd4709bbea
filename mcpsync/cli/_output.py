"""What the ``mcpsync`` command shows: results, tables, JSON, one-line errors, logs and exit codes.

Every line it prints to stderr goes through :data:`SECRETS`, which replaces the values the
config's ``${VAR}``s expanded to (and other secrets) with ``***``. Runs on the command's one
thread; nothing here blocks beyond writing to stdout and stderr.
"""

from __future__ import annotations

import json
import logging
import sys
from typing import Any, Callable, Dict, List, Optional, Sequence, TextIO

from .. import config as mcpconfig
from .._terminal import shown
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


def print_result(result: Any) -> None:
    from ..types import EmbeddedResource, ImageContent, ResourceLink, TextContent

    printed = False
    for block in result.content:
        printed = True
        if isinstance(block, TextContent):
            print(block.text)
        elif isinstance(block, ImageContent):
            print(f"[{block.mime_type} image, {len(block.data or '') * 3 // 4} bytes]")
        elif isinstance(block, ResourceLink):
            print(f"[resource link {block.to_dict().get('uri')}]")
        elif isinstance(block, EmbeddedResource):
            resource = block.to_dict().get("resource") or {}
            print(resource.get("text") if "text" in resource else f"[resource {resource.get('uri')}]")
        else:
            print(json.dumps(block.to_dict(), ensure_ascii=False))
    if result.structured_content is not None and not result.text:
        print(json.dumps(result.structured_content, indent=2, ensure_ascii=False))
    elif not printed:
        print("(no content)")


class Progress:
    """One self-overwriting progress line on a terminal's stderr."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.shown = False

    def show(self, progress: float, total: Optional[float], message: Optional[str]) -> None:
        amount = f"{progress:g}/{total:g}" if total else f"{progress:g}"
        text = f"progress {amount}" + (f" {message}" if message else "")
        self.stream.write("\r\033[K" + text[:200])
        self.stream.flush()
        self.shown = True

    def clear(self) -> None:
        if self.shown:
            self.stream.write("\r\033[K")
            self.stream.flush()


def print_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    if not rows:
        print("(none)")
        return
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header) - 1)]
    for row in [header, *rows]:
        cells = [str(cell).ljust(width) for cell, width in zip(row, widths)] + [str(row[-1])]
        print("  ".join(cells).rstrip())


def print_json(value: Any) -> None:
    print(json.dumps(value, indent=2, ensure_ascii=False, default=str))


def first_line(value: Any) -> str:
    """The first line of ``value``'s text; an exception with no text is named by its type."""
    text = str(value).strip()
    if text:
        return text.splitlines()[0]
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

    The lines are the server's own text, so they pass the output gate (``shown``) and the
    secrets scrub before they reach the terminal.
    """
    tail = stderr_tail(exc)
    if not tail:
        return
    server = server or getattr(exc, "server", None)
    whose = f"server {server!r}" if isinstance(server, str) and server else "the server"
    print(f"mcpsync: the last lines {SECRETS.scrub(shown(whose))} wrote to stderr:", file=sys.stderr)
    for line in shown("\n".join(tail), lines=True).splitlines():
        print("  " + SECRETS.scrub(line), file=sys.stderr)


def error(text: str) -> None:
    print(f"mcpsync: error: {SECRETS.scrub(text)}", file=sys.stderr)


def note(text: str) -> None:
    print(f"mcpsync: {SECRETS.scrub(text)}", file=sys.stderr)


def warn(text: str) -> None:
    print(f"mcpsync: warning: {SECRETS.scrub(text)}", file=sys.stderr)


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
        import re
        from urllib.parse import urlsplit

        source = os.environ if environ is None else environ
        found = set(self.values)
        for server in config.servers.values():
            if not server.trusted:
                continue  # nothing was expanded
            found.update(server.headers.values())
            found.update(server.env.values())
            found.update(arg for arg, written in zip(server.args, server.written_args()) if arg != written)
            parts = urlsplit(server.url or "")
            found.update(value for value in (parts.query, parts.password, parts.fragment) if value)
            fields = {key: value for key, value in server.raw.items() if key not in ("command", "cwd")}  # paths
            named = re.findall(r"\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)", json.dumps(fields))
            named += _codex_variables(server.raw)  # Codex names variables without ${...}
            for name in named:
                if source.get(name):
                    found.add(source[name])
        self.values = sorted((v for v in found if len(v.strip()) >= 4), key=len, reverse=True)

    def scrub(self, text: str) -> str:
        for value in self.values:
            text = text.replace(value, "***")
        return text


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


class OneLine(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return f"mcpsync: warning: {SECRETS.scrub(first_line(record.getMessage()))}"


class Scrubbed(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return SECRETS.scrub(super().format(record))


def configure_logging(debug: bool) -> Callable[[], None]:
    """Send mcpsync's log lines to stderr for this command; returns what undoes it.

    ``main`` undoes it on the way out, so a program (or a test) that calls ``main()``
    in-process is not left with a handler on a stream that may be closed later.
    """
    handler = logging.StreamHandler(sys.stderr)
    if debug:
        handler.setFormatter(Scrubbed("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        loggers, level = [logging.getLogger("mcpsync")], logging.DEBUG
    else:
        # Without --debug only skipped config files and cache trouble are worth a line;
        # server failures are reported by the commands themselves.
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
