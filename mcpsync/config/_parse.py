"""One ``mcpServers`` entry, or one whole config dict, to validated values: the other tools'
spellings, the checks with their error texts, and ``${VAR}`` expansion."""

from __future__ import annotations

import os
import re
import stat
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

from .._log import getLogger
from .._protocol.transports import TYPE_NAMES
from ..exceptions import ConfigError
from ._model import HTTP, SSE, STDIO, Config, ServerConfig, display_url

log = getLogger("mcpsync.config")

_TYPES = TYPE_NAMES  # the transport type names and their spellings: one table
_NAME = re.compile(r"[\w.@/:+-](?:[\w .@/:+-]{0,98}[\w.@/:+-])?")
_VARIABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off"}
# An HTTP header name is a "token" (RFC 9110); a value may hold no control character but a tab.
_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
_CONTROL_NAMES = {"\r": "a carriage return (\\r)", "\n": "a line feed (\\n)", "\x00": "a NUL byte"}


# -- ${VAR} expansion ---------------------------------------------------------------------

#: Variables every file may use besides the environment (Cursor's and VS Code's names).
_BUILTINS = {"userHome": lambda: os.path.expanduser("~"), "pathSeparator": lambda: os.sep, "/": lambda: os.sep}


def expand(text: str, environ: Optional[Mapping[str, str]] = None,
           extra: Optional[Mapping[str, str]] = None, *, where: str = "") -> str:
    """Expand ``${VAR}``, ``${VAR:-default}`` and ``${env:VAR}`` in ``text``.

    ``${VAR:-default}`` gives ``default`` when VAR is unset or empty; the default may
    itself hold variables (``${A:-${B:-x}}``). ``${userHome}``, ``${pathSeparator}``
    and ``${/}`` (Cursor's and VS Code's names) are always known; ``extra`` holds
    other variables that are not environment variables (``workspaceFolder``);
    ``where`` names the field for error messages.

    Raises:
        ConfigError: a variable without a default is unset, or the ``${...}`` form is
            not one of the above (``${input:...}`` from VS Code, say).
    """
    source = os.environ if environ is None else environ
    place = f" in {where}" if where else ""
    out: List[str] = []
    start = 0
    while True:
        found = text.find("${", start)
        if found < 0:
            out.append(text[start:])
            return "".join(out)
        end = _closing(text, found + 2)
        if end < 0:  # a "${" never closed is text, as the other tools leave it
            out.append(text[start:])
            return "".join(out)
        out.append(text[start:found])
        out.append(_variable(text[found + 2:end], source, extra, place, where))
        start = end + 1


def _closing(text: str, index: int) -> int:
    """The index of the ``}`` that closes the ``${`` opened just before ``index`` (-1: none)."""
    depth = 0
    while index < len(text):
        if text.startswith("${", index):
            depth += 1
            index += 2
            continue
        if text[index] == "}":
            if depth == 0:
                return index
            depth -= 1
        index += 1
    return -1


def _variable(body: str, source: Mapping[str, str], extra: Optional[Mapping[str, str]], place: str,
              where: str) -> str:
    name, has_default, default = body.partition(":-")
    if name.startswith("env:"):
        name = name[4:]
    if name not in _BUILTINS and not _VARIABLE_NAME.fullmatch(name):
        raise ConfigError(f"unsupported variable ${{{body}}}{place} (use ${{NAME}} or ${{NAME:-default}})")
    value = _lookup(name, source, extra)
    if value is None or (has_default and value == ""):
        if has_default:
            return expand(default, source, extra, where=where)
        raise ConfigError(f"unset variable ${{{name}}}{place} (set it, or give a default: ${{{name}:-value}})")
    return value


def _lookup(name: str, source: Mapping[str, str], extra: Optional[Mapping[str, str]]) -> Optional[str]:
    """A variable's value: ``extra`` first, then a builtin or the environment (None: unset)."""
    value = extra.get(name) if extra else None
    if value is not None:
        return value
    builtin = _BUILTINS.get(name)
    return source.get(name) if builtin is None else builtin()


# -- one entry ------------------------------------------------------------------------------


def valid_name(text: str) -> str:
    """``text`` made a valid server name, for a name the user never chose (derived from a command).

    Each character a name may not hold becomes ``_``; the result is cut to the 100 characters a
    name may have and never starts or ends with a space; ``"server"`` when nothing is left.
    A name that is already valid comes back unchanged.
    """
    cleaned = re.sub(r"[^\w .@/:+-]", "_", text)[:100].strip(" ")
    return cleaned if _NAME.fullmatch(cleaned) else "server"


def parse_server(name: str, entry: Any, *, source: str = "<dict>", format: str = "mcpServers",
                 environ: Optional[Mapping[str, str]] = None, base_dir: Optional[str] = None,
                 extra: Optional[Mapping[str, str]] = None, trusted: bool = True,
                 env_files: Optional[Mapping[str, Optional[bytes]]] = None) -> ServerConfig:
    """Validate one ``mcpServers`` entry and expand its variables.

    ``format`` adjusts the few fields other tools spell differently (Gemini's
    ``url`` means legacy SSE and its ``httpUrl`` Streamable HTTP). A relative
    ``cwd`` is taken relative to ``base_dir`` (the config file's folder).
    ``trusted=False`` (an entry of a project file the user has not trusted)
    expands nothing: the environment is never read, the fields stay as written,
    and the result has ``trusted=False`` so it is never started. ``env_files``
    (absolute path -> bytes, None: unreadable) holds ``envFile`` contents already read
    (and hashed into the trust record): those bytes are used, not the file read again.

    Raises:
        ConfigError: the name or entry is invalid, or a variable is unset; the
            text starts ``server "<name>": ``.
    """
    try:
        server = _parse_entry(name, entry, source, format, environ if trusted else {}, base_dir, extra, trusted,
                              env_files)
    except ConfigError as exc:
        raise ConfigError(f'server "{name}": {exc}', server=name, path=source) from None
    server.trusted = trusted
    return server


def _parse_entry(name: str, entry: Any, source: str, format: str, environ: Optional[Mapping[str, str]],
                 base_dir: Optional[str], extra: Optional[Mapping[str, str]], expand_all: bool,
                 env_files: Optional[Mapping[str, Optional[bytes]]] = None) -> ServerConfig:
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ConfigError(f"invalid server name {name!r}: use 1-100 letters, digits, spaces and _ . - @ / : +")
    if not isinstance(entry, dict):
        raise ConfigError(f"the entry must be an object, not {_json_type(entry)}")
    fields = _normalise(entry, format, os.environ if environ is None else environ)
    enabled = _flag(fields, "enabled", True) and not _flag(fields, "disabled", False)
    kind = _server_type(fields)
    if not enabled:  # a disabled entry is not expanded, so its unset variables do not matter
        return ServerConfig(name, kind, enabled=False, source=source, raw=entry)
    expander = _Expander(environ, extra, expand_all)
    common: Dict[str, Any] = {"timeout": _timeout(fields.get("timeout")), "source": source, "raw": entry,
                              **_policy_keys(fields)}
    if kind == STDIO:
        return _stdio_entry(name, fields, expander, base_dir, env_files, common)
    return _url_entry(name, kind, fields, expander, common)


class _Expander:
    """Expands one entry's fields (trusted), or leaves them as written (an untrusted project file)."""

    def __init__(self, environ: Optional[Mapping[str, str]], extra: Optional[Mapping[str, str]],
                 expand_all: bool) -> None:
        self.environ, self.extra, self.expand_all = environ, extra, expand_all

    def __call__(self, value: str, where: str) -> str:
        return expand(value, self.environ, self.extra, where=where) if self.expand_all else value


def _stdio_entry(name: str, fields: Dict[str, Any], text: _Expander, base_dir: Optional[str],
                 env_files: Optional[Mapping[str, Optional[bytes]]], common: Dict[str, Any]) -> ServerConfig:
    command, args = _command(fields)
    env = {key: text(value, f"env.{key}") for key, value in _string_map(fields, "env").items()}
    if fields.get("envFile") is not None and text.expand_all:  # VS Code, Cursor; "env" wins over the file
        env = {**_env_file(text(_text_field(fields, "envFile"), "envFile"), base_dir, env_files), **env}
    return ServerConfig(
        name, STDIO, command=text(command, "command"),
        args=[text(arg, f"args[{i}]") for i, arg in enumerate(args)],
        env=env, cwd=_cwd(fields.get("cwd"), text, base_dir), **common,
    )


def _cwd(cwd: Any, text: _Expander, base_dir: Optional[str]) -> Optional[str]:
    """The working folder: expanded, ``~`` resolved and relative to ``base_dir`` (untrusted: as written)."""
    if cwd is None:
        return None
    if not isinstance(cwd, str) or not cwd:
        raise ConfigError('"cwd" must be a non-empty string')
    if not text.expand_all:
        return cwd
    return env_file_path(text(cwd, "cwd"), base_dir)


def _url_entry(name: str, kind: str, fields: Dict[str, Any], text: _Expander,
               common: Dict[str, Any]) -> ServerConfig:
    url = fields.get("url")
    if not isinstance(url, str) or not url:
        raise ConfigError(f'missing "url" (a {kind} server needs the endpoint URL)')
    written_url = url
    url = text(url, "url")
    if not url.startswith(("http://", "https://")) and (text.expand_all or not url.startswith("${")):
        # Shown as written and without its query: the expanded URL may hold a secret.
        raise ConfigError(f"url {display_url(written_url)!r} is not an http:// or https:// URL")
    _check_no_control(url, "url")
    headers = {key: text(value, f"headers.{key}") for key, value in _string_map(fields, "headers").items()}
    for key, value in headers.items():
        _check_header(key, value)
    declared = "type" in fields or "transport" in fields
    return ServerConfig(name, kind, url=url, headers=headers, type_declared=declared, **common)


def _text_field(fields: Dict[str, Any], key: str) -> str:
    value = fields.get(key)
    if not isinstance(value, str) or not value:
        raise ConfigError(f'"{key}" must be a non-empty string, not {_json_type(value)}')
    return value


#: The largest ``envFile`` of a project file read (a dotenv file is a few lines; a FIFO or
#: /dev/zero never ends). The user's own config files' envFiles are read as they are.
ENV_FILE_LIMIT = 1024 * 1024


def env_file_path(path: str, base_dir: Optional[str]) -> str:
    """Where an ``envFile`` value points: ``~`` expanded, relative to ``base_dir`` (the config file's folder)."""
    path = os.path.expanduser(path)
    if base_dir is not None and not os.path.isabs(path):
        path = os.path.normpath(os.path.join(base_dir, path))
    return path


def read_env_file(path: str) -> Optional[bytes]:
    """The bytes of a regular file of at most :data:`ENV_FILE_LIMIT` bytes; None when it is
    missing, unreadable, not a regular file or larger (it is never waited on: no FIFO blocks)."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):  # a device is never even opened
            return None
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
                     | getattr(os, "O_CLOEXEC", 0))
    except (OSError, ValueError):
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks: List[bytes] = []
        size = 0
        while size <= ENV_FILE_LIMIT:
            chunk = os.read(fd, 65536)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
            size += len(chunk)
        return None
    except OSError:
        return None
    finally:
        os.close(fd)


def env_file_paths(data: Any, *, format: str = "mcpServers", environ: Optional[Mapping[str, str]] = None,
                   base_dir: Optional[str] = None, extra: Optional[Mapping[str, str]] = None) -> List[str]:
    """The absolute path of every ``envFile`` the enabled entries of a config dict name, expanded as a
    trusted read would expand it (entries that do not parse, or whose path does not expand, name none).

    What the trust record hashes besides the file: these files' bytes fill variables too.
    """
    environ = os.environ if environ is None else environ
    try:
        servers = _servers_map(data, format, "<trust>")
    except ConfigError:
        return []
    found: List[str] = []
    for entry in servers.values():
        if not isinstance(entry, dict):
            continue
        try:
            fields = _normalise(entry, format, environ)
            if not (_flag(fields, "enabled", True) and not _flag(fields, "disabled", False)):
                continue
            if fields.get("envFile") is None:
                continue
            written = _text_field(fields, "envFile")
            path = env_file_path(expand(written, environ, extra, where="envFile"), base_dir)
        except ConfigError:
            continue
        if path not in found:
            found.append(path)
    return found


def _env_file(path: str, base_dir: Optional[str],
              env_files: Optional[Mapping[str, Optional[bytes]]] = None) -> Dict[str, str]:
    """The ``KEY=VALUE`` lines of a dotenv file (``#`` comments, ``export``, quotes); values are not expanded."""
    path = env_file_path(path, base_dir)
    try:
        lines = _env_file_bytes(path, env_files).decode("utf-8-sig").splitlines()
    except UnicodeDecodeError:
        raise ConfigError(f'"envFile" {path}: not UTF-8 text') from None
    found: Dict[str, str] = {}
    for number, line in enumerate(lines, 1):
        pair = _dotenv_line(line, path, number)
        if pair is not None:
            found[pair[0]] = pair[1]
    return found


def _env_file_bytes(path: str, env_files: Optional[Mapping[str, Optional[bytes]]]) -> bytes:
    """A project file's envFile: the bytes hashed into its trust; the user's own: read as it is now."""
    if env_files is not None and path in env_files:
        data = env_files[path]
        if data is None:
            raise ConfigError(f'"envFile" {path}: cannot read it (missing, unreadable, not a regular file, '
                              f"or over {ENV_FILE_LIMIT} bytes)")
        return data
    try:  # a FIFO a secret manager serves included
        with open(path, "rb") as stream:
            return stream.read()
    except OSError as exc:
        raise ConfigError(f'"envFile" {path}: cannot read it ({getattr(exc, "strerror", None) or exc})') from None


def _dotenv_line(line: str, path: str, number: int) -> Optional[Tuple[str, str]]:
    """One dotenv line's (name, value); None for a blank line or a comment."""
    line = line.strip()
    if not line or line.startswith("#"):
        return None
    if line.startswith("export "):
        line = line[7:].lstrip()
    name, equals, value = line.partition("=")
    name, value = name.strip(), value.strip()
    if not equals or not _VARIABLE_NAME.fullmatch(name):
        raise ConfigError(f'"envFile" {path}, line {number}: expected NAME=VALUE (the value is not shown)')
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return name, value[1:-1]
    if " #" in value:
        return name, value.split(" #", 1)[0].rstrip()
    return name, value


def _check_header(name: str, value: str) -> None:
    """Refuse a header ``requests`` would refuse at send time, naming the header, never its value."""
    if not _HEADER_NAME.fullmatch(name):
        raise ConfigError(f"header name {name!r} is not a valid HTTP header name (use letters, digits and "
                          "!#$%&'*+-.^_`|~, no spaces or colons)")
    _check_no_control(value, f'header "{name}"')
    if value[:1].isspace():
        raise ConfigError(f'header "{name}" starts with whitespace (the value is not shown); remove it')


def _check_no_control(value: str, what: str) -> None:
    bad = _CONTROL.search(value)
    if bad is None:
        return
    char = bad.group()
    kind = _CONTROL_NAMES.get(char, f"a control character (U+{ord(char):04X})")
    hint = (" (a variable read from a file with Windows line endings often ends in one: strip it)"
            if char in "\r\n" else "")
    at = " at its end" if bad.start() == len(value) - 1 else ""
    raise ConfigError(f"{what} has {kind}{at} in its value (the value is not shown); remove it{hint}")


# Other tools' names for our keys, each taken only when ours is absent: (theirs, ours).
_RENAMES = (("serverUrl", "url"),  # Windsurf
            ("environment", "env"))  # OpenCode
_TYPE_ALIASES = {"local": STDIO, "remote": HTTP}  # OpenCode


def _normalise(entry: Dict[str, Any], format: str, environ: Mapping[str, str]) -> Dict[str, Any]:
    """Map the spellings of other tools onto ours (the entry itself is left as written)."""
    fields = dict(entry)
    _gemini(fields, format)
    for theirs, ours in _RENAMES:
        if theirs in fields and ours not in fields:
            fields[ours] = fields.pop(theirs)
    if format == "codex":
        _codex(fields, environ)
    declared = fields.get("type")
    if isinstance(declared, str) and declared in _TYPE_ALIASES:
        fields["type"] = _TYPE_ALIASES[declared]
    return fields


def _gemini(fields: Dict[str, Any], format: str) -> None:
    """Gemini CLI's ``httpUrl`` is Streamable HTTP; in its own files, ``url`` is the legacy SSE endpoint."""
    if "httpUrl" in fields and "url" not in fields:
        fields["url"] = fields.pop("httpUrl")
        fields.setdefault("type", HTTP)
    elif format == "gemini" and "url" in fields:
        fields.setdefault("type", SSE)


def _codex(fields: Dict[str, Any], environ: Mapping[str, str]) -> None:
    """Codex's ``[mcp_servers.<name>]`` keys onto ours: its headers and the variables it forwards."""
    headers = _codex_headers(fields)
    if headers:
        fields.setdefault("headers", headers)
    if isinstance(fields.get("env_vars"), list):  # variables passed on from our environment when set
        fields["env"] = _codex_env(fields, environ)
    if "url" in fields and "command" not in fields:
        fields.setdefault("type", HTTP)  # Codex speaks Streamable HTTP only


def _codex_headers(fields: Dict[str, Any]) -> Dict[str, Any]:
    """Codex's fixed headers, its headers read from variables, and its bearer token's variable."""
    headers = dict(fields["http_headers"] or {}) if isinstance(fields.get("http_headers"), dict) else {}
    if isinstance(fields.get("env_http_headers"), dict):  # header -> the variable holding its value
        headers.update({str(k): f"${{{v}}}" for k, v in fields["env_http_headers"].items() if isinstance(v, str)})
    if isinstance(fields.get("bearer_token_env_var"), str):
        headers.setdefault("Authorization", f"Bearer ${{{fields['bearer_token_env_var']}}}")
    return headers


def _codex_env(fields: Dict[str, Any], environ: Mapping[str, str]) -> Dict[str, Any]:
    """The entry's ``env`` plus each ``env_vars`` name that is set in our environment, as a reference."""
    env = dict(fields["env"] or {}) if isinstance(fields.get("env"), dict) else {}
    for name in fields["env_vars"]:
        if isinstance(name, str) and _VARIABLE_NAME.fullmatch(name) and name in environ:
            env.setdefault(name, f"${{{name}}}")
    return env


_BOTH = 'both "command" and "url" are set; a server is either stdio (command) or http/sse (url)'


def _server_type(fields: Dict[str, Any]) -> str:
    declared = fields.get("type", fields.get("transport"))
    has_command, has_url = fields.get("command") is not None, fields.get("url") is not None
    if declared is None:
        return _implied_type(has_command, has_url)
    kind = _TYPES.get(declared) if isinstance(declared, str) else None
    if kind is None:
        raise ConfigError(f"unknown type {declared!r} (expected stdio, http, streamable-http or sse)")
    if kind != STDIO:
        if has_command:
            raise ConfigError(f'both "command" and "url" are set; a {kind} server takes only "url"')
        return kind
    if not has_command:
        raise ConfigError('missing "command" (a stdio server needs the program to run)')
    if has_url:
        raise ConfigError(_BOTH)
    return kind


def _implied_type(has_command: bool, has_url: bool) -> str:
    """The type of an entry that declares none: stdio for a command, Streamable HTTP for a URL."""
    if has_command and has_url:
        raise ConfigError(_BOTH)
    if has_url:
        return HTTP
    if not has_command:
        raise ConfigError('missing "command" (a stdio server needs the program to run) '
                          'or "url" (for an HTTP server)')
    return STDIO


def _command(fields: Dict[str, Any]) -> Tuple[str, List[str]]:
    command = fields.get("command")
    extra_args: List[Any] = []
    if isinstance(command, list):  # OpenCode writes the whole argv as "command"
        if not command:
            raise ConfigError('"command" is an empty list')
        command, extra_args = command[0], command[1:]
    if not isinstance(command, str) or not command.strip():
        raise ConfigError('"command" must be a non-empty string')
    args = fields.get("args", [])
    if args is None:
        args = []
    if not isinstance(args, list):
        raise ConfigError(f'"args" must be a list of strings, not {_json_type(args)}')
    out: List[str] = []
    for arg in extra_args + args:
        if isinstance(arg, bool) or not isinstance(arg, (str, int, float)):
            raise ConfigError(f'"args" must be a list of strings; found {_json_type(arg)}')
        out.append(str(arg))
    return command, out


def _string_map(fields: Dict[str, Any], key: str) -> Dict[str, str]:
    value = fields.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ConfigError(f'"{key}" must be an object of strings, not {_json_type(value)}')
    out: Dict[str, str] = {}
    for name, item in value.items():
        if isinstance(item, bool):
            out[str(name)] = "true" if item else "false"
        elif isinstance(item, (str, int, float)):
            out[str(name)] = str(item)
        else:
            raise ConfigError(f'"{key}.{name}" must be a string, not {_json_type(item)}')
    return out


def _timeout(value: Any) -> Optional[float]:
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            value = None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ConfigError('"timeout" must be a positive number of milliseconds')
    return float(value) / 1000.0


# Each key the manager reads beyond the transport, with the spellings other tools use for it
# (docs/config.md has the table): the first spelling present wins.
_TOOL_LISTS = {"enabled_tools": ("enabled_tools", "enabledTools", "includeTools"),
               "disabled_tools": ("disabled_tools", "disabledTools", "excludeTools")}
# (our key, its spellings in seconds, its spellings in milliseconds)
_SECONDS = (("startup_timeout", ("startup_timeout", "startup_timeout_sec"), ("startup_timeout_ms",)),
            ("tool_timeout", ("tool_timeout", "tool_timeout_sec"), ()))


def _whole_bytes(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, int) and value > 0


def _calls_per_second(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float)) and 0 < value < float("inf")


def _at_least_one(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, int) and value >= 1


# (our key, its spellings, the check a value must pass, what it must be, how it is stored)
_LIMITS: Tuple[Tuple[str, Tuple[str, ...], Callable[[Any], bool], str, Callable[[Any], Any]], ...] = (
    ("max_output", ("max_output", "maxOutput", "max_output_bytes"), _whole_bytes,
     "a positive whole number of bytes", int),
    ("rate_limit", ("rate_limit", "rateLimit"), _calls_per_second, "a positive number of calls per second", float),
    ("max_concurrency", ("max_concurrency", "maxConcurrency"), _at_least_one,
     "a whole number of calls of at least 1", int),
)


def _first_spelling(fields: Dict[str, Any], spellings: Tuple[str, ...]) -> Optional[str]:
    """The first of ``spellings`` the entry holds (None: none)."""
    return next((spelling for spelling in spellings if spelling in fields), None)


def _policy_keys(fields: Dict[str, Any]) -> Dict[str, Any]:
    """The manager's keys of one entry: tool filters, startup and tool timeouts, required, max_output,
    telemetry, rate_limit, max_concurrency."""
    keys: Dict[str, Any] = {}
    for key, spellings in _TOOL_LISTS.items():
        spelling = _first_spelling(fields, spellings)
        if spelling is not None:
            keys[key] = _patterns(fields[spelling], spelling)
    for key, seconds, millis in _SECONDS:
        spelling = _first_spelling(fields, seconds + millis)
        if spelling is not None:
            keys[key] = _seconds(fields[spelling], spelling, 1.0 if spelling in seconds else 1000.0)
    keys["required"] = _flag(fields, "required", False)
    keys["telemetry"] = _flag(fields, "telemetry", True)
    for key, names, valid, meaning, store in _LIMITS:
        spelling = _first_spelling(fields, names)
        if spelling is None:
            continue
        value = fields[spelling]
        if not valid(value):
            raise ConfigError(f'"{spelling}" must be {meaning}, not {value!r}')
        keys[key] = store(value)
    return keys


def _patterns(value: Any, key: str) -> List[str]:
    if isinstance(value, str):  # one pattern, or several separated by commas
        value = [part.strip() for part in value.split(",") if part.strip()]
    if not isinstance(value, list) or not all(isinstance(item, str) and item for item in value):
        raise ConfigError(f'"{key}" must be a list of tool names or glob patterns (like ["read_*"]), '
                          f"not {_json_type(value)}")
    return list(value)


def _seconds(value: Any, key: str, scale: float) -> float:
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            pass
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        unit = "seconds" if scale == 1.0 else "milliseconds"
        raise ConfigError(f'"{key}" must be a positive number of {unit}, not {value!r}')
    return float(value) / scale


def _flag(fields: Dict[str, Any], key: str, default: bool) -> bool:
    value = fields.get(key, default)
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in _TRUE | _FALSE:
        return value.lower() in _TRUE
    raise ConfigError(f'"{key}" must be true or false, not {value!r}')


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    return "an object" if isinstance(value, dict) else type(value).__name__


# -- whole files and dicts ------------------------------------------------------------------


def from_mapping(data: Mapping[str, Any], *, source: str = "<dict>", format: str = "mcpServers",
                 environ: Optional[Mapping[str, str]] = None, base_dir: Optional[str] = None,
                 extra: Optional[Mapping[str, str]] = None, trusted: bool = True,
                 env_files: Optional[Mapping[str, Optional[bytes]]] = None) -> Config:
    """Parse a config dict: ``{"mcpServers": {...}}``, ``{"servers": {...}}`` or a bare name map.

    ``trusted=False`` reads every entry without expanding it, and ``env_files`` gives
    ``envFile`` contents already read (see :func:`parse_server`).

    Raises:
        ConfigError: ``data`` is not shaped like a config (the servers map is not an object).
    """
    servers = _servers_map(data, format, source)
    config = Config()
    for name, entry in servers.items():
        try:
            config.add(parse_server(name, entry, source=source, format=format, environ=environ,
                                    base_dir=base_dir, extra=extra, trusted=trusted, env_files=env_files), name)
        except ConfigError as exc:
            log.warning("%s", exc)
            config.add(exc, name)
    return config


def _servers_map(data: Any, format: str, source: str) -> Dict[str, Any]:
    if not isinstance(data, Mapping):
        raise ConfigError(f"the top level must be an object, not {_json_type(data)}", path=source)
    if format == "vscode":
        keys: Tuple[str, ...] = ("servers", "mcpServers")
    elif format == "opencode":
        keys = ("mcp",)
    elif format == "codex":
        keys = ("mcp_servers",)
    else:
        keys = ("mcpServers", "servers")
    for key in keys:
        if key in data:
            servers = data[key]
            if not isinstance(servers, Mapping):
                raise ConfigError(f'"{key}" must be an object, not {_json_type(servers)}', path=source)
            return dict(servers)
    if format in ("mcpServers", "vscode") and source == "<dict>":
        return dict(data)  # a bare {"name": {...}} map given in code
    return {}

