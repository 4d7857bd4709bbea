"""The request metadata headers of modern (2026-07-28) Streamable HTTP: the session's, handed to the transport.

Every modern POST mirrors parts of its JSON-RPC body into headers, so that
gateways can route without parsing the body: ``Mcp-Method``, ``Mcp-Name``
(the tool or prompt name, the resource URI, the task id) and
``Mcp-Param-<Name>`` for each tool argument whose schema property carries
``x-mcp-header: <Name>``. :func:`routing_headers` derives all of them from the
message in one place, so they cannot drift from the body. The client turns
each tool's ``inputSchema`` into a :data:`HeaderPlan` with :func:`header_plan`
(which also rejects invalid annotations). The transport knows none of this: the session
hands it a :class:`RoutingHeaders` as a plain header provider (``headers(message)``),
whose plans the tool book keeps current.
"""

from __future__ import annotations

import re
from typing import Any, Dict, Iterator, List, Mapping, Optional, Tuple

from .._log import getLogger
from .._protocol.methods import ROUTING_FIELDS, TOOLS_CALL

log = getLogger("mcpsync.client")

#: For one tool: property path (a chain of ``properties`` keys) -> header name token.
HeaderPlan = Dict[Tuple[str, ...], str]

X_MCP_HEADER = "x-mcp-header"
PARAM_PREFIX = "Mcp-Param-"

# Where Mcp-Name comes from, per method (the tasks extension adds the task methods).
_NAME_FIELDS = ROUTING_FIELDS
_TOKEN = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")  # RFC 9110 tchar
_SAFE = re.compile(r"^[\x20-\x7e\t]*$")
_SENTINEL = re.compile(r"^=\?base64\?.*\?=$", re.DOTALL)
_PRIMITIVES = ("string", "integer", "boolean")
_MAX_SAFE_INTEGER = 2 ** 53 - 1
# JSON Schema keywords whose values are subschemas; leaving the ``properties`` chain through
# any of them makes an x-mcp-header below it unreachable, hence invalid.
_SUBSCHEMA = ("items", "contains", "additionalProperties", "propertyNames", "unevaluatedItems",
              "unevaluatedProperties", "not", "if", "then", "else", "contentSchema")
_SUBSCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems")
_SUBSCHEMA_MAPS = ("patternProperties", "dependentSchemas", "$defs", "definitions")


def encode_value(value: str) -> str:
    """A header value: ``value`` itself when it is safe plain ASCII, else the ``=?base64?...?=`` form.

    Unsafe means a character outside visible ASCII, space and tab; leading or
    trailing whitespace; or a value that itself looks like the sentinel.
    """
    if _SAFE.match(value) and value == value.strip(" \t") and not _SENTINEL.match(value):
        return value
    import base64  # only for a value that is not plain ASCII: keeps `import mcpsync` light

    return "=?base64?" + base64.b64encode(value.encode("utf-8")).decode("ascii") + "?="


def routing_headers(message: Mapping[str, Any], plans: Mapping[str, HeaderPlan]) -> Dict[str, str]:
    """``Mcp-Method``, ``Mcp-Name`` and ``Mcp-Param-*`` for one outgoing request."""
    method = str(message.get("method"))
    params = message.get("params")
    params = params if isinstance(params, dict) else {}
    headers = {"Mcp-Method": method}
    field = _NAME_FIELDS.get(method)
    if field is not None and isinstance(params.get(field), str):
        headers["Mcp-Name"] = encode_value(params[field])
    if method == TOOLS_CALL:
        plan = plans.get(str(params.get("name")))
        arguments = params.get("arguments")
        if plan and isinstance(arguments, dict):
            headers.update(param_headers(plan, arguments))
    return headers


class RoutingHeaders:
    """``headers(message)``: the routing headers of one outgoing request, from the tools' current plans.

    The session gives it to the transport (``set_request_headers``) in the 2026-07-28 era; the
    tool book replaces :attr:`plans` whole when tools are listed, so a sender reads one set.
    """

    __slots__ = ("plans",)

    def __init__(self) -> None:
        #: Per tool name, which arguments go into ``Mcp-Param-*`` headers.
        self.plans: Mapping[str, HeaderPlan] = {}

    def __call__(self, message: Mapping[str, Any]) -> Dict[str, str]:
        return routing_headers(message, self.plans)


def param_headers(plan: HeaderPlan, arguments: Mapping[str, Any]) -> Dict[str, str]:
    """The ``Mcp-Param-*`` headers for ``arguments``; absent or null values give no header."""
    headers: Dict[str, str] = {}
    for path, token in plan.items():
        value: Any = arguments
        for key in path:
            value = value.get(key) if isinstance(value, Mapping) else None
        text = _render(value)
        if text is not None:
            headers[PARAM_PREFIX + token] = encode_value(text)
    return headers


def _render(value: Any) -> Optional[str]:
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value) if -_MAX_SAFE_INTEGER <= value <= _MAX_SAFE_INTEGER else None
    if isinstance(value, str):
        return value
    return None  # numbers and structures are never mirrored


def header_plan(input_schema: Any) -> HeaderPlan:
    """The tool's header plan (empty when it annotates nothing).

    Raises:
        ValueError: an ``x-mcp-header`` annotation is invalid (the text says which and why).
    """
    plan: HeaderPlan = {}
    seen: Dict[str, str] = {}
    for path, schema in _positions(input_schema):
        if X_MCP_HEADER not in schema:
            continue
        token = schema[X_MCP_HEADER]
        if not path:
            place = "the schema root" if path == () else "a subschema"
            raise ValueError(f"{X_MCP_HEADER} on {place} is not reachable through 'properties' alone")
        where = ".".join(path)
        if not isinstance(token, str) or not _TOKEN.match(token):
            raise ValueError(f"{X_MCP_HEADER} {token!r} on {where!r} is not a valid header name")
        if schema.get("type") not in _PRIMITIVES:
            raise ValueError(f"{X_MCP_HEADER} on {where!r} needs a string, integer or boolean property, "
                             f"not {schema.get('type')!r}")
        if token.lower() in seen:
            raise ValueError(f"{X_MCP_HEADER} {token!r} on {where!r} repeats the one on {seen[token.lower()]!r}")
        seen[token.lower()] = where
        plan[path] = token
    return plan


def screen_tools(tools: List[Dict[str, Any]], server: str) -> Tuple[List[Dict[str, Any]], Dict[str, HeaderPlan]]:
    """The tools a modern HTTP client may use, and their header plans.

    A tool with an invalid ``x-mcp-header`` is left out (with a WARNING naming
    it and why), so one bad definition does not spoil the others.
    """
    kept: List[Dict[str, Any]] = []
    plans: Dict[str, HeaderPlan] = {}
    for tool in tools:
        try:
            plan = header_plan(tool.get("inputSchema"))
        except ValueError as exc:
            log.warning("[%s] Leaving out tool %r: %s", server, tool.get("name"), exc)
            continue
        kept.append(tool)
        if plan:
            plans[str(tool.get("name"))] = plan
    return kept, plans


def _positions(root: Any) -> Iterator[Tuple[Optional[Tuple[str, ...]], Dict[str, Any]]]:
    """Every subschema with its ``properties`` path (None once another keyword was crossed)."""
    stack: List[Tuple[Optional[Tuple[str, ...]], Any]] = [((), root)]
    while stack:
        path, node = stack.pop()
        if not isinstance(node, dict):
            continue
        yield path, node
        for keyword, value in node.items():
            stack.extend(_below(path, keyword, value))


def _below(path: Optional[Tuple[str, ...]], keyword: str,
           value: Any) -> List[Tuple[Optional[Tuple[str, ...]], Any]]:
    """The subschemas under one keyword of the schema at ``path``, each with its ``properties`` path."""
    if keyword == "properties" and isinstance(value, dict):
        return [((*path, name) if path is not None else None, sub) for name, sub in value.items()]
    return [(None, sub) for sub in _subschemas(keyword, value)]


def _subschemas(keyword: str, value: Any) -> List[Any]:
    """The subschemas another keyword holds: itself, a list's items, or a mapping's values."""
    if keyword in _SUBSCHEMA:
        return [value]
    if keyword in _SUBSCHEMA_LISTS and isinstance(value, list):
        return value
    if keyword in _SUBSCHEMA_MAPS and isinstance(value, dict):
        return list(value.values())
    return []
