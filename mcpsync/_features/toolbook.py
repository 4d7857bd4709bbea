"""What a tool call needs to know about the tools: their definitions, header plans and task support.

* Header plans (2026-07-28 over Streamable HTTP): a tool's ``x-mcp-header``
  annotations name the arguments the transport copies into ``Mcp-Param-*`` headers.
  The plans come from the tool list, so the first call lists the tools if no list was
  fetched yet, and a ``-32020`` answer (the headers do not match) lists them again
  and retries once. A tool whose annotations are invalid is left out, with a WARNING.
* Task support (2025-11-25): a server that offers ``tasks.requests.tools.call`` says
  per tool, in ``execution.taskSupport``, whether it may or must run as a task.

:class:`ToolBook` keeps both for one client. Threads: any thread may use it; each
update replaces whole dicts, so a reader sees the old or the new set, never half of one.
Nothing here blocks except the calls it is handed (``refresh`` and ``send``).
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Mapping, Optional

from .._log import getLogger
from .._rpc.jsonrpc import JSONObject
from ..exceptions import MCPError
from .._session.routing import HeaderPlan, RoutingHeaders, screen_tools
from .._session.errors import HEADER_MISMATCH

__all__ = ["ToolBook", "offers_tool_tasks"]

log = getLogger("mcpsync.client")


def offers_tool_tasks(capabilities: Mapping[str, Any]) -> bool:
    """Whether a (2025-11-25) server runs tool calls as tasks: ``tasks.requests.tools.call``."""
    tasks = capabilities.get("tasks")
    requests = tasks.get("requests") if isinstance(tasks, dict) else None
    tools = requests.get("tools") if isinstance(requests, dict) else None
    return isinstance(tools, dict) and "call" in tools


class ToolBook:
    """The tool definitions last listed and, on modern Streamable HTTP, their header plans."""

    def __init__(self, server_name: str) -> None:
        self._server_name = server_name
        self._defs: Dict[str, JSONObject] = {}
        self._plans: Optional[Dict[str, HeaderPlan]] = None  # None until the tools were listed

    def accept(self, tools: List[JSONObject], *, complete: bool, header_routing: bool,
               routing: RoutingHeaders) -> List[JSONObject]:
        """Remember listed tools (``complete``: the whole list); with ``header_routing``, screen them.

        Returns the tools to hand out: over modern HTTP without those whose
        ``x-mcp-header`` annotations are invalid. The plans go to ``routing`` (the session's headers).
        """
        if header_routing:
            tools, plans = screen_tools(tools, self._server_name)
            merged = plans if complete else {**(self._plans or {}), **plans}
            self._plans = merged
            routing.plans = merged
        named = {str(tool.get("name")): tool for tool in tools}
        self._defs = named if complete else {**self._defs, **named}
        return tools

    def no_tools(self) -> None:
        """The server offers no tools: there are no plans to wait for."""
        self._plans = {}

    def task_support(self, name: str) -> Optional[str]:
        """A listed tool's ``execution.taskSupport`` (None if unknown or unset)."""
        execution = self._defs.get(name, {}).get("execution")
        support = execution.get("taskSupport") if isinstance(execution, dict) else None
        return support if isinstance(support, str) else None

    def knows(self, name: str) -> bool:
        return name in self._defs

    def repeatable(self, name: str) -> Optional[bool]:
        """Whether a listed tool is declared safe to run twice (``idempotentHint`` or ``readOnlyHint``
        in its annotations); None when the tool was not listed."""
        if name not in self._defs:
            return None
        annotations = self._defs[name].get("annotations")
        if not isinstance(annotations, dict):
            return False
        return annotations.get("idempotentHint") is True or annotations.get("readOnlyHint") is True

    def call_with_plans(self, name: str, send: Callable[[], Any], refresh: Callable[[], None]) -> Any:
        """Modern Streamable HTTP: ``send()`` the call of tool ``name`` with its header plan in place.

        ``refresh()`` lists the tools again (then :meth:`accept` gets the plans).

        Raises:
            whatever ``send`` raises, and a ``-32020`` only if the retry gets it too.
        """
        if self._plans is None:
            refresh()  # its x-mcp-header plan, before the first call
        try:
            return send()
        except MCPError as exc:
            if exc.code != HEADER_MISMATCH:
                raise
            log.info("[%s] %s: the server says the headers do not match; listing the tools again",
                     self._server_name, name)
        refresh()
        return send()
