"""Typed MCP results: tools, content blocks, resources, prompts.

Each object wraps the wire dict it came from. Attributes are snake_case
views of the camelCase wire fields; ``to_dict()`` gives the wire form back,
with every field the server sent, including ones this version does not know.
Parsing never fails on unknown fields or unknown content types.
"""

from __future__ import annotations

import copy
from typing import Any, Dict, Generic, List, Optional, Tuple, Type, TypeVar, cast, overload

from .exceptions import ToolError

__all__ = [
    "AudioContent",
    "BlobResourceContents",
    "CallToolResult",
    "CompleteResult",
    "Content",
    "EmbeddedResource",
    "GetPromptResult",
    "ImageContent",
    "Implementation",
    "MCPObject",
    "Prompt",
    "PromptArgument",
    "PromptList",
    "PromptMessage",
    "ReadResourceResult",
    "Resource",
    "ResourceContents",
    "ResourceLink",
    "ResourceList",
    "ResourceTemplate",
    "TextContent",
    "TextResourceContents",
    "Tool",
    "ToolList",
    "UnknownContent",
]

T = TypeVar("T")
M = TypeVar("M", bound="MCPObject")


class _Field(Generic[T]):
    """A read-only attribute backed by one key of the wire dict."""

    def __init__(self, key: str, default: T) -> None:
        self.key = key
        self.default = default

    @overload
    def __get__(self, obj: None, owner: Any) -> "_Field[T]": ...

    @overload
    def __get__(self, obj: "MCPObject", owner: Any) -> T: ...

    def __get__(self, obj: Optional["MCPObject"], owner: Any) -> Any:
        if obj is None:
            return self
        return obj._data.get(self.key, self.default)  # noqa: SLF001 same module: a field reads its object's dict


def _copy_json(value: Any) -> Any:
    """A deep copy of ``value``, iterative over dicts and lists (tuples become lists, as in JSON).

    The stack never grows with the nesting, so a schema of any depth copies; a value
    that is not a dict, list or tuple is copied with :func:`copy.deepcopy` (JSON's
    strings, numbers, booleans and null are returned as they are). Shared or circular
    containers are copied once, as :func:`copy.deepcopy` does.
    """
    if type(value) not in _CONTAINERS:
        return value if type(value) in _ATOMS else copy.deepcopy(value)
    seen: Dict[int, Any] = {}
    root: Any = {} if isinstance(value, dict) else []
    seen[id(value)] = root
    pending = [(value, root)]
    while pending:
        source, target = pending.pop()
        items = source.items() if isinstance(source, dict) else enumerate(source)
        for key, child in items:
            copied = _copy_child(child, seen, pending)
            if isinstance(target, dict):
                target[key] = copied
            else:
                target.append(copied)
    return root


def _copy_child(child: Any, seen: Dict[int, Any], pending: List[Tuple[Any, Any]]) -> Any:
    """``child``'s copy: an atom as it is, a container's (empty) copy made once per container and
    queued on ``pending`` to be filled, anything else deep-copied."""
    kind = type(child)
    if kind in _ATOMS:
        return child
    if kind not in _CONTAINERS and not isinstance(child, (dict, list, tuple)):
        return copy.deepcopy(child)
    copied = seen.get(id(child))
    if copied is None:
        copied = {} if isinstance(child, dict) else []
        seen[id(child)] = copied
        pending.append((child, copied))
    return copied


_ATOMS = frozenset((str, int, float, bool, type(None)))
_CONTAINERS = frozenset((dict, list, tuple))


class MCPObject:
    """Base of every typed result: a view over a wire dict."""

    __slots__ = ("_data",)
    _repr_fields: Tuple[str, ...] = ()

    def __init__(self, data: Optional[Dict[str, Any]] = None, **fields: Any) -> None:
        self._data: Dict[str, Any] = dict(data or {})
        self._data.update(fields)

    @classmethod
    def from_dict(cls: Type[M], data: Dict[str, Any]) -> M:
        """Wrap ``data`` (a wire dict, which the object then owns); non-dicts become empty."""
        obj = cls.__new__(cls)
        obj._data = data if isinstance(data, dict) else {}  # noqa: SLF001 the class builds its own instance
        return obj

    def to_dict(self) -> Dict[str, Any]:
        """The wire dict, camelCase keys, unknown fields included (a deep copy).

        Copied without recursion, so no depth of nesting raises RecursionError.
        """
        return cast(Dict[str, Any], _copy_json(self._data))

    @property
    def meta(self) -> Optional[Dict[str, Any]]:
        """The ``_meta`` member, if any."""
        value = self._data.get("_meta")
        return value if isinstance(value, dict) else None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, MCPObject) and type(other) is type(self) and other._data == self._data

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        parts = []
        for name in self._repr_fields:
            value = getattr(self, name)
            if value is None:
                continue
            text = repr(value)
            parts.append(f"{name}={text[:60] + '...' if len(text) > 60 else text}")
        return f"{type(self).__name__}({', '.join(parts)})"


class _RichList(List[M]):
    """A plain list that also renders as a table in notebooks."""

    _html: str = ""

    def _repr_html_(self) -> str:
        from . import _display

        renderer = getattr(_display, self._html)
        return str(renderer(self))


class ToolList(_RichList["Tool"]):
    """The list ``list_tools()`` returns: a list of Tool that shows as a table in notebooks."""

    _html = "tools_html"

    def _repr_markdown_(self) -> str:
        from ._display import tools_markdown

        return tools_markdown(self)


class ResourceList(_RichList["Resource"]):
    _html = "resources_html"


class PromptList(_RichList["Prompt"]):
    _html = "prompts_html"


class Implementation(MCPObject):
    """Who a peer says it is (``serverInfo``)."""

    __slots__ = ()
    _repr_fields = ("name", "version")
    name: _Field[str] = _Field("name", "")
    version: _Field[str] = _Field("version", "")
    title: _Field[Optional[str]] = _Field("title", None)


# -- content -----------------------------------------------------------------------------


class Content(MCPObject):
    """A content block of any type; see the subclasses."""

    __slots__ = ()
    _repr_fields: Tuple[str, ...] = ("type",)

    @property
    def type(self) -> str:
        return str(self._data.get("type", ""))

    @property
    def annotations(self) -> Optional[Dict[str, Any]]:
        return cast(Optional[Dict[str, Any]], self._data.get("annotations"))

    @staticmethod
    def parse(data: Any) -> "Content":
        """The typed block for ``data`` (``UnknownContent`` for types this version does not know)."""
        if not isinstance(data, dict):
            return UnknownContent({"type": "unknown", "value": data})
        kind = _CONTENT_TYPES.get(data.get("type"), UnknownContent)
        return kind(data)


class TextContent(Content):
    __slots__ = ()
    _repr_fields = ("text",)
    text: _Field[str] = _Field("text", "")


class ImageContent(Content):
    __slots__ = ()
    _repr_fields = ("mime_type",)
    data: _Field[str] = _Field("data", "")
    """Base64-encoded image bytes."""
    mime_type: _Field[str] = _Field("mimeType", "")


class AudioContent(Content):
    __slots__ = ()
    _repr_fields = ("mime_type",)
    data: _Field[str] = _Field("data", "")
    """Base64-encoded audio bytes."""
    mime_type: _Field[str] = _Field("mimeType", "")


class ResourceLink(Content):
    __slots__ = ()
    _repr_fields = ("uri", "name")
    uri: _Field[str] = _Field("uri", "")
    name: _Field[str] = _Field("name", "")
    title: _Field[Optional[str]] = _Field("title", None)
    description: _Field[Optional[str]] = _Field("description", None)
    mime_type: _Field[Optional[str]] = _Field("mimeType", None)


class ResourceContents(MCPObject):
    """The contents of one resource: see TextResourceContents and BlobResourceContents."""

    __slots__ = ()
    _repr_fields = ("uri", "mime_type")
    uri: _Field[str] = _Field("uri", "")
    mime_type: _Field[Optional[str]] = _Field("mimeType", None)

    @staticmethod
    def parse(data: Any) -> "ResourceContents":
        if isinstance(data, dict) and "blob" in data:
            return BlobResourceContents(data)
        if isinstance(data, dict) and "text" in data:
            return TextResourceContents(data)
        return ResourceContents(data if isinstance(data, dict) else {})


class TextResourceContents(ResourceContents):
    __slots__ = ()
    text: _Field[str] = _Field("text", "")


class BlobResourceContents(ResourceContents):
    __slots__ = ()
    blob: _Field[str] = _Field("blob", "")
    """Base64-encoded bytes."""


class EmbeddedResource(Content):
    __slots__ = ()
    _repr_fields = ("resource",)

    @property
    def resource(self) -> ResourceContents:
        return ResourceContents.parse(self._data.get("resource"))


class UnknownContent(Content):
    """A content block of a type this version does not know; ``to_dict()`` has it all."""

    __slots__ = ()


_CONTENT_TYPES: Dict[Any, Type[Content]] = {
    "text": TextContent,
    "image": ImageContent,
    "audio": AudioContent,
    "resource_link": ResourceLink,
    "resource": EmbeddedResource,
}


# -- tools ---------------------------------------------------------------------------


class Tool(MCPObject):
    """A tool the server offers."""

    __slots__ = ()
    _repr_fields = ("name", "description")
    name: _Field[str] = _Field("name", "")
    title: _Field[Optional[str]] = _Field("title", None)
    description: _Field[Optional[str]] = _Field("description", None)
    input_schema: _Field[Dict[str, Any]] = _Field("inputSchema", {"type": "object"})
    output_schema: _Field[Optional[Dict[str, Any]]] = _Field("outputSchema", None)
    annotations: _Field[Optional[Dict[str, Any]]] = _Field("annotations", None)
    icons: _Field[Optional[List[Dict[str, Any]]]] = _Field("icons", None)
    execution: _Field[Optional[Dict[str, Any]]] = _Field("execution", None)

    @property
    def ui_resource_uri(self) -> Optional[str]:
        """The ``ui://`` resource that renders this tool's results (the MCP Apps extension), if any.

        Read from ``_meta.ui.resourceUri`` (or the older flat ``_meta["ui/resourceUri"]``).
        :meth:`~mcpsync.Client.read_resource` of it returns the HTML, which a notebook shows
        in a sandboxed frame; mcpsync is not an Apps host, so the page is shown, never run.
        """
        meta = self.meta or {}
        ui = meta.get("ui")
        uri = ui.get("resourceUri") if isinstance(ui, dict) else meta.get("ui/resourceUri")
        return uri if isinstance(uri, str) and uri else None

    @property
    def required_arguments(self) -> List[str]:
        """Names listed in the input schema's ``required``."""
        required = self.input_schema.get("required") if isinstance(self.input_schema, dict) else None
        return [str(r) for r in required] if isinstance(required, list) else []


class CallToolResult(MCPObject):
    """What a tool call returned. ``is_error`` results are returned, not raised."""

    __slots__ = ()
    _repr_fields = ("is_error", "text")
    is_error: _Field[bool] = _Field("isError", False)
    structured_content: _Field[Any] = _Field("structuredContent", None)

    @property
    def content(self) -> List[Content]:
        blocks = self._data.get("content")
        return [Content.parse(b) for b in blocks] if isinstance(blocks, list) else []

    @property
    def text(self) -> str:
        """The text blocks joined with newlines (empty when there are none)."""
        return "\n".join(b.text for b in self.content if isinstance(b, TextContent))

    def _repr_html_(self) -> str:
        from ._display import call_result_html

        return call_result_html(self)

    def raise_for_error(self) -> "CallToolResult":
        """Raise :class:`~mcpsync.ToolError` if ``is_error``; else return self (for chaining)."""
        if self.is_error:
            raise ToolError(f"Tool returned an error: {self.text or '(no text)'}", self)
        return self


# -- resources -----------------------------------------------------------------------


class Resource(MCPObject):
    __slots__ = ()
    _repr_fields = ("uri", "name")
    uri: _Field[str] = _Field("uri", "")
    name: _Field[str] = _Field("name", "")
    title: _Field[Optional[str]] = _Field("title", None)
    description: _Field[Optional[str]] = _Field("description", None)
    mime_type: _Field[Optional[str]] = _Field("mimeType", None)
    size: _Field[Optional[int]] = _Field("size", None)


class ResourceTemplate(MCPObject):
    __slots__ = ()
    _repr_fields = ("uri_template", "name")
    uri_template: _Field[str] = _Field("uriTemplate", "")
    name: _Field[str] = _Field("name", "")
    title: _Field[Optional[str]] = _Field("title", None)
    description: _Field[Optional[str]] = _Field("description", None)
    mime_type: _Field[Optional[str]] = _Field("mimeType", None)


class ReadResourceResult(MCPObject):
    __slots__ = ()
    _repr_fields = ("contents",)

    @property
    def contents(self) -> List[ResourceContents]:
        items = self._data.get("contents")
        return [ResourceContents.parse(c) for c in items] if isinstance(items, list) else []

    def _repr_html_(self) -> str:
        from ._display import read_result_html

        return read_result_html(self)

    @property
    def text(self) -> str:
        """The text contents joined with newlines."""
        return "\n".join(c.text for c in self.contents if isinstance(c, TextResourceContents))


# -- prompts ---------------------------------------------------------------------------


class PromptArgument(MCPObject):
    __slots__ = ()
    _repr_fields = ("name", "required")
    name: _Field[str] = _Field("name", "")
    description: _Field[Optional[str]] = _Field("description", None)
    required: _Field[bool] = _Field("required", False)


class Prompt(MCPObject):
    __slots__ = ()
    _repr_fields = ("name", "description")
    name: _Field[str] = _Field("name", "")
    title: _Field[Optional[str]] = _Field("title", None)
    description: _Field[Optional[str]] = _Field("description", None)

    @property
    def arguments(self) -> List[PromptArgument]:
        items = self._data.get("arguments")
        return [PromptArgument.from_dict(a) for a in items] if isinstance(items, list) else []


class PromptMessage(MCPObject):
    __slots__ = ()
    _repr_fields = ("role", "content")
    role: _Field[str] = _Field("role", "")

    @property
    def content(self) -> Content:
        return Content.parse(self._data.get("content"))


class GetPromptResult(MCPObject):
    __slots__ = ()
    _repr_fields = ("description", "messages")
    description: _Field[Optional[str]] = _Field("description", None)

    def _repr_html_(self) -> str:
        from ._display import prompt_result_html

        return prompt_result_html(self)

    @property
    def messages(self) -> List[PromptMessage]:
        items = self._data.get("messages")
        return [PromptMessage.from_dict(m) for m in items] if isinstance(items, list) else []


class CompleteResult(MCPObject):
    """Completion values for a prompt or resource-template argument."""

    __slots__ = ()
    _repr_fields = ("values",)

    @property
    def _completion(self) -> Dict[str, Any]:
        value = self._data.get("completion")
        return value if isinstance(value, dict) else {}

    @property
    def values(self) -> List[str]:
        values = self._completion.get("values")
        return [str(v) for v in values] if isinstance(values, list) else []

    @property
    def total(self) -> Optional[int]:
        return cast(Optional[int], self._completion.get("total"))

    @property
    def has_more(self) -> bool:
        return bool(self._completion.get("hasMore", False))
