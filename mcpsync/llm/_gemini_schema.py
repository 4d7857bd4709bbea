"""JSON Schema to the OpenAPI subset Gemini's ``FunctionDeclaration.parameters`` accepts.

What is kept, per type (keys in the google-genai SDK's snake_case form):

- every type: ``type`` (upper case: ``STRING``, ``NUMBER``, ``INTEGER``, ``BOOLEAN``, ``ARRAY``,
  ``OBJECT``), ``title``, ``description``, ``nullable``, ``default``, ``example``;
- strings: ``enum`` (with ``format: "enum"``), ``format`` ``date-time``, ``min_length``,
  ``max_length``, ``pattern``; numbers: ``minimum``, ``maximum``, ``format`` ``float``/``double``
  (integers: ``int32``/``int64``); arrays: ``items``, ``min_items``, ``max_items``; objects:
  ``properties``, ``required`` (only names it has), ``property_ordering`` (the schema's order,
  which Gemini otherwise does not keep), ``min_properties``, ``max_properties``; ``any_of``.

What is translated:

- ``$ref`` to a place in the same document (``#/$defs/X``, ``#/definitions/X``, any JSON
  pointer) is inlined; a reference back into itself (a recursive type) is cut at the second
  visit and left as a bare schema of the target's type, with a note;
- ``allOf`` is merged into one schema (properties and ``required`` joined; otherwise the
  first value of a key wins); ``oneOf`` becomes ``any_of`` (Gemini has no "exactly one");
- a ``type`` list: ``"null"`` in it becomes ``nullable: true``; two or more other types
  become an ``any_of`` of one schema per type; ``{"type": "null"}`` in an ``anyOf`` likewise;
- ``const`` of a string becomes a one-value ``enum``; ``examples`` its first as ``example``;
  ``exclusiveMinimum``/``exclusiveMaximum`` (the number form) become ``minimum``/``maximum``;
- a missing ``type`` is inferred from ``properties`` (object), ``items`` (array) or a string enum.

What is dropped: ``$schema``, ``$id``, ``$defs``, ``additionalProperties``, ``patternProperties``,
``not``, ``if``/``then``/``else``, ``dependent*``, ``multipleOf``, ``uniqueItems``,
``contains``, ``prefixItems`` beyond a common item schema, ``readOnly``/``writeOnly``,
``deprecated``, ``content*``, ``$comment`` and every unknown key. A constraint the model
should still respect is appended to ``description`` in brackets: an enum or ``const`` that
is not all strings, a ``format`` Gemini does not take, ``exclusiveMinimum``/``Maximum``, a
recursion that was cut.

Pure functions; safe from any thread.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional, Tuple

from ._names import PARAMETER_NAME, safe_name

__all__ = ["parameters", "parameter_names"]

Json = Dict[str, Any]

_TYPES = {"string": "STRING", "number": "NUMBER", "integer": "INTEGER", "boolean": "BOOLEAN",
          "array": "ARRAY", "object": "OBJECT"}
_COMMON = ("title", "description", "nullable", "default", "example")
_BY_TYPE: Dict[str, Tuple[str, ...]] = {
    "STRING": ("enum", "format", "min_length", "max_length", "pattern"),
    "NUMBER": ("format", "minimum", "maximum"),
    "INTEGER": ("format", "minimum", "maximum"),
    "BOOLEAN": (),
    "ARRAY": ("items", "min_items", "max_items"),
    "OBJECT": ("properties", "required", "property_ordering", "min_properties", "max_properties"),
}
_FORMATS = {"STRING": {"enum", "date-time"}, "NUMBER": {"float", "double"}, "INTEGER": {"int32", "int64"}}
_RENAMED = {"minLength": "min_length", "maxLength": "max_length", "minItems": "min_items",
            "maxItems": "max_items", "minProperties": "min_properties", "maxProperties": "max_properties"}
_PLAIN = ("title", "description", "default", "example", "pattern", "minimum", "maximum")


def parameter_names(schema: Any) -> Dict[str, str]:
    """Gemini name -> MCP name for each top-level property whose name Gemini refuses
    (``^[A-Za-z_][A-Za-z0-9_]{0,63}$``); the names that fit are not listed."""
    properties = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(properties, dict):
        return {}
    return {safe_name(str(name), PARAMETER_NAME): str(name) for name in properties
            if safe_name(str(name), PARAMETER_NAME) != name}


def parameters(schema: Any) -> Optional[Json]:
    """The ``parameters`` of a function declaration for an MCP tool's ``inputSchema``, or None
    when the tool takes no parameters (Gemini refuses an object schema with no properties)."""
    if not isinstance(schema, dict):
        return None
    out = _Translator(schema).convert(schema, ())
    properties = out.get("properties")
    if out.get("type") != "OBJECT" or not properties:
        return None
    renames = {mcp: gemini for gemini, mcp in parameter_names(schema).items()}
    if renames:
        out["properties"] = {renames.get(name, name): value for name, value in properties.items()}
        for key in ("required", "property_ordering"):
            if key in out:
                out[key] = [renames.get(name, name) for name in out[key]]
    return out


# A tool's schema comes from the server: its references may nest without end or double at each
# level (a chain of definitions each naming the next twice grows as 2**n), so what one schema may
# become is bounded: nodes converted in all, and schemas nested inside one another.
_MAX_NODES = 2_000
_MAX_DEPTH = 32


class _Translator:
    def __init__(self, root: Json) -> None:
        self.root = root
        self.nodes = 0
        self.depth = 0

    def resolve(self, ref: str) -> Optional[Any]:
        if not ref.startswith("#"):
            return None
        node: Any = self.root
        for part in [p for p in ref[1:].split("/") if p]:
            part = part.replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and part in node:
                node = node[part]
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                return None
        return node

    def flatten(self, node: Json, path: Tuple[str, ...], notes: List[str]) -> Tuple[Json, Tuple[str, ...]]:
        """``node`` with its ``$ref`` inlined and its ``allOf`` merged (JSON Schema still)."""
        self.nodes += 1
        if self.nodes > _MAX_NODES:
            notes.append("schema not expanded further: too large")
            return {}, path
        ref = node.get("$ref")
        if isinstance(ref, str):
            return self._inlined(node, ref, path, notes)
        return self._merged_all_of(node, path, notes)

    def _inlined(self, node: Json, ref: str, path: Tuple[str, ...],
                 notes: List[str]) -> Tuple[Json, Tuple[str, ...]]:
        """``node`` with the target of its ``ref`` inlined (the node's own keys win); a reference
        that does not resolve, or one back into ``path``, is left out with a note."""
        target = self.resolve(ref)
        rest = {k: v for k, v in node.items() if k != "$ref"}
        if not isinstance(target, dict):
            notes.append(f"unresolved reference {ref}")
            return rest, path
        if ref in path:
            notes.append(f"recursive reference to {ref} not expanded")
            bare = {k: target[k] for k in ("type",) if k in target}
            return {**bare, **rest}, path
        inner, path = self.flatten(target, path + (ref,), notes)
        return self._merged_all_of({**inner, **rest}, path, notes)

    def _merged_all_of(self, node: Json, path: Tuple[str, ...],
                       notes: List[str]) -> Tuple[Json, Tuple[str, ...]]:
        """``node`` with the schemas of its ``allOf`` merged in (flattened first), and the
        references followed on the way: what the merged schema holds must not follow them again."""
        parts = node.get("allOf")
        if not isinstance(parts, list):
            return node, path
        merged: Json = {k: v for k, v in node.items() if k != "allOf"}
        followed = path
        for part in parts:
            if isinstance(part, dict):
                flat, seen = self.flatten(part, path, notes)
                _merge(merged, flat)
                followed += tuple(ref for ref in seen if ref not in followed)
        return merged, followed

    def convert(self, node: Any, path: Tuple[str, ...]) -> Json:
        if not isinstance(node, dict):
            return {}
        self.nodes += 1
        if self.nodes > _MAX_NODES or self.depth >= _MAX_DEPTH:
            return {"description": "(schema not expanded further: the tool's schema is too large or too deep)"}
        self.depth += 1
        try:
            return self._converted(node, path)
        finally:
            self.depth -= 1

    def _converted(self, node: Json, path: Tuple[str, ...]) -> Json:
        notes: List[str] = []
        node, path = self.flatten(node, path, notes)
        branches, null_branch = self._branches(node, path)
        names, null_type = _type_names(node)
        if not names and not branches:
            names = _inferred(node)
        out, typed = self._by_type(node, names, path, notes)
        branches += typed
        if len(branches) == 1 and not names:
            out = {**branches[0], **out}
        elif branches:
            out["any_of"] = branches
        if null_branch or null_type:
            out["nullable"] = True
        return _noted(out, notes)

    def _branches(self, node: Json, path: Tuple[str, ...]) -> Tuple[List[Json], bool]:
        """The converted options of ``anyOf`` and ``oneOf``, and whether one of them is ``{"type": "null"}``."""
        nullable = False
        branches: List[Json] = []
        for key in ("anyOf", "oneOf"):
            options = node.get(key)
            if not isinstance(options, list):
                continue
            for option in options:
                if isinstance(option, dict) and option.get("type") == "null":
                    nullable = True
                else:
                    branches.append(self.convert(option, path))
        return branches, nullable

    def _by_type(self, node: Json, names: List[str], path: Tuple[str, ...],
                 notes: List[str]) -> Tuple[Json, List[Json]]:
        """The schema for the node's type names, and the branches they add: one known type is its
        typed schema; several are the node's description with one branch per type."""
        if len(names) > 1:
            return _described(node), [self.typed(node, _TYPES[t], path, []) for t in names if t in _TYPES]
        if names and names[0] in _TYPES:
            return self.typed(node, _TYPES[names[0]], path, notes), []
        return _described(node), []

    def typed(self, node: Json, kind: str, path: Tuple[str, ...], notes: List[str]) -> Json:
        """``node`` as a schema of one Gemini type, with only the keys that type takes."""
        out: Json = {"type": kind}
        _copy_plain(node, out)
        _bounds(node, out, notes)
        _enum(node, kind, out, notes)
        _format(node, kind, out, notes)
        if kind == "ARRAY":
            items = self._items(node, path)
            if items:
                out["items"] = items
        if kind == "OBJECT":
            out.update(self._object(node, path))
        allowed = set(_COMMON) | set(_BY_TYPE[kind]) | {"type"}
        return {k: v for k, v in out.items() if k in allowed}

    def _items(self, node: Json, path: Tuple[str, ...]) -> Json:
        """An array's item schema: ``items`` (or ``prefixItems``) converted; a list of several, an ``any_of``."""
        items = node.get("items", node.get("prefixItems"))
        if isinstance(items, dict):
            return self.convert(items, path)
        if not isinstance(items, list) or not items:
            return {}
        converted = [self.convert(item, path) for item in items]
        return converted[0] if len(converted) == 1 else {"any_of": converted}

    def _object(self, node: Json, path: Tuple[str, ...]) -> Json:
        """An object's ``properties`` converted, the ``required`` names it has, and their order."""
        properties = node.get("properties")
        if not isinstance(properties, dict) or not properties:
            return {}
        out: Json = {"properties": {str(name): self.convert(value, path) for name, value in properties.items()}}
        required = node.get("required")
        kept = [name for name in required if name in properties] if isinstance(required, list) else []
        if kept:
            out["required"] = kept
        if len(properties) > 1:
            out["property_ordering"] = [str(name) for name in properties]
        return out


def _type_names(node: Json) -> Tuple[List[str], bool]:
    """The node's ``type`` as a list of names without ``"null"``, and whether ``"null"`` was one."""
    types = node.get("type")
    if isinstance(types, str):
        names = [types]
    elif isinstance(types, list):
        names = [t for t in types if isinstance(t, str)]
    else:
        names = []
    if "null" not in names:
        return names, False
    return [t for t in names if t != "null"], True


def _described(node: Json) -> Json:
    return {k: node[k] for k in ("title", "description", "default") if k in node}


def _copy_plain(node: Json, out: Json) -> None:
    """The keys Gemini takes as they are, those it spells otherwise, and the first of ``examples``."""
    for key in _PLAIN:
        if key in node:
            out[key] = node[key]
    for key, gemini in _RENAMED.items():
        if key in node:
            out[gemini] = node[key]
    if "example" not in node and isinstance(node.get("examples"), list) and node["examples"]:
        out["example"] = node["examples"][0]


def _bounds(node: Json, out: Json, notes: List[str]) -> None:
    """``exclusiveMinimum``/``exclusiveMaximum`` as ``minimum``/``maximum``, the strictness noted."""
    for bound, key, word in (("exclusiveMinimum", "minimum", "greater"), ("exclusiveMaximum", "maximum", "less")):
        value = node.get(bound)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            out.setdefault(key, value)
            notes.append(f"must be {word} than {value}")


def _enum_values(node: Json) -> Optional[List[Any]]:
    """The values of ``enum``, else the one of ``const``; None when the node has neither."""
    if isinstance(node.get("enum"), list):
        return list(node["enum"])
    return [node["const"]] if "const" in node else None


def _enum(node: Json, kind: str, out: Json, notes: List[str]) -> None:
    """An enum of strings (null in it: ``nullable``); any other enum is noted, as Gemini takes only strings."""
    values = _enum_values(node)
    if values is None:
        return
    if None in values:
        out["nullable"] = True
        values = [v for v in values if v is not None]
    if kind == "STRING" and all(isinstance(v, str) for v in values):
        out["enum"], out["format"] = values, "enum"
    else:
        notes.append("one of: " + ", ".join(json.dumps(v, ensure_ascii=False) for v in values))


def _format(node: Json, kind: str, out: Json, notes: List[str]) -> None:
    """A ``format`` the type takes in Gemini; any other is noted (an enum's own format stays)."""
    fmt = node.get("format")
    if not isinstance(fmt, str) or "enum" in out:
        return
    if fmt in _FORMATS.get(kind, set()):
        out["format"] = fmt
    else:
        notes.append(f"format: {fmt}")


def _inferred(node: Json) -> List[str]:
    if isinstance(node.get("properties"), dict):
        return ["object"]
    if "items" in node or "prefixItems" in node:
        return ["array"]
    values = _enum_values(node) or []
    if values and all(isinstance(v, str) or v is None for v in values):
        return ["string"]
    return []


def _merge(into: Json, part: Json) -> None:
    for key, value in part.items():
        if key == "properties" and isinstance(value, dict) and isinstance(into.get(key), dict):
            into[key] = {**value, **into[key]}
        elif key == "required" and isinstance(value, list) and isinstance(into.get(key), list):
            into[key] = into[key] + [name for name in value if name not in into[key]]
        else:
            into.setdefault(key, value)


def _noted(out: Json, notes: List[str]) -> Json:
    if notes:
        text = "[" + "; ".join(dict.fromkeys(notes)) + "]"
        out["description"] = f"{out['description']} {text}" if out.get("description") else text
    return out
