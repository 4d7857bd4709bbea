"""The manager's tool index: each server's slice of tools, under one namespace of qualified names.

Every managed server contributes one slice (live tools, or *deferred* ones served
from the cache while it connects). Replacing a slice never touches another's; the
index of qualified names (see :mod:`mcpsync._fleet.naming`) is rebuilt from all
slices in config order, so the names stay stable and unique.

Threads: a :class:`ToolIndex` has no lock of its own. Every method is called with
the manager's lock held (hence the ``_locked`` names on the ones that change it);
nothing here blocks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Iterable, List, Optional, Set, Tuple

from ..config import ServerConfig
from ..exceptions import UnknownToolError
from ..types import Tool
from .naming import assign, qualified_name
from .policy import refusal, split_tools

__all__ = ["ManagedTool", "ToolIndex"]


@dataclass(frozen=True)
class ManagedTool:
    """One tool of one managed server.

    Attributes:
        qualified_name: ``mcp_<server>_<tool>``, unique in the manager (see docs/manager.md).
        server: the server's name.
        name: the tool's own name on its server (what is sent in ``tools/call``).
        tool: the typed :class:`~mcpsync.Tool` (description, input schema...).
        deferred: True while the tool comes from the cache and its server is still connecting.
    """

    qualified_name: str
    server: str
    name: str
    tool: Tool
    deferred: bool = False

    @property
    def description(self) -> Optional[str]:
        """The tool's description, as the server gives it."""
        return self.tool.description


class ToolIndex:
    """Slices of tools per server, and the qualified-name index built over them (manager lock held)."""

    def __init__(self) -> None:
        self._slices: Dict[str, Tuple[List[Tool], bool]] = {}  # server -> (tools, deferred)
        self._index: Dict[str, ManagedTool] = {}
        self._warned: Set[Tuple[str, str]] = set()  # name clashes already logged
        # server -> (its config, qualified name -> tool name) of the tools its config filters out
        self._hidden: Dict[str, Tuple[ServerConfig, Dict[str, str]]] = {}

    def apply_locked(self, order: Iterable[str], name: str, tools: List[Tool], deferred: bool,
                     config: Optional[ServerConfig] = None) -> bool:
        """Replace ``name``'s slice; False when deferred (cached) tools would replace live ones.

        ``order`` is every managed server's name, in config order. The tools ``config``'s
        ``enabled_tools``/``disabled_tools`` filter out are left out of the slice.
        """
        current = self._slices.get(name)
        if deferred and current is not None and not current[1]:
            return False  # live tools already arrived: never replace them with cached ones
        offered, hidden = split_tools(config, tools)
        self._slices[name] = (offered, deferred)
        if config is not None and hidden:
            self._hidden[name] = (config, {qualified_name(name, tool): tool for tool in hidden})
        else:
            self._hidden.pop(name, None)
        self._reindex(list(order))
        return True

    def drop_locked(self, order: Iterable[str], name: str) -> bool:
        """Forget ``name``'s slice; True if it had one."""
        self._hidden.pop(name, None)
        if self._slices.pop(name, None) is None:
            return False
        self._reindex(list(order))
        return True

    def has(self, name: str) -> bool:
        return name in self._slices

    def count(self, name: str) -> int:
        """How many tools ``name`` contributes."""
        return len(self._slices.get(name, ((), False))[0])

    def get(self, qualified_name: str) -> Optional[ManagedTool]:
        return self._index.get(qualified_name)

    def unknown(self, name: str) -> UnknownToolError:
        """The error for a name :meth:`get` does not know: :class:`ToolNotAllowed` when it names a
        tool a server's config filters out, else :class:`UnknownToolError`."""
        for config, hidden in self._hidden.values():
            refused = refusal(config, hidden[name], name) if name in hidden else None
            if refused is not None:
                return refused
        return UnknownToolError(name)

    def tools(self, servers: Set[str]) -> List[ManagedTool]:
        """The indexed tools of ``servers``, in index order."""
        return [tool for tool in self._index.values() if tool.server in servers]

    def _reindex(self, order: List[str]) -> None:
        pairs = [(name, tool.name) for name in order if name in self._slices for tool in self._slices[name][0]]
        names = assign(pairs, self._warned)
        index: Dict[str, ManagedTool] = {}
        for name in order:
            tools, deferred = self._slices.get(name, ([], False))
            for tool in tools:
                qualified = names[(name, tool.name)]
                if qualified not in index:
                    index[qualified] = ManagedTool(qualified, name, tool.name, tool, deferred)
        self._index = index
