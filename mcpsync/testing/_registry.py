"""What a FakeServer offers (tools, resources, resource templates, prompts, skills) and their wire forms.

Each definition keeps the user's function and the metadata it was declared
with; a :class:`Registry` holds one server's definitions by name; the
``*_result`` functions turn what a function returned into the result the
protocol expects.

Thread safety: a :class:`Registry` may be read and changed from any thread
(one short lock, never held while user code runs). The definitions are not
changed once built; the functions here are pure.
"""

from __future__ import annotations

import base64
import copy
import inspect
import json
import re
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Pattern, Set, Tuple, Union

from .._rpc.jsonrpc import JSONObject
from ..types import (
    AudioContent, CallToolResult, Content, EmbeddedResource, GetPromptResult, ImageContent, MCPObject,
    ReadResourceResult, ResourceContents, ResourceLink, TextContent,
)
from ._schema import signature_schema
from ._skills import SkillDef

__all__ = [
    "Completer", "PromptDef", "Registry", "ResourceDef", "TemplateDef", "ToolDef", "call", "prompt_result",
    "resource_contents", "tool_result",
]

#: ``fn(argument, value) -> values``: completes a prompt's or a resource template's argument.
Completer = Callable[[str, str], Iterable[str]]


@dataclass
class ToolDef:
    """One tool: its function and how it is listed."""

    name: str
    fn: Callable[..., Any]
    input_schema: JSONObject
    context: Optional[str]
    description: Optional[str] = None
    title: Optional[str] = None
    output_schema: Optional[JSONObject] = None
    annotations: Optional[JSONObject] = None
    meta: Optional[JSONObject] = None

    @classmethod
    def build(cls, fn: Callable[..., Any], *, name: Optional[str] = None, description: Optional[str] = None,
              input_schema: Optional[Mapping[str, Any]] = None, output_schema: Optional[Mapping[str, Any]] = None,
              title: Optional[str] = None, annotations: Optional[Mapping[str, Any]] = None,
              meta: Optional[Mapping[str, Any]] = None) -> "ToolDef":
        schema, context = signature_schema(fn)
        return cls(
            name=name or fn.__name__, fn=fn, context=context,
            input_schema=copy.deepcopy(dict(input_schema)) if input_schema is not None else schema,
            description=description if description is not None else _summary(fn), title=title,
            output_schema=copy.deepcopy(dict(output_schema)) if output_schema is not None else None,
            annotations=dict(annotations) if annotations is not None else None,
            meta=dict(meta) if meta is not None else None,
        )

    def wire(self) -> JSONObject:
        tool: JSONObject = {"name": self.name, "inputSchema": copy.deepcopy(self.input_schema)}
        _put(tool, "title", self.title)
        _put(tool, "description", self.description)
        _put(tool, "outputSchema", copy.deepcopy(self.output_schema))
        _put(tool, "annotations", copy.deepcopy(self.annotations))
        _put(tool, "_meta", copy.deepcopy(self.meta))
        return tool


@dataclass
class ResourceDef:
    """One resource at a fixed URI."""

    uri: str
    fn: Callable[..., Any]
    context: Optional[str]
    name: str
    description: Optional[str] = None
    mime_type: Optional[str] = None
    title: Optional[str] = None

    @classmethod
    def build(cls, uri: str, fn: Callable[..., Any], *, name: Optional[str] = None,
              description: Optional[str] = None, mime_type: Optional[str] = None,
              title: Optional[str] = None) -> "ResourceDef":
        return cls(uri=uri, fn=fn, context=signature_schema(fn)[1], name=name or fn.__name__,
                   description=description, mime_type=mime_type, title=title)

    def wire(self) -> JSONObject:
        return _described({"uri": self.uri, "name": self.name}, self.title, self.description, self.mime_type)


@dataclass
class TemplateDef:
    """Resources whose URIs match an RFC 6570 template (``{var}`` and ``{+var}`` forms)."""

    uri_template: str
    fn: Callable[..., Any]
    context: Optional[str]
    name: str
    description: Optional[str] = None
    mime_type: Optional[str] = None
    title: Optional[str] = None
    pattern: Pattern[str] = field(init=False)

    def __post_init__(self) -> None:
        self.pattern = _template_pattern(self.uri_template)

    @classmethod
    def build(cls, uri_template: str, fn: Callable[..., Any], *, name: Optional[str] = None,
              description: Optional[str] = None, mime_type: Optional[str] = None,
              title: Optional[str] = None) -> "TemplateDef":
        return cls(uri_template=uri_template, fn=fn, context=signature_schema(fn)[1], name=name or fn.__name__,
                   description=description, mime_type=mime_type, title=title)

    def match(self, uri: str) -> Optional[Dict[str, str]]:
        found = self.pattern.fullmatch(uri)
        return dict(found.groupdict()) if found else None

    def wire(self) -> JSONObject:
        return _described({"uriTemplate": self.uri_template, "name": self.name}, self.title, self.description,
                          self.mime_type)


@dataclass
class PromptDef:
    """One prompt: its function and its (string) arguments."""

    name: str
    fn: Callable[..., Any]
    context: Optional[str]
    arguments: List[JSONObject]
    description: Optional[str] = None
    title: Optional[str] = None

    @classmethod
    def build(cls, fn: Callable[..., Any], *, name: Optional[str] = None, description: Optional[str] = None,
              title: Optional[str] = None) -> "PromptDef":
        schema, context = signature_schema(fn)
        required = set(schema.get("required") or ())
        arguments: List[JSONObject] = []
        for arg_name, arg_schema in schema["properties"].items():
            argument: JSONObject = {"name": arg_name, "required": arg_name in required}
            _put(argument, "description", arg_schema.get("description"))
            arguments.append(argument)
        return cls(name=name or fn.__name__, fn=fn, context=context, arguments=arguments,
                   description=description if description is not None else _summary(fn), title=title)

    def wire(self) -> JSONObject:
        prompt: JSONObject = {"name": self.name, "arguments": copy.deepcopy(self.arguments)}
        _put(prompt, "title", self.title)
        _put(prompt, "description", self.description)
        return prompt


class Registry:
    """One server's declarations, by name: what it lists and what its requests run."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tools: Dict[str, ToolDef] = {}
        self._resources: Dict[str, ResourceDef] = {}
        self._templates: Dict[str, TemplateDef] = {}
        self._prompts: Dict[str, PromptDef] = {}
        self._completers: Dict[str, Completer] = {}
        self._skills: Dict[str, SkillDef] = {}  # by the URI of the skill's SKILL.md

    # -- declaring (each replaces a declaration of the same name) ------------------------------

    def add_tool(self, definition: ToolDef) -> None:
        with self._lock:
            self._tools[definition.name] = definition

    def remove_tool(self, name: str) -> None:
        with self._lock:
            self._tools.pop(name, None)

    def add_resource(self, definition: ResourceDef) -> None:
        with self._lock:
            self._resources[definition.uri] = definition

    def add_template(self, definition: TemplateDef) -> None:
        with self._lock:
            self._templates[definition.uri_template] = definition

    def add_prompt(self, definition: PromptDef) -> None:
        with self._lock:
            self._prompts[definition.name] = definition

    def add_completer(self, ref: str, completer: Completer) -> None:
        with self._lock:
            self._completers[ref] = completer

    def add_skill(self, definition: SkillDef) -> None:
        with self._lock:
            self._skills[definition.uri] = definition

    def remove_skill(self, ref: str) -> Optional[SkillDef]:
        """Withdraw the skill whose ``SKILL.md`` URI, or else name, is ``ref``; return it (None: no such skill)."""
        with self._lock:
            found = self._find_skill(ref)
            return self._skills.pop(found.uri) if found is not None else None

    def replace_skill(self, old: SkillDef, new: SkillDef) -> None:
        with self._lock:
            if self._skills.get(old.uri) is old:
                self._skills[new.uri] = new

    # -- looking up ---------------------------------------------------------------------------------

    def tool_names(self) -> List[str]:
        with self._lock:
            return sorted(self._tools)

    def offers(self) -> Set[str]:
        """Which of ``"tools"``, ``"resources"``, ``"prompts"`` and ``"skills"`` have a declaration.

        A skill's files are resources, so skills offer ``"resources"`` too.
        """
        with self._lock:
            kinds = {"tools": bool(self._tools),
                     "resources": bool(self._resources or self._templates or self._skills),
                     "prompts": bool(self._prompts), "skills": bool(self._skills)}
        return {kind for kind, declared in kinds.items() if declared}

    def listings(self) -> Dict[str, List[JSONObject]]:
        """The wire forms of every declaration, keyed as the ``*/list`` results name them."""
        with self._lock:
            return {"tools": [t.wire() for t in self._tools.values()],
                    "resources": [r.wire() for r in self._resources.values()],
                    "resourceTemplates": [t.wire() for t in self._templates.values()],
                    "prompts": [p.wire() for p in self._prompts.values()]}

    def tool(self, name: str) -> Optional[ToolDef]:
        with self._lock:
            return self._tools.get(name)

    def prompt(self, name: str) -> Optional[PromptDef]:
        with self._lock:
            return self._prompts.get(name)

    def completer(self, ref: str) -> Optional[Completer]:
        with self._lock:
            return self._completers.get(ref)

    def skills(self) -> List[SkillDef]:
        """Every skill, in the order declared."""
        with self._lock:
            return list(self._skills.values())

    def skill(self, ref: str) -> Optional[SkillDef]:
        """The skill whose ``SKILL.md`` URI, or else name (when only one has it), is ``ref``."""
        with self._lock:
            return self._find_skill(ref)

    def skill_file(self, uri: str) -> Optional[List[JSONObject]]:
        """The ``resources/read`` contents of a skill's file (None: no skill serves ``uri``)."""
        with self._lock:
            skills = list(self._skills.values())
        for definition in reversed(skills):  # a later declaration wins a URI two skills share
            contents = definition.contents(uri)
            if contents is not None:
                return contents
        return None

    def _find_skill(self, ref: str) -> Optional[SkillDef]:
        found = self._skills.get(ref)
        if found is None:
            named = [definition for definition in self._skills.values() if definition.name == ref]
            found = named[0] if len(named) == 1 else None
        return found

    def resource_for(self, uri: str) -> Optional[Tuple[Union[ResourceDef, TemplateDef], Dict[str, str]]]:
        """The resource at ``uri``, or else the first template matching it, with the template's variables."""
        with self._lock:
            resource = self._resources.get(uri)
            if resource is not None:
                return resource, {}
            for template in self._templates.values():
                variables = template.match(uri)
                if variables is not None:
                    return template, variables
        return None


def call(fn: Callable[..., Any], context_name: Optional[str], ctx: Any, arguments: Mapping[str, Any]) -> Any:
    """Call a user function with ``arguments`` as keywords (and ``ctx`` if it takes one)."""
    kwargs = dict(arguments)
    if context_name is not None:
        kwargs[context_name] = ctx
    return fn(**kwargs)


def tool_result(value: Any) -> JSONObject:
    """The ``CallToolResult`` wire dict for what a tool function returned.

    ``str`` is one text block; a content object or a list of content blocks is
    the content; a dict is ``structuredContent`` plus its JSON as text; other
    JSON values are their JSON text; ``None`` is no content; a
    :class:`~mcpsync.CallToolResult` is used as it is.
    """
    if isinstance(value, CallToolResult):
        return value.to_dict()
    if isinstance(value, dict):
        return {"content": [_text(json.dumps(value))], "structuredContent": value}
    return {"content": _tool_content(value)}


def _tool_content(value: Any) -> List[JSONObject]:
    """The content blocks for a tool's return value that is neither a result nor a dict."""
    if isinstance(value, MCPObject):
        return [_block(value)]
    if value is None:
        return []
    if isinstance(value, str):
        return [_text(value)]
    if isinstance(value, (list, tuple)) and value and all(_is_block(item) for item in value):
        return [_block(item) for item in value]
    return [_text(json.dumps(value))]


def resource_contents(uri: str, mime_type: Optional[str], value: Any) -> List[JSONObject]:
    """The ``contents`` list for what a resource function returned.

    ``str`` is text, ``bytes`` a base64 blob, a dict with ``text`` or ``blob``
    one contents entry, any other dict or list JSON text; a list of those is
    several entries.
    """
    if isinstance(value, ReadResourceResult):
        return [item.to_dict() for item in value.contents]
    if isinstance(value, ResourceContents):
        return [value.to_dict()]
    if isinstance(value, list) and value and all(isinstance(v, (str, bytes, dict, ResourceContents)) for v in value):
        return [entry for item in value for entry in resource_contents(uri, mime_type, item)]
    return [_one_contents(uri, mime_type, value)]


def _one_contents(uri: str, mime_type: Optional[str], value: Any) -> JSONObject:
    """The one contents entry for a resource function's value that is not a list of entries."""
    if isinstance(value, (bytes, bytearray)):
        return {"uri": uri, "mimeType": mime_type or "application/octet-stream",
                "blob": base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, str):
        return {"uri": uri, "mimeType": mime_type or "text/plain", "text": value}
    if isinstance(value, dict) and ("text" in value or "blob" in value):
        return {"uri": uri, **value}
    return {"uri": uri, "mimeType": mime_type or "application/json", "text": json.dumps(value)}


def prompt_result(value: Any, description: Optional[str]) -> JSONObject:
    """The ``GetPromptResult`` wire dict for what a prompt function returned.

    ``str`` is one user message; a list holds messages as strings (user),
    ``(role, text)`` pairs, ``{"role", "content"}`` dicts or
    :class:`~mcpsync.PromptMessage` objects.
    """
    if isinstance(value, GetPromptResult):
        return value.to_dict()
    items = value if isinstance(value, (list, tuple)) else [value]
    result: JSONObject = {"messages": [_message(item) for item in items]}
    _put(result, "description", description)
    return result


def _message(item: Any) -> JSONObject:
    if isinstance(item, MCPObject):
        return item.to_dict()
    if isinstance(item, str):
        return {"role": "user", "content": _text(item)}
    if isinstance(item, tuple) and len(item) == 2:
        role, text = item
        return {"role": str(role), "content": _text(str(text))}
    if isinstance(item, dict):
        message = dict(item)
        content = message.get("content")
        if isinstance(content, str):
            message["content"] = _text(content)
        elif isinstance(content, MCPObject):
            message["content"] = _block(content)
        message.setdefault("role", "user")
        return message
    return {"role": "user", "content": _text(json.dumps(item))}


_BLOCK_TYPES: Dict[type, str] = {
    TextContent: "text", ImageContent: "image", AudioContent: "audio", ResourceLink: "resource_link",
    EmbeddedResource: "resource",
}


def _block(item: Any) -> JSONObject:
    """A content block's wire dict, with its ``type`` filled in when the object was built without one."""
    if not isinstance(item, MCPObject):
        return dict(item)
    block = item.to_dict()
    kind = _BLOCK_TYPES.get(type(item))
    if kind is not None:
        block.setdefault("type", kind)
    return block


def _is_block(item: Any) -> bool:
    return isinstance(item, Content) or (isinstance(item, dict) and isinstance(item.get("type"), str))


def _text(text: str) -> JSONObject:
    return {"type": "text", "text": text}


def _put(target: JSONObject, key: str, value: Any) -> None:
    if value is not None:
        target[key] = value


def _described(wire: JSONObject, title: Optional[str], description: Optional[str],
               mime_type: Optional[str]) -> JSONObject:
    """A resource's or template's wire dict with the optional details that are set."""
    _put(wire, "title", title)
    _put(wire, "description", description)
    _put(wire, "mimeType", mime_type)
    return wire


def _summary(fn: Callable[..., Any]) -> Optional[str]:
    doc = inspect.getdoc(fn)
    if not doc:
        return None
    return doc.split("\n\n", 1)[0].replace("\n", " ").strip() or None


_TEMPLATE_PART = re.compile(r"\{([+#]?)([A-Za-z0-9_]+)\}")


def _template_pattern(template: str) -> Pattern[str]:
    pattern, position = "", 0
    for found in _TEMPLATE_PART.finditer(template):
        pattern += re.escape(template[position:found.start()])
        operator, name = found.groups()
        pattern += f"(?P<{name}>.+)" if operator else f"(?P<{name}>[^/?#]+)"
        position = found.end()
    pattern += re.escape(template[position:])
    return re.compile(pattern)
