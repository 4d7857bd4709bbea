"""Walking cursor-paginated list results, safely: bounded in pages and in bytes."""

from __future__ import annotations

import json
from typing import Any, Callable, Iterator, Optional, Set

from .._rpc.jsonrpc import JSONObject
from ..exceptions import ProtocolError

__all__ = ["MAX_LISTING_BYTES", "MAX_PAGES", "listing_budget", "paginate"]

#: The most pages one listing may take.
MAX_PAGES = 10_000
#: The most bytes (characters of JSON) the items of one listing may add up to, over all its pages,
#: unless the transport's ``max_message_size`` is larger (then that is the budget). Each page is
#: bounded by ``max_message_size`` already; this bounds what a server can make the client hold
#: by answering with one more page, and one more.
MAX_LISTING_BYTES = 64 * 1024 * 1024


def listing_budget(transport: Any) -> int:
    """The byte budget of one listing over ``transport``: :data:`MAX_LISTING_BYTES`, or the
    transport's ``max_message_size`` when that is larger (a client that accepts a larger single
    message accepts a listing of that size too)."""
    size = getattr(transport, "max_message_size", None)
    return max(MAX_LISTING_BYTES, size) if isinstance(size, int) and not isinstance(size, bool) else MAX_LISTING_BYTES


def paginate(fetch: Callable[[Optional[JSONObject]], Any], method: str, key: str,
             max_bytes: int = MAX_LISTING_BYTES) -> Iterator[JSONObject]:
    """Yield the items under ``key`` of every page of ``method``.

    Only an absent (or null) ``nextCursor`` ends the list: an empty string is
    a valid cursor. A cursor seen before means the server is looping. The items
    of all pages together may take at most ``max_bytes`` characters of JSON; a
    page is measured before its items are handed out.

    Raises:
        ProtocolError: a repeated cursor, too many pages, a listing larger than
            ``max_bytes``, or a malformed page.
    """
    seen: Set[str] = set()
    cursor: Optional[str] = None
    total = 0
    for number in range(1, MAX_PAGES + 1):
        page = fetch({"cursor": cursor} if cursor is not None else None)
        if not isinstance(page, dict) or not isinstance(page.get(key, []), list):
            raise ProtocolError(f"{method} returned a malformed page (no {key!r} list)")
        items = page.get(key, [])
        total += _json_size(items)
        if total > max_bytes:
            raise ProtocolError(f"{method} returned more than {max_bytes} bytes of {key} in {number} pages: "
                                "a listing that large is refused (each page is within max_message_size, the "
                                "listing as a whole is not). If the server really has that much, raise the "
                                "transport's max_message_size")
        for item in items:
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


def _json_size(value: Any) -> int:
    """The length of ``value`` as compact JSON (a decoded message: it always encodes)."""
    try:
        return len(json.dumps(value, ensure_ascii=False, separators=(",", ":"), check_circular=False))
    except (TypeError, ValueError):  # not from the wire (a test's object): count it as nothing
        return 0
