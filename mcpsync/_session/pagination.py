"""Walking cursor-paginated list results, safely."""

from __future__ import annotations

from typing import Any, Callable, Iterator, Optional, Set

from .._rpc.jsonrpc import JSONObject
from ..exceptions import ProtocolError

MAX_PAGES = 10_000


def paginate(fetch: Callable[[Optional[JSONObject]], Any], method: str, key: str) -> Iterator[JSONObject]:
    """Yield the items under ``key`` of every page of ``method``.

    Only an absent (or null) ``nextCursor`` ends the list: an empty string is
    a valid cursor. A cursor seen before means the server is looping.

    Raises:
        ProtocolError: a repeated cursor, too many pages, or a malformed page.
    """
    seen: Set[str] = set()
    cursor: Optional[str] = None
    for _ in range(MAX_PAGES):
        page = fetch({"cursor": cursor} if cursor is not None else None)
        if not isinstance(page, dict) or not isinstance(page.get(key, []), list):
            raise ProtocolError(f"{method} returned a malformed page (no {key!r} list)")
        for item in page.get(key, []):
            if isinstance(item, dict):
                yield item
        cursor = page.get("nextCursor")
        if cursor is None:
            return
        if not isinstance(cursor, str):
            raise ProtocolError(f"{method} returned a non-string nextCursor {cursor!r}")
        if cursor in seen:
            raise ProtocolError(f"{method} repeated the cursor {cursor!r}: the server is paginating in a loop")
        seen.add(cursor)
    raise ProtocolError(f"{method} returned more than {MAX_PAGES} pages")
