"""Trust in project config files: the record of the files the user trusted, and the question.

A project file (``.mcp.json``, ``.cursor/mcp.json``, ``.vscode/mcp.json`` ... inside the
directory discovery looks at) comes with whatever repository was cloned there, so its
servers are not started, and its ``${VAR}`` s are not expanded, until the user trusts it.
Trust is recorded per file, keyed by everything that fills its variables (a :class:`TrustKey`):
the file's absolute path as discovery found it (symlinks NOT resolved: ``${workspaceFolder}``,
a relative ``cwd`` and a relative ``envFile`` are taken from that place), the project
directory it was found in, the file it resolves to, the SHA-256 of its bytes and the
SHA-256 of every ``envFile`` its entries name. Any change to one of these asks again; a
record made for one place never trusts a file reached by a symlink from another. The
record is one small JSON file in the user's config directory (:func:`trust_file`),
written atomically and readable by its owner only.

Records written by mcpsync before this format (version 1: keyed by the resolved path and
the file's hash alone) are kept in the file but trust nothing: each such file is asked
about again once, and the answer is recorded in the new format.

Thread and process safety: every function may be called from any thread; a write
re-reads the record just before replacing it, so two processes trusting different
files at once lose nothing but in a narrow race (the later writer's view wins).
"""

from __future__ import annotations

import json
import os
import stat
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Sequence, TextIO, Union

from .._log import getLogger
from .._private import private_directory, trustworthy_directory
from .._terminal import shown
from ..exceptions import ConfigError, UnsafeDirectory
from ._model import ServerConfig
from ._parse import read_env_file

log = getLogger("mcpsync.config")

TRUST_FILE_NAME = "trusted-projects.json"
_VERSION = 2


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
    import hashlib  # here: the command line with a server given directly reads no project file

    return hashlib.sha256(data).hexdigest()


def record_key(path: Union[str, "os.PathLike[str]"]) -> str:
    """The file a path resolves to (absolute, symlinks resolved): how a project file is matched to
    the user's own file of the same place; NOT the key of the trust record (see :class:`TrustKey`)."""
    return os.path.realpath(os.path.abspath(os.fspath(path)))


def place_key(path: Union[str, "os.PathLike[str]"]) -> str:
    """The key of a file in the trust record: its absolute path, symlinks left as they are."""
    return os.path.abspath(os.fspath(path))


class TrustKey(NamedTuple):
    """Everything a trust record must match for a project file to be trusted.

    Attributes:
        path: the file's absolute path as discovery found it (symlinks not resolved).
        project: the absolute project directory (``${workspaceFolder}``).
        target: the file the path resolves to now (symlinks resolved).
        sha256: the SHA-256 of the file's bytes.
        env_files: every ``envFile`` its entries name (absolute path) -> the SHA-256 of its
            bytes, or None when it could not be read (missing, not a regular file, too large).
    """

    path: str
    project: str
    target: str
    sha256: str
    env_files: Dict[str, Optional[str]]

    @property
    def escapes(self) -> bool:
        """Whether the file resolves outside the project directory (it, or a folder on its way, is a
        symlink pointing elsewhere)."""
        return not _within(self.target, os.path.realpath(self.project))


def _within(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip(os.sep) + os.sep)


def trusted_projects() -> Dict[str, str]:
    """Every trusted file in the record: absolute path -> SHA-256 of the content that was trusted.

    A missing record is empty; an unreadable or malformed one is logged and read as empty
    (nothing is trusted), and is moved aside before the next write. Records of the
    older format (which trust nothing any more, see the module text) are not listed.
    """
    projects = _read(trust_file()) or {}
    return {path: entry["sha256"] for path, entry in projects.items() if _current(entry)}


def trusted_records() -> Dict[str, TrustKey]:
    """Every trusted file in the record, with everything it was trusted for (path -> key)."""
    projects = _read(trust_file()) or {}
    return {path: _as_key(path, entry) for path, entry in projects.items() if _current(entry)}


def _current(entry: Any) -> bool:
    return (isinstance(entry, dict) and isinstance(entry.get("sha256"), str) and isinstance(entry.get("project"), str)
            and isinstance(entry.get("target"), str) and isinstance(entry.get("env_files"), dict))


def _as_key(path: str, entry: Dict[str, Any]) -> TrustKey:
    env_files = {str(k): (v if isinstance(v, str) else None) for k, v in entry["env_files"].items()}
    return TrustKey(path, entry["project"], entry["target"], entry["sha256"], env_files)


def has_record(path: Union[str, "os.PathLike[str]"]) -> bool:
    """Whether the record holds an entry (of the current format) for the file at this place."""
    projects = _read(trust_file()) or {}
    return _current(projects.get(place_key(path)))


def record_state(key: TrustKey) -> str:
    """How a recorded file stands now: "trusted" (as recorded), "changed" (its bytes or an envFile's
    differ), "moved" (its path now resolves to another file) or "missing" (it cannot be read)."""
    try:
        data = Path(key.path).read_bytes()
    except OSError:
        return "missing"
    if record_key(key.path) != key.target:
        return "moved"
    if content_hash(data) != key.sha256:
        return "changed"
    for name, digest in key.env_files.items():
        now = read_env_file(name)
        if (None if now is None else content_hash(now)) != digest:
            return "changed"
    return "trusted"


def is_trusted(key: TrustKey) -> bool:
    """Whether the record trusts this file, in this place and project, with exactly these contents."""
    projects = _read(trust_file()) or {}
    entry = projects.get(key.path)
    return isinstance(entry, dict) and _current(entry) and _as_key(key.path, entry) == key


def record_trust(key: TrustKey) -> None:
    """Trust the file named by ``key`` as described there (replacing an older record of its path).

    Raises:
        ConfigError: the record cannot be written (the text says where and why).
    """
    def trust(projects: Dict[str, Any]) -> None:
        projects[key.path] = {"sha256": key.sha256, "project": key.project, "target": key.target,
                              "env_files": dict(key.env_files), "trusted_at": time.time()}

    _update(trust)
    log.info("Trusted project config %s (recorded in %s)", key.path, trust_file())


def revoke_trust(path: Union[str, "os.PathLike[str]", None] = None) -> int:
    """Forget the trust in one project file (``path``), or in every one (None); returns how many.

    Raises:
        ConfigError: the record cannot be written.
    """
    removed: List[str] = []

    def forget(projects: Dict[str, Any]) -> None:
        if path is None:
            keys = list(projects)
        else:  # record_key: a record of the older format
            keys = [k for k in dict.fromkeys((place_key(path), record_key(path))) if k in projects]
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
        with open(path, "rb") as stream:
            problem = _forgeable(path, os.fstat(stream.fileno()))
            text = stream.read().decode("utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        log.warning("Cannot read the project trust record %s (%s); no project file is trusted",
                    path, getattr(exc, "strerror", None) or exc)
        return None
    if problem is not None:
        log.warning("The project trust record %s %s, so anyone could have written it; no project file is "
                    "trusted (check it, then make its directory private: chmod 700 %s)", path, problem, path.parent)
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


def _forgeable(path: Path, info: "os.stat_result") -> Optional[str]:
    """Why someone else could have written the record (it, or its directory, is not the user's alone)."""
    if os.name != "posix":
        return None
    if info.st_uid != os.geteuid() or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return "is not yours alone"
    try:
        trustworthy_directory(path.parent, what="the project trust record's directory")
    except UnsafeDirectory as exc:
        return f"is in a directory that {exc.problem}"
    return None


def _update(change: Callable[[Dict[str, Any]], None]) -> None:
    """Read the record, apply ``change(projects)`` and write it back atomically (mode 0600)."""
    path = trust_file()
    try:
        private_directory(path.parent, what="the project trust record's directory", tighten=True)
        projects = _read(path)
        if projects is None:  # keep what did not parse (a newer format, say) rather than overwrite it
            aside = path.with_name(f"{path.name}.unreadable-{int(time.time())}")
            os.replace(path, aside)
            log.warning("Moved the unreadable project trust record %s to %s", path, aside)
            projects = {}
        change(projects)
        data = json.dumps({"version": _VERSION, "projects": projects}, indent=2, sort_keys=True)
        _write_atomically(path, data.encode("utf-8"))
    except UnsafeDirectory as exc:
        raise ConfigError(f"cannot write the project trust record {path}: {exc}", path=str(path)) from exc
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


__all__ = ["TrustKey", "ask", "content_hash", "describe", "is_trusted", "has_record", "place_key", "record_state", "record_trust", "revoke_trust",
           "trust_file", "trusted_projects", "trusted_records", "user_config_dir"]
