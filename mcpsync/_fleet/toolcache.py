"""The tools cache: each server's last tool list on disk, so a slow server's tools are known at once.

One JSON file per server under ``<cache dir>/tools/``, holding the server's
name, the hash of its unexpanded config, when it was written and the tools'
wire dicts. An entry is used only when the hash matches and it is younger
than 30 days. Files are written atomically (a temporary file, then a rename)
with owner-only permissions, in a private ``tools/`` directory (``mcpsync/_private.py``; made
owner-only if it is not). The cache directory above it must be the user's and writable by nobody
else (mcpsync's own default one is also made owner-only; one named by ``MCPSYNC_CACHE_DIR`` or the
``directory`` argument that is a symlink, another user's, or writable by others is refused). A corrupt or unreadable file, or one
in a directory others can write to, is ignored with a warning; a cache that cannot be written
is skipped with a warning. Nothing
here ever raises.

The default directory follows the platform: ``$XDG_CACHE_HOME/mcpsync`` (else
``~/.cache/mcpsync``) on Linux, ``~/Library/Caches/mcpsync`` on macOS,
``%LOCALAPPDATA%\\mcpsync\\Cache`` on Windows; ``MCPSYNC_CACHE_DIR`` overrides it.

Thread safety: any method from any thread; concurrent writers of one file
leave one whole version (the last rename wins).
"""

from __future__ import annotations

import gc
import json
import math
import os
import re
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Union

from .._log import getLogger
from .._private import private_directory, trustworthy_directory

log = getLogger("mcpsync.cache")

CACHE_VERSION = 1
DEFAULT_TTL = 30 * 24 * 3600.0
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")

_paused = 0  # threads loading a cache file with the cyclic collector paused; guarded by _pause_lock
_pause_lock = threading.Lock()
_we_paused = False  # the collector was enabled when the first of them paused it


class _collection_paused:
    """Pause the cyclic garbage collector while a cache file is parsed.

    Parsing 10,000 tools builds some 100,000 dicts and lists, none of them garbage, and
    each batch of them made the collector walk the whole heap again: a read took more
    than twice as long per tool at 10,000 tools as at 1,000. Nested and concurrent
    pauses count; the collector is enabled again by the last one out, and only if it
    was enabled when the first one came in (an application's own gc.disable() stands).
    """

    def __enter__(self) -> None:
        global _paused, _we_paused
        with _pause_lock:
            if _paused == 0:
                _we_paused = gc.isenabled()
                if _we_paused:
                    gc.disable()
            _paused += 1

    def __exit__(self, *exc: Any) -> None:
        global _paused, _we_paused
        with _pause_lock:
            _paused -= 1
            if _paused == 0 and _we_paused:
                _we_paused = False
                gc.enable()


def default_cache_dir() -> Path:
    """Where the tools cache lives unless told otherwise (see the module docstring)."""
    override = os.environ.get("MCPSYNC_CACHE_DIR")
    if override:
        return Path(override).expanduser()
    home = Path.home()
    if sys.platform == "win32":
        return Path(os.environ.get("LOCALAPPDATA") or home / "AppData" / "Local") / "mcpsync" / "Cache"
    if sys.platform == "darwin":
        return home / "Library" / "Caches" / "mcpsync"
    return Path(os.environ.get("XDG_CACHE_HOME") or home / ".cache") / "mcpsync"


class ToolCache:
    """Each server's tool list, keyed by server name and config hash.

    Args:
        directory: the cache directory (default: :func:`default_cache_dir`).
        ttl: how long an entry stays valid, in seconds (default 30 days).
    """

    def __init__(self, directory: Union[str, "os.PathLike[str]", None] = None, *,
                 ttl: float = DEFAULT_TTL) -> None:
        self.directory = Path(os.fspath(directory)).expanduser() if directory is not None else default_cache_dir()
        self.ttl = ttl
        # mcpsync's own directory is made owner-only if it is not; one the user named is only checked
        self._own = directory is None and not os.environ.get("MCPSYNC_CACHE_DIR")

    def __repr__(self) -> str:
        return f"<ToolCache {str(self.directory)!r}>"

    def path_for(self, server: str) -> Path:
        """The file that holds ``server``'s entry."""
        import hashlib  # here: without a cache (a server given on the command line) it is not loaded

        digest = hashlib.sha256(server.encode("utf-8")).hexdigest()[:12]
        safe = _UNSAFE.sub("_", server).lstrip(".")[:40] or "server"  # never a hidden or temporary-looking file
        return self.directory / "tools" / f"{safe}-{digest}.json"

    def get(self, server: str, config_hash: str) -> Optional[List[Dict[str, Any]]]:
        """The cached tool dicts, or None (miss, stale, other config, corrupt, unreadable)."""
        path = self.path_for(server)
        try:
            text = path.read_text(encoding="utf-8")
            for folder in (self.directory, path.parent):  # a tool list someone else wrote is never used
                trustworthy_directory(folder, what="the tools cache directory")
        except FileNotFoundError:
            return None
        except (OSError, UnicodeDecodeError) as exc:
            log.warning("Ignoring unreadable MCP tools cache %s: %s", path, exc)
            return None
        try:
            with _collection_paused():
                entry = json.loads(text)
            tools = self._validate(entry, server)
        except (ValueError, RecursionError) as exc:  # RecursionError: nested deeper than the parser goes
            log.warning("Ignoring corrupt MCP tools cache %s: %s", path, exc)
            return None
        if entry.get("config_hash") != config_hash:
            log.debug("Tools cache for %r is for another config", server)
            return None
        if time.time() - float(entry["saved_at"]) > self.ttl:
            log.debug("Tools cache for %r has expired", server)
            return None
        return tools

    @staticmethod
    def _validate(entry: Any, server: str) -> List[Dict[str, Any]]:
        if not isinstance(entry, dict):
            raise ValueError("not a JSON object")
        if entry.get("version") != CACHE_VERSION:
            raise ValueError(f"unknown version {entry.get('version')!r}")
        if entry.get("server") != server:
            raise ValueError(f"holds server {entry.get('server')!r}")
        _check_saved_at(entry.get("saved_at"))
        tools = entry.get("tools")
        if not isinstance(tools, list) or not all(
                isinstance(t, dict) and isinstance(t.get("name"), str) for t in tools):
            raise ValueError("tools is not a list of tool objects")
        return tools

    def put(self, server: str, config_hash: str, tools: List[Dict[str, Any]]) -> bool:
        """Store ``tools`` for ``server`` atomically, owner-only; False (and a warning) on failure."""
        path = self.path_for(server)
        entry = {"version": CACHE_VERSION, "server": server, "config_hash": config_hash,
                 "saved_at": time.time(), "tools": tools}
        tmp: Optional[str] = None
        try:
            data = json.dumps(entry, separators=(",", ":")).encode("utf-8")
            if self._own:
                private_directory(self.directory, what="the tools cache directory", tighten=True)
            else:  # the user's: made private if missing, else only checked that nobody else writes there
                os.makedirs(self.directory, mode=0o700, exist_ok=True)
                trustworthy_directory(self.directory, what="the tools cache directory")
            private_directory(path.parent, what="the tools cache directory", tighten=True)  # "tools/": ours
            fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".json", dir=str(path.parent))  # mode 0600
            with os.fdopen(fd, "wb") as stream:
                stream.write(data)
                stream.flush()
                os.fsync(stream.fileno())
            os.replace(tmp, path)
            tmp = None
            return True
        except (OSError, TypeError, ValueError) as exc:
            log.warning("Could not write the MCP tools cache %s: %s", path, exc)
            return False
        finally:
            if tmp is not None:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass


def _check_saved_at(saved: Any) -> None:
    """Raise ValueError unless ``saved`` is a finite time (NaN would never expire)."""
    if isinstance(saved, bool) or not isinstance(saved, (int, float)):
        raise ValueError("no saved_at time")
    try:
        finite = math.isfinite(float(saved))
    except OverflowError:  # an integer too big for a float
        finite = False
    if not finite:
        raise ValueError("saved_at is not a finite time")
