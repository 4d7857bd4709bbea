"""A tool's result as the pieces every model API is built from: text, images, a JSON value.

:func:`pieces` reads a :class:`~mcpsync.CallToolResult` once. Each API then keeps what it
can carry and turns the rest into short text notes, so the model knows something was there:

- text blocks are text;
- an image block is an image (base64 and its MIME type), or a note where the API, or that
  image's MIME type, is not accepted;
- an audio block, and an embedded binary resource that is not an image, are notes;
- an embedded text resource is its text under a ``[resource <uri>]`` line;
- a resource link is a ``[resource link: <name> <uri>]`` line;
- ``structuredContent`` is a JSON value: text APIs get its JSON as text, unless a text
  block already holds that same JSON (as the MCP spec asks servers to send).

Pure functions; safe from any thread.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, FrozenSet, List, Optional, Tuple, Union

from ..types import (
    AudioContent, BlobResourceContents, CallToolResult, EmbeddedResource, ImageContent, ResourceLink,
    TextContent, TextResourceContents,
)

__all__ = ["Image", "Pieces", "error_result", "error_text", "joined", "optional_str", "pieces"]


@dataclass(frozen=True)
class Image:
    mime_type: str
    data: str  # base64


Piece = Union[str, Image]  # a text, or an image


@dataclass(frozen=True)
class Pieces:
    """What a result holds, in order. ``duplicate`` marks a text block that is only the JSON of
    ``structured`` (the APIs that take a JSON value may leave it out)."""

    items: List[Piece] = field(default_factory=list)
    structured: Any = None
    has_structured: bool = False
    is_error: bool = False
    duplicate: Tuple[int, ...] = ()

    def texts(self, images: FrozenSet[str] = frozenset()) -> List[Piece]:
        """The items for a text API: images whose MIME type is in ``images`` stay images, others
        become notes; the structured value's JSON is added when no text block holds it."""
        out: List[Piece] = []
        for item in self.items:
            if isinstance(item, Image) and item.mime_type.lower() not in images:
                out.append(f"[image ({item.mime_type or 'unknown type'}) omitted: not accepted here]")
            else:
                out.append(item)
        if self.has_structured and not self.duplicate:
            out.append(json.dumps(self.structured, ensure_ascii=False))
        return out


def _is_json_of(text: str, value: Any) -> bool:
    try:
        return bool(json.loads(text) == value)
    except ValueError:
        return False


def pieces(result: CallToolResult) -> Pieces:
    """Read ``result`` into :class:`Pieces` (see the module docstring)."""
    data = result.to_dict()
    has_structured = "structuredContent" in data and data["structuredContent"] is not None
    structured = data.get("structuredContent")
    items: List[Piece] = []
    duplicate: List[int] = []
    for block in result.content:
        if isinstance(block, TextContent) and has_structured and _is_json_of(block.text, structured):
            duplicate.append(len(items))
        items.append(_piece(block))
    return Pieces(items, structured, has_structured, result.is_error, tuple(duplicate))


def _piece(block: Any) -> Piece:
    """One content block as a model API takes it: text, an image, or a line saying what was left out."""
    if isinstance(block, TextContent):
        return block.text
    if isinstance(block, ImageContent):
        return Image(block.mime_type, block.data)
    if isinstance(block, AudioContent):
        return f"[audio ({block.mime_type or 'unknown type'}) omitted: not accepted here]"
    if isinstance(block, ResourceLink):
        return f"[resource link: {block.name} {block.uri}]" + (f" {block.description}" if block.description else "")
    if isinstance(block, EmbeddedResource):
        return _resource(block)
    kind = block.to_dict().get("type")
    return f"[{kind or 'unknown'} content omitted]"


def _resource(block: EmbeddedResource) -> Piece:
    resource = block.resource
    if isinstance(resource, TextResourceContents):
        return f"[resource {resource.uri}]\n{resource.text}"
    mime = resource.mime_type or ""
    if isinstance(resource, BlobResourceContents) and mime.lower().startswith("image/"):
        return Image(mime, resource.blob)
    return f"[resource {resource.uri} ({mime or 'binary'}) omitted: not accepted here]"


def error_result(message: str) -> CallToolResult:
    """A result that says the call could not be made (bad arguments, unknown tool)."""
    return CallToolResult.from_dict({"content": [{"type": "text", "text": message}], "isError": True})


def joined(items: List[Piece]) -> str:
    """Text items joined by blank-line-free newlines (images must have been turned into notes)."""
    return "\n".join(item for item in items if isinstance(item, str))


def error_text(text: str) -> str:
    """``text`` marked as an error, for the APIs that have no error flag."""
    return text if text.lower().startswith("error") else f"Error: {text}" if text else "Error: the tool failed."


def optional_str(value: Any) -> Optional[str]:
    return value if isinstance(value, str) else None
