"""The protocol facts the fake server works from: its error codes, ``_meta`` keys, versions and method sets.

Every MCP-specific number or key the fake server puts on the wire is named
here once, so the other parts of :mod:`mcpsync.testing` never spell one out; the
error codes and ``_meta`` keys are taken from the client's own tables
(:mod:`mcpsync._session.errors`, :mod:`mcpsync._session.meta`), so the fake server
and the client cannot drift apart.
JSON-RPC's own codes (``-32600`` and friends) stay in :mod:`mcpsync._rpc.jsonrpc`.

The versions come from the client's one table, :mod:`mcpsync._versions`
(newest first); the fake server has always listed them oldest first, in its
error data and messages, so :func:`oldest_first` gives that order where it is
shown.

Constants and pure functions only: safe from any thread, nothing blocks.
"""

from __future__ import annotations

from typing import FrozenSet, Iterable, Optional, Sequence, Tuple

from .. import subscriptions
from .._session import errors, meta, notifications
from .._versions import ALL_VERSIONS, LEGACY_VERSIONS, MODERN_VERSIONS

__all__ = [
    "ACKNOWLEDGED", "CLIENT_CAPABILITIES_KEY", "CLIENT_INFO_KEY", "LEGACY_METHODS", "LISTEN", "LIST_CHANGED_FLAGS",
    "LOG_LEVELS", "LOG_LEVEL_KEY", "MISSING_CLIENT_CAPABILITY", "MODERN_METHODS", "PROTOCOL_VERSION_KEY",
    "RESOURCE_NOT_FOUND_LEGACY", "RESOURCE_UPDATED", "RUNS_USER_CODE", "SERVER_INFO_KEY", "SKILLS_EXTENSION",
    "SKILL_METHODS", "SUBSCRIPTION_ID_KEY", "UNSUPPORTED_PROTOCOL_VERSION", "choose_versions", "oldest_first",
]

# -- error codes and ``_meta`` keys: the client's own tables, so both sides spell them alike ------

#: 2025 ``Resource not found`` (2026-07-28 answers ``INVALID_PARAMS`` instead).
RESOURCE_NOT_FOUND_LEGACY = errors.RESOURCE_NOT_FOUND
#: 2026-07-28 ``MissingRequiredClientCapabilityError``; the fake also uses it for legacy clients.
MISSING_CLIENT_CAPABILITY = errors.MISSING_CAPABILITY
#: 2026-07-28 ``UnsupportedProtocolVersionError``; its ``data`` lists the versions spoken.
UNSUPPORTED_PROTOCOL_VERSION = errors.UNSUPPORTED_VERSION

PROTOCOL_VERSION_KEY = meta.PROTOCOL_VERSION
CLIENT_CAPABILITIES_KEY = meta.CLIENT_CAPABILITIES
CLIENT_INFO_KEY = meta.CLIENT_INFO
LOG_LEVEL_KEY = meta.LOG_LEVEL
SERVER_INFO_KEY = meta.SERVER_INFO
#: Stamped on every message of a ``subscriptions/listen`` stream: the listen request's id.
SUBSCRIPTION_ID_KEY = meta.SUBSCRIPTION_ID
#: The skills extension's id (SEP-2640), declared in ``capabilities.extensions``.
SKILLS_EXTENSION = meta.SKILLS_EXTENSION

#: RFC 5424 levels, least severe first (``notifications/message``).
LOG_LEVELS = tuple(notifications.LOG_LEVELS)

# -- 2026-07-28 subscriptions: the client's own names (mcpsync.subscriptions) --------------------

#: The request that opens a stream of the server's notifications.
LISTEN = "subscriptions/listen"
#: The stream's first message: the part of the filter the server honours.
ACKNOWLEDGED = subscriptions.ACKNOWLEDGED
RESOURCE_UPDATED = subscriptions.UPDATED
#: ``list_changed`` notification -> the filter flag that asks for it.
LIST_CHANGED_FLAGS = dict(subscriptions.LIST_CHANGED_FLAGS)

# -- methods ----------------------------------------------------------------------------------

#: The skills extension's requests (answered in both eras, where the extension is declared).
SKILL_METHODS: FrozenSet[str] = frozenset({"skills/list", "skills/get"})
_COMMON = {"tools/list", "tools/call", "resources/list", "resources/templates/list", "resources/read",
           "prompts/list", "prompts/get", "completion/complete"} | SKILL_METHODS
#: What a legacy (``initialize``) session may ask.
LEGACY_METHODS: FrozenSet[str] = frozenset(_COMMON | {"initialize", "ping", "resources/subscribe",
                                                      "resources/unsubscribe", "logging/setLevel"})
#: What a 2026-07-28 request may ask.
MODERN_METHODS: FrozenSet[str] = frozenset(_COMMON | {"server/discover", LISTEN})
#: Methods whose answer comes from a user function, run on a worker thread.
RUNS_USER_CODE: FrozenSet[str] = frozenset({"tools/call", "resources/read", "prompts/get"})

# -- versions ---------------------------------------------------------------------------------


def oldest_first(versions: Iterable[str]) -> Tuple[str, ...]:
    """``versions`` in date order, oldest first: the order the fake server reports versions in."""
    return tuple(sorted(versions))  # the versions are ISO dates, so text order is date order


def choose_versions(versions: Optional[Sequence[str]]) -> Tuple[Tuple[str, ...], Tuple[str, ...]]:
    """The ``(legacy, modern)`` versions a server offering ``versions`` speaks, each oldest first.

    ``None`` means every version the client knows.

    Raises:
        ValueError: ``versions`` is empty or names a version unknown to :mod:`mcpsync._versions`.
    """
    chosen = tuple(versions) if versions is not None else ALL_VERSIONS
    unknown = sorted(set(chosen) - set(ALL_VERSIONS))
    if unknown or not chosen:
        raise ValueError(f"Unknown protocol versions {unknown}; choose from "
                         f"{', '.join(oldest_first(ALL_VERSIONS))}")
    return (oldest_first(v for v in LEGACY_VERSIONS if v in chosen),
            oldest_first(v for v in MODERN_VERSIONS if v in chosen))
