"""The MCP protocol versions this client speaks, in two eras.

*Legacy* versions (2024-11-05 to 2025-11-25) open a session with the
``initialize`` handshake. *Modern* versions (2026-07-28 on) have no
handshake: every request carries its version and the client's capabilities
in ``_meta``.
"""

from __future__ import annotations

from typing import Iterable, Optional, Tuple

#: Legacy (handshake) versions, newest first. ``initialize`` asks for the first.
LEGACY_VERSIONS: Tuple[str, ...] = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
LATEST_LEGACY_VERSION = LEGACY_VERSIONS[0]
#: What an ``initialize`` answer may name (the handshake exists only in the legacy era).
SUPPORTED_VERSIONS: Tuple[str, ...] = LEGACY_VERSIONS
#: Modern (per-request ``_meta``) versions, newest first.
MODERN_VERSIONS: Tuple[str, ...] = ("2026-07-28",)
LATEST_MODERN_VERSION = MODERN_VERSIONS[0]
#: Every version, newest first.
ALL_VERSIONS: Tuple[str, ...] = MODERN_VERSIONS + LEGACY_VERSIONS


def at_least(version: str, minimum: str) -> bool:
    """Whether ``version`` is ``minimum`` or newer (dates compare as strings)."""
    return version >= minimum


def is_modern(version: Optional[str]) -> bool:
    """Whether ``version`` is one of the modern (handshake-free) versions we speak."""
    return version in MODERN_VERSIONS


def best_common(offered: Iterable[object], ours: Tuple[str, ...] = ALL_VERSIONS) -> Optional[str]:
    """The newest of ``ours`` that the peer also ``offered`` (ignoring anything not a string), or None."""
    theirs = {version for version in offered if isinstance(version, str)}
    return next((version for version in ours if version in theirs), None)
