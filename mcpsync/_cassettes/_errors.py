"""The cassette errors: a cassette that cannot be read, and a request it does not hold."""

from __future__ import annotations

from ..exceptions import MCPSyncError

__all__ = ["CassetteError", "CassetteMismatch"]


class CassetteError(MCPSyncError):
    """A cassette cannot be used: the file is unreadable, truncated, hand-edited into something
    that is not a cassette, or written by a newer mcpsync (the text names the line and what is
    wrong), or the cassette is used in a way its record mode does not allow."""


class CassetteMismatch(CassetteError):
    """While replaying, the client sent something the cassette does not hold.

    Attributes:
        request: the message the client sent (secrets filtered).
        closest: the recorded message most like it, or None when nothing of its kind was recorded.
        difference: in words, how the two differ.
    """

    def __init__(self, message: str, *, request: object = None, closest: object = None,
                 difference: str = "") -> None:
        super().__init__(message)
        self.request = request
        self.closest = closest
        self.difference = difference
