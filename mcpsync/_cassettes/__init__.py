"""Cassettes: record what real MCP servers said once, replay it with no server afterwards.

The public names are in :mod:`mcpsync.testing` (``use_cassette``, ``Cassette``,
``CassetteError``, ``CassetteMismatch``); the file format is in :mod:`._format`.
"""

from ._cassette import RECORD_MODES, Cassette, use_cassette
from ._errors import CassetteError, CassetteMismatch
from ._format import VERSION

__all__ = ["RECORD_MODES", "VERSION", "Cassette", "CassetteError", "CassetteMismatch", "use_cassette"]
