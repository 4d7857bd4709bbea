"""JSON Schemas from Python signatures, and a light check of arguments against a schema.

The mapping covers what tool authors write in practice: ``str``, ``int``,
``float``, ``bool``, ``list[X]``, ``dict[str, X]``, ``Optional[X]`` and other
unions, ``Literal[...]``, ``Enum`` subclasses and ``Annotated[X, "description"]``.
Anything else becomes ``{}`` (any value). Parameters without a default are
required. A parameter named ``ctx`` (or annotated as the testing ``Context``) is
left out of the schema: it is where the server passes its request context.

Pure functions of their arguments: safe from any thread, nothing blocks.
"""

from __future__ import annotations

import collections.abc
import enum
import inspect
import sys
import typing
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

from .._rpc.jsonrpc import JSONObject

__all__ = ["CONTEXT_PARAMETER", "check_arguments", "signature_schema", "type_schema"]

#: The parameter name that receives the request context.
CONTEXT_PARAMETER = "ctx"

_NONE_TYPE = type(None)
_UNION_TYPE = getattr(__import__("types"), "UnionType", None)  # ``X | Y`` (3.10+)
_SEQUENCES = (list, tuple, set, frozenset, collections.abc.Sequence, typing.Sequence, typing.List, typing.Tuple)
_MAPPINGS = (dict, collections.abc.Mapping, typing.Mapping, typing.Dict)
_JSON_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean"}


def type_schema(annotation: Any) -> JSONObject:
    """The JSON Schema for one Python type annotation (``{}`` when it cannot say)."""
    plain = _plain_schema(annotation)
    if plain is not None:
        return plain
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        return _annotated_schema(args)
    if _is_union(annotation, origin):
        return _union_schema(args)
    if origin is typing.Literal:
        return _enum_schema(list(args))
    if annotation in _SEQUENCES or origin in _SEQUENCES:
        return _array_schema(args)
    if annotation in _MAPPINGS or origin in _MAPPINGS:
        return _object_schema(args)
    return {}


def _plain_schema(annotation: Any) -> Optional[JSONObject]:
    """The schema of an annotation that is no generic alias (none, a JSON scalar type, an Enum), or None."""
    if annotation is inspect.Parameter.empty or annotation is Any:
        return {}
    if annotation is _NONE_TYPE or annotation is None:
        return {"type": "null"}
    if annotation in _JSON_TYPES:
        return {"type": _JSON_TYPES[annotation]}
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return _enum_schema([member.value for member in annotation])
    return None


def _is_union(annotation: Any, origin: Any) -> bool:
    """``Union[...]``, ``Optional[...]`` or ``X | Y``."""
    return origin is typing.Union or (_UNION_TYPE is not None and isinstance(annotation, _UNION_TYPE))


def _annotated_schema(args: Tuple[Any, ...]) -> JSONObject:
    """``Annotated[X, "text", ...]``: X's schema, the strings among the notes its description."""
    schema = type_schema(args[0])
    notes = [note for note in args[1:] if isinstance(note, str)]
    if notes:
        schema["description"] = " ".join(notes)
    return schema


def _array_schema(args: Tuple[Any, ...]) -> JSONObject:
    """A sequence type's schema: an array, of items of the first argument's schema if it says one."""
    schema: JSONObject = {"type": "array"}
    items = type_schema(args[0]) if args and args[0] is not Ellipsis else {}
    if items:
        schema["items"] = items
    return schema


def _object_schema(args: Tuple[Any, ...]) -> JSONObject:
    """A mapping type's schema: an object, its values of the second argument's schema if it says one."""
    schema: JSONObject = {"type": "object"}
    values = type_schema(args[1]) if len(args) == 2 else {}
    if values:
        schema["additionalProperties"] = values
    return schema


def _union_schema(args: Tuple[Any, ...]) -> JSONObject:
    members = [arg for arg in args if arg is not _NONE_TYPE]
    nullable = len(members) < len(args)
    base = type_schema(members[0]) if len(members) == 1 else {"anyOf": [type_schema(m) for m in members]}
    if not nullable or not base:
        return base
    if set(base) == {"type"} and isinstance(base["type"], str):
        return {"type": [base["type"], "null"]}
    return {"anyOf": [base, {"type": "null"}]}


def _enum_schema(values: List[Any]) -> JSONObject:
    schema: JSONObject = {"enum": values}
    kinds = {_JSON_TYPES.get(type(value)) for value in values}
    if len(kinds) == 1 and None not in kinds:
        schema["type"] = kinds.pop()
    return schema


def signature_schema(fn: Callable[..., Any]) -> Tuple[JSONObject, Optional[str]]:
    """``(input_schema, context_parameter)`` for ``fn``.

    ``context_parameter`` is the name of the parameter that receives the
    request context, or None if ``fn`` takes none.
    """
    signature = inspect.signature(fn)
    hints = _type_hints(fn)
    properties: JSONObject = {}
    required: List[str] = []
    context: Optional[str] = None
    extra_allowed = False
    for parameter in signature.parameters.values():
        annotation = hints.get(parameter.name, parameter.annotation)
        if parameter.name == CONTEXT_PARAMETER or _is_context(annotation):
            context = parameter.name
            continue
        if parameter.kind is inspect.Parameter.VAR_KEYWORD:
            extra_allowed = True
            continue
        if parameter.kind is inspect.Parameter.VAR_POSITIONAL:
            continue
        schema = type_schema(annotation)
        if parameter.default is inspect.Parameter.empty:
            required.append(parameter.name)
        elif _is_json(parameter.default):
            schema["default"] = parameter.default
        properties[parameter.name] = schema
    result: JSONObject = {"type": "object", "properties": properties}
    if required:
        result["required"] = required
    if not extra_allowed:
        result["additionalProperties"] = False
    return result, context


def _type_hints(fn: Callable[..., Any]) -> Dict[str, Any]:
    try:
        return typing.get_type_hints(fn, include_extras=True)
    except Exception:  # a forward reference that does not resolve, or 3.9 meeting ``X | Y``
        return {}


def _is_context(annotation: Any) -> bool:
    context_type = getattr(sys.modules.get("mcpsync.testing._context"), "Context", None)
    # the public Context is the FakeServer's subclass (its ``server`` typed as the FakeServer)
    return context_type is not None and isinstance(annotation, type) and issubclass(annotation, context_type)


def _is_json(value: Any) -> bool:
    if value is None or isinstance(value, (str, int, float, bool)):
        return True
    if isinstance(value, (list, tuple)):
        return all(_is_json(item) for item in value)
    if isinstance(value, dict):
        return all(isinstance(key, str) and _is_json(item) for key, item in value.items())
    return False


def check_arguments(schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> Optional[str]:
    """Say what is wrong with ``arguments`` for ``schema`` (None if nothing is).

    A light check, not a JSON Schema validator: required members, unknown
    members when ``additionalProperties`` is false, and ``type``/``enum`` of
    each member (recursing into array items and ``anyOf``).
    """
    properties = schema.get("properties") or {}
    return (_missing(schema, arguments) or _unexpected(schema, properties, arguments)
            or _mistyped(properties, arguments))


def _missing(schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> Optional[str]:
    for name in schema.get("required") or ():
        if name not in arguments:
            return f"missing required argument {name!r}"
    return None


def _unexpected(schema: Mapping[str, Any], properties: Mapping[str, Any],
                arguments: Mapping[str, Any]) -> Optional[str]:
    if schema.get("additionalProperties") is not False:
        return None
    unknown = sorted(set(arguments) - set(properties))
    if unknown:
        return f"unexpected argument{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))}"
    return None


def _mistyped(properties: Mapping[str, Any], arguments: Mapping[str, Any]) -> Optional[str]:
    for name, value in arguments.items():
        member = properties.get(name)
        if isinstance(member, dict) and not _matches(member, value):
            return f"argument {name!r} should be {_describe(member)}, got {value!r}"
    return None


def _matches(schema: Mapping[str, Any], value: Any) -> bool:
    if "enum" in schema and value not in schema["enum"]:
        return False
    if "anyOf" in schema and not any(_matches(option, value) for option in schema["anyOf"]):
        return False
    if not _has_type(value, schema.get("type")):
        return False
    items = schema.get("items")
    if isinstance(value, list) and isinstance(items, dict):
        return all(_matches(items, item) for item in value)
    return True


def _has_type(value: Any, kind: Any) -> bool:
    """``value`` is of the schema's ``type`` (one name or a list of them; None: any type)."""
    if kind is None:
        return True
    kinds = kind if isinstance(kind, list) else [kind]
    return any(_is_kind(value, k) for k in kinds)


def _is_kind(value: Any, kind: str) -> bool:
    if kind == "integer":
        return (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, float) and value.is_integer())
    if kind == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    checks = {"string": str, "boolean": bool, "array": list, "object": dict, "null": type(None)}
    wanted = checks.get(kind)
    return wanted is None or isinstance(value, wanted)


def _describe(schema: Mapping[str, Any]) -> str:
    if "enum" in schema:
        return "one of " + ", ".join(repr(v) for v in schema["enum"])
    if isinstance(schema.get("anyOf"), list):
        return " or ".join(_describe(option) for option in schema["anyOf"])
    kind = schema.get("type")
    kinds = kind if isinstance(kind, list) else [kind] if isinstance(kind, str) else []
    names = {"integer": "an integer", "array": "an array of matching items", "object": "an object",
             "null": "null"}
    return " or ".join(names.get(k, f"a {k}") for k in kinds) or "a matching value"
