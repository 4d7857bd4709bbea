"""mcpsync's loggers, without importing :mod:`logging` until a record could go anywhere.

``import logging`` (with ``traceback``, ``linecache``, ``tokenize`` and ``string``, which it
loads) is the largest standard-library cost of ``import mcpsync``, and most scripts never look
at a log record. The package puts a ``NullHandler`` on the ``mcpsync`` logger, so while the
application has configured nothing, no mcpsync record is ever printed. And to configure anything
(a handler, a level, ``logging.basicConfig``), the application, or a library it uses, has to
import :mod:`logging` first. So:

* while ``logging`` is not in :data:`sys.modules`, a record could go nowhere: :class:`Logger`
  drops it without importing anything;
* once it is (whoever imported it), the first call puts the package's ``NullHandler`` on the
  ``mcpsync`` logger, looks up the real ``logging.getLogger(name)``, and binds its methods onto
  this object, so from then on a call goes straight to the real logger (no extra frame: records
  name their caller's file, line and function as they always did);
* anything else (``setLevel``, ``addHandler``, ``handlers``, ...) imports ``logging`` and answers
  from the real logger, so ``logging.getLogger("mcpsync.client")`` and ``client.server_log`` are
  the same logger, configured either way.

A program of mcpsync's own that wants some records shown (the command line: config and cache
warnings) hands its configuration to :func:`configure_when_needed` instead of importing
``logging`` up front: it runs before the first such record, or as soon as ``logging`` is used.
"""

from __future__ import annotations

import sys
import threading
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    import logging

#: The standard levels, as :mod:`logging` numbers them (without importing it).
DEBUG, INFO, WARNING, ERROR, CRITICAL = 10, 20, 30, 40, 50

_METHODS = ("debug", "info", "warning", "error", "exception", "critical", "log")
_loggers: dict[str, "Logger"] = {}
_null_handler_added = False
#: Configurations waiting for their first record: (logger names, lowest level, configure).
_deferred: list[tuple[tuple[str, ...], int, Callable[[], None]]] = []
_deferred_lock = threading.RLock()


def getLogger(name: str) -> "Logger":  # noqa: N802 (the name logging's users know)
    """The lazy logger named ``name`` (one object per name, like :func:`logging.getLogger`)."""
    logger = _loggers.get(name)
    if logger is None:
        logger = _loggers.setdefault(name, Logger(name))
    return logger


def configure_when_needed(names: tuple[str, ...], level: int, configure: Callable[[], None]) -> Callable[[], None]:
    """Run ``configure`` (which sets up :mod:`logging` handlers) once it matters: before the first
    record at ``level`` or above from a logger in ``names`` (or under one), or as soon as any
    mcpsync logger meets an already loaded ``logging`` (whoever loaded it). If ``logging`` is loaded
    now, it runs now. Returns what withdraws it if it has not run (a no-op once it has)."""
    entry = (names, level, configure)
    _deferred.append(entry)
    if _loaded():
        _run_deferred()

    def withdraw() -> None:
        if entry in _deferred:
            _deferred.remove(entry)

    return withdraw


def _loaded() -> bool:
    loaded = sys.modules.get("logging")
    return loaded is not None and hasattr(loaded, "NullHandler")


def _run_deferred() -> None:
    if not _deferred:
        return
    with _deferred_lock:  # another thread's record waits until the handlers are in place
        while _deferred:
            _deferred[0][2]()
            del _deferred[0]


def _wanted(name: str, level: int) -> bool:
    """Whether a deferred configuration wants this record (so logging must be loaded for it)."""
    for names, lowest, _configure in _deferred:
        if level >= lowest and any(name == n or name.startswith(n + ".") for n in names):
            return True
    return False


def install_null_handler() -> None:
    """Put the package's NullHandler on the ``mcpsync`` logger now if :mod:`logging` is loaded."""
    _real("mcpsync", load=False)


def _real(name: str, load: bool) -> "logging.Logger | None":
    """The real logger, after the package's NullHandler is in place; None if logging is not loaded
    (and ``load`` is false) or is still being imported by another thread."""
    global _null_handler_added
    loaded = sys.modules.get("logging")
    if not load and (loaded is None or not hasattr(loaded, "NullHandler")):  # not (yet) importable
        return None
    import logging  # loaded already, or load is true; waits for another thread's import to finish

    if not _null_handler_added:
        _null_handler_added = True
        logging.getLogger("mcpsync").addHandler(logging.NullHandler())
    _run_deferred()
    return logging.getLogger(name)


class Logger:
    """A stand-in for ``logging.getLogger(name)`` that loads :mod:`logging` only when needed.

    It has the real logger's calls (``debug`` ... ``log``); any other attribute is the real
    logger's.
    """

    def __init__(self, name: str) -> None:
        self.name = name

    def _bind(self, level: int = 0, load: bool = False) -> "logging.Logger | None":
        real = _real(self.name, load or (bool(_deferred) and _wanted(self.name, level)))
        if real is not None:
            for method in _METHODS:
                setattr(self, method, getattr(real, method))
        return real

    # Each call below runs only until logging is loaded: _bind shadows them on the instance.
    # The forwarded call passes stacklevel=2 so that the record names the caller, not this file.

    def debug(self, msg: object, *args: object, **kwargs: Any) -> None:
        real = self._bind(DEBUG)
        if real is not None:
            real.debug(msg, *args, **_caller(kwargs))

    def info(self, msg: object, *args: object, **kwargs: Any) -> None:
        real = self._bind(INFO)
        if real is not None:
            real.info(msg, *args, **_caller(kwargs))

    def warning(self, msg: object, *args: object, **kwargs: Any) -> None:
        real = self._bind(WARNING)
        if real is not None:
            real.warning(msg, *args, **_caller(kwargs))

    def error(self, msg: object, *args: object, **kwargs: Any) -> None:
        real = self._bind(ERROR)
        if real is not None:
            real.error(msg, *args, **_caller(kwargs))

    def exception(self, msg: object, *args: object, **kwargs: Any) -> None:
        real = self._bind(ERROR)
        if real is not None:
            real.exception(msg, *args, **_caller(kwargs))

    def critical(self, msg: object, *args: object, **kwargs: Any) -> None:
        real = self._bind(CRITICAL)
        if real is not None:
            real.critical(msg, *args, **_caller(kwargs))

    def log(self, level: int, msg: object, *args: object, **kwargs: Any) -> None:
        real = self._bind(level)
        if real is not None:
            real.log(level, msg, *args, **_caller(kwargs))

    def __getattr__(self, attribute: str) -> Any:
        # Only for what the class does not define: setLevel, handlers, isEnabledFor, ...
        if attribute.startswith("__"):
            raise AttributeError(attribute)
        return getattr(self._bind(load=True), attribute)

    def __setattr__(self, attribute: str, value: Any) -> None:
        # The name and the bound calls are this object's; anything else (propagate, disabled,
        # level...) is set on the real logger, as it would be on logging.getLogger(name).
        if attribute == "name" or attribute in _METHODS:
            object.__setattr__(self, attribute, value)
        else:
            setattr(self._bind(load=True), attribute, value)

    def __repr__(self) -> str:
        return f"<mcpsync logger {self.name}>"


def _caller(kwargs: dict[str, Any]) -> dict[str, Any]:
    kwargs["stacklevel"] = kwargs.get("stacklevel", 1) + 1
    return kwargs
