"""The ``mcpsync`` command: inspect and call MCP servers from a shell.

::

    mcpsync servers                          # every configured server (nothing is started)
    mcpsync servers --status                 # start them and show each one's status
    mcpsync tools [SERVER]                   # tools of every server, or of one
    mcpsync call SERVER TOOL '{"arg": 1}'    # call one tool, print its result
    mcpsync resources [SERVER]
    mcpsync prompts [SERVER]
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
their servers out).

Exit codes: 0 success; 1 the tool reported an error (``isError``) or another
error; 2 usage (bad option, arguments not a JSON object); 3 configuration (no
servers, unknown server, invalid entry); 4 a server could not be reached or
its connection closed; 5 timeout; 6 the server refused the request (a
JSON-RPC error, a missing capability, a protocol violation); 130 interrupted.
An error is one line on stderr (``mcpsync: error: ...``); ``--debug`` adds the
traceback and mcpsync's logs.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from typing import Any, Dict, List, Optional, Sequence, TextIO, Tuple

from . import config as mcpconfig
from .exceptions import (
    CapabilityError, ConfigError, MCPError, MCPSyncError, ProtocolError, RequestTimeout, TransportError,
    UnknownServerError,
)

__all__ = ["main"]

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_CONFIG = 3
EXIT_CONNECT = 4
EXIT_TIMEOUT = 5
EXIT_REFUSED = 6
EXIT_INTERRUPTED = 130

DEFAULT_TIMEOUT = 30.0
COMMANDS = ("servers", "tools", "call", "resources", "prompts", "skills", "skill", "trust")


class UsageError(Exception):
    """Bad command-line input (exit code 2)."""


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the command with ``argv`` (default ``sys.argv[1:]``); returns the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    target: List[str] = []
    if "--" in argv:
        split = argv.index("--")
        argv, target = argv[:split], argv[split + 1:]
    parser = _parser()
    args = parser.parse_args(argv)
    for name, default in (("config", []), ("timeout", DEFAULT_TIMEOUT), ("json", False), ("debug", False),
                          ("no_cache", False), ("trust_project", False), ("status", False)):
        if not hasattr(args, name):
            setattr(args, name, default)
    if args.command is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    _configure_logging(args.debug)
    try:
        return _run(args, target)
    except KeyboardInterrupt:
        _error("interrupted")
        return EXIT_INTERRUPTED
    except UsageError as exc:
        _error(str(exc))
        return EXIT_USAGE
    except Exception as exc:
        if args.debug:
            import traceback

            # A chained foreign exception (urllib3's, say) may quote a URL's query or a header value.
            sys.stderr.write(_SECRETS.scrub("".join(traceback.format_exc())))
        _error(_first_line(exc) + _timeout_advice(exc, args.timeout))
        return _exit_code(exc)


def _parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
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
    parser = argparse.ArgumentParser(
        prog="mcpsync", parents=[common],
        description="Inspect and call MCP servers from the config files you already have.",
        epilog="A server can be given directly: 'mcpsync tools -- python server.py' or "
               "'mcpsync tools https://host/mcp'. Exit codes: 0 ok, 1 tool error, 2 usage, 3 config, "
               "4 connection, 5 timeout, 6 refused by the server, 130 interrupted.")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    servers = commands.add_parser("servers", parents=[common],
                                  help="list the configured servers (--status: start them and show their status)")
    servers.add_argument("--status", "--connect", dest="status", action="store_true", default=argparse.SUPPRESS,
                         help="start every trusted server and show its state, tools and last error")
    for name, what in (("tools", "tools"), ("resources", "resources"), ("prompts", "prompts")):
        sub = commands.add_parser(name, parents=[common], help=f"list the {what} of every server, or of one")
        sub.add_argument("server", nargs="?", metavar="SERVER", help="a server name or an http(s) URL")
    trust = commands.add_parser("trust", parents=[common], help="list the project config files you trusted, "
                                                                "or forget them (--revoke)")
    trust.add_argument("--revoke", nargs="*", metavar="FILE", default=argparse.SUPPRESS,
                       help="forget the trust in FILE (default: this directory's project files)")
    call = commands.add_parser("call", parents=[common], help="call a tool and print its result",
                               description="SERVER may be an http(s) URL; with '-- COMMAND...' leave it out.")
    call.add_argument("words", nargs="+", metavar="SERVER TOOL [ARGUMENTS]",
                      help="ARGUMENTS is a JSON object ('-' reads it from stdin)")
    _skills_parsers(commands, common)
    return parser


# -- running ------------------------------------------------------------------------------------


def _run(args: argparse.Namespace, target: List[str]) -> int:
    from .manager import Manager

    if args.command == "trust":
        if target:
            raise UsageError("'trust' takes no server command")
        return _trust(args)

    server, tool, arguments = _positionals(args, target)
    starts = args.command != "servers" or args.status
    config, wanted = _load_config(args, target, server, starts)
    _SECRETS.learn(config)
    manager = Manager(config, cache=not args.no_cache and not target and not _is_url(server),
                      timeout=args.timeout, reconnect=False)
    try:
        if starts:
            manager.connect_all(startup_timeout=args.timeout)
            manager.wait(min(args.timeout, 2.0))  # an attempt ending with the window reports its own error
        if args.command in _SKILL_COMMANDS:
            return _skills(manager, wanted, args)
        if args.command == "servers":
            return _servers(manager, config, args)
        if args.command == "call":
            assert wanted is not None and tool is not None
            return _call(manager, wanted, tool, arguments, args)
        return _listing(manager, wanted, args)
    finally:
        manager.close()


def _positionals(args: argparse.Namespace, target: List[str]) -> Tuple[Optional[str], Optional[str], Any]:
    if args.command in _SKILL_COMMANDS:
        return _skill_positionals(args, target)
    if args.command in ("tools", "resources", "prompts"):
        if target and args.server:
            raise UsageError(f"give either a SERVER ({args.server!r}) or '-- COMMAND...', not both")
        return args.server, None, None
    if args.command != "call":
        if target:
            raise UsageError("'servers' takes no server command; use --config or the config files")
        return None, None, None
    words = list(args.words)
    if not target:
        if len(words) < 2:
            raise UsageError("call needs SERVER TOOL [ARGUMENTS]")
        server = words.pop(0)
    else:
        server = None
    if not words or len(words) > 2:
        raise UsageError("call needs TOOL [ARGUMENTS] after the server")
    tool = words[0]
    return server, tool, _arguments(words[1] if len(words) > 1 else None)


def _arguments(text: Optional[str]) -> Dict[str, Any]:
    if text is None:
        return {}
    if text == "-":
        text = sys.stdin.read()
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise UsageError(f"ARGUMENTS is not valid JSON: {exc}") from None
    except RecursionError:
        raise UsageError("ARGUMENTS is nested too deeply to be tool arguments") from None
    if not isinstance(value, dict):
        raise UsageError("ARGUMENTS must be a JSON object, like '{\"text\": \"hi\"}'")
    return value


def _is_url(text: Optional[str]) -> bool:
    return bool(text) and str(text).startswith(("http://", "https://"))


def _load_config(args: argparse.Namespace, target: List[str], server: Optional[str],
                 starts: bool) -> Tuple["mcpconfig.Config", Optional[str]]:
    """The servers to start, and the one the command is about (None: all of them).

    Discovery trusts the project files the trust record has; with ``--trust-project``
    every one (this run only); when the command ``starts`` servers, it asks on a
    terminal about the others.
    """
    if target:
        from .transports.stdio import default_name

        name = default_name(target[0], target[1:])
        return mcpconfig.from_mapping({name: {"command": target[0], "args": target[1:]}}), name
    if server is not None and _is_url(server):
        from urllib.parse import urlsplit

        name = urlsplit(server).hostname or "server"
        return mcpconfig.from_mapping({name: {"url": server}}), name
    if args.config:
        config = mcpconfig.Config()
        for path in args.config:
            config.merge(mcpconfig.load(path))
    else:
        config = mcpconfig.discover(trust_project=True if args.trust_project else "ask" if starts else False)
    if not config.names:
        where = ", ".join(args.config) if args.config else "any config file (see 'mcpsync --help')"
        raise ConfigError(f"no MCP servers found in {where}")
    if server is None:
        return config, None
    if server not in config:
        raise UnknownServerError(server, config.names)
    only = mcpconfig.Config()
    if server in config.servers:
        only.add(config.servers[server], server)
        if not config.servers[server].enabled:
            raise ConfigError(f'server "{server}" is disabled in {config.servers[server].source}', server=server)
        config.servers[server].transport_config()  # an untrusted project entry: ConfigError, saying what to do
    else:
        raise config.errors[server]
    return only, server


# -- commands -------------------------------------------------------------------------------------


def _servers(manager: Any, config: "mcpconfig.Config", args: argparse.Namespace) -> int:
    rows = [status.to_dict() for status in manager.status().values()]
    for name, server in config.servers.items():
        if not server.enabled:
            rows.append({"name": name, "state": "disabled", "type": server.type, "source": server.source,
                         "tools": 0, "last_error": None})
    if args.json:
        _print_json(rows)
        return EXIT_OK
    table = [(r["name"], r["state"], r["type"], str(r["tools"]) if r["state"] == "connected" else "-",
              _first_line(r["last_error"]) if r["last_error"] else r["source"]) for r in rows]
    _print_table(("SERVER", "STATE", "TYPE", "TOOLS", "SOURCE / ERROR"), table)
    return EXIT_OK


def _trust(args: argparse.Namespace) -> int:
    """List the trust record (does each file still have the content that was trusted?), or forget entries."""
    import hashlib
    import os

    revoke = getattr(args, "revoke", None)
    if revoke is not None:
        cwd = os.getcwd()
        files = revoke or [str(source.path) for source in mcpconfig.discovery_sources(cwd)
                           if source.level == "project" and source.format != "claude-local"]
        forgotten = sum(mcpconfig.revoke_trust(path) for path in files)
        print(f"forgot {forgotten} trusted project file{'' if forgotten == 1 else 's'}")
        return EXIT_OK
    rows = []
    for path, digest in sorted(mcpconfig.trusted_projects().items()):
        try:
            with open(path, "rb") as stream:
                state = "trusted" if hashlib.sha256(stream.read()).hexdigest() == digest else "changed"
        except OSError:
            state = "missing"
        rows.append({"path": path, "state": state, "sha256": digest})
    if args.json:
        _print_json(rows)
    else:
        _print_table(("STATE", "PROJECT FILE"), [(row["state"], row["path"]) for row in rows])
    return EXIT_OK


def _listing(manager: Any, wanted: Optional[str], args: argparse.Namespace) -> int:
    if wanted is not None:
        names = [wanted]
    else:  # untrusted project servers were named in discovery's warning; they are not started
        names = [name for name, status in manager.status().items() if status.state != "untrusted"]
        if not names:
            raise ConfigError("no trusted MCP servers to start: the project's config files are not trusted "
                              "(run on a terminal to be asked, or pass --trust-project)")
    rows: List[Dict[str, Any]] = []
    reached = 0
    failures: List[BaseException] = []
    for name in names:
        try:
            client = manager.client(name, timeout=0)
        except MCPSyncError as exc:
            failures.append(exc)
            if wanted is not None:
                raise
            _warn(_first_line(exc) + _timeout_advice(exc, args.timeout))
            continue
        reached += 1
        rows.extend(_items(manager, client, name, args.command, args.timeout))
    if args.json:
        _print_json(rows)
    elif args.command == "tools":
        _print_table(("SERVER", "TOOL", "DESCRIPTION"),
                     [(r["server"], r["name"], _first_line(r.get("description") or "")) for r in rows])
    elif args.command == "resources":
        _print_table(("SERVER", "URI", "NAME", "MIME TYPE"),
                     [(r["server"], r.get("uri", ""), r.get("name", ""), r.get("mimeType") or "") for r in rows])
    else:
        _print_table(("SERVER", "PROMPT", "ARGUMENTS", "DESCRIPTION"),
                     [(r["server"], r.get("name", ""), ", ".join(a.get("name", "") for a in r.get("arguments") or []),
                       _first_line(r.get("description") or "")) for r in rows])
    if names and not reached and failures:
        return _exit_code(failures[0])
    return EXIT_OK


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


def _call(manager: Any, server: str, tool: str, arguments: Dict[str, Any], args: argparse.Namespace) -> int:
    client = manager.client(server, timeout=args.timeout)
    progress = _Progress(sys.stderr) if sys.stderr.isatty() and not args.json else None
    try:
        result = client.call_tool(tool, arguments, timeout=args.timeout,
                                  on_progress=progress.show if progress is not None else None)
    finally:
        if progress is not None:
            progress.clear()
    if args.json:
        _print_json(result.to_dict())
    else:
        _print_result(result)
    if result.is_error:
        _error("the tool reported an error")
        return EXIT_ERROR
    return EXIT_OK


def _print_result(result: Any) -> None:
    from .types import EmbeddedResource, ImageContent, ResourceLink, TextContent

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


# -- output ---------------------------------------------------------------------------------------


class _Progress:
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


def _print_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    if not rows:
        print("(none)")
        return
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header) - 1)]
    for row in [header, *rows]:
        cells = [str(cell).ljust(width) for cell, width in zip(row, widths)] + [str(row[-1])]
        print("  ".join(cells).rstrip())


def _print_json(value: Any) -> None:
    print(json.dumps(value, indent=2, ensure_ascii=False, default=str))


def _first_line(value: Any) -> str:
    """The first line of ``value``'s text; an exception with no text is named by its type."""
    text = str(value).strip()
    if text:
        return text.splitlines()[0]
    return type(value).__name__ if isinstance(value, BaseException) else ""


def _timeout_advice(exc: BaseException, timeout: float) -> str:
    timed_out = _exit_code(exc) == EXIT_TIMEOUT
    return f" (waited --timeout {timeout:g}s; raise it if the server is only slow)" if timed_out else ""


def _error(text: str) -> None:
    print(f"mcpsync: error: {_SECRETS.scrub(text)}", file=sys.stderr)


def _warn(text: str) -> None:
    print(f"mcpsync: warning: {_SECRETS.scrub(text)}", file=sys.stderr)


class _Secrets:
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
            for name in re.findall(r"\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)", json.dumps(fields)):
                if source.get(name):
                    found.add(source[name])
        self.values = sorted((v for v in found if len(v.strip()) >= 4), key=len, reverse=True)

    def scrub(self, text: str) -> str:
        for value in self.values:
            text = text.replace(value, "***")
        return text


_SECRETS = _Secrets()


def _exit_code(exc: BaseException) -> int:
    if isinstance(exc, (ConfigError, UnknownServerError)):
        return EXIT_CONFIG
    if isinstance(exc, RequestTimeout) or isinstance(exc.__cause__, RequestTimeout):
        return EXIT_TIMEOUT  # also a server that did not answer its handshake in time
    if isinstance(exc, TransportError):
        return EXIT_CONNECT
    if isinstance(exc, (MCPError, CapabilityError, ProtocolError)):
        return EXIT_REFUSED
    return EXIT_ERROR


# -- skills (the io.modelcontextprotocol/skills extension) ---------------------------------------------

_SKILL_COMMANDS = ("skills", "skill")


def _skills_parsers(commands: Any, common: argparse.ArgumentParser) -> None:
    sub = commands.add_parser("skills", parents=[common], help="list the skills of every server, or of one")
    sub.add_argument("server", nargs="?", metavar="SERVER", help="a server name or an http(s) URL")
    sub = commands.add_parser("skill", parents=[common], help="show one skill's SKILL.md, verified",
                              description="NAME is a skill's name or its SKILL.md URI; with '-- COMMAND...' "
                                          "leave SERVER out.")
    sub.add_argument("words", nargs="+", metavar="SERVER NAME")


def _skill_positionals(args: argparse.Namespace, target: List[str]) -> Tuple[Optional[str], Optional[str], Any]:
    """``(server, skill name, None)`` for ``skills [SERVER]`` and ``skill SERVER NAME``."""
    if args.command == "skills":
        if target and args.server:
            raise UsageError(f"give either a SERVER ({args.server!r}) or '-- COMMAND...', not both")
        return args.server, None, None
    words = list(args.words)
    if len(words) != (1 if target else 2):
        raise UsageError("skill needs NAME after the server (SERVER NAME, or NAME -- COMMAND...)")
    return (None if target else words[0]), words[-1], None


def _skills(manager: Any, wanted: Optional[str], args: argparse.Namespace) -> int:
    """List skills (servers that do not declare the extension are skipped unless named) or show one."""
    if args.command == "skill":
        assert wanted is not None
        loaded = manager.client(wanted, timeout=args.timeout).load_skill(args.words[-1], timeout=args.timeout)
        skill = loaded.skill
        if args.json:
            _print_json({"server": wanted, "skill": skill.to_dict(), "verified": loaded.content.verified,
                         "text": loaded.text})
            return EXIT_OK
        state = "verified: size, digest and frontmatter" if loaded.content.verified else "NOT verified (dynamic)"
        print(f"{skill.name}  {skill.uri}  ({wanted}; {state})")
        for file in skill.files:
            print(f"  {file.uri}  {file.size} bytes")
        print()
        print(loaded.text, end="" if loaded.text.endswith("\n") else "\n")
        return EXIT_OK
    rows: List[Dict[str, Any]] = []
    for name in [wanted] if wanted is not None else manager.servers:
        try:
            client = manager.client(name, timeout=0)
            rows.extend({"server": name, **skill.to_dict()} for skill in client.list_skills(timeout=args.timeout))
        except CapabilityError:
            if wanted is not None:
                raise
        except MCPSyncError as exc:
            if wanted is not None:
                raise
            _warn(_first_line(exc))
    if args.json:
        _print_json(rows)
        return EXIT_OK
    _print_table(("SERVER", "SKILL", "URI", "FILES", "DESCRIPTION"), [
        (r["server"], str((r.get("frontmatter") or {}).get("name", "")), str(r.get("uri", "")),
         str(len(r["resources"])) if isinstance(r.get("resources"), list) else str(r.get("resources", "?")),
         _first_line((r.get("frontmatter") or {}).get("description") or "")) for r in rows])
    return EXIT_OK


class _OneLine(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return f"mcpsync: warning: {_SECRETS.scrub(_first_line(record.getMessage()))}"


class _Scrubbed(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return _SECRETS.scrub(super().format(record))


def _configure_logging(debug: bool) -> None:
    root = logging.getLogger("mcpsync")
    handler = logging.StreamHandler(sys.stderr)
    if debug:
        handler.setFormatter(_Scrubbed("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        root.setLevel(logging.DEBUG)
        root.addHandler(handler)
        return
    # Without --debug only skipped config files and cache trouble are worth a line;
    # server failures are reported by the commands themselves.
    handler.setFormatter(_OneLine())
    handler.setLevel(logging.WARNING)
    for name in ("mcpsync.config", "mcpsync.cache"):
        logging.getLogger(name).addHandler(handler)
