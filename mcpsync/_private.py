"""Private directories: the one check every directory mcpsync writes results or secrets into goes
through (spill files, the token store, the project trust record, the tools cache).

A private directory is a real directory (not a symbolic link), owned by the current user,
with no permission bit for group or others: no other local user can list it, read what
is in it, or rename and replace what mcpsync put there. The checks run on an open
descriptor of the directory (``O_NOFOLLOW``), so the directory checked is the one used;
folders above it may be symlinks (a ``~/.config`` linked into a dotfiles repository,
say): only the last one is the directory's own.

Two ways to get one:

- :func:`private_directory` makes the directory (0700, its parents as needed) or checks
  the one there; ``tighten=True`` (for mcpsync's own directories, such as
  ``~/.config/mcpsync``) makes one of the user's own directories owner-only, with a
  warning, instead of refusing it.
- :func:`private_subdirectory` makes a fresh 0700 directory with a random name inside a
  shared parent (``/tmp``, or a ``$MCPSYNC_OUTPUT_DIR`` others may read): the parent
  must be safe to hold one (a real directory, owned by the user or by root, that others
  cannot write to unless it is sticky, as ``/tmp`` is).

Either raises :class:`~mcpsync.exceptions.UnsafeDirectory` (an ``MCPSyncError`` and a
``PermissionError``) naming the directory, what is wrong and what to do. On Windows
the checks are not made (a profile directory's ACLs do the job): the directory is
only created. Thread-safe: nothing is shared.
"""

from __future__ import annotations

import os
import stat
from typing import Union

from ._log import getLogger
from .exceptions import UnsafeDirectory

__all__ = ["private_directory", "private_subdirectory", "trustworthy_directory"]

log = getLogger("mcpsync")

PathLike = Union[str, "os.PathLike[str]"]
_OTHERS = stat.S_IRWXG | stat.S_IRWXO
_POSIX = os.name == "posix"


def private_directory(path: PathLike, *, what: str, tighten: bool = False) -> str:
    """The directory at ``path``, made private (0700, parents as needed) if missing, or checked if there.

    ``what`` names it in messages ("the spill directory"). ``tighten=True``: a real
    directory of the user's that others may access is made owner-only (logged as a
    warning) rather than refused; give it only for directories that are mcpsync's own.

    Raises:
        UnsafeDirectory: it is a symlink or not a directory, another user owns it, or
            others may access it (and ``tighten`` is False); or it cannot be made.
    """
    path = os.path.abspath(os.fspath(path))
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
    except FileExistsError:  # a file, or a dangling symlink, where the directory should be
        pass
    except OSError as exc:
        raise UnsafeDirectory(path, what, f"cannot be made ({exc.strerror or exc})",
                              "choose a directory you can write to") from exc
    if not _POSIX:
        return path
    fd = _open_directory(path, what)
    try:
        info = os.fstat(fd)
        if info.st_uid != os.geteuid():
            raise UnsafeDirectory(path, what, f"is owned by another user (uid {info.st_uid})",
                                  "use a directory of your own")
        mode = stat.S_IMODE(info.st_mode)
        if mode & _OTHERS:
            if not tighten:
                raise UnsafeDirectory(path, what, f"is open to other users (mode {mode:04o})",
                                      f"make it private (chmod 700 {path}) or choose a private directory")
            os.fchmod(fd, mode & ~_OTHERS)
            log.warning("%s %s was open to other users (mode %04o); made it owner-only (0700)", what.capitalize(),
                        path, mode)
    finally:
        os.close(fd)
    return path


def trustworthy_directory(path: PathLike, *, what: str) -> str:
    """Check, before reading from it, that nobody else can have written into the existing directory
    ``path``: a real directory, owned by the user, that group and others cannot write to
    (reading is allowed to them: nothing read from it is then forged). Nothing is made or changed.

    Raises:
        UnsafeDirectory: it is missing, a symlink or not a directory, owned by another user, or
            writable by others.
    """
    path = os.path.abspath(os.fspath(path))
    if not _POSIX:
        return path
    fd = _open_directory(path, what)
    try:
        info = os.fstat(fd)
    finally:
        os.close(fd)
    if info.st_uid != os.geteuid():
        raise UnsafeDirectory(path, what, f"is owned by another user (uid {info.st_uid})",
                              "use a directory of your own")
    mode = stat.S_IMODE(info.st_mode)
    if mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise UnsafeDirectory(path, what, f"is writable by other users (mode {mode:04o})",
                              f"make it private (chmod 700 {path}) and check what is in it")
    return path


def private_subdirectory(parent: PathLike, *, prefix: str, what: str) -> str:
    """A new private directory (0700, random name after ``prefix``) inside the shared ``parent``.

    Raises:
        UnsafeDirectory: ``parent`` is a symlink or not a directory, is owned by another
            user (root aside), or others may write to it without its sticky bit (they
            could rename the new directory and put theirs in its place); or the new
            directory cannot be made.
    """
    parent = os.path.abspath(os.fspath(parent))
    if _POSIX:
        fd = _open_directory(parent, what)
        try:
            info = os.fstat(fd)
        finally:
            os.close(fd)
        if info.st_uid not in (os.geteuid(), 0):
            raise UnsafeDirectory(parent, what, f"is owned by another user (uid {info.st_uid})",
                                  "use a directory of your own")
        mode = stat.S_IMODE(info.st_mode)
        if mode & (stat.S_IWGRP | stat.S_IWOTH) and not mode & stat.S_ISVTX:
            raise UnsafeDirectory(parent, what, f"is writable by other users and not sticky (mode {mode:04o})",
                                  f"make it private (chmod 700 {parent}) or choose a private directory")
    try:
        import tempfile  # only when a private directory is made: keeps `import mcpsync` light

        made = tempfile.mkdtemp(prefix=prefix, dir=parent)  # 0700, a name nobody could have guessed
    except OSError as exc:
        raise UnsafeDirectory(parent, what, f"cannot hold a private directory ({exc.strerror or exc})",
                              "choose a directory you can write to") from exc
    return private_directory(made, what=what)


def _open_directory(path: str, what: str) -> int:
    """A descriptor of the directory itself (never of what a symlink there points to)."""
    flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        return os.open(path, flags)
    except OSError as exc:
        if os.path.islink(path):
            problem = f"is a symbolic link (to {os.path.realpath(path)})"
            remedy = "name the real directory, and make sure it is yours and private"
        elif os.path.lexists(path) and not os.path.isdir(path):
            problem, remedy = "is not a directory", "remove it or choose another path"
        else:
            problem, remedy = f"cannot be opened ({exc.strerror or exc})", "choose a directory you can read"
        raise UnsafeDirectory(path, what, problem, remedy) from exc
