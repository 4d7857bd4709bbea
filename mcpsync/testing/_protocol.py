"""The protocol facts the fake server works from: its error codes, ``_meta`` keys, versions and method sets.

Every MCP-specific number or key the fake server puts on the wire is named
here once, so the other parts of :mod:`mcpsync.testing` never spell one out; the
error codes, ``_meta`` keys and method sets are taken from the protocol's one table
(:mod:`mcpsync._protocol`), which the client reads too, so the fake server
and the client cannot drift apart.
JSON-RPC's own codes (``-32600`` and friends) stay in :mod:`mcpsync._rpc.jsonrpc`.

The versions come from the one table, :mod:`mcpsync._protocol.versions`
(newest first); the fake server has always listed them oldest first, in its
error data and messages, so :func:`oldest_first` gives that order where it is
shown.

Constants and pure functions only: safe from any thread, nothing blocks.
"""

from __future__ import annotations

from typing import FrozenSet, Iterable, Optional, Sequence, Tuple

from .. import subscriptions
from .._protocol import codes, meta, methods
from .._protocol.methods import SUBSCRIPTIONS_LISTEN
from .._session import notifications
from .._protocol.versions import ALL_VERSIONS, LEGACY_VERSIONS, MODERN_VERSIONS

__all__ = [
    "ACKNOWLEDGED", "CLIENT_CAPABILITIES_KEY", "CLIENT_INFO_KEY", "LEGACY_METHODS", "LISTEN", "LIST_CHANGED_FLAGS",
    "LOG_LEVELS", "LOG_LEVEL_KEY", "MISSING_CLIENT_CAPABILITY", "MODERN_METHODS", "PROTOCOL_VERSION_KEY",
    "RESOURCE_NOT_FOUND_LEGACY", "RESOURCE_UPDATED", "RUNS_USER_CODE", "SERVER_INFO_KEY", "SKILLS_EXTENSION",
    "SKILL_METHODS", "SUBSCRIPTION_ID_KEY", "UNSUPPORTED_PROTOCOL_VERSION", "choose_versions", "oldest_first",
]

# -- error codes and ``_meta`` keys: the protocol's one table (mcpsync._protocol), as the client's ----

#: 2025 ``Resource not found`` (2026-07-28 answers ``INVALID_PARAMS`` instead).
RESOURCE_NOT_FOUND_LEGACY = codes.RESOURCE_NOT_FOUND
#: 2026-07-28 ``MissingRequiredClientCapabilityError``; the fake also uses it for legacy clients.
MISSING_CLIENT_CAPABILITY = codes.MISSING_CAPABILITY
#: 2026-07-28 ``UnsupportedProtocolVersionError``; its ``data`` lists the versions spoken.
UNSUPPORTED_PROTOCOL_VERSION = codes.UNSUPPORTED_VERSION

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
LISTEN = SUBSCRIPTIONS_LISTEN
#: The stream's first message: the part of the filter the server honours.
ACKNOWLEDGED = subscriptions.ACKNOWLEDGED
RESOURCE_UPDATED = subscriptions.UPDATED
#: ``list_changed`` notification -> the filter flag that asks for it.
LIST_CHANGED_FLAGS = dict(subscriptions.LIST_CHANGED_FLAGS)

# -- methods ----------------------------------------------------------------------------------

#: The skills extension's requests (answered in both eras, where the extension is declared).
SKILL_METHODS: FrozenSet[str] = methods.SKILL_METHODS
#: What a legacy (``initialize``) session may ask.
LEGACY_METHODS: FrozenSet[str] = methods.LEGACY_METHODS
#: What a 2026-07-28 request may ask.
MODERN_METHODS: FrozenSet[str] = methods.MODERN_METHODS
#: Methods whose answer comes from a user function, run on a worker thread (those a modern server
#: may answer ``input_required``).
RUNS_USER_CODE: FrozenSet[str] = methods.INPUT_REQUIRED

# -- versions ---------------------------------------------------------------------------------


def oldest_first(versions: Iterable[str]) -> Tuple[str, ...]:
    """``versions`` in date order, oldest first: the order the fake server reports versions in."""
    return tuple(sorted(versions))  # the versions are ISO dates, so text order is date order


def choose_versions(versions: Optional[Sequence[str]]) -> Tuple[Tuple[str, ...], Tuple[str, ...]]:
    """The ``(legacy, modern)`` versions a server offering ``versions`` speaks, each oldest first.

    ``None`` means every version the client knows.

    Raises:
        ValueError: ``versions`` is empty or names a version unknown to :mod:`mcpsync._protocol.versions`.
    """
    chosen = tuple(versions) if versions is not None else ALL_VERSIONS
    unknown = sorted(set(chosen) - set(ALL_VERSIONS))
    if unknown or not chosen:
        raise ValueError(f"Unknown protocol versions {unknown}; choose from "
                         f"{', '.join(oldest_first(ALL_VERSIONS))}")
    return (oldest_first(v for v in LEGACY_VERSIONS if v in chosen),
            oldest_first(v for v in MODERN_VERSIONS if v in chosen))
