"""JSON-RPC 2.0 messages: building, encoding, decoding and classifying them.

Pure functions over dicts; no I/O. Decoding errors are raised as
:class:`~mcpsync.ProtocolError` so no ``JSONDecodeError`` leaks to callers.

Decoding bounds nesting: a message nested more than :data:`MAX_DEPTH` levels
(objects and arrays, the message itself counted) is refused with
:class:`NestedTooDeeply`, so nothing decoded here can make later code (a deep
copy, a schema walk, the JSON encoder) run out of stack with a ``RecursionError``.
"""

from __future__ import annotations

import itertools
import json
import json.scanner
from typing import Any, Callable, Dict, Optional, Tuple, Union, cast

from ..exceptions import ProtocolError

JSONObject = Dict[str, Any]
RequestId = Union[int, str]

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603

REQUEST = "request"
NOTIFICATION = "notification"
RESPONSE = "response"

#: The deepest nesting of objects and arrays :func:`decode` accepts (the message itself is level 1).
#: MCP messages need perhaps 20; this leaves room for deep schemas and stays far from the stack limit.
MAX_DEPTH = 100

# The two notifications the engine itself implements (the only method names the RPC layer knows):
#: The peer stopped waiting for a request (``requestId``, optional ``reason``); sent and honoured.
CANCELLED = "notifications/cancelled"
#: A request's progress (``progressToken``, ``progress``, ``total``, ``message``); routed to its caller.
PROGRESS = "notifications/progress"

_encoder = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
# The C encoder behind it, called directly: one call per message instead of three Python
# frames. No circular-reference bookkeeping (that dict would be shared by every thread);
# a circular value ends in RecursionError instead, which encode() reports the same way.
_c_make_encoder = getattr(json.encoder, "c_make_encoder", None)
_chunks = (_c_make_encoder(None, _encoder.default, json.encoder.encode_basestring, None, ":", ",", False, False,
                           False) if _c_make_encoder is not None else None)


def make_request(request_id: RequestId, method: str, params: Optional[JSONObject]) -> JSONObject:
    message: JSONObject = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def make_notification(method: str, params: Optional[JSONObject]) -> JSONObject:
    message: JSONObject = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    return message


def make_result(request_id: RequestId, result: Any) -> JSONObject:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def make_error(request_id: Optional[RequestId], code: int, message: str, data: Any = None) -> JSONObject:
    error: JSONObject = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": error}


def encode(message: JSONObject) -> bytes:
    """Compact UTF-8 JSON without a newline (never contains a raw newline).

    Raises:
        ProtocolError: the message is not JSON-serialisable (NaN included).
    """
    try:
        if _chunks is not None and type(message) is dict:
            return "".join(_chunks(message, 0)).encode("utf-8")
        return _encoder.encode(message).encode("utf-8")
    except (TypeError, ValueError) as exc:
        raise ProtocolError(f"Cannot encode message as JSON: {exc}") from exc
    except RecursionError as exc:
        raise ProtocolError("Cannot encode message as JSON: nested too deeply, or circular") from exc


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


# One decoder, built once: json.loads with options would build a new one per call.
_decoder = json.JSONDecoder(parse_constant=_reject_constant)
_decode_text = _decoder.decode
# Its scanner, for the common case of a message with nothing but a line end after it.
_scan: Callable[[str, int], Tuple[Any, int]] = json.scanner.make_scanner(cast(Any, _decoder))  # typeshed types it oddly


class NestedTooDeeply(ProtocolError):
    """A message nested deeper than :data:`MAX_DEPTH`; ``value`` is what it decoded to, when the
    decoder got that far (None if the stack ran out first), so a reader can still fail the call a
    too-deep response answers instead of letting it wait out its timeout."""

    def __init__(self, message: str, value: Any = None) -> None:
        super().__init__(message)
        self.value = value


def decode(data: Union[bytes, str]) -> Any:
    """Parse one JSON text (bytes must be UTF-8), nested at most :data:`MAX_DEPTH` levels.

    The depth is measured only for a text that could exceed it (longer than twice the
    limit, with more brackets than the limit), so a short message costs one length check.

    Raises:
        NestedTooDeeply: nested more than :data:`MAX_DEPTH` levels (a ProtocolError).
        ProtocolError: invalid UTF-8, invalid JSON, NaN/Infinity.
    """
    try:
        text = data.decode("utf-8") if isinstance(data, (bytes, bytearray)) else data
        try:
            value, end = _scan(text, 0)
        except StopIteration:  # leading whitespace, or no value: the full decoder decides and says why
            value = _decode_text(text)
        else:
            if text[end:].strip(" \t\n\r"):
                value = _decode_text(text)  # something after the value: the full decoder says what
    except UnicodeDecodeError as exc:
        raise ProtocolError(f"Message is not valid UTF-8: {exc}") from exc
    except RecursionError as exc:
        raise NestedTooDeeply(f"Message is nested too deeply: far more than {MAX_DEPTH} levels; "
                              f"{_ADVICE}") from exc
    except ValueError as exc:
        raise ProtocolError(f"Message is not valid JSON: {exc}") from exc
    if len(text) > 2 * MAX_DEPTH and text.count("[") + text.count("{") > MAX_DEPTH:
        _check_depth(value)
    return value


def _check_depth(value: Any) -> None:
    """Raise NestedTooDeeply (holding ``value``) if it nests more than :data:`MAX_DEPTH` levels."""
    depth = nesting_depth(value)
    if depth > MAX_DEPTH:
        raise NestedTooDeeply(f"Message is nested too deeply: nested {depth} levels deep; at most "
                              f"{MAX_DEPTH} are accepted; {_ADVICE}", value)


_ADVICE = "no MCP message needs that many: ask the server's author to send flatter JSON"


def nesting_depth(value: Any) -> int:
    """Levels of objects and arrays in a decoded JSON value (0 for a scalar), without recursion.

    Walks one level at a time, so the stack never grows with the depth; the cost is one
    step per value.
    """
    depth = 0
    level = [value] if type(value) is dict or type(value) is list else []
    while level:
        depth += 1
        below = []
        for node in level:
            for child in (node.values() if type(node) is dict else node):
                if type(child) is dict or type(child) is list:
                    below.append(child)
        level = below
    return depth


def rough_size(value: Any, nodes: int = 64) -> int:
    """A cheap guess at the bytes ``value`` takes as JSON, for a message whose size its transport
    did not measure: the lengths of the strings among the first ``nodes`` values it visits (keys
    included) plus a few bytes for each other value. The cost does not grow with ``value``."""
    total = 0
    pending = [value]
    while pending and nodes > 0:
        item = pending.pop()
        nodes -= 1
        kind = type(item)
        if kind is str:
            total += len(item) + 2
        elif kind is dict:
            total += 2 + sum(len(key) + 4 for key in itertools.islice(item, nodes))
            pending.extend(itertools.islice(item.values(), nodes))
        elif kind is list:
            total += 2
            pending.extend(item[:nodes])
        else:
            total += 8
    return total


def classify(message: Any) -> str:
    """Say whether ``message`` is a request, a notification or a response.

    Raises:
        ProtocolError: it is not a JSON-RPC 2.0 message.
    """
    if not isinstance(message, dict):
        raise ProtocolError(f"Not a JSON-RPC message: expected an object, got {type(message).__name__}")
    if message.get("jsonrpc") != "2.0":
        raise ProtocolError("Not a JSON-RPC 2.0 message: missing jsonrpc \"2.0\"")
    method = message.get("method")
    if method is not None:
        return _classify_call(message, method)
    if "id" in message and ("result" in message or "error" in message):
        return _check_response(message)
    raise ProtocolError("Not a JSON-RPC message: no method, result or error")


def _classify_call(message: JSONObject, method: Any) -> str:
    """:func:`classify` for a message with a method: a request (it has an id) or a notification."""
    if not isinstance(method, str):
        raise ProtocolError("Not a JSON-RPC message: method is not a string")
    params = message.get("params")
    if params is not None and not isinstance(params, (dict, list)):
        raise ProtocolError("Not a JSON-RPC message: params is not an object")
    if "id" not in message:
        return NOTIFICATION
    if not valid_id(message["id"]):
        raise ProtocolError("Not a JSON-RPC request: id must be a string or an integer")
    return REQUEST


def _check_response(message: JSONObject) -> str:
    """:func:`classify` for a message with an id and a result or an error: a response, if well formed."""
    if "error" not in message:
        return RESPONSE
    if "result" in message:
        raise ProtocolError("Not a JSON-RPC response: it carries both result and error")
    error = message["error"]
    if not isinstance(error, dict) or not isinstance(error.get("code"), int):
        raise ProtocolError("Not a JSON-RPC response: malformed error object")
    return RESPONSE


def valid_id(value: Any) -> bool:
    """Whether ``value`` may be a request id: a string or an integer (never a bool)."""
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))




def preview(data: Union[bytes, str], limit: int = 120) -> str:
    """A short, printable excerpt of raw input for log lines."""
    if isinstance(data, (bytes, bytearray)):
        text = bytes(data[: limit * 4]).decode("utf-8", errors="replace")
    else:
        text = data
    text = text.rstrip("\r\n")
    return repr(text[:limit] + ("..." if len(text) > limit else ""))
