"""What the client's handlers receive and return: sampling, elicitation, roots and log messages.

A server asks the client for things in two ways: legacy servers send
JSON-RPC requests (``sampling/createMessage``, ``elicitation/create``,
``roots/list``), modern ones put the same requests in an ``input_required``
result. Either way the same handler runs, with the same typed params:

* :class:`CreateMessageParams` for ``sampling_handler``; return a
  :class:`CreateMessageResult` (or its wire dict), or raise
  :class:`~mcpsync.SamplingRejected`.
* :class:`ElicitParams` for ``elicitation_handler``; return an
  :class:`ElicitResult` (``ElicitResult.accept({...})``, ``.decline()``,
  ``.cancel()``) or its wire dict.
* :class:`LogMessage` for ``logging_handler``.

The params objects are read-only dicts of the wire form (so
``params["messages"]`` keeps working) with snake_case properties on top.
"""

from __future__ import annotations

import copy
import logging
import os
from typing import Any, Callable, Dict, List, Mapping, Optional, Protocol, Sequence, Union

from ._rpc import jsonrpc as rpc
from ._rpc.jsonrpc import JSONObject
from .exceptions import MCPError
from .types import Content, Implementation, MCPObject, _Field

__all__ = [
    "CreateMessageParams", "CreateMessageResult", "ElicitParams", "ElicitResult", "LogMessage",
    "RootsSource",
]

log = logging.getLogger("mcpsync.client")

RootsSource = Union[Sequence[Union[str, Mapping[str, Any]]], Callable[[], Sequence[Union[str, Mapping[str, Any]]]]]


class _WireParams(Dict[str, Any]):
    """A request's params: the wire dict itself, plus typed snake_case properties."""

    def to_dict(self) -> Dict[str, Any]:
        """The wire form (a deep copy)."""
        return copy.deepcopy(dict(self))

    def _get(self, key: str, default: Any = None) -> Any:
        return super().get(key, default)

    def _typed(self, key: str, kind: Any) -> Any:
        """The value at ``key`` if it has type ``kind`` (None otherwise: the wire is not trusted)."""
        value = super().get(key)
        return value if isinstance(value, kind) and not (kind is not bool and isinstance(value, bool)) else None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({dict.__repr__(self)})"


class CreateMessageParams(_WireParams):
    """The params of ``sampling/createMessage``: the server asks the client's model for a message.

    Honour ``max_tokens``; ``model_preferences`` hints are substrings of model
    names, to be tried in order. ``tools`` and ``tool_choice`` are present only
    for a client that declared ``sampling_tools=True``.
    """

    @property
    def messages(self) -> List[Dict[str, Any]]:
        """The conversation so far: ``{"role", "content"}`` dicts (content a block or a list of blocks)."""
        value = self._get("messages")
        return value if isinstance(value, list) else []

    @property
    def max_tokens(self) -> Optional[int]:
        value: Optional[int] = self._typed("maxTokens", int)
        return value

    @property
    def system_prompt(self) -> Optional[str]:
        value: Optional[str] = self._typed("systemPrompt", str)
        return value

    @property
    def model_preferences(self) -> Optional[Dict[str, Any]]:
        value: Optional[Dict[str, Any]] = self._typed("modelPreferences", dict)
        return value

    @property
    def model_hints(self) -> List[str]:
        """The preferred model name fragments, in order."""
        hints = (self.model_preferences or {}).get("hints")
        return [str(h["name"]) for h in hints if isinstance(h, dict) and "name" in h] if isinstance(hints, list) else []

    @property
    def temperature(self) -> Optional[float]:
        value: Optional[float] = self._typed("temperature", (int, float))
        return value

    @property
    def stop_sequences(self) -> Optional[List[str]]:
        value: Optional[List[str]] = self._typed("stopSequences", list)
        return value

    @property
    def include_context(self) -> Optional[str]:
        value: Optional[str] = self._typed("includeContext", str)
        return value

    @property
    def metadata(self) -> Optional[Dict[str, Any]]:
        value: Optional[Dict[str, Any]] = self._typed("metadata", dict)
        return value

    @property
    def tools(self) -> Optional[List[Dict[str, Any]]]:
        value: Optional[List[Dict[str, Any]]] = self._typed("tools", list)
        return value

    @property
    def tool_choice(self) -> Optional[Dict[str, Any]]:
        value: Optional[Dict[str, Any]] = self._typed("toolChoice", dict)
        return value

    @property
    def text(self) -> str:
        """The text blocks of the last message joined with newlines (a shortcut for simple prompts)."""
        if not self.messages:
            return ""
        content = self.messages[-1].get("content")
        blocks = content if isinstance(content, list) else [content]
        return "\n".join(str(b.get("text", "")) for b in blocks if isinstance(b, dict) and b.get("type") == "text")


class ElicitParams(_WireParams):
    """The params of ``elicitation/create``: the server wants something from the person.

    Form mode (``mode == "form"``, the default): show ``message`` and a form
    for ``requested_schema`` (a flat object of strings, numbers, booleans and
    enums). URL mode (``mode == "url"``): show ``message`` and the full ``url``
    and, with the person's consent, open it in their browser; mcpsync never
    fetches or opens it itself. ``server`` names who is asking.
    """

    @property
    def mode(self) -> str:
        mode = self._get("mode")
        return mode if isinstance(mode, str) else "form"

    @property
    def message(self) -> str:
        return str(self._get("message", ""))

    @property
    def requested_schema(self) -> Dict[str, Any]:
        schema = self._get("requestedSchema")
        return schema if isinstance(schema, dict) else {}

    @property
    def url(self) -> Optional[str]:
        value: Optional[str] = self._typed("url", str)
        return value

    @property
    def elicitation_id(self) -> Optional[str]:
        value: Optional[str] = self._typed("elicitationId", str)
        return value

    _server: Optional[Implementation] = None

    @property
    def server(self) -> Optional[Implementation]:
        """Who is asking (filled in by the client; not part of the wire form)."""
        return self._server


class LogMessage(_WireParams):
    """A ``notifications/message`` from the server."""

    @property
    def level(self) -> str:
        return str(self._get("level", "info"))

    @property
    def logger(self) -> Optional[str]:
        value: Optional[str] = self._typed("logger", str)
        return value

    @property
    def data(self) -> Any:
        return self._get("data")


class CreateMessageResult(MCPObject):
    """A sampling handler's answer.

    ::

        return CreateMessageResult("Paris", model="my-model")
        return CreateMessageResult(content={"type": "image", "data": ..., "mimeType": "image/png"}, model="m")
    """

    __slots__ = ()
    _repr_fields = ("model", "stop_reason")
    role: _Field[str] = _Field("role", "assistant")
    model: _Field[str] = _Field("model", "")
    stop_reason: _Field[Optional[str]] = _Field("stopReason", None)

    def __init__(self, text: Optional[str] = None, *, model: str = "", content: Any = None,
                 stop_reason: Optional[str] = "endTurn", role: str = "assistant", data: Optional[JSONObject] = None):
        if data is not None:
            super().__init__(data)
            return
        block = content if content is not None else {"type": "text", "text": text or ""}
        fields: JSONObject = {"role": role, "content": block, "model": model}
        if stop_reason is not None:
            fields["stopReason"] = stop_reason
        super().__init__(fields)

    @property
    def content(self) -> Union[Content, List[Content]]:
        value = self._data.get("content")
        return [Content.parse(b) for b in value] if isinstance(value, list) else Content.parse(value)


class ElicitResult(MCPObject):
    """An elicitation handler's answer: ``accept`` (with the form's ``content``), ``decline`` or ``cancel``."""

    __slots__ = ()
    _repr_fields = ("action", "content")
    action: _Field[str] = _Field("action", "cancel")
    content: _Field[Optional[Dict[str, Any]]] = _Field("content", None)

    def __init__(self, action: str = "cancel", content: Optional[Mapping[str, Any]] = None) -> None:
        fields: JSONObject = {"action": action}
        if content is not None:
            fields["content"] = dict(content)
        super().__init__(fields)

    @classmethod
    def accept(cls, content: Optional[Mapping[str, Any]] = None) -> "ElicitResult":
        """The person agreed (form mode: with what they entered; URL mode: consent to open the URL)."""
        return cls("accept", content)

    @classmethod
    def decline(cls) -> "ElicitResult":
        """The person explicitly said no."""
        return cls("decline")

    @classmethod
    def cancel(cls) -> "ElicitResult":
        """The person dismissed the request without choosing."""
        return cls("cancel")


class HandlerOwner(Protocol):
    """Where a :class:`Responder` finds the handlers (the client's attributes, read at each use)."""

    @property
    def roots(self) -> Optional[RootsSource]: ...

    @property
    def sampling_handler(self) -> Optional[Callable[..., Any]]: ...

    @property
    def sampling_tools(self) -> bool: ...

    @property
    def elicitation_handler(self) -> Optional[Callable[..., Any]]: ...

    @property
    def elicitation_modes(self) -> Sequence[str]: ...

    @property
    def server_info(self) -> Optional[Implementation]: ...


class Responder:
    """Answers the server's requests for input with the client's handlers, in both eras.

    Raises :class:`~mcpsync.MCPError` with the code the spec gives: ``-32601``
    for a kind with no handler, ``-32602`` for an elicitation mode or sampling
    tools the client did not declare, ``-1`` when a sampling handler refuses.
    """

    def __init__(self, owner: HandlerOwner) -> None:
        self._owner = owner

    def capabilities(self, modern: bool) -> JSONObject:
        """The client capabilities these handlers support (``{}`` when none are registered)."""
        owner = self._owner
        capabilities: JSONObject = {}
        if owner.roots is not None:
            capabilities["roots"] = {} if modern else {"listChanged": True}
        if owner.sampling_handler is not None:
            capabilities["sampling"] = {"tools": {}} if owner.sampling_tools else {}
        if owner.elicitation_handler is not None:
            modes = tuple(owner.elicitation_modes)
            # An empty object means form only (and is what 2025-06-18 servers understand).
            capabilities["elicitation"] = {} if modes == ("form",) else {mode: {} for mode in modes}
        return capabilities

    def answer(self, method: str, params: Optional[JSONObject]) -> JSONObject:
        """The wire result for one request for input."""
        params = params or {}
        owner = self._owner
        if method == "roots/list" and owner.roots is not None:
            return {"roots": self.roots_payload()}
        if method == "sampling/createMessage" and owner.sampling_handler is not None:
            return self._sample(CreateMessageParams(params))
        if method == "elicitation/create" and owner.elicitation_handler is not None:
            return self._elicit(ElicitParams(params))
        raise MCPError(rpc.METHOD_NOT_FOUND, f"Method not found: {method}")

    def roots_payload(self) -> List[JSONObject]:
        configured = self._owner.roots
        source = configured() if callable(configured) else configured
        roots: List[JSONObject] = []
        for root in source or ():
            entry = dict(root) if isinstance(root, Mapping) else {"uri": file_uri(str(root))}
            if not str(entry.get("uri", "")).startswith("file://"):
                log.warning("Leaving out root %r: roots must be file:// URIs", entry.get("uri"))
                continue
            roots.append(entry)
        return roots

    def _sample(self, params: CreateMessageParams) -> JSONObject:
        handler = self._owner.sampling_handler
        if not self._owner.sampling_tools and ("tools" in params or "toolChoice" in params):
            raise MCPError(rpc.INVALID_PARAMS, "This client did not declare sampling.tools; the request has tools")
        assert handler is not None
        result = _wire(handler(params))
        if not isinstance(result, dict):
            raise MCPError(rpc.INTERNAL_ERROR, "The sampling handler returned no result")
        return result

    def _elicit(self, params: ElicitParams) -> JSONObject:
        handler = self._owner.elicitation_handler
        if params.mode not in self._owner.elicitation_modes:
            raise MCPError(rpc.INVALID_PARAMS, f"This client does not support {params.mode!r} elicitation")
        params._server = self._owner.server_info  # noqa: SLF001 same module: who asks is not part of the wire form
        assert handler is not None
        result = _wire(handler(params))
        if not isinstance(result, dict) or result.get("action") not in ("accept", "decline", "cancel"):
            raise MCPError(rpc.INTERNAL_ERROR, "The elicitation handler returned no accept, decline or cancel")
        if result["action"] == "accept" and params.mode == "form":
            result["content"] = with_defaults(params.requested_schema, result.get("content"))
        elif params.mode == "url" or result["action"] != "accept":
            result.pop("content", None)
        return result


def with_defaults(schema: Mapping[str, Any], content: Any) -> JSONObject:
    """``content`` with the schema's ``default`` filled in for every property the person left out."""
    filled: JSONObject = dict(content) if isinstance(content, Mapping) else {}
    properties = schema.get("properties")
    if isinstance(properties, Mapping):
        for name, prop in properties.items():
            if name not in filled and isinstance(prop, Mapping) and "default" in prop:
                filled[name] = copy.deepcopy(prop["default"])
    return filled


def _wire(value: Any) -> Any:
    return value.to_dict() if isinstance(value, MCPObject) else (dict(value) if isinstance(value, Mapping) else value)


def file_uri(path: str) -> str:
    """A ``file://`` URI for a path (``~`` expanded, made absolute); a URI is returned as it is."""
    if "://" in path:
        return path
    from pathlib import Path

    return Path(os.path.abspath(os.path.expanduser(path))).as_uri()
