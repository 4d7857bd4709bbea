"""A FakeServer read back from a cassette: the recorded tools and resources, answering as recorded.

The server's name and instructions, its tools (from ``tools/list``) and resources (from
``resources/list``) are declared as they were listed; a tool call answers with the result
recorded for that tool and those arguments, and a resource read with the contents recorded
for that URI. A call the cassette did not record returns an ``isError`` result saying so
(the fake server then records it like any other call, for the test's assertions).
"""

from __future__ import annotations

import base64
import json
from typing import Any, Callable, Dict, List, Optional, Protocol, Tuple, TypeVar, Union

from .._protocol.methods import INITIALIZE, RESOURCES_LIST, RESOURCES_READ, SERVER_DISCOVER, TOOLS_CALL, TOOLS_LIST
from .._cassettes._errors import CassetteError
from .._cassettes._format import read
from ..types import CallToolResult

__all__ = ["Declares", "load_cassette"]

F = TypeVar("F", bound=Callable[..., Any])


class Declares(Protocol):
    """What a cassette declares on (the ``FakeServer``, which calls this module: never named here)."""

    name: str
    instructions: Optional[str]

    def add_tool(self, fn: Callable[..., Any], **options: Any) -> None: ...

    def resource(self, uri: str, *, name: Optional[str] = None, description: Optional[str] = None,
                 mime_type: Optional[str] = None, title: Optional[str] = None) -> Callable[[F], F]: ...


S = TypeVar("S", bound=Declares)

_WIRE_ONLY = ("_meta", "resultType", "cacheScope", "ttlMs")


def _exchanges(path: str, connection: int) -> List[Tuple[Dict[str, Any], Dict[str, Any]]]:
    """(request, result) pairs of the recorded connection, results matched by id."""
    recording = read(path)
    if not 0 <= connection < len(recording.connections):
        raise CassetteError(f"The cassette {path} holds {len(recording.connections)} connection(s), numbered from 0: "
                            f"there is no connection {connection}")
    requests: Dict[Any, Dict[str, Any]] = {}
    pairs = []
    for event in recording.connections[connection].events:
        messages = event.data if isinstance(event.data, list) else [event.data]
        for message in messages:
            if not isinstance(message, dict):
                continue
            if event.kind == "send" and "method" in message and "id" in message:
                requests[message["id"]] = message
            elif event.kind == "recv" and "method" not in message and isinstance(message.get("result"), dict):
                request = requests.pop(message.get("id"), None)
                if request is not None:
                    pairs.append((request, message["result"]))
    return pairs


def _plain(result: Dict[str, Any]) -> Dict[str, Any]:
    return {k: v for k, v in result.items() if k not in _WIRE_ONLY}


def load_cassette(server: S, path: str, connection: int = 0) -> S:
    """Declare on ``server`` what connection ``connection`` of the cassette at ``path`` listed; returns it.

    Raises:
        CassetteError: the cassette is unreadable, or has no such connection.
    """
    pairs = _exchanges(path, connection)
    calls: Dict[Tuple[str, str], Dict[str, Any]] = {}
    reads: Dict[str, List[Any]] = {}
    for request, result in pairs:
        params = request.get("params") or {}
        method = request["method"]
        if method in (INITIALIZE, SERVER_DISCOVER):
            info = result.get("serverInfo") or (result.get("_meta") or {}).get("io.modelcontextprotocol/serverInfo")
            if isinstance(info, dict) and isinstance(info.get("name"), str):
                server.name = info["name"]
            if isinstance(result.get("instructions"), str):
                server.instructions = result["instructions"]
        elif method == TOOLS_CALL:
            key = (str(params.get("name")), json.dumps(params.get("arguments") or {}, sort_keys=True))
            calls[key] = _plain(result)
        elif method == RESOURCES_READ:
            reads[str(params.get("uri"))] = list(result.get("contents") or [])
    for request, result in pairs:
        if request["method"] == TOOLS_LIST:
            for tool in result.get("tools") or []:
                if isinstance(tool, dict) and isinstance(tool.get("name"), str):
                    _declare_tool(server, tool, calls, path)
        elif request["method"] == RESOURCES_LIST:
            for resource in result.get("resources") or []:
                if isinstance(resource, dict) and isinstance(resource.get("uri"), str):
                    _declare_resource(server, resource, reads.get(resource["uri"]))
    return server


def _declare_tool(server: Declares, tool: Dict[str, Any], calls: Dict[Tuple[str, str], Dict[str, Any]],
                  path: str) -> None:
    name = tool["name"]

    def answer(**arguments: Any) -> CallToolResult:
        recorded = calls.get((name, json.dumps(arguments, sort_keys=True)))
        if recorded is None:
            raise LookupError(f"The cassette {path} holds no call of tool {name!r} with the arguments "
                              f"{json.dumps(arguments, sort_keys=True)[:200]}")
        return CallToolResult.from_dict(recorded)

    server.add_tool(answer, name=name, description=tool.get("description"),
                    input_schema=tool.get("inputSchema") or {"type": "object"},
                    output_schema=tool.get("outputSchema"), title=tool.get("title"),
                    annotations=tool.get("annotations"))


def _declare_resource(server: Declares, resource: Dict[str, Any], contents: Any) -> None:
    uri = resource["uri"]

    def content() -> Union[str, bytes]:
        if not contents:
            raise LookupError(f"The cassette holds no read of the resource {uri}")
        first = contents[0]
        if isinstance(first.get("blob"), str):
            return base64.b64decode(first["blob"])
        return str(first.get("text", ""))

    server.resource(uri, name=resource.get("name"), description=resource.get("description"),
                    mime_type=resource.get("mimeType"), title=resource.get("title"))(content)
