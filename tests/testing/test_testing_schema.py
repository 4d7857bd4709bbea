"""mcpsync.testing: input schemas from signatures, and the light argument check."""

from __future__ import annotations

import enum
from typing import Annotated, Any, Dict, List, Literal, Optional, Union

from mcpsync.testing import Context
from mcpsync.testing._schema import check_arguments, signature_schema, type_schema


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


def test_plain_types_map_to_json_types():
    assert type_schema(str) == {"type": "string"}
    assert type_schema(int) == {"type": "integer"}
    assert type_schema(float) == {"type": "number"}
    assert type_schema(bool) == {"type": "boolean"}
    assert type_schema(type(None)) == {"type": "null"}
    assert type_schema(Any) == {}


def test_containers_map_to_arrays_and_objects():
    assert type_schema(list) == {"type": "array"}
    assert type_schema(List[int]) == {"type": "array", "items": {"type": "integer"}}
    assert type_schema(list[str]) == {"type": "array", "items": {"type": "string"}}
    assert type_schema(dict) == {"type": "object"}
    assert type_schema(Dict[str, float]) == {"type": "object", "additionalProperties": {"type": "number"}}


def test_optional_union_literal_enum_and_annotated():
    assert type_schema(Optional[int]) == {"type": ["integer", "null"]}
    assert type_schema(Union[int, str]) == {"anyOf": [{"type": "integer"}, {"type": "string"}]}
    assert type_schema(Optional[List[int]]) == {"anyOf": [{"type": "array", "items": {"type": "integer"}},
                                                          {"type": "null"}]}
    assert type_schema(Literal["a", "b"]) == {"enum": ["a", "b"], "type": "string"}
    assert type_schema(Literal[1, "x"]) == {"enum": [1, "x"]}
    assert type_schema(Colour) == {"enum": ["red", "blue"], "type": "string"}
    assert type_schema(Annotated[int, "How many"]) == {"type": "integer", "description": "How many"}


def test_signature_gives_properties_required_and_defaults_and_skips_ctx():
    def tool(ctx: Context, city: str, days: int = 1, units: Literal["C", "F"] = "C",
             note: Optional[str] = None) -> str:
        return city

    schema, context = signature_schema(tool)
    assert context == "ctx"
    assert schema == {
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "days": {"type": "integer", "default": 1},
            "units": {"enum": ["C", "F"], "type": "string", "default": "C"},
            "note": {"type": ["string", "null"], "default": None},
        },
        "required": ["city"],
        "additionalProperties": False,
    }


def test_context_is_found_by_annotation_and_kwargs_allow_extra_members():
    def tool(context: Context, **extra: Any) -> None:
        return None

    schema, context = signature_schema(tool)
    assert context == "context"
    assert schema == {"type": "object", "properties": {}}


def test_unannotated_parameters_accept_anything():
    def tool(value, other=[1, 2]):  # type: ignore[no-untyped-def]
        return value

    schema, _ = signature_schema(tool)
    assert schema["properties"] == {"value": {}, "other": {"default": [1, 2]}}


def test_check_arguments_reports_the_first_problem():
    schema, _ = signature_schema(lambda a, b=2: None)
    typed, _ = signature_schema(_typed)
    assert check_arguments(schema, {"a": 1}) is None
    assert check_arguments(schema, {}) == "missing required argument 'a'"
    assert check_arguments(schema, {"a": 1, "c": 3}) == "unexpected argument 'c'"
    assert check_arguments(typed, {"n": True, "kind": "x"}) == "argument 'n' should be an integer, got True"
    assert check_arguments(typed, {"n": "1", "kind": "x"}) == "argument 'n' should be an integer, got '1'"
    assert check_arguments(typed, {"n": 2.0, "kind": "x"}) is None  # 2.0 is an integer in JSON Schema
    assert check_arguments(typed, {"n": 1, "kind": "z"}) == "argument 'kind' should be one of 'x', 'y', got 'z'"
    assert check_arguments(typed, {"n": 1, "kind": "x", "tags": ["a", 1]}) == (
        "argument 'tags' should be an array of matching items or null, got ['a', 1]")
    assert check_arguments(typed, {"n": 1, "kind": "x", "tags": None}) is None


def _typed(n: int, kind: Literal["x", "y"], tags: Optional[List[str]] = None) -> None:
    return None
