"""Config files: which ones :func:`discover` reads (and in what order), and reading one
file, whatever tool wrote it, into a :class:`Config` (:func:`load` for a named one)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Union

from ..exceptions import ConfigError
from ._jsonc import parse_json
from ._model import Config, ConfigSource
from ._parse import from_mapping

PathLike = Union[str, "os.PathLike[str]"]


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
        data = parse_json(text)
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

