"""The client's cache of tool, resource and prompt lists, in both eras.

* Legacy: a server that promises ``list_changed`` notifications gets its
  lists cached until one arrives.
* Modern (2026-07-28): each list page carries ``ttlMs`` and ``cacheScope``; a
  list is served from the cache while its shortest-lived page is fresh.
  ``"private"`` entries are tied to the credential they were fetched with and
  never served to another; an absent ``ttlMs`` means not cacheable.

Either way a ``list_changed`` notification drops the entry at once (on the
reader thread, before any later response is seen). Lists fetched while a
``list_changed`` arrived are not stored. Results of multi round-trip retries
are never cached (lists never take that path).
"""

from __future__ import annotations

import threading
import time
from typing import Any, Dict, Hashable, List, NamedTuple, Optional, Sequence, Tuple

PUBLIC = "public"


class _Entry(NamedTuple):
    items: List[Any]
    expires: float  # monotonic; math.inf for "until list_changed"
    credential: Optional[Hashable]  # set for private entries


def credential_of(transport: Any) -> Optional[Hashable]:
    """Who a transport's requests speak for: a digest of its bearer token and its auth object, if any.

    Private entries are kept per credential, so a client whose credentials
    change never serves one user's private list to another.
    """
    headers = getattr(transport, "headers", None)
    token = headers.get("Authorization") if isinstance(headers, dict) else None
    auth = getattr(transport, "auth", None)
    if token is None and auth is None:
        return None
    import hashlib  # only clients with credentials pay for it

    digest = hashlib.sha256(str(token).encode("utf-8")).hexdigest() if token is not None else None
    return (digest, id(auth) if auth is not None else None)


class ListCache:
    """Thread-safe; one per client."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: Dict[str, _Entry] = {}
        self.generation = 0  # bumped by every invalidation

    def get(self, kind: str, credential: Optional[Hashable]) -> Optional[List[Any]]:
        """The fresh cached list of ``kind`` usable with ``credential`` (a copy), or None."""
        with self._lock:
            entry = self._entries.get(kind)
            if entry is None:
                return None
            if time.monotonic() >= entry.expires:
                del self._entries[kind]
                return None
            if entry.credential is not None and entry.credential != credential:
                return None
            return list(entry.items)

    def store_until_changed(self, kind: str, items: List[Any], generation: int) -> None:
        """Legacy: keep ``items`` until a list_changed (unless one arrived since ``generation``)."""
        self._store(kind, _Entry(items, float("inf"), None), generation)

    def store_pages(self, kind: str, items: List[Any], pages: Sequence[Tuple[Any, Any]], generation: int,
                    credential: Optional[Hashable]) -> None:
        """Modern: keep ``items`` for the shortest ``ttlMs`` of its ``(ttlMs, cacheScope)`` pages."""
        if not pages:
            return
        ttls = [ttl if isinstance(ttl, (int, float)) and not isinstance(ttl, bool) and ttl > 0 else 0
                for ttl, _scope in pages]
        ttl = min(ttls)
        if ttl <= 0:
            return
        private = any(scope != PUBLIC for _ttl, scope in pages)
        self._store(kind, _Entry(items, time.monotonic() + ttl / 1000.0, credential if private else None),
                    generation)

    def _store(self, kind: str, entry: _Entry, generation: int) -> None:
        with self._lock:
            if generation == self.generation:
                self._entries[kind] = entry

    def invalidate(self, kind: Optional[str] = None) -> None:
        """Drop ``kind`` (or everything)."""
        with self._lock:
            self.generation += 1
            if kind is None:
                self._entries.clear()
            else:
                self._entries.pop(kind, None)
