"""Trust in project config files: the record of the files the user trusted, and the question.

A project file (``.mcp.json``, ``.cursor/mcp.json``, ``.vscode/mcp.json`` ... inside the
directory discovery looks at) comes with whatever repository was cloned there, so its
servers are not started, and its ``${VAR}`` s are not expanded, until the user trusts it.
Trust is recorded per file: its absolute path and the SHA-256 of its bytes, in one small
JSON file in the user's config directory (:func:`trust_file`), so any change to the file
asks again. The record is written atomically and readable by its owner only.

Thread and process safety: every function may be called from any thread; a write
re-reads the record just before replacing it, so two processes trusting different
files at once lose nothing but in a narrow race (the later writer's view wins).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, TextIO, Union

from .._terminal import shown
from ..exceptions import ConfigError
from ._model import ServerConfig

log = logging.getLogger("mcpsync.config")

TRUST_FILE_NAME = "trusted-projects.json"
_VERSION = 1


def user_config_dir() -> Path:
    """The user's config directory: ``$XDG_CONFIG_HOME`` (``~/.config``), or the platform's."""
    home = Path.home()
    if sys.platform == "win32":
        return Path(os.environ.get("APPDATA") or home / "AppData" / "Roaming")
    if sys.platform == "darwin":
        return home / "Library" / "Application Support"
    return Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config")


def trust_file() -> Path:
    """Where the trust record lives: ``<config>/mcpsync/trusted-projects.json``."""
    return user_config_dir() / "mcpsync" / TRUST_FILE_NAME


def content_hash(data: bytes) -> str:
    """The SHA-256 (hex) a trust record keeps for a file's bytes."""
    return hashlib.sha256(data).hexdigest()


def record_key(path: Union[str, "os.PathLike[str]"]) -> str:
    """The key of a file in the record: its absolute path with symlinks resolved."""
    return os.path.realpath(os.path.abspath(os.fspath(path)))


def trusted_projects() -> Dict[str, str]:
    """Every trusted file in the record: absolute path -> SHA-256 of the content that was trusted.

    A missing record is empty; an unreadable or malformed one is logged and read as empty
    (nothing is trusted), and is moved aside before the next write.
    """
    projects = _read(trust_file()) or {}
    return {path: entry["sha256"] for path, entry in projects.items()
            if isinstance(entry, dict) and isinstance(entry.get("sha256"), str)}


def is_trusted(path: Union[str, "os.PathLike[str]"], digest: str) -> bool:
    """Whether the record trusts the file at ``path`` with exactly this content hash."""
    return trusted_projects().get(record_key(path)) == digest


def record_trust(path: Union[str, "os.PathLike[str]"], digest: str) -> None:
    """Trust the file at ``path`` with content hash ``digest`` (replacing an older record of it).

    Raises:
        ConfigError: the record cannot be written (the text says where and why).
    """
    def trust(projects: Dict[str, Any]) -> None:
        projects[record_key(path)] = {"sha256": digest, "trusted_at": time.time()}

    _update(trust)
    log.info("Trusted project config %s (recorded in %s)", record_key(path), trust_file())


def trust_project_file(path: Union[str, "os.PathLike[str]"]) -> str:
    """Trust a project config file as it is now; returns the content hash recorded.

    Review the file first: its servers will be started, with their ``${VAR}`` s
    expanded from your environment. Any later change to it needs trusting again.

    Raises:
        ConfigError: the file cannot be read, or the record cannot be written.
    """
    try:
        data = Path(os.fspath(path)).read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot trust {path}: {exc.strerror or exc}", path=str(path)) from None
    digest = content_hash(data)
    record_trust(path, digest)
    return digest


def revoke_trust(path: Union[str, "os.PathLike[str]", None] = None) -> int:
    """Forget the trust in one project file (``path``), or in every one (None); returns how many.

    Raises:
        ConfigError: the record cannot be written.
    """
    removed: List[str] = []

    def forget(projects: Dict[str, Any]) -> None:
        keys = list(projects) if path is None else [k for k in (record_key(path),) if k in projects]
        for key in keys:
            del projects[key]
            removed.append(key)

    if path is None and not trust_file().exists():
        return 0
    _update(forget)
    return len(removed)


def ask(path: str, servers: Sequence[Union[ServerConfig, ConfigError]], *,
        stdin: Optional[TextIO] = None, stderr: Optional[TextIO] = None) -> Optional[bool]:
    """Ask on the terminal whether to trust the project file ``path``; None when there is no terminal.

    Both ``stdin`` and ``stderr`` (default: the process's) must be terminals. The
    question lists every server of the file as written (commands with their
    arguments, URLs, env and header templates): what would run, and where.
    Every value from the file passes the output gate (:func:`mcpsync._terminal.shown`),
    each kept to its one line, so no value can move the cursor, erase or reorder what
    was shown before it: the command the user is asked about is the one that runs.
    Only an answer of ``y`` or ``yes`` trusts.
    """
    stdin = sys.stdin if stdin is None else stdin
    stderr = sys.stderr if stderr is None else stderr
    if not (_is_terminal(stdin) and _is_terminal(stderr)):
        return None
    lines = [f"mcpsync: {shown(path)} is a project config file, not one of yours. If trusted, it starts:"]
    lines.extend(f"  {line}" for server in servers for line in describe(server))
    lines.append("Servers run as you, and their ${VAR}s are filled in from your environment.")
    question = "\n".join(lines) + "\nTrust this file (asked again if it changes)? [y/N] "
    stderr.write(shown(question, lines=True))  # describe() gated each value; this keeps it so
    stderr.flush()
    answer = stdin.readline()
    if not answer.endswith("\n"):
        stderr.write("\n")
    return answer.strip().lower() in ("y", "yes")


def describe(server: Union[ServerConfig, ConfigError]) -> Sequence[str]:
    """Lines that say what an entry (read without expanding its variables) would run or reach.

    Each value from the file is shown through the output gate on one line: a control character,
    bidi override or newline in a name, command, argument, cwd, URL, key or value is written
    as a visible escape (``\\x1b``), so the lines are safe to print on a terminal.
    """
    if isinstance(server, ConfigError):
        return [f"{shown(server.server or '?')}: invalid entry, will not run ({shown(server)})"]
    name = shown(server.name)
    if not server.enabled:
        return [f"{name}: disabled"]
    if server.type == "stdio":
        lines = [f"{name}: runs {shown(_shell_words([server.command or '', *server.args]))}"]
        if server.cwd:
            lines.append(f"    in {shown(server.cwd)}")
        values = server.env
        what = "env"
    else:
        lines = [f"{name}: connects to {shown(server.url)} ({shown(server.type)})"]
        values = server.headers
        what = "header"
    lines.extend(f"    {what} {shown(key)}={shown(value)}" for key, value in values.items())
    return lines


def _shell_words(words: Sequence[str]) -> str:
    import shlex

    return " ".join(shlex.quote(word) for word in words)


def _is_terminal(stream: Any) -> bool:
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty()) if isatty is not None else False
    except (OSError, ValueError):  # a closed stream
        return False


# -- the record file --------------------------------------------------------------------------


def _read(path: Path) -> Optional[Dict[str, Any]]:
    """The record's projects map; {} when there is no record, None when it cannot be read or parsed."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        log.warning("Cannot read the project trust record %s (%s); no project file is trusted",
                    path, getattr(exc, "strerror", None) or exc)
        return None
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        data = None
    projects = data.get("projects") if isinstance(data, dict) else None
    if not isinstance(projects, dict):
        log.warning("The project trust record %s is malformed; no project file is trusted", path)
        return None
    return projects


def _update(change: Callable[[Dict[str, Any]], None]) -> None:
    """Read the record, apply ``change(projects)`` and write it back atomically (mode 0600)."""
    path = trust_file()
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        projects = _read(path)
        if projects is None:  # keep what did not parse (a newer format, say) rather than overwrite it
            aside = path.with_name(f"{path.name}.unreadable-{int(time.time())}")
            os.replace(path, aside)
            log.warning("Moved the unreadable project trust record %s to %s", path, aside)
            projects = {}
        change(projects)
        data = json.dumps({"version": _VERSION, "projects": projects}, indent=2, sort_keys=True)
        _write_atomically(path, data.encode("utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot write the project trust record {path}: {exc.strerror or exc}",
                          path=str(path)) from None


def _write_atomically(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".json", dir=str(path.parent))  # mode 0600
    try:
        with os.fdopen(fd, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


__all__ = ["ask", "content_hash", "describe", "is_trusted", "record_trust", "revoke_trust", "trust_file",
           "trust_project_file", "trusted_projects", "user_config_dir"]
