"""Hand a server's tools to a model: tool definitions and tool results for four LLM APIs.

::

    import mcpsync
    from mcpsync.llm import Toolbox

    with mcpsync.connect(["python", "server.py"]) as client:
        toolbox = Toolbox(client, api="anthropic")
        tools = toolbox.tools()                  # pass as tools=... to the API
        # ... the model answers with a tool_use block ...
        block = toolbox.run(tool_use)            # a tool_result block for the next user message

``api`` is one of ``"openai-chat"`` (Chat Completions), ``"openai-responses"``
(Responses), ``"anthropic"`` (Messages) and ``"gemini"`` (google-genai). The vendors'
SDKs are never imported: tool calls are read by attribute or key, and everything returned
is a plain dict their ``*Param`` types accept. See docs/llm.md for what each API is given.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Dict, List, Literal, Optional, Tuple, Union

from ..cancel import CancelToken
from ..client import Client
from ..exceptions import MCPError, MissingClientCapability, UnknownToolError, URLElicitationRequired
from ..manager import Manager
from ..types import CallToolResult, Tool
from ._apis import APIS, BadCall, Call
from ._names import NameMap
from ._output import error_result, pieces

__all__ = ["API_NAMES", "ApiName", "Toolbox", "run", "tools"]

ApiName = Literal["openai-chat", "openai-responses", "anthropic", "gemini"]
API_NAMES: Tuple[str, ...] = tuple(APIS)
"""The values ``api`` takes."""

Source = Union[Client, Manager]


@dataclass(frozen=True)
class _Entry:
    server: Optional[str]  # None for a Client
    call_name: str  # what call_tool is given: the tool's name, or a manager's qualified name
    tool: Tool


class Toolbox:
    """A client's or a manager's tools, named for one model API, and a runner for its tool calls.

    Args:
        source: a connected :class:`~mcpsync.Client`, or a :class:`~mcpsync.Manager` (its
            tools under their qualified names ``mcp_<server>_<tool>``).
        api: ``"openai-chat"``, ``"openai-responses"``, ``"anthropic"`` or ``"gemini"``.

    Names: a tool keeps its name when every API accepts it (``^[A-Za-z_][A-Za-z0-9_-]{0,63}$``);
    any other gets a stable replacement made from the name alone (see docs/llm.md), the same
    in every API and across refreshes. :meth:`tools` and :meth:`run` use one map, rebuilt
    each time :meth:`tools` lists the tools, and once more when :meth:`run` meets a name the
    map does not hold (a tool the server added since).

    Thread safety: a Toolbox may be shared by any number of threads; :meth:`run` calls run
    at once, each blocking only its own thread, exactly as ``call_tool`` does.
    """

    def __init__(self, source: Source, api: ApiName = "openai-chat") -> None:
        if api not in APIS:
            raise ValueError(f"unknown api {api!r}: use one of {', '.join(API_NAMES)}")
        if not isinstance(source, (Client, Manager)):
            raise TypeError(f"a Toolbox needs an mcpsync Client or Manager, not {type(source).__name__}")
        self.source = source
        self.api: ApiName = api
        self._api = APIS[api]
        self._lock = threading.Lock()
        self._map: Optional[NameMap[_Entry]] = None

    def __repr__(self) -> str:
        return f"<Toolbox api={self.api!r} source={self.source!r}>"

    # -- listing ----------------------------------------------------------------------------

    def tools(self, *, refresh: bool = False) -> List[Dict[str, Any]]:
        """The tool definitions, ready to pass as the API's ``tools`` argument.

        A list of one definition per tool; for Gemini, a list of one ``Tool`` dict holding
        every ``function_declarations`` entry (empty when there are no tools). Blocks while
        the tools are listed (a client's list is usually cached; ``refresh=True`` asks the
        server again).

        Raises:
            CapabilityError, RequestTimeout, TransportClosed: as ``Client.list_tools``.
        """
        names = self._rebuild(refresh)
        return self._api.wrap([self._api.definition(name, entry.tool) for name, entry in names.items()])

    def names(self) -> Dict[str, Tuple[Optional[str], str]]:
        """Model-facing name -> (server, MCP tool name) for the tools last listed (server is None
        for a Client). Lists the tools first if they were never listed."""
        names = self._current()
        return {name: (entry.server, entry.tool.name) for name, entry in names.items()}

    def resolve(self, name: str) -> Optional[Tuple[Optional[str], str]]:
        """The (server, MCP tool name) a model-facing name stands for, or None."""
        entry = self._current().get(name)
        return None if entry is None else (entry.server, entry.tool.name)

    def _current(self) -> NameMap[_Entry]:
        with self._lock:
            names = self._map
        return names if names is not None else self._rebuild(False)

    def _rebuild(self, refresh: bool) -> NameMap[_Entry]:
        if isinstance(self.source, Manager):
            entries = [(tool.qualified_name, _Entry(tool.server, tool.qualified_name, tool.tool))
                       for tool in self.source.tools()]
        else:
            entries = [(tool.name, _Entry(None, tool.name, tool)) for tool in self.source.list_tools(refresh=refresh)]
        names = NameMap(entries)
        with self._lock:
            self._map = names
        return names

    # -- running ----------------------------------------------------------------------------

    def run(self, tool_call: Any, *, timeout: Optional[float] = None,
            cancel: Optional[CancelToken] = None) -> Dict[str, Any]:
        """Run a model's tool call through ``call_tool`` and return the API's result message.

        ``tool_call`` is the SDK's own object or its dict form: a Chat Completions
        ``ChatCompletionMessageToolCall``, a Responses ``ResponseFunctionToolCall``, an
        Anthropic ``ToolUseBlock``, a Gemini ``FunctionCall`` or a ``Part`` holding one.
        Returns a ``{"role": "tool", ...}`` message, a ``function_call_output`` item, a
        ``tool_result`` block or a ``{"function_response": ...}`` part.

        Blocks like ``call_tool``; ``timeout`` and ``cancel`` are passed to it. What the model
        got wrong comes back as an error result it can read, never raised: arguments that
        are not a JSON object, a name no tool has, and the server refusing the call with a
        JSON-RPC error (such as invalid params). A tool's own ``isError`` result is passed on.

        Raises:
            TypeError: ``tool_call`` is not a tool call of this API.
            RequestTimeout, RequestCancelled, TransportClosed, ServerNotConnected: the call
                could not be made or answered; as ``call_tool``.
            MissingClientCapability, URLElicitationRequired: the server needs something of
                the client or the user, not of the model.
        """
        try:
            call = self._api.read(tool_call)
        except BadCall as error:
            raise TypeError(str(error)) from None
        entry = self._current().get(call.name)
        if entry is None:
            entry = self._rebuild(False).get(call.name)
        if entry is None:
            known = ", ".join(self._current().names()[:20]) or "none"
            return self._result(call, error_result(f"Error: there is no tool named {call.name!r}. "
                                                   f"The tools are: {known}."))
        if call.problem is not None:
            return self._result(call, error_result(f"Error: tool {call.name!r} was not called: {call.problem}."))
        arguments = self._api.arguments(entry.tool, call.arguments)
        try:
            # Two branches for the type checker only: the two call_tool signatures differ.
            if isinstance(self.source, Manager):
                result = self.source.call_tool(entry.call_name, arguments, timeout=timeout, cancel=cancel)
            else:
                result = self.source.call_tool(entry.call_name, arguments, timeout=timeout, cancel=cancel)
        except (MissingClientCapability, URLElicitationRequired):
            raise
        except UnknownToolError:
            return self._result(call, error_result(f"Error: tool {call.name!r} is no longer available."))
        except MCPError as error:
            return self._result(call, error_result(f"Error: the server refused the call: {error.message}"))
        return self._result(call, result)

    def _result(self, call: Call, result: CallToolResult) -> Dict[str, Any]:
        return self._api.result(call, pieces(result))


def tools(source: Source, api: ApiName = "openai-chat") -> List[Dict[str, Any]]:
    """``Toolbox(source, api).tools()``: the tool definitions for one API, in one call."""
    return Toolbox(source, api).tools()


def run(source: Source, tool_call: Any, api: ApiName = "openai-chat", *, timeout: Optional[float] = None,
        cancel: Optional[CancelToken] = None) -> Dict[str, Any]:
    """``Toolbox(source, api).run(tool_call)``: list the tools (to map the name back), then run
    the call. A :class:`Toolbox` kept between calls lists them once."""
    return Toolbox(source, api).run(tool_call, timeout=timeout, cancel=cancel)
