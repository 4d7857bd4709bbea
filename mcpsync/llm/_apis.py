"""The four model APIs: a tool's definition, reading a model's tool call, the result message.

Each API is one :class:`Api` object with three jobs. It never imports the vendor's SDK: a
tool call is read by attribute (the SDK's typed object) or by key (its dict form), and
every definition and result is a plain dict in the form the SDK's ``*Param`` types (and its
``model_validate``) accept.

Pure functions; safe from any thread.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from typing import Any, Dict, FrozenSet, List, Mapping, Optional, Tuple, Union

from ..types import Tool
from ._gemini_schema import parameter_names, parameters
from ._output import Image, Pieces, error_text, joined, optional_str

__all__ = ["APIS", "Api", "BadCall", "Call"]

Json = Dict[str, Any]


@dataclass(frozen=True)
class Call:
    """A model's tool call, read: its id (None where the API has none), the function name, and
    the arguments as a dict, or ``problem`` saying why they could not be read."""

    id: Optional[str]
    name: str
    arguments: Json
    problem: Optional[str] = None


class BadCall(TypeError):
    """The object given is not a tool call of the API (a programming error, raised)."""


def _get(obj: Any, *keys: str) -> Any:
    """The first of ``keys`` ``obj`` has, as a key (dicts) or an attribute (SDK objects)."""
    for key in keys:
        if isinstance(obj, Mapping):
            if key in obj and obj[key] is not None:
                return obj[key]
        elif getattr(obj, key, None) is not None:
            return getattr(obj, key)
    return None


def _arguments(raw: Any) -> "tuple[Json, Optional[str]]":
    """Arguments from a JSON string or an already parsed object."""
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}, None
    if isinstance(raw, (str, bytes)):
        try:
            raw = json.loads(raw)
        except ValueError as error:
            return {}, f"the arguments are not valid JSON ({error}); send a JSON object"
    if isinstance(raw, Mapping):
        return {str(k): v for k, v in raw.items()}, None
    return {}, f"the arguments must be a JSON object, not {type(raw).__name__}"


def _function(schema: Any) -> Json:
    """An MCP input schema as an object schema for OpenAI and Anthropic (kept whole: both take
    JSON Schema); only a missing ``type`` or ``properties`` at the top is filled in."""
    out = dict(schema) if isinstance(schema, Mapping) else {}
    out.setdefault("type", "object")
    if out["type"] == "object":
        out.setdefault("properties", {})
    return out


def _description(tool: Tool) -> Optional[str]:
    return tool.description or tool.title


class Api:
    """One model API. ``images``: the image MIME types its tool results take."""

    name = ""
    images: FrozenSet[str] = frozenset()

    def definition(self, name: str, tool: Tool) -> Json:
        raise NotImplementedError

    def wrap(self, definitions: List[Json]) -> List[Json]:
        """The value to pass as the API's ``tools``."""
        return definitions

    def read(self, tool_call: Any) -> Call:
        raise NotImplementedError

    def arguments(self, tool: Tool, arguments: Json) -> Json:
        """The arguments as the MCP tool names them (Gemini renames some parameters)."""
        return arguments

    def result(self, call: Call, pieces: Pieces) -> Json:
        raise NotImplementedError

    def _text(self, pieces: Pieces) -> str:
        text = joined(pieces.texts())
        return error_text(text) if pieces.is_error else text


class OpenAIChat(Api):
    name = "openai-chat"

    def definition(self, name: str, tool: Tool) -> Json:
        function: Json = {"name": name}
        if _description(tool):
            function["description"] = _description(tool)
        function["parameters"] = _function(tool.input_schema)
        return {"type": "function", "function": function}

    def read(self, tool_call: Any) -> Call:
        function = _get(tool_call, "function")
        name = _get(function, "name") if function is not None else None
        if not isinstance(name, str):
            raise BadCall(f"not a Chat Completions function tool call: {tool_call!r:.200}")
        arguments, problem = _arguments(_get(function, "arguments"))
        return Call(optional_str(_get(tool_call, "id")), name, arguments, problem)

    def result(self, call: Call, pieces: Pieces) -> Json:
        # A tool message takes text only: images become notes.
        return {"role": "tool", "tool_call_id": call.id or "", "content": self._text(pieces)}


class OpenAIResponses(Api):
    name = "openai-responses"
    images = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})

    def definition(self, name: str, tool: Tool) -> Json:
        out: Json = {"type": "function", "name": name}
        if _description(tool):
            out["description"] = _description(tool)
        # strict defaults to true in this API and needs schemas MCP servers seldom write.
        out.update(parameters=_function(tool.input_schema), strict=False)
        return out

    def read(self, tool_call: Any) -> Call:
        name = _get(tool_call, "name")
        if not isinstance(name, str) or _get(tool_call, "type") not in (None, "function_call"):
            raise BadCall(f"not a Responses function_call item: {tool_call!r:.200}")
        arguments, problem = _arguments(_get(tool_call, "arguments"))
        return Call(optional_str(_get(tool_call, "call_id")), name, arguments, problem)

    def result(self, call: Call, pieces: Pieces) -> Json:
        items = pieces.texts(self.images)
        output: Union[str, List[Json]]
        if any(isinstance(item, Image) for item in items):
            output = [{"type": "input_image", "image_url": f"data:{item.mime_type};base64,{item.data}"}
                      if isinstance(item, Image) else {"type": "input_text", "text": item} for item in items]
            if pieces.is_error:
                output.insert(0, {"type": "input_text", "text": "Error:"})
        else:
            output = self._text(pieces)
        return {"type": "function_call_output", "call_id": call.id or "", "output": output}


class Anthropic(Api):
    name = "anthropic"
    images = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})

    def definition(self, name: str, tool: Tool) -> Json:
        out: Json = {"name": name}
        if _description(tool):
            out["description"] = _description(tool)
        out["input_schema"] = _function(tool.input_schema)
        return out

    def read(self, tool_call: Any) -> Call:
        name = _get(tool_call, "name")
        if not isinstance(name, str) or _get(tool_call, "type") not in (None, "tool_use"):
            raise BadCall(f"not a Messages tool_use block: {tool_call!r:.200}")
        arguments, problem = _arguments(_get(tool_call, "input"))
        return Call(optional_str(_get(tool_call, "id")), name, arguments, problem)

    def result(self, call: Call, pieces: Pieces) -> Json:
        content: List[Json] = []
        for item in pieces.texts(self.images):
            if isinstance(item, Image):
                content.append({"type": "image", "source": {"type": "base64", "media_type": item.mime_type,
                                                            "data": item.data}})
            elif item:  # the API refuses an empty text block
                content.append({"type": "text", "text": item})
        out: Json = {"type": "tool_result", "tool_use_id": call.id or ""}
        if content:
            out["content"] = content
        out["is_error"] = pieces.is_error
        return out


class Gemini(Api):
    name = "gemini"
    images = frozenset({"image/png", "image/jpeg", "image/webp"})

    def definition(self, name: str, tool: Tool) -> Json:
        out: Json = {"name": name}
        if _description(tool):
            out["description"] = _description(tool)
        schema = parameters(tool.input_schema)
        if schema is not None:
            out["parameters"] = schema
        return out

    def wrap(self, definitions: List[Json]) -> List[Json]:
        return [{"function_declarations": definitions}] if definitions else []

    def read(self, tool_call: Any) -> Call:
        inner = _get(tool_call, "function_call", "functionCall")
        call = tool_call if inner is None else inner
        name = _get(call, "name")
        if not isinstance(name, str):
            raise BadCall(f"not a Gemini FunctionCall or a Part holding one: {tool_call!r:.200}")
        arguments, problem = _arguments(_get(call, "args"))
        return Call(optional_str(_get(call, "id")), name, arguments, problem)

    def arguments(self, tool: Tool, arguments: Json) -> Json:
        renamed = parameter_names(tool.input_schema)
        return {renamed.get(key, key): value for key, value in arguments.items()} if renamed else arguments

    def result(self, call: Call, pieces: Pieces) -> Json:
        texts, parts = self._texts_and_parts(pieces)
        function_response: Json = {"name": call.name, "response": _gemini_response(pieces, "\n".join(texts))}
        if call.id:
            function_response["id"] = call.id
        if parts:
            function_response["parts"] = parts
        return {"function_response": function_response}

    def _texts_and_parts(self, pieces: Pieces) -> Tuple[List[str], List[Json]]:
        """The result's texts (a text that repeats the structured content left out), and its images
        Gemini takes as inline parts (any other image becomes a line of text saying so)."""
        texts: List[str] = []
        parts: List[Json] = []
        for position, item in enumerate(pieces.items):
            if isinstance(item, Image):
                data = _bytes(item.data)
                if item.mime_type.lower() in self.images and data is not None:
                    parts.append({"inline_data": {"mime_type": item.mime_type, "data": data}})
                else:
                    texts.append(f"[image ({item.mime_type or 'unknown type'}) omitted: not accepted here]")
            elif position not in pieces.duplicate or not pieces.has_structured:
                texts.append(item)
        return texts, parts


def _gemini_response(pieces: Pieces, text: str) -> Json:
    """A FunctionResponse's ``response``: ``error`` for a failed call, else ``output`` (the structured
    content, with any text beside it, or the text)."""
    if pieces.is_error:
        return {"error": text or (json.dumps(pieces.structured) if pieces.has_structured else "failed")}
    if not pieces.has_structured:
        return {"output": text}
    response: Json = {"output": pieces.structured}
    if text:
        response["text"] = text
    return response


def _bytes(data: str) -> Optional[bytes]:
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return None


APIS: Dict[str, Api] = {api.name: api for api in (OpenAIChat(), OpenAIResponses(), Anthropic(), Gemini())}
