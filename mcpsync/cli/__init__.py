"""The ``mcpsync`` command: inspect and call MCP servers from a shell.

::

    mcpsync servers                          # every configured server (nothing is started)
    mcpsync servers --status                 # start them and show each one's status (--check: the same)
    mcpsync tools [SERVER]                   # tools of every server, or of one
    mcpsync call SERVER TOOL '{"arg": 1}'    # call one tool, print its result
    mcpsync call files_read_file '{...}'     # the same by qualified name (as 'tools' shows it)
    mcpsync resources [SERVER]
    mcpsync read [SERVER] URI                # one resource's contents
    mcpsync prompts [SERVER]
    mcpsync prompt [SERVER] NAME '{"a": "x"}'  # one prompt, rendered
    mcpsync skills [SERVER]                  # skills (SEP-2640) of every server, or of one
    mcpsync skill SERVER NAME                # one skill's SKILL.md, verified against its entry
    mcpsync tools -- python server.py        # a server given directly, not from configs
    mcpsync trust [--revoke [FILE...]]       # the trusted project files; forget some
    mcpsync call https://host/mcp echo '{"text": "hi"}'

Options (before or after the command): ``--config FILE`` (repeatable; instead
of discovery), ``--timeout SECONDS`` (connect and call, default 30),
``--json`` (machine-readable output), ``--no-cache``, ``--debug``,
``--trust-project`` (start the servers of this directory's project files for
this run without asking; otherwise a command that starts servers asks on a
terminal about each project file not yet trusted, and without a terminal leaves
their servers out); ``--version``.

Exit codes: 0 success; 1 the tool reported an error (``isError``) or another
error; 2 usage (bad option, arguments not a JSON object); 3 configuration (no
servers, unknown server, invalid entry); 4 a server could not be reached or
its connection closed; 5 timeout; 6 the server refused the request (a
JSON-RPC error, a missing capability, a protocol violation); 130 interrupted.
``servers`` exits with the code of the first server that failed (3 for an
invalid entry, 4 for one that could not start), 0 when none did.
An error is one line on stderr (``mcpsync: error: ...``), followed, when a stdio
server died, by the last few lines it wrote to stderr; ``--debug`` adds the
traceback and mcpsync's logs. Text from a server or a config file is shown escaped (a
control, bidi or invisible character as ``\\x1b`` or ``\\u202e``): all output goes through
one writer, :mod:`mcpsync.cli._output`. ``--json`` output is exact JSON.
"""

from __future__ import annotations

import argparse
import copy
import sys
from typing import Any, Callable, Dict, List, NoReturn, Optional, Sequence, Tuple

from .. import config as mcpconfig
from .._terminal import shown
from .._version import __version__
from ..exceptions import ConfigError, MCPSyncError, ServerNotConnected, UnknownServerError
from . import _calls as calls
from . import _output as out
from . import _signals as signals_cli
from . import _skills as skills_cli

__all__ = ["main"]


DEFAULT_TIMEOUT = 30.0


COMMANDS = ("servers", "tools", "call", "resources", "read", "prompts", "prompt", "skills", "skill", "trust", "replay")


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the command with ``argv`` (default ``sys.argv[1:]``); returns the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    target: List[str] = []
    if "--" in argv:
        split = argv.index("--")
        argv, target = argv[:split], argv[split + 1:]
    parser = _parser()
    args = parser.parse_args(argv)
    args.timeout_given = hasattr(args, "timeout")
    for name, default in _DEFAULTS:
        if not hasattr(args, name):
            setattr(args, name, copy.copy(default))  # a list of this run's own
    if args.command is None:
        out.write(parser.format_help(), err=True)
        return out.EXIT_USAGE
    restore_logging = out.configure_logging(args.debug)
    try:
        return signals_cli.run(lambda: _run(args, target))
    except KeyboardInterrupt:
        out.error("interrupted")
        return out.EXIT_INTERRUPTED
    except out.UsageError as exc:
        out.error(str(exc))
        return out.EXIT_USAGE
    except Exception as exc:
        return _failed(exc, args)
    finally:
        restore_logging()


# The options a subcommand may not have parsed (they are given before or after it), with their defaults.
_DEFAULTS: Tuple[Tuple[str, Any], ...] = (("config", []), ("timeout", DEFAULT_TIMEOUT), ("json", False), ("debug", False), ("no_cache", False),
             ("trust_project", False), ("status", False), ("max_output", None))


def _failed(exc: Exception, args: argparse.Namespace) -> int:
    """Say why the command failed (with the traceback under --debug); its exit code."""
    if args.debug:
        import traceback

        # A chained foreign exception (urllib3's, say) may quote a URL's query or a header value.
        out.traceback_text("".join(traceback.format_exc()))
    out.error(out.first_line(exc) + out.timeout_advice(exc, args.timeout))
    if not args.debug:  # the traceback above already quoted them
        out.server_stderr(exc)
    return out.exit_code(exc)


class _Parser(argparse.ArgumentParser):
    """argparse, writing its help, usage and errors through the command's one writer (a bad word
    the user typed, quoted back in an error, is shown escaped like any other outside text)."""

    def print_usage(self, file: Any = None) -> None:
        out.write(self.format_usage(), err=file is not None)  # argparse passes a file only for errors

    def print_help(self, file: Any = None) -> None:
        out.write(self.format_help(), err=file is not None)

    def error(self, message: str) -> NoReturn:
        out.write(self.format_usage(), err=True)
        out.line(f"{self.prog}: error: {shown(message)}", err=True)
        self.exit(2)


def _parser() -> argparse.ArgumentParser:
    common = _Parser(add_help=False)
    common.add_argument("--config", action="append", metavar="FILE", default=argparse.SUPPRESS,
                        help="read servers from FILE instead of discovering config files (repeatable)")
    common.add_argument("--timeout", type=float, metavar="SECONDS", default=argparse.SUPPRESS,
                        help=f"how long to wait for servers and calls (default {DEFAULT_TIMEOUT:g})")
    common.add_argument("--json", action="store_true", default=argparse.SUPPRESS,
                        help="print JSON for scripts")
    common.add_argument("--no-cache", action="store_true", default=argparse.SUPPRESS,
                        help="do not read or write the tools cache")
    common.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                        help="show mcpsync's logs, and tracebacks on errors")
    common.add_argument("--trust-project", action="store_true", default=argparse.SUPPRESS,
                        help="start the servers of this directory's project config files (.mcp.json, "
                             ".cursor/mcp.json, .vscode/mcp.json ...) for this run, without asking")
    parser = _Parser(
        prog="mcpsync", parents=[common],
        description="Inspect and call MCP servers from the config files you already have.",
        epilog="A server can be given directly: 'mcpsync tools -- python server.py' or "
               "'mcpsync tools https://host/mcp'. Exit codes: 0 ok, 1 tool error, 2 usage, 3 config, "
               "4 connection, 5 timeout, 6 refused by the server, 130 interrupted.")
    parser.add_argument("--version", action="version", version=_version_text())
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    servers = commands.add_parser("servers", parents=[common],
                                  help="list the configured servers (--status: start them and show their status)")
    servers.add_argument("--status", "--connect", "--check", dest="status", action="store_true",
                         default=argparse.SUPPRESS, help="start every trusted server and show its state, tools and "
                                                         "last error (the exit code says whether one failed)")
    for name, what in (("tools", "tools"), ("resources", "resources"), ("prompts", "prompts")):
        sub = commands.add_parser(name, parents=[common], help=f"list the {what} of every server, or of one")
        sub.add_argument("server", nargs="?", metavar="SERVER", help="a server name or an http(s) URL")
    trust = commands.add_parser("trust", parents=[common], help="list the project config files you trusted, "
                                                                "or forget them (--revoke)")
    trust.add_argument("--revoke", nargs="*", metavar="FILE", default=argparse.SUPPRESS,
                       help="forget the trust in FILE (default: this directory's project files)")
    replay = commands.add_parser("replay", parents=[common],
                                 help="serve a recorded cassette as a stdio MCP server (for testing other clients)")
    replay.add_argument("cassette", metavar="CASSETTE", help="a cassette file (see use_cassette)")
    replay.add_argument("--connection", type=int, default=0, metavar="N",
                        help="which recorded connection to serve, numbered from 0 (default 0)")
    calls.add_parsers(commands, common)
    skills_cli.add_parsers(commands, common)
    return parser


def _version_text() -> str:
    from .._protocol.versions import ALL_VERSIONS

    return f"mcpsync {__version__} (MCP protocol versions {', '.join(ALL_VERSIONS)})"


def _run(args: argparse.Namespace, target: List[str]) -> int:
    from ..manager import Manager

    serverless = _serverless(args, target)
    if serverless is not None:
        return serverless
    words = _positionals(args, target)
    starts = args.command != "servers" or args.status
    config, wanted = _load_config(args, target, words, starts)
    out.SECRETS.learn(config)
    manager = Manager(config, cache=not args.no_cache and not target and not _is_url(words.server),
                      timeout=args.timeout, reconnect=False)
    try:
        if starts:
            _start(manager, args)
        return _command(manager, config, wanted, words, args)
    finally:
        manager.close()


def _serverless(args: argparse.Namespace, target: List[str]) -> Optional[int]:
    """Run 'replay' or 'trust', the commands that start no configured server (None: another command)."""
    if args.command not in ("replay", "trust"):
        return None
    if target:
        raise out.UsageError(f"'{args.command}' takes no server command")
    if args.command == "trust":
        return _trust(args)
    from .._cassettes._serve import serve

    return serve(args.cassette, args.connection)


def _start(manager: Any, args: argparse.Namespace) -> None:
    """Start the servers, giving them until the timeout."""
    try:
        manager.connect_all(startup_timeout=args.timeout)
    except ServerNotConnected:  # a "required" server failed: 'servers' still shows them all
        if args.command != "servers":
            raise
    manager.wait(min(args.timeout, 2.0))  # an attempt ending with the window reports its own error


def _command(manager: Any, config: "mcpconfig.Config", wanted: Optional[str], words: calls.Words,
             args: argparse.Namespace) -> int:
    """Run the command that talks to the started servers."""
    command = args.command
    if command in skills_cli.SKILL_COMMANDS:
        return skills_cli.run_skills(manager, wanted, args)
    if command == "servers":
        return _servers(manager, config, args)
    if command == "call":
        return calls.run_call(manager, words if words.qualified else words._replace(server=wanted), config, args)
    if command == "read":
        return calls.run_read(manager, words._replace(server=wanted), args)
    if command == "prompt":
        return calls.run_prompt(manager, words._replace(server=wanted), args)
    return _listing(manager, wanted, args)


def _positionals(args: argparse.Namespace, target: List[str]) -> calls.Words:
    if args.command in skills_cli.SKILL_COMMANDS:
        server, name, _ = skills_cli.positionals(args, target)
        return calls.Words(server, name, None)
    if args.command in ("tools", "resources", "prompts"):
        if target and args.server:
            raise out.UsageError(f"give either a SERVER ({args.server!r}) or '-- COMMAND...', not both")
        return calls.Words(args.server, None, None)
    if args.command in ("call", "read", "prompt"):
        return calls.positionals(args.command, args.words, target)
    if target:
        raise out.UsageError("'servers' takes no server command; use --config or the config files")
    return calls.Words(None, None, None)


def _is_url(text: Optional[str]) -> bool:
    return bool(text) and str(text).startswith(("http://", "https://"))


def _load_config(args: argparse.Namespace, target: List[str], words: calls.Words,
                 starts: bool) -> Tuple["mcpconfig.Config", Optional[str]]:
    """The servers to start, and the one the command is about (None: all of them, or for a
    qualified tool name, the ones it may belong to).

    Discovery trusts the project files the trust record has; with ``--trust-project``
    every one (this run only); when the command ``starts`` servers, it asks on a
    terminal about the others.
    """
    server = words.server
    direct = _direct_config(target, server)
    if direct is not None:
        return direct
    config = _configured(args, starts)
    if words.qualified and words.name is not None:
        return _only(config, calls.servers_for(words.name, config)), None
    if server is None:
        return config, None
    _check_startable(config, server)
    return _only(config, [server]), server


def _direct_config(target: List[str], server: Optional[str]) -> Optional[Tuple["mcpconfig.Config", str]]:
    """The one server given on the command line (``-- COMMAND...`` or a URL) and its name; None: not given."""
    if target:
        from ..transports.stdio import default_name

        # a name the user never chose must be valid whatever the command looks like
        name = mcpconfig.valid_name(default_name(target[0], target[1:]))
        return mcpconfig.from_mapping({name: {"command": target[0], "args": target[1:]}}), name
    if server is not None and _is_url(server):
        from urllib.parse import urlsplit

        name = urlsplit(server).hostname or "server"
        return mcpconfig.from_mapping({name: {"url": server}}), name
    return None


def _configured(args: argparse.Namespace, starts: bool) -> "mcpconfig.Config":
    """The --config files, else the discovered ones; a ConfigError when they hold no server."""
    if args.config:
        config = mcpconfig.Config()
        for path in args.config:
            config.merge(mcpconfig.load(path))
    else:
        config = mcpconfig.discover(trust_project=True if args.trust_project else "ask" if starts else False)
    if not config.names:
        raise ConfigError(_nothing_found(args, config))
    return config


def _check_startable(config: "mcpconfig.Config", server: str) -> None:
    """Raise when the named server is unknown, failed to parse, is disabled or is not trusted."""
    if server not in config:
        raise UnknownServerError(server, config.names)
    if server not in config.servers:
        raise config.errors[server]
    if not config.servers[server].enabled:
        raise ConfigError(f'server "{server}" is disabled in {config.servers[server].source}', server=server)
    config.servers[server].transport_config()  # an untrusted project entry: ConfigError, saying what to do


def _only(config: "mcpconfig.Config", names: List[str]) -> "mcpconfig.Config":
    only = mcpconfig.Config()
    for name in names:
        only.add(config.servers[name] if name in config.servers else config.errors[name], name)
    return only


def _nothing_found(args: argparse.Namespace, config: "mcpconfig.Config") -> str:
    """Where the command looked for servers (every file discovery reads, or the --config files)."""
    if args.config:
        searched = list(args.config)
    else:
        import os

        home = os.path.expanduser("~")
        searched = sorted({str(source.path) for source in mcpconfig.discovery_sources()},
                          key=[str(s.path) for s in mcpconfig.discovery_sources()].index)
        searched = ["~" + path[len(home):] if path.startswith(home + os.sep) else path for path in searched]
    skipped = f"; {len(config.problems)} of them skipped as malformed (see above)" if config.problems else ""
    return (f"no MCP servers found; searched {', '.join(searched)}{skipped}. Add a server to one of them, "
            "pass --config FILE, or give one directly: mcpsync tools -- COMMAND... / mcpsync tools URL")


def _servers(manager: Any, config: "mcpconfig.Config", args: argparse.Namespace) -> int:
    """The status table; exits with the first failed server's code (0 when none failed)."""
    rows = [status.to_dict() for status in manager.status().values()]
    for row in rows:
        row["transport"] = row["type"]  # kept for scripts that read it: the transport used, as type is
    if args.json:
        out.print_json(rows)
    else:
        out.print_table(("SERVER", "STATE", "TYPE", "TOOLS", "SOURCE / ERROR"), [_status_row(r) for r in rows])
    return _failure_code(manager, rows, args)


def _status_row(row: Dict[str, Any]) -> Tuple[str, ...]:
    tools = str(row["tools"]) if row["state"] == "connected" else "-"
    return (row["name"], row["state"], row["transport"], tools,
            out.first_line(row["last_error"]) if row["last_error"] else row["source"])


def _failure_code(manager: Any, rows: List[Dict[str, Any]], args: argparse.Namespace) -> int:
    """The exit code of the first failed server (0: none failed); every failed server's stderr shown
    (not under --json)."""
    code = out.EXIT_OK
    for row in rows:
        if row["state"] != "failed":
            continue
        error = _connect_error(manager, row["name"])
        if error is not None and not args.json:
            out.server_stderr(error, row["name"])
        if code == out.EXIT_OK:
            cause = error.__cause__ if error is not None and error.__cause__ is not None else error
            code = out.EXIT_CONNECT if cause is None else out.exit_code(cause)
    return code


def _connect_error(manager: Any, name: str) -> Optional[MCPSyncError]:
    """Why a failed server cannot be had now (None: it can after all)."""
    try:
        manager.client(name, timeout=0)
    except MCPSyncError as exc:
        return exc
    return None


def _trust(args: argparse.Namespace) -> int:
    """List the trust record (does each file still have the content that was trusted?), or forget entries."""
    revoke = getattr(args, "revoke", None)
    if revoke is not None:
        return _revoke(revoke)
    from ..config import _trust as trust_record

    rows = [{"path": path, "state": trust_record.record_state(key), "sha256": key.sha256, "project": key.project}
            for path, key in sorted(trust_record.trusted_records().items())]
    if args.json:
        out.print_json(rows)
    else:
        out.print_table(("STATE", "PROJECT FILE"), [(row["state"], row["path"]) for row in rows])
    return out.EXIT_OK


def _revoke(files: List[str]) -> int:
    """Forget the trust in ``files`` (none named: this directory's project files)."""
    import os

    files = files or [str(source.path) for source in mcpconfig.discovery_sources(os.getcwd())
                      if source.level == "project" and source.format != "claude-local"]
    forgotten = sum(mcpconfig.revoke_trust(path) for path in files)
    out.line(f"forgot {forgotten} trusted project file{'' if forgotten == 1 else 's'}")
    return out.EXIT_OK


def _listing(manager: Any, wanted: Optional[str], args: argparse.Namespace) -> int:
    names = [wanted] if wanted is not None else _trusted_names(manager)
    rows: List[Dict[str, Any]] = []
    failures: List[BaseException] = []
    for name in names:
        try:
            client = manager.client(name, timeout=0)
        except MCPSyncError as exc:
            if wanted is not None:
                raise
            failures.append(exc)
            out.warn(out.first_line(exc) + out.timeout_advice(exc, args.timeout))
            out.server_stderr(exc, name)
            continue
        rows.extend(_items(manager, client, name, args.command, args.timeout))
    if args.json:
        out.print_json(rows)
    else:
        headers, row = _LISTINGS[args.command]
        out.print_table(headers, [row(r) for r in rows])
    if failures and len(failures) == len(names):  # not one server reached
        return out.exit_code(failures[0])
    return out.EXIT_OK


def _trusted_names(manager: Any) -> List[str]:
    """The servers to list: every one but the untrusted project servers (named in discovery's warning)."""
    names = [name for name, status in manager.status().items() if status.state != "untrusted"]
    if not names:
        raise ConfigError("no trusted MCP servers to start: the project's config files are not trusted "
                          "(run on a terminal to be asked, or pass --trust-project)")
    return names


def _tool_row(row: Dict[str, Any]) -> Tuple[str, ...]:
    return row["server"], row["name"], row["qualified_name"], out.first_line(row.get("description") or "")


def _resource_row(row: Dict[str, Any]) -> Tuple[str, ...]:
    return row["server"], row.get("uri", ""), row.get("name", ""), row.get("mimeType") or ""


def _prompt_row(row: Dict[str, Any]) -> Tuple[str, ...]:
    arguments = ", ".join(a.get("name", "") for a in row.get("arguments") or [])
    return row["server"], row.get("name", ""), arguments, out.first_line(row.get("description") or "")


# Each listing command's table: its headers and one row's cells.
_LISTINGS: Dict[str, Tuple[Tuple[str, ...], Callable[[Dict[str, Any]], Tuple[str, ...]]]] = {
    "tools": (("SERVER", "TOOL", "QUALIFIED NAME", "DESCRIPTION"), _tool_row),  # 'mcpsync call' takes either
    "resources": (("SERVER", "URI", "NAME", "MIME TYPE"), _resource_row),
    "prompts": (("SERVER", "PROMPT", "ARGUMENTS", "DESCRIPTION"), _prompt_row),
}


def _items(manager: Any, client: Any, server: str, command: str, timeout: float) -> List[Dict[str, Any]]:
    if command == "tools":
        return [{"server": server, "qualified_name": t.qualified_name, "name": t.name,
                 "description": t.tool.description, "input_schema": t.tool.input_schema}
                for t in manager.tools(server)]
    kind = "resources" if command == "resources" else "prompts"
    if kind not in client.server_capabilities:
        return []
    items = client.list_resources(timeout=timeout) if kind == "resources" else client.list_prompts(timeout=timeout)
    return [{"server": server, **item.to_dict()} for item in items]
