"""The MCP protocol versions this client speaks."""

from __future__ import annotations

from typing import Tuple

#: Legacy (handshake) versions, newest first. ``initialize`` asks for the first.
LEGACY_VERSIONS: Tuple[str, ...] = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
LATEST_LEGACY_VERSION = LEGACY_VERSIONS[0]
SUPPORTED_VERSIONS: Tuple[str, ...] = LEGACY_VERSIONS


def at_least(version: str, minimum: str) -> bool:
    """Whether ``version`` is ``minimum`` or newer (dates compare as strings)."""
    return version >= minimum
