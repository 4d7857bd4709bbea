"""The lists room: every page of a server's list, bounded, through the era's list cache.

Three parts, each below the next:

* **Paging** (:func:`paginate`): cursor pagination, bounded in pages and in bytes.
* **The cache** (:class:`ListCache`), for tool, resource and prompt lists, in both eras.
  Legacy: a server that promises ``list_changed`` notifications gets its lists cached until
  one arrives. Modern (2026-07-28): each list page carries ``ttlMs`` and ``cacheScope``; a
  list is served from the cache while its shortest-lived page is fresh. ``"private"`` entries
  are tied to the credential they were fetched with and never served to another; an absent
  ``ttlMs`` means not cacheable. Either way a ``list_changed`` notification drops the entry at
  once (on the reader thread, before any later response is seen: the session's
  :class:`~mcpsync._session.inbound.Inbound` calls :meth:`ListCache.invalidate`). Lists fetched
  while a ``list_changed`` arrived are not stored. Results of multi round-trip retries are never
  cached (lists never take that path).
* **Fetching** (:class:`Lists`): pages with the session's call pipeline, whole lists through the
  cache, tool lists handed to the :class:`~mcpsync._features.toolbook.ToolBook` (definitions,
  header plans). The other rooms (resources, prompts, tasks, skills) list through it.

Threads: any number of threads may list at once; each blocks for its own pages. The cache is
thread-safe (a lock); its invalidation never blocks.
"""

from __future__ import annotations

import json
import threading
import time
from typing import (Any, Callable, Dict, Hashable, Iterator, List, NamedTuple, Optional, Sequence, Set, Tuple, Type,
                    TypeVar)

from .._protocol.methods import TOOLS_LIST
from .._rpc.jsonrpc import JSONObject
from .._rpc.options import CallOptions
from ..exceptions import MCPSyncError, ProtocolError
from ..types import MCPObject, PromptList, ResourceList, Tool, ToolList
from .._session.session import Session
from .toolbook import ToolBook

__all__ = ["ListCache", "Lists", "MAX_LISTING_BYTES", "MAX_PAGES", "credential_of", "listing_budget", "paginate"]

# -- paging --------------------------------------------------------------------------------------

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


# -- the cache -----------------------------------------------------------------------------------

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


# -- fetching ------------------------------------------------------------------------------------

O = TypeVar("O", bound=MCPObject)

_RICH_LISTS: Dict[str, Callable[[List[Any]], List[Any]]] = {
    "tools": ToolList, "resources": ResourceList, "prompts": PromptList, "skills": list,
}


class Lists:
    """One client's list requests: tools, resources, prompts (cached), and any other paginated list."""

    def __init__(self, session: Session, tools: ToolBook) -> None:
        self._session = session
        self._tools = tools
        self.cache = ListCache()

    def tools(self, refresh: bool, options: CallOptions) -> List[Tool]:
        """Every tool (see ``Client.list_tools``).

        Raises:
            CapabilityError: the server offers no tools.
        """
        self._session.require("tools", what="list tools")
        return self.cached("tools", TOOLS_LIST, "tools", Tool, refresh, options)

    def iter_tools(self, options: CallOptions) -> Iterator[Tool]:
        """The tools page by page, each page fetched when the one before is used up (see ``Client.iter_tools``).

        Raises (on the first ``next()``, as a generator does):
            CapabilityError: the server offers no tools.
        """
        self._session.require("tools", what="list tools")
        for item in self.pages(TOOLS_LIST, "tools", options):
            for accepted in self.accept_tools([item]):
                yield Tool.from_dict(accepted)

    def repeatable(self, name: str, options: CallOptions) -> bool:
        """Whether tool ``name`` is declared safe to run twice (see ``ToolBook.repeatable``), listing the
        tools first when they were not; False when that fails (unknown is not safe)."""
        known = self._tools.repeatable(name)
        if known is None:
            try:
                self.tools(False, options)
            except MCPSyncError:
                return False
            known = self._tools.repeatable(name)
        return bool(known)

    def pages(self, method: str, key: str, options: CallOptions) -> Iterator[JSONObject]:
        """The items under ``key`` of every page of ``method``, fetched as they are needed."""
        session = self._session
        return paginate(lambda params: session.call(method, params, options), method, key,
                        listing_budget(session.transport))

    def cached(self, cache_key: str, method: str, key: str, kind: Type[O], refresh: bool,
               options: CallOptions) -> List[O]:
        """The whole list ``cache_key`` (``"tools"``, ``"resources"``, ``"prompts"``, ``"skills"``) as ``kind`` objects.

        Served from the cache unless ``refresh``; a new list the caller may change.
        """
        rich = _RICH_LISTS[cache_key]
        session = self._session
        credential = credential_of(session.transport)
        cached = None if refresh else self.cache.get(cache_key, credential)
        if cached is not None:
            return rich(cached)  # a fresh list: callers may mutate what they get
        generation = self.cache.generation
        pages: List[Tuple[Any, Any]] = []

        def fetch(params: Optional[JSONObject]) -> Any:
            page = session.call(method, params, options)
            if isinstance(page, dict):
                pages.append((page.get("ttlMs"), page.get("cacheScope")))
            return page

        found = list(paginate(fetch, method, key, listing_budget(session.transport)))
        if cache_key == "tools":
            found = self.accept_tools(found, complete=True)
        items = [kind.from_dict(item) for item in found]
        # Cache only if no list_changed arrived while the pages were being fetched.
        if session.modern:
            self.cache.store_pages(cache_key, items, pages, generation, credential)
        elif session.announces(cache_key):
            self.cache.store_until_changed(cache_key, items, generation)
        return rich(items)

    def accept_tools(self, tools: List[JSONObject], complete: bool = False) -> List[JSONObject]:
        """Tool definitions just listed, remembered (and screened over modern HTTP); returns those to hand out."""
        session = self._session
        return self._tools.accept(tools, complete=complete, header_routing=session.header_routing,
                                  routing=session.routing)
