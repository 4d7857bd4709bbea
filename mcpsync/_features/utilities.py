"""The utilities feature: ``ping``, ``completion/complete`` and ``logging/setLevel``, over the session.

Modern (2026-07-28) servers have no ``ping`` (``server/discover`` answers instead) and no
``logging/setLevel`` (the level rides in the ``_meta`` of every later request); either way the
level is kept on the session, for :class:`~mcpsync._session.streams.Streams` to set again after
an HTTP session is renewed.

Threads: any thread may call these; each blocks for its own request.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional

from .._protocol.methods import COMPLETION_COMPLETE, LOGGING_SET_LEVEL, PING, SERVER_DISCOVER
from .._protocol.versions import at_least
from .._rpc.jsonrpc import JSONObject
from .._rpc.options import CallOptions
from .._session.notifications import LOG_LEVELS
from .._session.session import Session
from ..types import CompleteResult

__all__ = ["complete", "ping", "set_log_level"]


def ping(session: Session, options: CallOptions) -> None:
    """``Client.ping``: ``ping``, or ``server/discover`` on a modern server."""
    session.call(SERVER_DISCOVER if session.modern else PING, None, options)


def complete(session: Session, version: Optional[str], ref: Mapping[str, Any], argument: str, value: str,
             context: Optional[Mapping[str, str]], options: CallOptions) -> CompleteResult:
    """``Client.complete``: ``completion/complete`` (the ``completions`` capability is needed from 2025-03-26)."""
    if version and at_least(version, "2025-03-26"):
        session.require("completions", what="complete arguments")
    params: JSONObject = {"ref": dict(ref), "argument": {"name": argument, "value": value}}
    if context:
        params["context"] = {"arguments": dict(context)}
    return CompleteResult.from_dict(session.call(COMPLETION_COMPLETE, params, options))


def set_log_level(session: Session, level: str, options: CallOptions) -> None:
    """``Client.set_logging_level``: legacy ``logging/setLevel``; modern, the ``_meta`` of later requests.

    Either way the level is kept, to be set again after a renewal.

    Raises:
        ValueError: ``level`` is not one of the RFC 5424 levels.
    """
    if level not in LOG_LEVELS:
        raise ValueError(f"Unknown log level {level!r}; expected one of {', '.join(LOG_LEVELS)}")
    if not session.modern:
        session.require("logging", what="set the log level")
        session.call(LOGGING_SET_LEVEL, {"level": level}, options)
    session.log_level = level
