"""Tokens and where they are kept: the :class:`Token` value, the :class:`TokenStore` interface and two stores.

A store maps string keys to JSON-compatible dicts. mcpsync keeps three kinds
of entries, all keyed by the authorization server's ``issuer`` so credentials
are never used with another server:

* ``tokens <issuer> <resource>``: the tokens for one MCP server (resource),
  with the token endpoint and client they belong to;
* ``client <issuer>``: a client registered dynamically with that server;
* ``server <canonical MCP URL>``: which issuer and resource that URL used last,
  so a new process finds its tokens without discovery;
* ``binding <credential>``: the issuer a configured secret was first used
  with (see ``_binding``), so it is never sent to another one.

A token file shared by several processes stays consistent: a refresh runs
inside :meth:`TokenStore.transaction` and writes back with
:meth:`TokenStore.replace` (compare-and-swap), so a process never writes a
spent grant over the one another process just stored. A file that does not
parse is moved aside, never overwritten.

Secrets (access and refresh tokens, client secrets) never appear in a
``repr`` or a log line.
"""

from __future__ import annotations

import abc
import contextlib
import copy
import json
import logging
import math
import os
import stat
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ContextManager, Dict, Iterator, Mapping, Optional, Tuple, Union

from .. import _fork
from .._private import private_directory, trustworthy_directory
from ..exceptions import AuthError, UnsafeDirectory

__all__ = ["FileTokenStore", "MemoryTokenStore", "Token", "TokenStore", "client_key", "default_token_path",
           "server_key", "tokens_key"]

log = logging.getLogger("mcpsync.auth")

# Renew this long before expiry, but never earlier than 90% of the lifetime.
RENEW_MARGIN = 60.0


def clock() -> float:
    """The token clock (``time.time()``): when tokens were issued, when they expire. Tests replace it."""
    return time.time()


def tokens_key(issuer: str, resource: str) -> str:
    """The store key of the tokens for ``resource`` issued by ``issuer``."""
    return f"tokens {issuer} {resource}"


def client_key(issuer: str) -> str:
    """The store key of the client registered with ``issuer``."""
    return f"client {issuer}"


def server_key(server_url: str) -> str:
    """The store key recording which issuer and resource an MCP server URL used last."""
    return f"server {server_url}"


@dataclass(frozen=True)
class Token:
    """An access token and what came with it. Immutable; its ``repr`` shows no secret.

    Attributes:
        access_token: the bearer token.
        expires_at: when it expires (``time.time()`` seconds), if the server said.
        refresh_token: the refresh token, if one was issued.
        scope: the granted scopes (space-separated), if the server said.
        lifetime: the ``expires_in`` it was issued with, in seconds.
        token_type: ``"Bearer"``, or ``"DPoP"`` for a token bound to a DPoP key.
    """

    access_token: str = field(repr=False)
    expires_at: Optional[float] = None
    refresh_token: Optional[str] = field(default=None, repr=False)
    scope: Optional[str] = None
    lifetime: Optional[float] = None
    token_type: str = "Bearer"

    def __repr__(self) -> str:
        expiry = "no expiry" if self.expires_at is None else f"expires_at={self.expires_at:.0f}"
        refresh = ", refreshable" if self.refresh_token else ""
        kind = "" if self.token_type == "Bearer" else f" {self.token_type}"
        return f"<Token{kind} [redacted] {expiry}{refresh} scope={self.scope!r}>"

    def expiring(self, now: float) -> bool:
        """Whether it is time to renew: within a minute of expiry (or the last tenth of its lifetime)."""
        if self.expires_at is None:
            return False
        margin = RENEW_MARGIN if self.lifetime is None else min(RENEW_MARGIN, self.lifetime / 10.0)
        return now >= self.expires_at - margin

    def expired(self, now: float) -> bool:
        """Whether it has expired."""
        return self.expires_at is not None and now >= self.expires_at

    @classmethod
    def from_response(cls, document: Mapping[str, Any], now: Optional[float] = None,
                      previous_refresh: Optional[str] = None, token_type: str = "Bearer") -> "Token":
        """A token from a token endpoint's JSON answer (already checked to hold ``access_token``).

        A refresh answer without a new ``refresh_token`` keeps ``previous_refresh``.
        """
        now = clock() if now is None else now
        lifetime = _seconds(document.get("expires_in"))
        refresh = document.get("refresh_token")
        scope = document.get("scope")
        return cls(access_token=str(document["access_token"]),
                   expires_at=None if lifetime is None else now + lifetime,
                   refresh_token=refresh if isinstance(refresh, str) and refresh else previous_refresh,
                   scope=scope if isinstance(scope, str) else None, lifetime=lifetime, token_type=token_type)

    def to_dict(self) -> Dict[str, Any]:
        """The stored form."""
        return {"access_token": self.access_token, "expires_at": self.expires_at,
                "refresh_token": self.refresh_token, "scope": self.scope, "lifetime": self.lifetime,
                "token_type": self.token_type}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Optional["Token"]:
        """The token in a stored dict, or None if it is malformed."""
        access = data.get("access_token")
        if not isinstance(access, str) or not access:
            return None
        expires_at, lifetime = data.get("expires_at"), data.get("lifetime")
        refresh, scope = data.get("refresh_token"), data.get("scope")
        kind = "DPoP" if data.get("token_type") == "DPoP" else "Bearer"
        return cls(access_token=access, expires_at=_finite(expires_at),
                   refresh_token=refresh if isinstance(refresh, str) and refresh else None,
                   scope=scope if isinstance(scope, str) else None, lifetime=_finite(lifetime), token_type=kind)


def _finite(value: Any) -> Optional[float]:
    """A stored number as a finite float, else None (a boolean, NaN, infinity, or an integer too big for a float)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def _seconds(value: Any) -> Optional[float]:
    """``expires_in`` as positive seconds (some servers send a string), else None."""
    try:
        seconds = float(value) if isinstance(value, (int, float, str)) and not isinstance(value, bool) else 0.0
    except (ValueError, OverflowError):  # OverflowError: an integer too big for a float
        return None
    return seconds if 0 < seconds < float("inf") else None


class TokenStore(abc.ABC):
    """Where :class:`~mcpsync.OAuth` keeps tokens and registered clients between uses.

    Subclass it to keep them in a keyring, a database or a secrets manager:
    three methods over string keys and JSON-compatible dict values. The
    methods may be called from any thread (mcpsync serialises its own calls
    per auth object, but several auth objects may share a store); they should
    be quick, and may raise :class:`~mcpsync.AuthError` on failure (mcpsync
    then logs a warning and keeps the tokens in memory).
    """

    @abc.abstractmethod
    def load(self, key: str) -> Optional[Dict[str, Any]]:
        """The value saved under ``key``, or None."""

    @abc.abstractmethod
    def save(self, key: str, value: Dict[str, Any]) -> None:
        """Save ``value`` under ``key``, replacing what was there."""

    @abc.abstractmethod
    def delete(self, key: str) -> None:
        """Forget ``key`` (no error if it is absent)."""

    def transaction(self, key: str) -> ContextManager[None]:
        """Hold off other writers of ``key`` for the ``with`` block (a read, a refresh, a write back).

        mcpsync refreshes a stored grant inside this block, so that two users of
        one store do not both spend the same refresh token. The default holds
        nothing (a store shared by processes should override it, as
        :class:`FileTokenStore` does with its file lock). Must be reentrant for
        the thread holding it: ``load``, ``save``, ``delete`` and ``replace``
        are called inside it.
        """
        return contextlib.nullcontext()

    def replace(self, key: str, expected: Optional[Dict[str, Any]], value: Dict[str, Any]) -> bool:
        """Save ``value`` under ``key`` only if the stored value still equals ``expected``; whether it did.

        ``expected`` None means "nothing is stored". The default compares and
        saves inside :meth:`transaction`, so it is atomic exactly when that is.
        """
        with self.transaction(key):
            if self.load(key) != expected:
                return False
            self.save(key, value)
            return True


class MemoryTokenStore(TokenStore):
    """Keeps everything in this process's memory: nothing survives the process (tests, short jobs).

    Thread-safe; values are copied in and out; :meth:`transaction` holds a
    lock of this store (reentrant), so ``replace`` is atomic.

    Pickled (with an auth object or a client that uses it, for a worker process), it is empty
    where it is unpickled: a pickle may be written to disk, logged or sent over a network, so
    tokens go in it only when asked for. A forked child keeps a copy of what it holds.

    Args:
        pickle_tokens: put the tokens and registered clients in the pickle, so the worker
            starts with them (and, for a person's login, needs none of its own). Treat such a
            pickle as the secret it holds.
    """

    def __init__(self, *, pickle_tokens: bool = False) -> None:
        self.pickle_tokens = pickle_tokens
        self._data: Dict[str, Dict[str, Any]] = {}
        self._lock = threading.RLock()
        _fork.watch(self, "_after_fork_in_child")

    def __repr__(self) -> str:
        return f"<MemoryTokenStore entries={len(self._data)}{' pickle_tokens' if self.pickle_tokens else ''}>"

    def __getstate__(self) -> Dict[str, Any]:
        with self._lock:
            return {"pickle_tokens": self.pickle_tokens, "data": copy.deepcopy(self._data) if self.pickle_tokens else {}}

    def __setstate__(self, state: Dict[str, Any]) -> None:
        self.pickle_tokens = bool(state.get("pickle_tokens"))
        self._data = dict(state.get("data") or {})
        self._lock = threading.RLock()
        _fork.watch(self, "_after_fork_in_child")

    def _after_fork_in_child(self) -> None:
        self._lock = threading.RLock()  # a parent thread may have held it at the fork

    def load(self, key: str) -> Optional[Dict[str, Any]]:
        with self._lock:
            value = self._data.get(key)
            return copy.deepcopy(value) if value is not None else None

    def save(self, key: str, value: Dict[str, Any]) -> None:
        with self._lock:
            self._data[key] = copy.deepcopy(value)

    def delete(self, key: str) -> None:
        with self._lock:
            self._data.pop(key, None)

    def transaction(self, key: str) -> ContextManager[None]:
        return self._held()

    @contextlib.contextmanager
    def _held(self) -> Iterator[None]:
        with self._lock:
            yield


def default_token_path() -> Path:
    """``tokens.json`` in the user's config directory for mcpsync.

    ``%APPDATA%\\mcpsync`` on Windows, ``~/Library/Application Support/mcpsync``
    on macOS, ``$XDG_CONFIG_HOME/mcpsync`` (default ``~/.config/mcpsync``) elsewhere.
    """
    home = Path.home()
    if sys.platform == "win32":
        base = Path(os.environ.get("APPDATA") or home / "AppData" / "Roaming")
    elif sys.platform == "darwin":
        base = home / "Library" / "Application Support"
    else:
        base = Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config")
    return base / "mcpsync" / "tokens.json"


class FileTokenStore(TokenStore):
    """Keeps tokens in one JSON file that only its owner may read (the default store of :class:`~mcpsync.OAuth`).

    ::

        store = mcpsync.FileTokenStore()              # ~/.config/mcpsync/tokens.json on Linux
        store = mcpsync.FileTokenStore("tokens.json")

    The directory is created with mode 0700 and the file with 0600; a file
    found readable by others is tightened (with a warning). Every change
    rewrites the file atomically (a temporary file, then a rename), under a
    lock file on POSIX (``tokens.json.lock``, ``flock``) so processes sharing
    it do not lose each other's writes; :meth:`transaction` holds that lock
    for a whole refresh. Thread-safe. (On Windows the file relies on the
    profile directory's permissions, and there is no lock across processes.)

    A file that cannot be parsed (a UTF-8 byte order mark is accepted) is
    never overwritten: the first write moves it aside to
    ``tokens.json.corrupt-<UTC time>`` (mode 0600), logs a warning naming that
    path, and starts a fresh file; until then, reads find nothing in it. A
    file that exists but cannot be read at all (permissions) is not replaced
    either: writes raise.

    Args:
        path: the file (default: :func:`default_token_path`).

    Raises (from save, delete and replace):
        AuthError: (``token_store``) the file cannot be written, or exists and cannot be read.
    """

    def __init__(self, path: Union[str, "os.PathLike[str]", None] = None) -> None:
        self.path = Path(path) if path is not None else default_token_path()
        self._lock_fd = -1
        self._after_fork_in_child()
        _fork.watch(self, "_after_fork_in_child")

    def __repr__(self) -> str:
        return f"<FileTokenStore {str(self.path)!r}>"

    def __getstate__(self) -> Dict[str, Any]:
        """Pickles as its path: a worker on this machine reads and writes the same file."""
        return {"path": self.path}

    def __setstate__(self, state: Dict[str, Any]) -> None:
        self.path = Path(state["path"])
        self._lock_fd = -1
        self._after_fork_in_child()
        _fork.watch(self, "_after_fork_in_child")

    def _after_fork_in_child(self) -> None:
        """New locks; the child's copy of a lock file a parent thread held locked is closed (the lock stays
        the parent's: it ends when that thread lets go, instead of when this child exits)."""
        if self._lock_fd >= 0:
            try:
                os.close(self._lock_fd)
            except OSError:
                pass
        self._lock_fd = -1
        self._lock = threading.RLock()
        self._depth = 0  # how deep the thread holding self._lock is in _exclusive (the flock is held while > 0)

    def load(self, key: str) -> Optional[Dict[str, Any]]:
        with self._lock:
            value = self._read(for_write=False).get(key)
        return value if isinstance(value, dict) else None

    def save(self, key: str, value: Dict[str, Any]) -> None:
        with self._exclusive():
            data = self._read(for_write=True)
            data[key] = value
            self._write(data)

    def delete(self, key: str) -> None:
        with self._exclusive():
            data = self._read(for_write=True)
            if data.pop(key, None) is not None:
                self._write(data)

    def transaction(self, key: str) -> ContextManager[None]:
        """The file lock (and this object's thread lock) for the ``with`` block; reentrant."""
        return self._exclusive()

    def replace(self, key: str, expected: Optional[Dict[str, Any]], value: Dict[str, Any]) -> bool:
        with self._exclusive():
            data = self._read(for_write=True)
            if data.get(key) != expected:
                return False
            data[key] = value
            self._write(data)
            return True

    def _read(self, *, for_write: bool) -> Dict[str, Any]:
        """The file's entries. For a write (under the file lock), a file that did not parse is moved aside first.

        Raises:
            AuthError: (``token_store``, only ``for_write``) the file exists but cannot be read.
        """
        raw = self._raw(for_write=for_write)
        if raw is None:
            return {}
        data, problem = _json_object(raw)
        if data is not None:
            return data
        if not for_write:
            log.warning("Ignoring the token file %s: %s; it will be moved aside, not overwritten, at the next "
                        "save", self.path, problem)
            return {}
        aside = self._move_aside()
        log.warning("The token file %s could not be used (%s); moved it to %s and starting a fresh one",
                    self.path, problem, aside)
        return {}

    def _raw(self, *, for_write: bool) -> Optional[bytes]:
        """The file's bytes; None when it is missing, or (not ``for_write``) cannot be read: logged.

        Raises:
            AuthError: (``token_store``, only ``for_write``) the file exists but cannot be read.
        """
        try:
            with open(self.path, "rb") as f:
                trustworthy_directory(self.path.parent, what="the token store's directory")  # none forged
                self._tighten(f.fileno())
                return f.read()
        except FileNotFoundError:
            return None
        except UnsafeDirectory as exc:
            if for_write:
                raise AuthError(f"Cannot use the token file {self.path}: {exc}", error="token_store") from exc
            log.warning("Ignoring the token file %s: %s", self.path, exc)
            return None
        except OSError as exc:
            if for_write:
                raise AuthError(f"Cannot read the token file {self.path} ({exc.strerror or exc}); refusing to "
                                "replace it: fix its permissions, or move it away", error="token_store") from exc
            log.warning("Cannot read the token file %s: %s", self.path, exc.strerror or exc)
            return None

    def _move_aside(self) -> Path:
        """Rename the damaged file to a free ``<name>.corrupt-<UTC time>[-n]`` next to it, owner-only."""
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        for n in range(1000):
            aside = self.path.with_name(f"{self.path.name}.corrupt-{stamp}" + (f"-{n}" if n else ""))
            if not os.path.lexists(aside):
                break
        try:
            if os.name == "posix":
                os.chmod(self.path, 0o600)
            os.rename(self.path, aside)
        except OSError as exc:
            raise AuthError(f"The token file {self.path} does not parse and cannot be moved aside "
                            f"({exc.strerror or exc}); refusing to overwrite it: move it away yourself",
                            error="token_store") from exc
        return aside

    def _tighten(self, fd: int) -> None:
        if os.name != "posix":
            return
        mode = os.fstat(fd).st_mode
        if mode & (stat.S_IRWXG | stat.S_IRWXO):
            log.warning("The token file %s was readable by others; making it owner-only", self.path)
            os.fchmod(fd, 0o600)

    def _private_parent(self) -> None:
        """Make or check the file's directory (see ``mcpsync/_private.py``): mcpsync's own default
        directory is private (made owner-only if it is not); a directory the user named (which may
        hold other things: ``FileTokenStore("tokens.json")``) must be theirs and writable by nobody
        else, the file itself being 0600.

        Raises:
            UnsafeDirectory: (an ``OSError``) the directory is a symlink, another user's, or
                writable by others.
        """
        what = "the token store's directory"
        if self.path.parent == default_token_path().parent:
            private_directory(self.path.parent, what=what, tighten=True)
        else:
            os.makedirs(self.path.parent, mode=0o700, exist_ok=True)
            trustworthy_directory(self.path.parent, what=what)

    def _write(self, data: Dict[str, Any]) -> None:
        temporary = self.path.with_name(f".{self.path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        try:
            self._private_parent()
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temporary)  # left by a crashed writer of this pid and thread: O_EXCL below
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(json.dumps(data, indent=1, sort_keys=True).encode("utf-8"))
                f.flush()
                os.fsync(f.fileno())
            os.replace(temporary, self.path)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise AuthError(f"Cannot write the token file {self.path}: {exc.strerror or exc}",
                            error="token_store") from exc

    @contextlib.contextmanager
    def _exclusive(self) -> Iterator[None]:
        """This object's lock and, outermost, an exclusive lock across processes. Reentrant per thread.

        The cross-process lock is POSIX ``flock`` on a sibling lock file (nothing
        elsewhere). ``flock`` locks belong to an open file, so a nested use
        must not take it again: the depth counts the nesting.
        """
        with self._lock:
            if self._depth:
                self._depth += 1
                try:
                    yield
                finally:
                    self._depth -= 1
                return
            try:
                import fcntl
            except ImportError:  # Windows
                fcntl = None  # type: ignore[assignment]
            fd = -1
            if fcntl is not None:
                try:
                    self._private_parent()
                    fd = os.open(self.path.with_name(self.path.name + ".lock"),
                                 os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
                except OSError as exc:
                    raise AuthError(f"Cannot lock the token file {self.path}: {exc.strerror or exc}",
                                    error="token_store") from exc
            self._lock_fd = fd
            try:
                if fcntl is not None:
                    fcntl.flock(fd, fcntl.LOCK_EX)
                self._depth = 1
                yield
            finally:
                self._depth = 0
                self._lock_fd = -1
                if fd >= 0:
                    os.close(fd)  # closing releases the lock


def _json_object(raw: bytes) -> Tuple[Optional[Dict[str, Any]], str]:
    """The JSON object in ``raw`` and "", or None and what is wrong with it."""
    try:
        data = json.loads(raw.decode("utf-8-sig"))  # a byte order mark (an editor's) is not damage
    except (ValueError, RecursionError) as exc:
        return None, f"it is not valid JSON ({type(exc).__name__})"
    if isinstance(data, dict):
        return data, ""
    return None, f"it holds a JSON {type(data).__name__}, not an object"
