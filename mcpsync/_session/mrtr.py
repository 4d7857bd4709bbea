"""Multi round-trip requests (2026-07-28): answering ``input_required`` results.

A modern server that needs something from the client mid-call (a sampled
message, an answer from the person, the roots) answers ``tools/call``,
``resources/read`` or ``prompts/get`` with ``resultType: "input_required"``.
The client runs its handlers for each entry of ``inputRequests`` and sends
the original request again, with a new id, the answers in ``inputResponses``
and ``requestState`` echoed exactly as it came (never parsed, never
invented). The state lives in this call frame only, so parallel calls never
see each other's answers, and nothing here is ever cached.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Optional

from .._log import getLogger
from .._protocol import methods as _methods
from .._rpc.jsonrpc import JSONObject
from ..exceptions import ProtocolError

log = getLogger("mcpsync.client")

#: The requests a server may answer with ``input_required``.
METHODS = _methods.INPUT_REQUIRED
DEFAULT_MAX_ROUNDS = 8

COMPLETE, INPUT_REQUIRED, TASK = "complete", "input_required", "task"

Send = Callable[[JSONObject], Any]
Answer = Callable[[str, Optional[JSONObject]], JSONObject]


def result_type(result: Any) -> str:
    """A modern result's ``resultType``: absent means ``"complete"``."""
    if isinstance(result, dict):
        kind = result.get("resultType", COMPLETE)
        return kind if isinstance(kind, str) else repr(kind)
    return COMPLETE


def complete(method: str, params: JSONObject, first: JSONObject, send: Send, answer: Answer,
             max_rounds: int = DEFAULT_MAX_ROUNDS) -> Any:
    """Answer ``first`` (an ``input_required`` result) and retry until the server gives a real result.

    ``send(params)`` sends ``method`` once more (a new request, hence a new id)
    and returns its result; ``answer(method, params)`` runs the client's
    handler for one input request and returns the wire answer (or raises,
    which ends the call: the retry is simply not sent).

    Raises:
        ProtocolError: the server asked more than ``max_rounds`` times, or sent a malformed request.
        whatever ``send`` or ``answer`` raises.
    """
    result: Any = first
    rounds = 0
    while result_type(result) == INPUT_REQUIRED:
        rounds += 1
        if rounds > max_rounds:
            raise ProtocolError(f"{method}: the server still wanted input after {max_rounds} rounds; giving up")
        requests = result.get("inputRequests")
        if requests is not None and not isinstance(requests, dict):
            raise ProtocolError(f"{method}: inputRequests is not an object")
        responses = answer_all(requests or {}, answer, method)
        retry: JSONObject = {k: v for k, v in params.items() if k not in ("inputResponses", "requestState")}
        if responses:
            retry["inputResponses"] = responses
        if "requestState" in result:
            retry["requestState"] = result["requestState"]  # opaque: echoed exactly, never looked into
        log.debug("%s: answered %d input request(s), retrying (round %d)", method, len(responses), rounds)
        result = send(retry)
    return result


def answer_all(requests: Dict[str, Any], answer: Answer, method: str) -> JSONObject:
    """``{key: answer}`` for every input request (each run like the equivalent standalone request)."""
    responses: JSONObject = {}
    for key, request in requests.items():
        if not isinstance(request, dict) or not isinstance(request.get("method"), str):
            raise ProtocolError(f"{method}: input request {key!r} is malformed")
        params = request.get("params")
        responses[key] = answer(request["method"], params if isinstance(params, dict) else None)
    return responses
