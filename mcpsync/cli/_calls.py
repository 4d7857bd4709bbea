"""The ``mcpsync call``, ``read`` and ``prompt`` commands: what their words mean, which server they
go to, and what they print.

::

    mcpsync call SERVER TOOL ['{"arg": 1}']       # a tool of a named server
    mcpsync call everything_echo ['{"arg": 1}']   # a qualified name (mcp_ may be left out)
    mcpsync read [SERVER] URI                     # one resource (without SERVER: the server that lists it)
    mcpsync prompt [SERVER] NAME ['{"arg": "x"}'] # one prompt, rendered

Runs on the command's thread; each request blocks until the server answers or ``--timeout``.
"""

from __future__ import annotations

import argparse
import base64
import json
import sys
from typing import Any, Dict, List, NamedTuple, Optional

from .. import config as mcpconfig
from .._fleet.naming import PREFIX, _clean
from .._fleet.policy import check_tool, output_limit, tool_timeout
from .._terminal import shown
from ..exceptions import CapabilityError, ConfigError, MCPError, MCPSyncError, ResourceNotFound, UnknownToolError
from . import _output as out

CALL_USAGE = ("mcpsync call [options] SERVER TOOL [ARGUMENTS]\n"
              "       mcpsync call [options] QUALIFIED_TOOL [ARGUMENTS]     (as 'mcpsync tools' names it)\n"
              "       mcpsync call [options] TOOL [ARGUMENTS] -- COMMAND...")
READ_USAGE = "mcpsync read [options] [SERVER] URI  (or: URI -- COMMAND...)"
PROMPT_USAGE = "mcpsync prompt [options] [SERVER] NAME [ARGUMENTS]  (or: NAME [ARGUMENTS] -- COMMAND...)"


class Words(NamedTuple):
    """What a command's words say: the server (None: find it), the tool, URI or prompt, its arguments."""

    server: Optional[str]
    name: Optional[str]
    arguments: Any
    qualified: bool = False


def add_parsers(commands: Any, common: argparse.ArgumentParser) -> None:
    call = commands.add_parser("call", parents=[common], usage=CALL_USAGE, help="call a tool and print its result",
                               description="Call one tool. SERVER may be an http(s) URL; with '-- COMMAND...' "
                                           "leave it out. A qualified name (mcp_<server>_<tool>, the mcp_ may be "
                                           "left out) names the server and the tool at once.")
    call.add_argument("words", nargs="*", metavar="WORDS", help="SERVER TOOL, or QUALIFIED_TOOL; then ARGUMENTS, "
                                                                 "a JSON object ('-' reads it from stdin)")
    call.add_argument("--max-output", type=int, metavar="BYTES", default=None,
                      help="cut a larger result to its head and write the whole of it to a file (its path is "
                           "printed)")
    read = commands.add_parser("read", parents=[common], usage=READ_USAGE, help="read a resource and print it",
                               description="Read one resource. Without SERVER, the server that lists URI (or "
                                           "the only one that has it) is asked.")
    read.add_argument("words", nargs="*", metavar="WORDS", help="[SERVER] URI")
    prompt = commands.add_parser("prompt", parents=[common], usage=PROMPT_USAGE,
                                 help="render a prompt and print its messages",
                                 description="Render one prompt. Without SERVER, the server that lists NAME is "
                                             "asked. ARGUMENTS is a JSON object of strings.")
    prompt.add_argument("words", nargs="*", metavar="WORDS", help="[SERVER] NAME [ARGUMENTS]")


def _looks_like_arguments(word: str) -> bool:
    return word == "-" or word.lstrip().startswith("{")


def positionals(command: str, words: List[str], target: List[str]) -> Words:
    """Split a ``call``, ``read`` or ``prompt`` command's words (raises out.UsageError).

    No words at all is our usage error, not argparse's: its "required: WORDS" names a word the
    usage never shows. The usual cause is the tool (URI, prompt) put after ``-- COMMAND...``.
    """
    words = list(words)
    if not words:
        raise _no_words(command, target)
    if command == "read":
        return _read_words(words, target)
    if target:
        return _words_before_command(command, words)
    return _named_words(command, words)


def _no_words(command: str, target: List[str]) -> out.UsageError:
    """The usage error for a command given no words (the usual cause: them put after ``--``)."""
    what = {"call": "TOOL", "read": "URI", "prompt": "NAME"}[command]
    if target:
        return out.UsageError(f"{command}: the {what} goes before '--': mcpsync {command} {what} "
                              f"{'[ARGUMENTS] ' if command != 'read' else ''}-- COMMAND... (everything after "
                              f"'--' is the server's command line)")
    full = {"call": CALL_USAGE, "read": READ_USAGE, "prompt": PROMPT_USAGE}[command]
    return out.UsageError(f"{command}: {what} is missing; usage: {full}")


def _read_words(words: List[str], target: List[str]) -> Words:
    """``read [SERVER] URI``, or ``read URI -- COMMAND...``."""
    if target:
        if len(words) != 1:
            raise out.UsageError("read takes one URI before '-- COMMAND...'")
        return Words(None, words[0], None)
    if len(words) > 2:
        raise out.UsageError(f"usage: {READ_USAGE}")
    return Words(words[0] if len(words) == 2 else None, words[-1], None)


def _words_before_command(command: str, words: List[str]) -> Words:
    """``call TOOL [ARGUMENTS] -- COMMAND...`` (or ``prompt NAME ...``): the server is the command."""
    if len(words) > 2:
        raise out.UsageError(f"with '-- COMMAND...', {command} takes {'TOOL' if command == 'call' else 'NAME'} "
                             "[ARGUMENTS] only")
    return Words(None, words[0], arguments(words[1] if len(words) > 1 else None, command))


def _named_words(command: str, words: List[str]) -> Words:
    """``call [SERVER] TOOL [ARGUMENTS]`` (or ``prompt``): a second word that looks like JSON is the arguments."""
    if len(words) == 3:
        return Words(words[0], words[1], arguments(words[2], command))
    if len(words) == 2 and not _looks_like_arguments(words[1]):
        return Words(words[0], words[1], arguments(None, command))
    if len(words) > 3:
        usage = CALL_USAGE.splitlines()[0] if command == "call" else PROMPT_USAGE
        raise out.UsageError(f"too many words; usage: {usage}")
    # one name, maybe with arguments: a qualified tool name, or a prompt to find
    return Words(None, words[0], arguments(words[1] if len(words) > 1 else None, command), command == "call")


def arguments(text: Optional[str], command: str = "call") -> Dict[str, Any]:
    if text is None:
        return {}
    if text == "-":
        text = sys.stdin.read()
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise out.UsageError(f"ARGUMENTS is not valid JSON: {exc}") from None
    except RecursionError:
        raise out.UsageError("ARGUMENTS is nested too deeply to be tool arguments") from None
    if not isinstance(value, dict):
        raise out.UsageError("ARGUMENTS must be a JSON object, like '{\"text\": \"hi\"}'")
    if command == "prompt":
        return {str(key): item if isinstance(item, str) else json.dumps(item) for key, item in value.items()}
    return value


def servers_for(qualified: str, config: "mcpconfig.Config") -> List[str]:
    """The configured servers a qualified tool name may belong to (its ``mcp_<server>_`` prefix).

    Raises:
        out.UsageError: the name is a server's (its TOOL is missing).
        ConfigError: no configured server's qualified names start so.
    """
    if qualified in config:
        raise out.UsageError(f"{qualified!r} is a server: give its TOOL too (mcpsync call {qualified} TOOL "
                             "[ARGUMENTS])")
    name = qualified.lower()
    found = []
    for server in config.names:
        stem = f"{_clean(server)}_"
        if name.startswith(PREFIX + stem) or name.startswith(stem):
            found.append(server)
    if not found:
        raise ConfigError(f"no configured server has a tool named {qualified!r}: give SERVER TOOL, or a qualified "
                          f"name as 'mcpsync tools' shows it (mcp_<server>_<tool>; servers: {', '.join(config.names)})")
    return found


def run_call(manager: Any, words: Words, config: "mcpconfig.Config", args: argparse.Namespace) -> int:
    """Call the tool (by qualified name through the manager, or SERVER TOOL on the server's client)."""
    progress = out.Progress() if out.stderr_is_terminal() and not args.json else None
    on_progress = progress.show if progress is not None else None
    try:
        if words.qualified:
            result = _call_qualified(manager, words, config, args, on_progress)
        else:
            result = _call_on_server(manager, words, config, args, on_progress)
    finally:
        if progress is not None:
            progress.clear()
    return _show_result(result, args)


def _call_qualified(manager: Any, words: Words, config: "mcpconfig.Config", args: argparse.Namespace,
                    on_progress: Any) -> Any:
    """Call a tool by its qualified name, through the manager."""
    assert words.name is not None
    entry = _find_tool(manager, words.name)
    server_config = config.servers.get(entry.server)
    timeout = args.timeout if args.timeout_given else tool_timeout(server_config, args.timeout)
    return manager.call_tool(entry.qualified_name, words.arguments, timeout=timeout, on_progress=on_progress,
                             max_output=args.max_output)


def _call_on_server(manager: Any, words: Words, config: "mcpconfig.Config", args: argparse.Namespace,
                    on_progress: Any) -> Any:
    """Call SERVER's TOOL on the server's client (the config's tool filters checked first)."""
    assert words.server is not None and words.name is not None
    server_config = config.servers.get(words.server)
    check_tool(server_config, words.name)
    timeout = args.timeout if args.timeout_given else tool_timeout(server_config, args.timeout)
    client = manager.client(words.server, timeout=args.timeout)
    return client.call_tool(words.name, words.arguments, timeout=timeout, on_progress=on_progress,
                            max_output=output_limit(server_config, args.max_output))


def _show_result(result: Any, args: argparse.Namespace) -> int:
    """Print a tool result (and where a spilled one is); 1 when the tool reported an error."""
    spilled = getattr(result, "spill_path", None)
    if args.json:
        out.print_json({**result.to_dict(), **({"spill_path": spilled} if spilled else {})})
    else:
        out.print_result(result)
    if spilled:
        out.note(f"the result was {result.full_size:,} bytes; the whole of it is in {spilled}")
    if result.is_error:
        out.error("the tool reported an error")
        return out.EXIT_ERROR
    return out.EXIT_OK


def _find_tool(manager: Any, name: str) -> Any:
    """The ManagedTool a qualified name (``mcp_`` optional) names; a failed server's error if it is why not."""
    qualified = (name if name.lower().startswith(PREFIX) else PREFIX + name).lower()
    try:
        return manager.tool(qualified)
    except UnknownToolError as exc:
        if type(exc) is not UnknownToolError:
            raise  # ToolNotAllowed: the config filters it out
        for server in manager.servers:  # the first that did not connect says why
            status = manager.server_status(server)
            if status.state == "disabled":
                raise ConfigError(f'server "{server}" is disabled in {status.source}', server=server) from None
            try:
                manager.client(server, timeout=0)
            except MCPSyncError as failure:
                if isinstance(failure.__cause__, ConfigError):  # invalid or untrusted: a config matter (3)
                    raise failure.__cause__ from None
                raise
        raise


def _servers_offering(manager: Any, kind: str, names: List[str], timeout: float) -> List[Any]:
    """(name, client) of each named server that is connected and offers ``kind``."""
    found = []
    for name in names:
        try:
            client = manager.client(name, timeout=0)
        except Exception as exc:  # a failed server: said once, then the others are asked
            out.warn(out.first_line(exc))
            continue
        if kind in client.server_capabilities:
            found.append((name, client))
    return found


def run_read(manager: Any, words: Words, args: argparse.Namespace) -> int:
    """Read one resource; without a server, from the one whose listing has the URI (else the first that has it)."""
    uri = words.name
    assert uri is not None
    if words.server is not None:
        result = manager.client(words.server, timeout=args.timeout).read_resource(uri, timeout=args.timeout)
    else:
        result = _read_anywhere(manager, uri, args)
    if args.json:
        out.print_json(result.to_dict())
        return out.EXIT_OK
    for item in result.to_dict().get("contents") or []:
        out.line(_content_text(item))
    return out.EXIT_OK


def _content_text(item: Dict[str, Any]) -> str:
    """A resource content's text; for a blob, what it is and its size."""
    if "text" in item:
        return str(item["text"])
    size = len(base64.b64decode(item.get("blob") or "", validate=False))
    return f"[{shown(item.get('mimeType') or 'binary')} blob, {size:,} bytes: use --json for its base64]"


def _read_anywhere(manager: Any, uri: str, args: argparse.Namespace) -> Any:
    """Read ``uri`` from the server whose listing has it; when none lists it, from the first that reads it."""
    offering = _servers_offering(manager, "resources", _started(manager), args.timeout)
    if not offering:
        raise CapabilityError("no connected server offers resources")
    listed = [(n, c) for n, c in offering if any(r.uri == uri for r in _quiet_list(c, "resources", args))]
    if listed:
        return listed[0][1].read_resource(uri, timeout=args.timeout)
    last: BaseException = ResourceNotFound(ResourceNotFound.CODE, "not found")
    for _name, client in offering:
        try:
            return client.read_resource(uri, timeout=args.timeout)
        except (ResourceNotFound, MCPError) as exc:
            last = exc
    raise ResourceNotFound(ResourceNotFound.CODE, f"no server has resource {uri!r} (asked "
                                                  f"{', '.join(n for n, _ in offering)}): {out.first_line(last)}")


def run_prompt(manager: Any, words: Words, args: argparse.Namespace) -> int:
    """Render one prompt; without a server, the one whose listing has the name (an error if several do)."""
    name = words.name
    assert name is not None
    server = words.server if words.server is not None else _prompt_server(manager, name, args)
    result = manager.client(server, timeout=args.timeout).get_prompt(name, words.arguments, timeout=args.timeout)
    if args.json:
        out.print_json(result.to_dict())
        return out.EXIT_OK
    data = result.to_dict()
    if data.get("description"):
        out.line(f"# {data['description']}")
    for message in data.get("messages") or []:
        out.line(_message_text(message))
    return out.EXIT_OK


def _prompt_server(manager: Any, name: str, args: argparse.Namespace) -> str:
    """The one connected server whose listing has the prompt ``name``."""
    offering = _servers_offering(manager, "prompts", _started(manager), args.timeout)
    having = [n for n, c in offering if any(p.name == name for p in _quiet_list(c, "prompts", args))]
    if not having:
        raise ConfigError(f"no connected server lists a prompt named {name!r} (see 'mcpsync prompts')")
    if len(having) > 1:
        raise ConfigError(f"prompt {name!r} is offered by {', '.join(having)}: give the SERVER too")
    return str(having[0])


def _message_text(message: Dict[str, Any]) -> str:
    """One prompt message as ``role: text`` (content that is not text shown as JSON)."""
    content = message.get("content") or {}
    is_text = isinstance(content, dict) and "text" in content
    text = str(content.get("text")) if is_text else out.json_text(content, None)
    return f"{shown(message.get('role', '?'))}: {text}"


def _started(manager: Any) -> List[str]:
    return [name for name, status in manager.status().items() if status.state not in ("untrusted", "disabled")]


def _quiet_list(client: Any, kind: str, args: argparse.Namespace) -> List[Any]:
    try:
        if kind == "resources":
            return list(client.list_resources(timeout=args.timeout))
        return list(client.list_prompts(timeout=args.timeout))
    except (MCPError, CapabilityError):
        return []
