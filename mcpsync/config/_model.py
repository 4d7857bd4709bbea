"""The config values: one server's :class:`ServerConfig`, the :class:`Config` of many, and the
records of what discovery read (:class:`ConfigSource`) and skipped (:class:`ConfigProblem`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, Iterable, List, Mapping, NamedTuple, Optional, Tuple, Union
from urllib.parse import urlsplit

from .._log import getLogger
from ..exceptions import ConfigError

log = getLogger("mcpsync.config")

from .._protocol.transports import HTTP as HTTP
from .._protocol.transports import SSE as SSE
from .._protocol.transports import STDIO as STDIO


def display_url(url: str) -> str:
    """``url`` as reprs, logs and error texts may show it: without userinfo, query or fragment.

    A query (``?key=...``) or userinfo (``user:pass@``) often holds a credential, so
    either is replaced by ``...``; scheme, host, port and path stay. A text that
    does not parse as a URL is shown only by its length.
    """
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return f"<unparsable URL, {len(url)} characters>"
    host = parts.hostname or ""
    if port is not None:
        host = f"{host}:{port}"
    if parts.username is not None or parts.password is not None:
        host = f"...@{host}"
    shown = f"{parts.scheme}://{host}{parts.path}" if parts.scheme or host else parts.path
    if parts.query:
        shown += "?..."
    if parts.fragment:
        shown += "#..."
    return shown


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
        trusted: False for an entry of a project file the user has not trusted: it was
            read without expanding its variables (its fields are as written), and it is
            never started (:meth:`transport_config` refuses it).
        enabled_tools: glob patterns (``fnmatch``, case-sensitive) of the tools a manager
            offers; None offers every tool. ``disabled_tools``: patterns of tools it hides
            (applied after ``enabled_tools``). Read from ``enabled_tools``/``disabled_tools``
            (Codex), ``includeTools``/``excludeTools`` (Gemini CLI) and their camelCase forms.
        startup_timeout: seconds one connection attempt (spawn, handshake, first tool list)
            may take, or None for ``timeout``. ``tool_timeout``: the default seconds of a
            tool call through a manager, or None for ``timeout``.
        required: a manager's :meth:`~mcpsync.Manager.connect_all` fails when this server
            does not connect.
        max_output: the byte cap on a tool result through a manager (the rest is written to
            a file: see docs/config.md), or None for no cap.
        telemetry: False turns off this server's OpenTelemetry spans and durations through a
            manager (the ``Client(telemetry=False)`` of its connections; see docs/telemetry.md).
        rate_limit: at most this many tool calls a second through a manager, or None.
            ``max_concurrency``: at most this many tool calls in flight at once, or None. Calls
            beyond either wait for their turn within their timeout (docs/scale.md).

    ``repr()`` never shows an expanded secret: env and header values are left out
    (their keys are shown), ``args`` are shown as written in the file (a
    ``${TOKEN}`` stays ``${TOKEN}``), and a URL without its userinfo and query.
    """

    __slots__ = ("name", "type", "command", "args", "env", "cwd", "url", "headers", "timeout", "enabled",
                 "source", "raw", "type_declared", "trusted", "enabled_tools", "disabled_tools", "startup_timeout",
                 "tool_timeout", "required", "max_output", "telemetry", "rate_limit", "max_concurrency")

    def __init__(self, name: str, type: str = STDIO, *, command: Optional[str] = None,
                 args: Iterable[str] = (), env: Optional[Mapping[str, str]] = None, cwd: Optional[str] = None,
                 url: Optional[str] = None, headers: Optional[Mapping[str, str]] = None,
                 timeout: Optional[float] = None, enabled: bool = True, source: str = "<dict>",
                 raw: Optional[Mapping[str, Any]] = None, type_declared: bool = True,
                 trusted: bool = True, enabled_tools: Optional[Iterable[str]] = None,
                 disabled_tools: Iterable[str] = (), startup_timeout: Optional[float] = None,
                 tool_timeout: Optional[float] = None, required: bool = False,
                 max_output: Optional[int] = None, telemetry: bool = True,
                 rate_limit: Optional[float] = None, max_concurrency: Optional[int] = None) -> None:
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
        self.trusted = trusted
        self.enabled_tools: Optional[Tuple[str, ...]] = tuple(enabled_tools) if enabled_tools is not None else None
        self.disabled_tools: Tuple[str, ...] = tuple(disabled_tools)
        self.startup_timeout = startup_timeout
        self.tool_timeout = tool_timeout
        self.required = required
        self.max_output = max_output
        self.telemetry = telemetry
        self.rate_limit = rate_limit
        self.max_concurrency = max_concurrency
        self.raw: Dict[str, Any] = dict(raw) if raw is not None else self._as_dict()

    def __repr__(self) -> str:
        # Env and header values are often secrets: show their keys only. Arguments are shown as
        # written (before ${VAR} expansion) and URLs without query or userinfo, for the same reason.
        if self.type == STDIO:
            where = f"command={self.command!r}, args={self.written_args()!r}"
        else:
            where = f"url={display_url(self.url or '')!r}"
        extra = ""
        if self.env:
            extra += f", env_keys={sorted(self.env)!r}"
        if self.headers:
            extra += f", header_keys={sorted(self.headers)!r}"
        state = ("" if self.enabled else ", enabled=False") + ("" if self.trusted else ", trusted=False")
        return f"ServerConfig({self.name!r}, {self.type!r}, {where}{extra}{state}, source={self.source!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ServerConfig):
            return NotImplemented
        return all(getattr(self, slot) == getattr(other, slot) for slot in self.__slots__)

    __hash__ = None  # type: ignore[assignment]  # mutable-looking fields; never used as a key

    def written_args(self) -> List[str]:
        """The arguments as the entry writes them, before ``${VAR}`` expansion (safe to show).

        When the entry as written cannot be matched to the arguments one by one, each
        argument is shown as ``"..."``.
        """
        command, args = self.raw.get("command"), self.raw.get("args")
        written: List[Any] = list(command[1:]) if isinstance(command, list) else []
        written += list(args) if isinstance(args, list) else []
        if len(written) != len(self.args):
            return ["..."] * len(self.args)
        return [str(arg) for arg in written]

    def transport_config(self) -> Dict[str, Any]:
        """The dict :func:`mcpsync.create_transport` takes for this server (values expanded).

        Raises:
            ConfigError: the entry comes from a project file that is not trusted.
        """
        if not self.trusted:
            raise ConfigError(untrusted_reason(self.name, self.source), server=self.name, path=self.source)
        return self._as_dict()

    def _as_dict(self) -> Dict[str, Any]:
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


def untrusted_reason(name: str, source: str) -> str:
    """Why a server of an untrusted project file is not started, and what to do about it."""
    return (f'server "{name}" not started: {source} is a project file you have not trusted (review it, then '
            "answer mcpsync's question on a terminal, or pass --trust-project / trust_project=True)")


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
        untrusted: the project files whose servers were read but not trusted (so not
            expanded, and never started): see :func:`mcpsync.config.trust_project_file`.
    """

    def __init__(self) -> None:
        self.servers: Dict[str, ServerConfig] = {}
        self.errors: Dict[str, ConfigError] = {}
        self.problems: List[ConfigProblem] = []
        self.files: List[str] = []
        self.untrusted: List[str] = []

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

    def replace(self, name: str, server: Union[ServerConfig, ConfigError]) -> None:
        """Put ``server`` (or its error) in place of the definition of ``name`` (kept in its place if valid)."""
        if isinstance(server, ServerConfig):
            self.errors.pop(name, None)
            self.servers[name] = server
        else:
            self.servers.pop(name, None)
            self.errors[name] = server

    def merge(self, other: "Config") -> None:
        """Add ``other``'s servers, errors, problems and files after this one's (first wins)."""
        for name, server in other.servers.items():
            self.add(server, name)
        for name, error in other.errors.items():
            self.add(error, name)
        self.problems.extend(other.problems)
        self.files.extend(f for f in other.files if f not in self.files)
        self.untrusted.extend(f for f in other.untrusted if f not in self.untrusted)

    def problem(self, path: str, reason: str) -> None:
        """Record (and log) a skipped file."""
        log.warning("Skipping MCP config %s: %s", path, reason)
        self.problems.append(ConfigProblem(path, reason))

