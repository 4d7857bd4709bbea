"""Fetching the server's lists: every page, through the list cache, the tools screened on the way.

:class:`Lists` walks cursor pagination (:mod:`mcpsync._session.pagination`) with the
session's call pipeline, serves and stores whole lists in the
:class:`~mcpsync._session.listcache.ListCache` by the era's rules (legacy: until
``list_changed``; modern: ``ttlMs``/``cacheScope`` per page), and hands tool lists to
the :class:`~mcpsync._features.toolbook.ToolBook` (definitions, header plans).

Threads: any number of threads may list at once; each blocks for its own pages.
A list fetched while a ``list_changed`` arrived is returned but not stored.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple, Type, TypeVar

from .._protocol.methods import TOOLS_LIST
from .._rpc.jsonrpc import JSONObject
from .._rpc.options import CallOptions
from ..exceptions import MCPSyncError
from ..types import MCPObject, PromptList, ResourceList, Tool, ToolList
from .._session.listcache import ListCache, credential_of
from .._session.pagination import listing_budget, paginate
from .._session.session import Session
from .toolbook import ToolBook

__all__ = ["Lists"]

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
