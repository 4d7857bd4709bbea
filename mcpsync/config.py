"""Server configs: the ``mcpServers`` file formats, discovery, ``${VAR}`` expansion, validation.

::

    from mcpsync import config

    found = config.discover()                 # every known file, project first, then user
    for problem in found.problems:            # malformed files: reported and skipped
        print(problem)
    for name, server in found.servers.items():
        print(name, server.type, server.command or server.url)
    for name, error in found.errors.items():  # servers whose entry is invalid
        print(name, error)

Files are read fresh on every call (nothing is memoised), and a malformed file
never stops the others from being read. Nothing here starts a server; the
:class:`~mcpsync.Manager` does that.

Thread safety: every function may be called from any thread; a :class:`Config`
is not modified after it is returned.
"""

from __future__ import annotations

import json
import logging
import os
import re
import sys
from pathlib import Path
from typing import Any, Dict, Iterable, List, Mapping, NamedTuple, Optional, Tuple, Union

from .exceptions import ConfigError

__all__ = [
    "Config",
    "ConfigProblem",
    "ConfigSource",
    "ServerConfig",
    "discover",
    "discovery_sources",
    "expand",
    "load",
    "parse_server",
]

log = logging.getLogger("mcpsync.config")

PathLike = Union[str, "os.PathLike[str]"]

STDIO = "stdio"
HTTP = "http"
SSE = "sse"
_TYPES = {"stdio": STDIO, "http": HTTP, "streamable-http": HTTP, "streamableHttp": HTTP, "sse": SSE}
_NAME = re.compile(r"[\w.@/:+-](?:[\w .@/:+-]{0,98}[\w.@/:+-])?")
_VARIABLE = re.compile(r"\$\{([^}]*)\}")
_VARIABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off"}


class ServerConfig:
    """One server's validated, expanded config (an immutable value).

    Attributes:
        name: the server's name (the key in the ``mcpServers`` map).
        type: ``"stdio"``, ``"http"`` (Streamable HTTP) or ``"sse"`` (legacy HTTP+SSE).
        command, args, env, cwd: how to start a stdio server.
        url, headers: where an HTTP server is, and what to send it.
        timeout: the per-request timeout in seconds (the file says milliseconds), or None.
        enabled: False for entries marked ``"enabled": false`` or ``"disabled": true``.
        source: the file the entry came from (or ``"<dict>"``).
        type_declared: False for an entry with a ``url`` and no ``type`` (its transport may
            fall back from Streamable HTTP to legacy SSE).
        raw: the entry exactly as written, before ``${VAR}`` expansion (the tools cache
            key is a hash of it, so rotating a secret in the environment keeps the cache).
    """

    __slots__ = ("name", "type", "command", "args", "env", "cwd", "url", "headers", "timeout", "enabled",
                 "source", "raw", "type_declared")

    def __init__(self, name: str, type: str = STDIO, *, command: Optional[str] = None,
                 args: Iterable[str] = (), env: Optional[Mapping[str, str]] = None, cwd: Optional[str] = None,
                 url: Optional[str] = None, headers: Optional[Mapping[str, str]] = None,
                 timeout: Optional[float] = None, enabled: bool = True, source: str = "<dict>",
                 raw: Optional[Mapping[str, Any]] = None, type_declared: bool = True) -> None:
        self.name = name
        self.type = type
        self.command = command
        self.args: Tuple[str, ...] = tuple(args)
        self.env: Dict[str, str] = dict(env or {})
        self.cwd = cwd
        self.url = url
        self.headers: Dict[str, str] = dict(headers or {})
        self.timeout = timeout
        self.enabled = enabled
        self.source = source
        self.type_declared = type_declared
        self.raw: Dict[str, Any] = dict(raw) if raw is not None else self.transport_config()

    def __repr__(self) -> str:
        # Env and header values are often secrets: show their keys only.
        where = f"command={self.command!r}, args={list(self.args)!r}" if self.type == STDIO else f"url={self.url!r}"
        extra = ""
        if self.env:
            extra += f", env_keys={sorted(self.env)!r}"
        if self.headers:
            extra += f", header_keys={sorted(self.headers)!r}"
        state = "" if self.enabled else ", enabled=False"
        return f"ServerConfig({self.name!r}, {self.type!r}, {where}{extra}{state}, source={self.source!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ServerConfig):
            return NotImplemented
        return all(getattr(self, slot) == getattr(other, slot) for slot in self.__slots__)

    __hash__ = None  # type: ignore[assignment]  # mutable-looking fields; never used as a key

    def transport_config(self) -> Dict[str, Any]:
        """The dict :func:`mcpsync.create_transport` takes for this server (values expanded)."""
        if self.type == STDIO:
            config: Dict[str, Any] = {"type": STDIO, "command": self.command, "args": list(self.args)}
            if self.env:
                config["env"] = dict(self.env)
            if self.cwd is not None:
                config["cwd"] = self.cwd
            return config
        config = {"url": self.url, "headers": dict(self.headers)}
        if self.type_declared or self.type != HTTP:
            config["type"] = self.type
        # else: a bare "url" entry; the transport may fall back to legacy SSE, as clients do
        return config

    @property
    def config_hash(self) -> str:
        """SHA-256 (hex) of the unexpanded entry with sorted keys: the tools cache key."""
        import hashlib

        canonical = json.dumps(self.raw, sort_keys=True, separators=(",", ":"), default=str)
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class ConfigProblem(NamedTuple):
    """A config file that was skipped, and why."""

    path: str
    reason: str

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}"


class ConfigSource(NamedTuple):
    """A file discovery looks at: where, which level, which format."""

    path: Path
    level: str  # "project" or "user"
    format: str  # "mcpServers", "vscode", "gemini", "claude-user", "claude-local"
    description: str


class Config:
    """The servers found in one or more config files (first definition of a name wins).

    Attributes:
        servers: valid servers by name, in precedence order (disabled ones included,
            with ``enabled=False``).
        errors: servers whose entry is invalid, by name: a :class:`ConfigError` each.
        problems: files that were skipped (path and reason).
        files: the files that were read and contributed servers, in precedence order.
    """

    def __init__(self) -> None:
        self.servers: Dict[str, ServerConfig] = {}
        self.errors: Dict[str, ConfigError] = {}
        self.problems: List[ConfigProblem] = []
        self.files: List[str] = []

    def __repr__(self) -> str:
        return (f"<Config servers={list(self.servers)} errors={list(self.errors)} "
                f"problems={len(self.problems)}>")

    def __contains__(self, name: object) -> bool:
        return name in self.servers or name in self.errors

    @property
    def names(self) -> List[str]:
        """Every server name defined (valid or not), in precedence order."""
        return list(self.servers) + [n for n in self.errors if n not in self.servers]

    def add(self, server: Union[ServerConfig, ConfigError], name: str) -> bool:
        """Add one server (or its error) unless the name is already defined; True if added."""
        if name in self:
            log.debug("Server %r from %s is shadowed by an earlier definition", name,
                      server.source if isinstance(server, ServerConfig) else server.path)
            return False
        if isinstance(server, ServerConfig):
            self.servers[name] = server
        else:
            self.errors[name] = server
        return True

    def merge(self, other: "Config") -> None:
        """Add ``other``'s servers, errors, problems and files after this one's (first wins)."""
        for name, server in other.servers.items():
            self.add(server, name)
        for name, error in other.errors.items():
            self.add(error, name)
        self.problems.extend(other.problems)
        self.files.extend(f for f in other.files if f not in self.files)

    def problem(self, path: str, reason: str) -> None:
        """Record (and log) a skipped file."""
        log.warning("Skipping MCP config %s: %s", path, reason)
        self.problems.append(ConfigProblem(path, reason))


# -- ${VAR} expansion ---------------------------------------------------------------------


def expand(text: str, environ: Optional[Mapping[str, str]] = None,
           extra: Optional[Mapping[str, str]] = None, *, where: str = "") -> str:
    """Expand ``${VAR}``, ``${VAR:-default}`` and ``${env:VAR}`` in ``text``.

    ``${VAR:-default}`` gives ``default`` when VAR is unset or empty. ``extra``
    holds variables that are not environment variables (``workspaceFolder``);
    ``where`` names the field for error messages.

    Raises:
        ConfigError: a variable without a default is unset, or the ``${...}``
            form is not one of the above (``${input:...}`` from VS Code, say).
    """
    source = os.environ if environ is None else environ
    place = f" in {where}" if where else ""

    def replace(match: "re.Match[str]") -> str:
        body = match.group(1)
        name, has_default, default = body.partition(":-")
        if name.startswith("env:"):
            name = name[4:]
        if not _VARIABLE_NAME.fullmatch(name):
            raise ConfigError(f"unsupported variable ${{{body}}}{place} (use ${{NAME}} or ${{NAME:-default}})")
        value = extra.get(name) if extra else None
        if value is None:
            value = source.get(name)
        if value is None or (has_default and value == ""):
            if has_default:
                return default
            raise ConfigError(f"unset variable ${{{name}}}{place} (set it, or give a default: ${{{name}:-value}})")
        return value

    return _VARIABLE.sub(replace, text)


# -- one entry ------------------------------------------------------------------------------


def parse_server(name: str, entry: Any, *, source: str = "<dict>", format: str = "mcpServers",
                 environ: Optional[Mapping[str, str]] = None, base_dir: Optional[str] = None,
                 extra: Optional[Mapping[str, str]] = None) -> ServerConfig:
    """Validate one ``mcpServers`` entry and expand its variables.

    ``format`` adjusts the few fields other tools spell differently (Gemini's
    ``url`` means legacy SSE and its ``httpUrl`` Streamable HTTP). A relative
    ``cwd`` is taken relative to ``base_dir`` (the config file's folder).

    Raises:
        ConfigError: the name or entry is invalid, or a variable is unset; the
            text starts ``server "<name>": ``.
    """
    try:
        return _parse(name, entry, source, format, environ, base_dir, extra)
    except ConfigError as exc:
        raise ConfigError(f'server "{name}": {exc}', server=name, path=source) from None


def _parse(name: str, entry: Any, source: str, format: str, environ: Optional[Mapping[str, str]],
           base_dir: Optional[str], extra: Optional[Mapping[str, str]]) -> ServerConfig:
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ConfigError(f"invalid server name {name!r}: use 1-100 letters, digits, spaces and _ . - @ / : +")
    if not isinstance(entry, dict):
        raise ConfigError(f"the entry must be an object, not {_json_type(entry)}")
    fields = _normalise(entry, format)
    enabled = _flag(fields, "enabled", True) and not _flag(fields, "disabled", False)
    kind = _server_type(fields)
    if not enabled:  # a disabled entry is not expanded, so its unset variables do not matter
        return ServerConfig(name, kind, enabled=False, source=source, raw=entry)

    def text(value: str, where: str) -> str:
        return expand(value, environ, extra, where=where)

    timeout = _timeout(fields.get("timeout"))
    if kind == STDIO:
        command, args = _command(fields)
        env = {key: text(value, f"env.{key}") for key, value in _string_map(fields, "env").items()}
        cwd = fields.get("cwd")
        if cwd is not None:
            if not isinstance(cwd, str) or not cwd:
                raise ConfigError('"cwd" must be a non-empty string')
            cwd = os.path.expanduser(text(cwd, "cwd"))
            if base_dir is not None and not os.path.isabs(cwd):
                cwd = os.path.normpath(os.path.join(base_dir, cwd))
        return ServerConfig(
            name, STDIO, command=text(command, "command"),
            args=[text(arg, f"args[{i}]") for i, arg in enumerate(args)],
            env=env, cwd=cwd, timeout=timeout, source=source, raw=entry,
        )
    url = fields.get("url")
    if not isinstance(url, str) or not url:
        raise ConfigError(f'missing "url" (a {kind} server needs the endpoint URL)')
    url = text(url, "url")
    if not url.startswith(("http://", "https://")):
        raise ConfigError(f"url {url!r} is not an http:// or https:// URL")
    headers = {key: text(value, f"headers.{key}") for key, value in _string_map(fields, "headers").items()}
    declared = "type" in fields or "transport" in fields
    return ServerConfig(name, kind, url=url, headers=headers, timeout=timeout, source=source, raw=entry,
                        type_declared=declared)


def _normalise(entry: Dict[str, Any], format: str) -> Dict[str, Any]:
    """Map the spellings of other tools onto ours (the entry itself is left as written)."""
    fields = dict(entry)
    if "httpUrl" in fields and "url" not in fields:  # Gemini CLI: Streamable HTTP
        fields["url"] = fields.pop("httpUrl")
        fields.setdefault("type", HTTP)
    elif format == "gemini" and "url" in fields:  # Gemini CLI: "url" is the legacy SSE endpoint
        fields.setdefault("type", SSE)
    if "serverUrl" in fields and "url" not in fields:  # Windsurf
        fields["url"] = fields.pop("serverUrl")
    if "environment" in fields and "env" not in fields:  # OpenCode
        fields["env"] = fields.pop("environment")
    if fields.get("type") == "local":  # OpenCode
        fields["type"] = STDIO
    elif fields.get("type") == "remote":
        fields["type"] = HTTP
    return fields


def _server_type(fields: Dict[str, Any]) -> str:
    declared = fields.get("type", fields.get("transport"))
    has_command, has_url = fields.get("command") is not None, fields.get("url") is not None
    if declared is None:
        if has_command and has_url:
            raise ConfigError('both "command" and "url" are set; a server is either stdio (command) '
                              "or http/sse (url)")
        if has_url:
            return HTTP
        if not has_command:
            raise ConfigError('missing "command" (a stdio server needs the program to run) '
                              'or "url" (for an HTTP server)')
        return STDIO
    kind = _TYPES.get(declared) if isinstance(declared, str) else None
    if kind is None:
        raise ConfigError(f"unknown type {declared!r} (expected stdio, http, streamable-http or sse)")
    if kind == STDIO and not has_command:
        raise ConfigError('missing "command" (a stdio server needs the program to run)')
    if kind == STDIO and has_url:
        raise ConfigError('both "command" and "url" are set; a server is either stdio (command) '
                          "or http/sse (url)")
    if kind != STDIO and has_command:
        raise ConfigError(f'both "command" and "url" are set; a {kind} server takes only "url"')
    return kind


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
                 extra: Optional[Mapping[str, str]] = None) -> Config:
    """Parse a config dict: ``{"mcpServers": {...}}``, ``{"servers": {...}}`` or a bare name map.

    Raises:
        ConfigError: ``data`` is not shaped like a config (the servers map is not an object).
    """
    servers = _servers_map(data, format, source)
    config = Config()
    for name, entry in servers.items():
        try:
            config.add(parse_server(name, entry, source=source, format=format, environ=environ,
                                    base_dir=base_dir, extra=extra), name)
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


def load(source: Union[PathLike, Mapping[str, Any], Config], *,
         environ: Optional[Mapping[str, str]] = None) -> Config:
    """A :class:`Config` from a file path, a dict, or a Config (returned as is).

    A missing or malformed file is recorded in ``problems`` (and logged), not raised.
    """
    if isinstance(source, Config):
        return source
    if isinstance(source, Mapping):
        config = from_mapping(source, environ=environ)
        return config
    path = Path(os.fspath(source)).expanduser()
    config = Config()
    _read_into(config, path, "mcpServers", environ, cwd=None, missing_is_problem=True)
    if not config.problems and not config.names:
        config.problem(str(path), 'no "mcpServers" (or "servers") map found')
    return config


def discovery_sources(cwd: Optional[PathLike] = None) -> List[ConfigSource]:
    """The files :func:`discover` reads, highest precedence first.

    Project level (``cwd``) comes before user level; within a level, mcpsync's
    own file comes first. See the table in docs/manager.md.
    """
    project = Path(os.fspath(cwd)) if cwd is not None else Path.cwd()
    home = Path.home()
    config_dir = _user_config_dir(home)
    claude_json = home / ".claude.json"
    return [
        ConfigSource(project / ".mcpsync.json", "project", "mcpServers", "mcpsync (project)"),
        ConfigSource(claude_json, "project", "claude-local", "Claude Code (local scope)"),
        ConfigSource(project / ".mcp.json", "project", "mcpServers", "Claude Code (project scope)"),
        ConfigSource(project / ".cursor" / "mcp.json", "project", "mcpServers", "Cursor (project)"),
        ConfigSource(project / ".vscode" / "mcp.json", "project", "vscode", "VS Code (workspace)"),
        ConfigSource(project / ".gemini" / "settings.json", "project", "gemini", "Gemini CLI (project)"),
        ConfigSource(config_dir / "mcpsync" / "mcp.json", "user", "mcpServers", "mcpsync (user)"),
        ConfigSource(claude_json, "user", "claude-user", "Claude Code (user scope)"),
        ConfigSource(config_dir / "Claude" / "claude_desktop_config.json", "user", "mcpServers",
                     "Claude Desktop"),
        ConfigSource(home / ".cursor" / "mcp.json", "user", "mcpServers", "Cursor (user)"),
        ConfigSource(config_dir / "Code" / "User" / "mcp.json", "user", "vscode", "VS Code (user)"),
        ConfigSource(home / ".codeium" / "windsurf" / "mcp_config.json", "user", "mcpServers", "Windsurf"),
        ConfigSource(home / ".gemini" / "settings.json", "user", "gemini", "Gemini CLI (user)"),
    ]


def discover(cwd: Optional[PathLike] = None, *, project: bool = True, user: bool = True,
             environ: Optional[Mapping[str, str]] = None) -> Config:
    """Read every file of :func:`discovery_sources` that exists; the first definition of a name wins.

    ``project=False`` skips the project-level files, ``user=False`` the user-level
    ones. Files are read fresh on every call. A malformed file is recorded in
    ``problems`` and skipped; it never stops the other files from being read.
    """
    project_dir = Path(os.fspath(cwd)) if cwd is not None else Path.cwd()
    config = Config()
    for source in discovery_sources(project_dir):
        if (source.level == "project" and not project) or (source.level == "user" and not user):
            continue
        _read_into(config, source.path, source.format, environ, cwd=project_dir)
    return config


def _read_into(config: Config, path: Path, format: str, environ: Optional[Mapping[str, str]],
               cwd: Optional[Path], missing_is_problem: bool = False) -> None:
    shown = str(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        if missing_is_problem:
            config.problem(shown, "file not found")
        return
    except (OSError, UnicodeDecodeError) as exc:
        config.problem(shown, f"cannot read: {getattr(exc, 'strerror', None) or exc}")
        return
    try:
        data = _parse_json(text)
    except ValueError as exc:
        config.problem(shown, f"invalid JSON: {exc}")
        return
    if format in ("claude-local", "claude-user"):
        data = _claude_section(data, format, cwd)
        if data is None:
            return
        format = "mcpServers"
    extra = {"workspaceFolder": str(cwd)} if format == "vscode" and cwd is not None else None
    try:
        found = from_mapping(data, source=shown, format=format, environ=environ,
                             base_dir=str(path.parent), extra=extra)
    except ConfigError as exc:
        config.problem(shown, str(exc))
        return
    if found.servers or found.errors:
        found.files.append(shown)
    config.merge(found)


def _claude_section(data: Any, format: str, cwd: Optional[Path]) -> Optional[Dict[str, Any]]:
    """``~/.claude.json``: top-level ``mcpServers`` (user scope) or ``projects[<cwd>]`` (local scope)."""
    if not isinstance(data, dict):
        return None if format == "claude-local" else data
    if format == "claude-user":
        return {"mcpServers": data.get("mcpServers") or {}}
    projects = data.get("projects")
    if cwd is None or not isinstance(projects, dict):
        return None
    for key in {os.path.abspath(cwd), os.path.realpath(cwd)}:
        section = projects.get(key)
        if isinstance(section, dict) and section.get("mcpServers"):
            return {"mcpServers": section["mcpServers"]}
    return None


def _user_config_dir(home: Path) -> Path:
    if sys.platform == "win32":
        return Path(os.environ.get("APPDATA") or home / "AppData" / "Roaming")
    if sys.platform == "darwin":
        return home / "Library" / "Application Support"
    return Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config")


def _parse_json(text: str) -> Any:
    """JSON, or failing that JSON with comments and trailing commas (VS Code's JSONC)."""
    try:
        return json.loads(text)
    except ValueError as exc:
        first = exc
    try:
        return json.loads(_strip_jsonc(text))
    except ValueError:
        raise first from None


def _strip_jsonc(text: str) -> str:
    """Drop ``//`` and ``/* */`` comments and trailing commas outside strings."""
    out: List[str] = []
    i, n = 0, len(text)
    in_string = False
    while i < n:
        ch = text[i]
        if in_string:
            out.append(ch)
            if ch == "\\" and i + 1 < n:
                out.append(text[i + 1])
                i += 1
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
            out.append(ch)
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
            continue
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
            continue
        elif ch == ",":
            j = _skip_blank(text, i + 1)
            if j < n and text[j] in "}]":
                i += 1
                continue
            out.append(ch)
        else:
            out.append(ch)
        i += 1
    return "".join(out)


def _skip_blank(text: str, i: int) -> int:
    """The index of the next character that is neither whitespace nor inside a comment."""
    n = len(text)
    while i < n:
        if text[i] in " \t\r\n":
            i += 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
        else:
            break
    return i
