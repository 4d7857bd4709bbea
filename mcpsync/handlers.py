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
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Union

from .types import Content, Implementation, MCPObject, _Field

JSONObject = Dict[str, Any]

__all__ = [
    "CreateMessageParams", "CreateMessageResult", "ElicitParams", "ElicitResult", "LogMessage",
    "RootsSource",
]

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

    def __init__(self, params: Optional[Mapping[str, Any]] = None, *, server: Optional[Implementation] = None) -> None:
        super().__init__(params or {})
        self._server = server

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
