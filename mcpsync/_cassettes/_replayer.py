"""Replaying one recorded connection: what the server says after each thing the client says.

The client's messages are matched against the recorded ones it has not used yet (so calls made
from several threads at once may arrive in any order); after a match, the server's recorded
messages that followed it, up to the client's next recorded message, are delivered, in their
order, with ids translated to the live ones. Answers the client gives to recorded server
requests (sampling, elicitation, roots) are compared with the recorded answers.
"""

from __future__ import annotations

import json
import threading
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .._protocol.methods import NOTIFY_CANCELLED, PING
from ._errors import CassetteMismatch
from ._format import Connection, Event
from ._normalise import comparable
from ._secrets import Filter

__all__ = ["Replayer", "MATCH_FIELDS"]

#: What ``match_on`` may name.
MATCH_FIELDS = ("method", "params")

#: An action for the transport: ("recv", message) to deliver, ("fail", (live_id, spec)) or
#: ("timeout", (live_id, spec)) to end a request as the recording saw it end.
Action = Tuple[str, Any]


def _kind(message: Any) -> str:
    if not isinstance(message, dict):
        return "other"
    if "method" in message:
        return "request" if "id" in message else "notification"
    return "response"


def _short(value: Any, limit: int = 300) -> str:
    text = json.dumps(value, sort_keys=True, ensure_ascii=False)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _difference(live: Any, recorded: Any, path: str = "") -> str:
    """The first place two JSON values differ, in words."""
    if isinstance(live, dict) and isinstance(recorded, dict):
        return _dict_difference(live, recorded, path)
    if isinstance(live, list) and isinstance(recorded, list):
        return _list_difference(live, recorded, path)
    return f"{path or 'the value'} is {_short(live, 80)}, the recording has {_short(recorded, 80)}"


def _dict_difference(live: Dict[Any, Any], recorded: Dict[Any, Any], path: str) -> str:
    for key in sorted(set(live) | set(recorded), key=str):
        where = f"{path}.{key}" if path else str(key)
        if key not in recorded:
            return f"{where} was not in the recording"
        if key not in live:
            return f"{where} is missing (recorded {_short(recorded[key], 80)})"
        if live[key] != recorded[key]:
            return _difference(live[key], recorded[key], where)
    return ""


def _list_difference(live: List[Any], recorded: List[Any], path: str) -> str:
    if len(live) != len(recorded):
        return f"{path or 'the value'} has {len(live)} items, the recording {len(recorded)}"
    for i, (a, b) in enumerate(zip(live, recorded)):
        if a != b:
            return _difference(a, b, f"{path}[{i}]")
    return ""


def _ends_request(event: Event, recorded_id: Any) -> bool:
    """Whether ``event`` ends request ``recorded_id``: its timeout or failure, the client's cancellation
    of it, or an answer to it."""
    data = event.data
    if event.kind in ("timeout", "fail"):
        return bool(data.get("id") == recorded_id)
    if event.kind == "send":
        return _cancels(data, recorded_id)
    if event.kind == "recv":
        return any(isinstance(item, dict) and "method" not in item and item.get("id") == recorded_id
                   for item in (data if isinstance(data, list) else [data]))
    return False


def _cancels(data: Any, recorded_id: Any) -> bool:
    """Whether a sent message is the cancellation of request ``recorded_id``."""
    if not isinstance(data, dict) or data.get("method") != NOTIFY_CANCELLED:
        return False
    params = data.get("params")
    return isinstance(params, dict) and params.get("requestId") == recorded_id


class Replayer:
    """The replay state of one recorded connection; thread-safe.

    ``match_on`` names what must be equal for a request to match its recording: ``"method"``
    and/or ``"params"``. ``lenient`` methods match on the method alone (``mcpsync replay``
    serving a client that introduces itself differently); ``ignore_meta`` leaves ``_meta`` out.
    """

    def __init__(self, connection: Connection, secrets: Filter, match_on: Sequence[str] = MATCH_FIELDS,
                 where: str = "the cassette", lenient: Sequence[str] = (), ignore_meta: bool = False) -> None:
        self.connection = connection
        self._events = connection.events
        self._used = [False] * len(self._events)
        self._secrets = secrets
        self._match_on = tuple(match_on)
        self._where = where
        self._lenient = frozenset(lenient)
        self._ignore_meta = ignore_meta
        self._lock = threading.Lock()
        self._live: Dict[Any, Any] = {}  # recorded request id -> the live one
        self._held: Dict[Any, List[Action]] = {}  # answers to requests not yet seen live, by recorded id

    @property
    def first_request(self) -> Optional[str]:
        for event in self._events:
            if event.kind == "send" and _kind(event.data) == "request":
                return str(event.data["method"])
        return None

    def next_is_switch(self) -> Optional[str]:
        """The transport the recording switches to next (a legacy HTTP+SSE fallback), consuming it."""
        with self._lock:
            for i, event in enumerate(self._events):
                if not self._used[i] and event.kind == "switch":
                    self._used[i] = True
                    return str(event.data)
                if not self._used[i] and event.kind == "send":
                    return None
        return None

    def client_message(self, message: Any) -> List[Action]:
        """What the server says after the client's ``message``.

        Raises:
            CassetteMismatch: a request, or an answer to a server request, the recording does not hold.
        """
        kind = _kind(message)
        with self._lock:
            if kind == "request":
                return self._request(message)
            if kind == "notification":
                return self._notification(message)
            if kind == "response":
                return self._answer(message)
            return []

    # -- matching ---------------------------------------------------------------------------

    def _key(self, message: Dict[str, Any]) -> Dict[str, Any]:
        key: Dict[str, Any] = {}
        key["method"] = message.get("method")  # a request is always told by its method
        if "params" in self._match_on and message.get("method") not in self._lenient:
            params = comparable(message.get("params")) or {}  # no params and {} say the same
            if self._ignore_meta and isinstance(params, dict) and "_meta" in params:
                params = {k: v for k, v in params.items() if k != "_meta"}
            key["params"] = params
        return key

    def _request(self, message: Dict[str, Any]) -> List[Action]:
        live_key = self._key(self._secrets.json(message))
        candidates = [i for i, e in enumerate(self._events)
                      if not self._used[i] and e.kind == "send" and _kind(e.data) == "request"]
        for i in candidates:
            if self._key(self._events[i].data) == live_key:
                self._used[i] = True
                recorded_id = self._events[i].data["id"]
                self._live[recorded_id] = message["id"]
                actions = self._following(i)
                actions.extend(self.fix_live(self._held.pop(recorded_id, [])))
                if not self._ends(recorded_id, i):
                    # Never a hang: a request the recording holds no end for fails now, saying so.
                    actions.append(("fail", (message["id"], {
                        "error": "CassetteError", "message":
                            f"{self._where} holds no answer to the {message.get('method')!r} request recorded at "
                            f"line {self._events[i].line} (the recording ended first, or the file was edited): "
                            "record the cassette again"})))
                return actions
        if message.get("method") == PING:  # liveness, not conversation: always answered
            return [("recv", {"jsonrpc": "2.0", "id": message["id"], "result": {}})]
        raise self._mismatch(message, live_key, [self._events[i] for i in candidates], "request")

    def _ends(self, recorded_id: Any, index: int) -> bool:
        """Whether the recording says how request ``recorded_id`` (sent at ``index``) ended: an answer,
        a timeout, a failure, or the client's own cancellation (which the replaying client repeats)."""
        return any(_ends_request(event, recorded_id) for event in self._events[index + 1:])

    def _notification(self, message: Dict[str, Any]) -> List[Action]:
        method = message.get("method")
        for i, event in enumerate(self._events):
            if not self._used[i] and event.kind == "send" and _kind(event.data) == "notification" \
                    and event.data.get("method") == method:
                self._used[i] = True
                return self._following(i)
        return []  # a notification the recording lacks (a cancel that raced an answer) changes nothing

    def _answer(self, message: Dict[str, Any]) -> List[Action]:
        live = self._secrets.json(message)
        answers = [(i, e) for i, e in enumerate(self._events)
                   if not self._used[i] and e.kind == "send" and _kind(e.data) == "response"]
        for i, event in answers:
            if event.data.get("id") == live.get("id"):
                self._check_answer(live, event)
                self._used[i] = True
                return self._following(i)
        raise CassetteMismatch(
            f"Your client answered a server request {live.get('id')!r} that {self._where} holds no answer to; "
            "record the cassette again", request=live, closest=None, difference="no recorded answer")

    def _check_answer(self, live: Dict[str, Any], event: Event) -> None:
        """Raise when the client's answer to a server request is not the recorded one."""
        recorded = {k: v for k, v in event.data.items() if k in ("result", "error")}
        given = {k: v for k, v in live.items() if k in ("result", "error")}
        if comparable(recorded) == comparable(given):
            return
        difference = _difference(comparable(given), comparable(recorded))
        raise CassetteMismatch(
            f"Your handler's answer to the server's request {live.get('id')!r} differs from the "
            f"one recorded in {self._where} (line {event.line}): {difference}. Answered: "
            f"{_short(given)}; recorded: {_short(recorded)}. Make the handler answer as it did "
            "when the cassette was recorded, or record the cassette again",
            request=given, closest=recorded, difference=difference)

    def _mismatch(self, message: Dict[str, Any], live_key: Dict[str, Any], candidates: List[Event],
                  what: str) -> CassetteMismatch:
        shown = {k: v for k, v in live_key.items()}
        if not candidates:
            return CassetteMismatch(
                f"{self._where} holds no {what} {_short(shown)}: every recorded request of this connection was "
                "already replayed. Record the cassette again (record_mode='all' or 'new_episodes'), or make "
                "the test send only what was recorded", request=shown, closest=None,
                difference="nothing left to replay")
        same_method = [e for e in candidates if e.data.get("method") == message.get("method")]
        pool = same_method or candidates
        closest = min(pool, key=lambda e: len(json.dumps(_difference(live_key, self._key(e.data)))))
        recorded_key = self._key(closest.data)
        difference = _difference(live_key, recorded_key)
        return CassetteMismatch(
            f"{self._where} holds no {what} {_short(shown)}. The closest recorded one (line {closest.line}) is "
            f"{_short(recorded_key)}; the difference: {difference}. Record the cassette again, or send what "
            "was recorded", request=shown, closest=recorded_key, difference=difference)

    # -- what follows -----------------------------------------------------------------------

    def _following(self, index: int) -> List[Action]:
        actions: List[Action] = []
        for j in range(index + 1, len(self._events)):
            if self._used[j]:
                continue
            event = self._events[j]
            if event.kind in ("send", "switch"):
                break
            self._used[j] = True
            if event.kind in ("fail", "timeout"):
                data = dict(event.data)
                recorded_id = data.get("id")
                if recorded_id in self._live:
                    actions.append((event.kind, (self._live[recorded_id], data)))
                else:
                    self._held.setdefault(recorded_id, []).append((event.kind, (recorded_id, data)))
                continue
            messages = event.data if isinstance(event.data, list) else [event.data]
            for message in messages:
                self._deliver(message, actions)
        return actions

    def _deliver(self, message: Dict[str, Any], actions: List[Action]) -> None:
        kind = _kind(message)
        if kind == "response":
            recorded_id = message.get("id")
            if recorded_id not in self._live:
                self._held.setdefault(recorded_id, []).append(("recv", message))
                return
            actions.append(("recv", {**message, "id": self._live[recorded_id]}))
            return
        if kind == "notification" and isinstance(message.get("params"), dict):
            params = dict(message["params"])
            for key in ("progressToken", "requestId"):
                if key in params and params[key] in self._live:
                    params[key] = self._live[params[key]]
            message = {**message, "params": params}
        actions.append(("recv", message))

    def fix_live(self, actions: List[Action]) -> List[Action]:
        """Held actions carry recorded ids; translate them once their request is live."""
        fixed: List[Action] = []
        for kind, item in actions:
            if kind == "recv" and _kind(item) == "response":
                fixed.append((kind, {**item, "id": self._live.get(item.get("id"), item.get("id"))}))
            elif kind in ("fail", "timeout"):
                recorded_id, data = item
                fixed.append((kind, (self._live.get(recorded_id, recorded_id), data)))
            else:
                fixed.append((kind, item))
        return fixed

    def leftover(self) -> int:
        """How many recorded client requests were never replayed."""
        with self._lock:
            return sum(1 for i, e in enumerate(self._events)
                       if not self._used[i] and e.kind == "send" and _kind(e.data) == "request")

