"""Config files: which ones :func:`discover` reads (and in what order), and reading one
file, whatever tool wrote it, into a :class:`Config` (:func:`load` for a named one).

Project files (those inside the directory discovery looks at) are read as untrusted
unless the user trusted them (:mod:`._trust`): their entries are listed, never expanded
or started, and never hide a user's server of the same name. What is trusted is what
fills the variables: the file's place (not the file a symlink points to), the project
directory, its bytes and the bytes of every ``envFile`` it names; the bytes hashed are
the bytes parsed.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any, Dict, List, Literal, Mapping, NamedTuple, Optional, Set, Tuple, Union

from ..exceptions import ConfigError
from . import _trust
from ._jsonc import parse_json
from ._model import Config, ConfigSource, log
from ._parse import env_file_paths, from_mapping, read_env_file

PathLike = Union[str, "os.PathLike[str]"]
#: How :func:`discover` treats project files not yet trusted: False leaves them untrusted, True
#: trusts them for this call (nothing is recorded), "ask" asks on a terminal (else as False).
TrustProject = Union[bool, Literal["ask"]]


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
    read = _read(config, path, missing_is_problem=True)
    if read is not None:
        _parse_into(config, read, path, "codex" if path.suffix == ".toml" else "mcpServers", environ, cwd=None,
                    trusted=True)
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
    config_dir = _trust.user_config_dir()
    claude_json = home / ".claude.json"
    codex_home = Path(os.environ["CODEX_HOME"]) if os.environ.get("CODEX_HOME") else home / ".codex"
    return [
        ConfigSource(project / ".mcpsync.json", "project", "mcpServers", "mcpsync (project)"),
        ConfigSource(claude_json, "project", "claude-local", "Claude Code (local scope)"),
        ConfigSource(project / ".mcp.json", "project", "mcpServers", "Claude Code (project scope)"),
        ConfigSource(project / ".cursor" / "mcp.json", "project", "mcpServers", "Cursor (project)"),
        ConfigSource(project / ".vscode" / "mcp.json", "project", "vscode", "VS Code (workspace)"),
        ConfigSource(project / ".gemini" / "settings.json", "project", "gemini", "Gemini CLI (project)"),
        ConfigSource(project / ".codex" / "config.toml", "project", "codex", "Codex (project)"),
        ConfigSource(config_dir / "mcpsync" / "mcp.json", "user", "mcpServers", "mcpsync (user)"),
        ConfigSource(claude_json, "user", "claude-user", "Claude Code (user scope)"),
        ConfigSource(config_dir / "Claude" / "claude_desktop_config.json", "user", "mcpServers",
                     "Claude Desktop"),
        ConfigSource(home / ".cursor" / "mcp.json", "user", "mcpServers", "Cursor (user)"),
        ConfigSource(config_dir / "Code" / "User" / "mcp.json", "user", "vscode", "VS Code (user)"),
        ConfigSource(home / ".codeium" / "windsurf" / "mcp_config.json", "user", "mcpServers", "Windsurf"),
        ConfigSource(home / ".gemini" / "settings.json", "user", "gemini", "Gemini CLI (user)"),
        ConfigSource(codex_home / "config.toml", "user", "codex", "Codex"),
    ]


def discover(cwd: Optional[PathLike] = None, *, project: bool = True, user: bool = True,
             environ: Optional[Mapping[str, str]] = None, trust_project: TrustProject = False) -> Config:
    """Read every file of :func:`discovery_sources` that exists; the first definition of a name wins.

    ``project=False`` skips the project-level files, ``user=False`` the user-level
    ones. Files are read fresh on every call. A malformed file is recorded in
    ``problems`` and skipped; it never stops the other files from being read.

    A file inside ``cwd`` (``.mcp.json``, ``.cursor/mcp.json`` ...) came with the
    project, so it is trusted only if the trust record has its path and its
    current content hash, or ``trust_project`` is True (this call only, nothing
    recorded), or ``trust_project="ask"`` and the user says yes on the terminal
    (recorded). An untrusted file's entries are read without expanding any
    variable, get ``trusted=False`` (never started) and never hide a user-level
    server of the same name; the file is listed in ``Config.untrusted`` and a
    warning says what to do. A trusted project entry that hides a user-level one
    is used, with a warning naming both files.
    """
    if trust_project not in (True, False, "ask"):
        raise ValueError(f"trust_project must be True, False or 'ask', not {trust_project!r}")
    project_dir = Path(os.fspath(cwd)) if cwd is not None else Path.cwd()
    sources = discovery_sources(project_dir)
    user_places, user_paths = _user_keys(sources)
    config = Config()
    origin: Dict[str, _Origin] = {}
    for source in sources:
        in_project = _in_project(source, project, user, project_dir, user_places, user_paths)
        if in_project is None:
            continue
        read = _read(config, source.path)
        if read is None:
            continue
        trusted, env_files = _trust_for(source, read, in_project, environ, project_dir, trust_project)
        found = Config()
        _parse_into(found, read, source.path, source.format, environ, project_dir, trusted, env_files)
        _merge(config, found, _Origin(source.level, str(source.path), trusted), origin)
        if not trusted:
            _note_untrusted(config, found, source.path)
    return config


def _note_untrusted(config: Config, found: Config, path: Path) -> None:
    """List an untrusted file that defines servers in ``Config.untrusted``, and say what to do."""
    if not found.names:
        return
    config.untrusted.append(str(path))
    log.warning("Not starting %s of %s: a project file you have not trusted (review it, then answer "
                "mcpsync's question on a terminal, or pass --trust-project / trust_project=True)",
                ", ".join(found.names), path)


def _user_keys(sources: List[ConfigSource]) -> Tuple[Set[str], Set[str]]:
    """The user-level files' places and the files they resolve to: how a project-level file that is the
    user's own (discovery run in the home directory) is recognised."""
    user_files = [source.path for source in sources if source.level == "user"]
    return {_trust.place_key(path) for path in user_files}, {_trust.record_key(path) for path in user_files}


def _in_project(source: ConfigSource, project: bool, user: bool, project_dir: Path, user_places: Any,
                user_paths: Any) -> Optional[bool]:
    """Whether ``source`` is read as a project file (untrusted until trusted); None: it is not read."""
    if not (project if source.level == "project" else user):
        return None
    # ~/.claude.json's local scope is written by the user's own tool, not by the repository.
    if source.level != "project" or source.format == "claude-local" or not _inside(source.path, project_dir):
        return False
    if not _is_users_own(source.path, project_dir, user_places, user_paths):
        return True
    # Discovery runs in the home directory: the file is the user's own, read at user level (here when
    # user level is skipped).
    return None if user else False


def _trust_for(source: ConfigSource, read: _Read, in_project: bool, environ: Optional[Mapping[str, str]],
               project_dir: Path, trust_project: TrustProject) -> Tuple[bool, Optional[Dict[str, Optional[bytes]]]]:
    """Whether the file is trusted now, and the ``envFile`` bytes a trusted project file's parse uses."""
    if not in_project:
        return True, None
    # An envFile is opened only for a file that may be trusted now: never at the bidding of a file
    # nobody trusted, asked about or recorded.
    if trust_project is False and not _trust.has_record(source.path):
        return False, None
    env_files = _env_files(read, source.path, source.format, environ, project_dir)
    return _decide(source.path, read, env_files, source.format, project_dir, trust_project), env_files


class _Origin(NamedTuple):
    level: str
    path: str
    trusted: bool


class _Read(NamedTuple):
    data: Any
    digest: str


def _merge(config: Config, found: Config, where: _Origin, origin: Dict[str, _Origin]) -> None:
    """Add one file's servers; a project entry and a user entry of one name: warn, and let the trusted win."""
    for name in found.names:
        server = found.servers[name] if name in found.servers else found.errors[name]
        before = origin.get(name)
        if before is None:
            config.add(server, name)
            origin[name] = where
        elif before.level == "project" and where.level == "user" and before.path != where.path:
            if before.trusted:
                log.warning("Server %r of project file %s hides the server of that name in your %s",
                            name, before.path, where.path)
            else:
                log.warning("Server %r of project file %s is not trusted: using the server of that name in "
                            "your %s instead", name, before.path, where.path)
                config.replace(name, server)
                origin[name] = where
        else:
            config.add(server, name)  # the same level: first wins, as ever (logged at debug)
    config.problems.extend(found.problems)
    config.files.extend(f for f in found.files if f not in config.files)


def _is_users_own(path: Path, project_dir: Path, user_places: Any, user_paths: Any) -> bool:
    """Whether a project-level file is one of the user's own files (discovery run in the home directory).

    The same place counts; the same file reached otherwise counts only when it does not
    resolve outside the project (a repository's ``.cursor`` linked to ``~/.cursor`` is the
    repository's file, read with the repository's folder).
    """
    if _trust.place_key(path) in user_places:
        return True
    return _trust.record_key(path) in user_paths and _inside(_trust.record_key(path), os.path.realpath(project_dir))


def _env_files(read: _Read, path: Path, format: str, environ: Optional[Mapping[str, str]],
               project_dir: Path) -> Dict[str, Optional[bytes]]:
    """The bytes of every ``envFile`` the file's entries name (None: unreadable), read once: they are
    hashed into the trust key and are what a trusted parse uses."""
    data = _claude_section(read.data, format, project_dir) if format in ("claude-local", "claude-user") else read.data
    if data is None:
        return {}
    format = "mcpServers" if format in ("claude-local", "claude-user") else format
    paths = env_file_paths(data, format=format, environ=environ, base_dir=str(path.parent),
                           extra=_workspace(project_dir))
    return {name: read_env_file(name) for name in paths}


def trust_key(path: Path, digest: str, env_files: Mapping[str, Optional[bytes]], project_dir: Path) -> _trust.TrustKey:
    """What a trust record of this project file must match (see :class:`._trust.TrustKey`)."""
    return _trust.TrustKey(
        path=_trust.place_key(path), project=os.path.abspath(project_dir), target=_trust.record_key(path),
        sha256=digest,
        env_files={name: None if data is None else _trust.content_hash(data) for name, data in env_files.items()})


def _decide(path: Path, read: _Read, env_files: Mapping[str, Optional[bytes]], format: str, project_dir: Path,
            trust_project: TrustProject) -> bool:
    """Whether a project file's content is trusted now (asking on the terminal when told to)."""
    key = trust_key(path, read.digest, env_files, project_dir)
    if trust_project is True or _trust.is_trusted(key):
        return True
    if trust_project != "ask":
        return False
    listed = Config()
    _parse_into(listed, read, path, format, None, project_dir, trusted=False)
    entries = list(listed.servers.values()) + list(listed.errors.values())
    if not entries:
        return False  # nothing to start: nothing to ask about
    shown = str(path)
    if key.escapes:  # the one thing the listing cannot show: where the file really is
        shown = f"{path} (a link to {key.target}, outside the project)"
    if not _trust.ask(shown, entries):
        return False
    try:
        _trust.record_trust(key)
    except ConfigError as exc:  # a read-only home, say: the answer still holds for this run
        log.warning("%s; %s is trusted for this run only", exc, path)
    return True


def trust_project_file(path: PathLike, project: Optional[PathLike] = None) -> str:
    """Trust a project config file as it is now, in this place; returns the content hash recorded.

    Review the file first: its servers will be started, with their ``${VAR}`` s
    expanded from your environment. Any later change to it, or to an ``envFile`` it
    names, needs trusting again; so does the same file reached from another place.
    ``project`` is the project directory (``${workspaceFolder}``); by default the one
    discovery would find the file in (``<project>/.mcp.json``, ``<project>/.cursor/mcp.json`` ...).

    Raises:
        ConfigError: the file cannot be read or parsed, or the record cannot be written.
    """
    place = Path(os.path.abspath(os.fspath(path)))
    project_dir = Path(os.path.abspath(os.fspath(project))) if project is not None else _project_of(place)
    format = next((source.format for source in discovery_sources(project_dir)
                   if _trust.place_key(source.path) == str(place) and source.level == "project"),
                  "codex" if place.suffix == ".toml" else "mcpServers")
    problems = Config()
    read = _read(problems, place, missing_is_problem=True)
    if read is None:
        what = problems.problems[0] if problems.problems else None
        raise ConfigError(f"cannot trust {path}: {what.reason if what is not None else 'cannot read it'}",
                          path=str(path))
    digest = read.digest
    _trust.record_trust(trust_key(place, digest, _env_files(read, place, format, None, project_dir), project_dir))
    return digest


def _project_of(place: Path) -> Path:
    """The project directory discovery finds a file in: its folder, or the one above a tool's folder."""
    for candidate in (place.parent, place.parent.parent):
        if any(_trust.place_key(source.path) == str(place) for source in discovery_sources(candidate)
               if source.level == "project"):
            return candidate
    return place.parent


def _inside(path: PathLike, directory: PathLike) -> bool:
    try:
        Path(os.path.abspath(path)).relative_to(os.path.abspath(directory))
    except ValueError:
        return False
    return True


#: The largest config file read (a project's file may come from anyone's repository).
MAX_CONFIG_BYTES = 64 * 1024 * 1024


def read_config_bytes(path: Path) -> bytes:
    """The bytes of a config file: a regular file (a FIFO or device would block or never end) of at
    most :data:`MAX_CONFIG_BYTES`.

    Raises:
        OSError: it cannot be read, is not a regular file, or is larger (``strerror`` says which).
    """
    if not stat.S_ISREG(os.stat(path).st_mode):  # a device is never even opened
        raise OSError(0, "not a regular file")
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
                 | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):  # swapped since the stat
            raise OSError(0, "not a regular file")
        data = f.read(MAX_CONFIG_BYTES + 1)  # the size may change after fstat
        if len(data) > MAX_CONFIG_BYTES:
            raise OSError(0, f"larger than {MAX_CONFIG_BYTES} bytes")
    return data


def _read(config: Config, path: Path, missing_is_problem: bool = False) -> Optional[_Read]:
    """The file's JSON and the hash of its bytes (what is parsed is what was hashed); None if skipped."""
    shown = str(path)
    try:
        raw = read_config_bytes(path)
        text = raw.decode("utf-8-sig")
    except FileNotFoundError:
        if missing_is_problem:
            config.problem(shown, "file not found")
        return None
    except (OSError, UnicodeDecodeError) as exc:
        config.problem(shown, f"cannot read: {getattr(exc, 'strerror', None) or exc}")
        return None
    if path.suffix == ".toml":
        return _read_toml(config, shown, text, raw)
    try:
        return _Read(parse_json(text), _trust.content_hash(raw))
    except ValueError as exc:
        config.problem(shown, f"invalid JSON: {exc}")
        return None


def _read_toml(config: Config, shown: str, text: str, raw: bytes) -> Optional[_Read]:
    """Codex's ``config.toml`` (``[mcp_servers.<name>]`` tables); skipped where no TOML parser is available."""
    import importlib

    toml: Any = None
    for module in ("tomllib", "tomli"):  # tomllib: Python 3.11+; tomli: the same parser, installed
        try:
            toml = importlib.import_module(module)
            break
        except ImportError:
            continue
    if toml is None:
        log.debug("Skipping %s: reading TOML needs Python 3.11 or the tomli package", shown)
        return None
    try:
        return _Read(toml.loads(text), _trust.content_hash(raw))
    except ValueError as exc:  # tomllib.TOMLDecodeError is a ValueError
        config.problem(shown, f"invalid TOML: {exc}")
        return None
    except RecursionError:  # the TOML parser recurses once per level of nested arrays and tables
        config.problem(shown, "invalid TOML: nested too deeply to be a config file")
        return None


def _workspace(cwd: Optional[Path]) -> Optional[Dict[str, str]]:
    """VS Code's and Cursor's ``${workspaceFolder}``: the project directory discovery looks at."""
    return {"workspaceFolder": str(cwd), "workspaceFolderBasename": cwd.name} if cwd is not None else None


def _parse_into(config: Config, read: _Read, path: Path, format: str, environ: Optional[Mapping[str, str]],
                cwd: Optional[Path], trusted: bool, env_files: Optional[Mapping[str, Optional[bytes]]] = None) -> None:
    shown = str(path)
    data = read.data
    if format in ("claude-local", "claude-user"):
        data = _claude_section(data, format, cwd)
        if data is None:
            return
        format = "mcpServers"
    try:
        found = from_mapping(data, source=shown, format=format, environ=environ,
                             base_dir=str(path.parent), extra=_workspace(cwd), trusted=trusted, env_files=env_files)
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
