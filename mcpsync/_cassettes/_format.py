"""The cassette file: JSON lines, versioned, one message per line in conversation order.

::

    {"format":"mcpsync-cassette","version":1}
    {"connection":0,"detection":"probe","target":{"args":["server.py"],"command":"python"},"transport":"stdio"}
    {"c":0,"send":{"id":1,"jsonrpc":"2.0","method":"server/discover","params":{...}}}
    {"c":0,"recv":{"id":1,"jsonrpc":"2.0","result":{...}}}
    {"c":0,"fail":{"error":"HTTPStatusError","id":1,"message":"...","status":404}}
    {"c":0,"timeout":{"id":1,"seconds":3.0}}
    {"c":0,"switch":"sse"}
    {"end":true,"events":3}

The first line is the header (the format's name and version); then every connection is declared
(its transport, its target with secrets filtered, how its era was found) before its first event;
each event line names its connection (``c``) and is one of ``send`` (a message the client wrote),
``recv`` (one the server sent), ``fail`` (the transport failed one request by itself, such as an
HTTP status), ``timeout`` (the client stopped waiting for an answer: a replay gives up at the
same point at once, instead of waiting as long again) or ``switch`` (the connection went on over another transport: the legacy HTTP+SSE
fallback). The last line counts the events: a file cut short anywhere is told from a whole one.
Keys are sorted, so two recordings of one conversation are equal files.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, NoReturn, Optional, Tuple, Union

from ._errors import CassetteError

__all__ = ["EVENT_KINDS", "FORMAT", "VERSION", "Connection", "Event", "Recording", "dumps_line", "read", "write"]

FORMAT = "mcpsync-cassette"
#: The version this mcpsync writes and the newest it reads.
VERSION = 1
EVENT_KINDS = ("send", "recv", "fail", "timeout", "switch")
_TRANSPORTS = ("stdio", "streamable-http", "sse")


@dataclass
class Event:
    """One line of a connection's conversation: ``kind`` is one of :data:`EVENT_KINDS`."""

    kind: str
    data: Any
    line: int = 0


@dataclass
class Connection:
    """One recorded connection: its transport kind, its target (secrets filtered), its events."""

    transport: str
    target: Dict[str, Any]
    detection: str
    events: List[Event] = field(default_factory=list)
    line: int = 0


@dataclass
class Recording:
    """What a cassette file holds: its connections, in the order they were made."""

    connections: List[Connection] = field(default_factory=list)


def dumps_line(obj: Any) -> str:
    """One line of the file: sorted keys, no spaces, non-ASCII kept."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def write(path: Union[str, Path], recording: Recording, order: Optional[List[Tuple[int, int]]] = None) -> None:
    """Write ``recording`` to ``path`` (atomically: a reader never sees half a file).

    ``order`` is the conversation order across connections as ``(connection, event)`` index
    pairs; by default each connection's events follow the one before's.
    """
    path = Path(path)
    lines = [dumps_line({"format": FORMAT, "version": VERSION})]
    if order is None:
        order = [(c, e) for c, conn in enumerate(recording.connections) for e in range(len(conn.events))]
    declared = set()
    count = 0
    for c, e in order:
        conn = recording.connections[c]
        if c not in declared:
            declared.add(c)
            lines.append(dumps_line({"connection": c, "transport": conn.transport, "target": conn.target,
                                     "detection": conn.detection}))
        event = conn.events[e]
        lines.append(dumps_line({"c": c, event.kind: event.data}))
        count += 1
    for c, conn in enumerate(recording.connections):  # a connection that said nothing still happened
        if c not in declared:
            lines.append(dumps_line({"connection": c, "transport": conn.transport, "target": conn.target,
                                     "detection": conn.detection}))
    lines.append(dumps_line({"end": True, "events": count}))
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".partial")
    temporary.write_text("\n".join(lines) + "\n", encoding="utf-8")
    temporary.replace(path)


def read(path: Union[str, Path]) -> Recording:
    """Read and check a cassette file.

    Raises:
        CassetteError: the file cannot be read, or is not a whole cassette of a version this
            mcpsync reads; the text names the file, the line and what is wrong there.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CassetteError(f"Cannot read the cassette {path}: {exc.__class__.__name__}: {exc}") from exc
    return parse(text, str(path))


def parse(text: str, name: str = "cassette") -> Recording:
    """The recording in ``text`` (a cassette file's contents); see :func:`read`."""
    recording = Recording()
    ended = False
    events = 0
    lines = _lines(text, name)
    for number, raw in enumerate(lines, 1):
        if ended:
            _bad(name, number, "a line after the end line: the file was edited or two files were joined")
        obj = _object(name, number, raw)
        if number == 1:
            _check_header(name, obj)
        elif "end" in obj:
            _check_end(name, number, obj, events)
            ended = True
        elif "connection" in obj:
            recording.connections.append(_connection(name, number, obj, len(recording.connections)))
        elif "c" in obj:
            _event(name, number, obj, recording)
            events += 1
        else:
            _bad(name, number, f"neither a connection, an event nor the end line (keys {sorted(obj)[:6]})")
    if not ended:
        _bad(name, len(lines), "the file ends before its end line: it is truncated; record it again")
    return recording


def _lines(text: str, name: str) -> List[str]:
    """The file's lines: it must end with a newline, and hold at least one line."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    else:
        _bad(name, len(lines), "the last line does not end with a newline: the file is truncated; record it again")
    if not lines:
        _bad(name, 1, "the file is empty: not a cassette (delete it to record it again)")
    return lines


def _object(name: str, number: int, raw: str) -> Dict[str, Any]:
    """One line's JSON object."""
    try:
        obj = json.loads(raw)
    except json.JSONDecodeError as exc:
        _bad(name, number, f"not JSON ({exc.msg} at column {exc.colno}): the file is truncated or was edited")
    if not isinstance(obj, dict):
        _bad(name, number, f"a JSON {type(obj).__name__}, not an object")
    return obj


def _check_end(name: str, number: int, obj: Dict[str, Any], events: int) -> None:
    """The end line must count the events the file holds."""
    if obj.get("events") != events:
        _bad(name, number, f"the end line counts {obj.get('events')!r} events but the file holds {events}: "
                           "lines were removed or added")


def _check_header(name: str, obj: Dict[str, Any]) -> None:
    if obj.get("format") != FORMAT:
        _bad(name, 1, f"not an mcpsync cassette header (expected \"format\": \"{FORMAT}\")")
    version = obj.get("version")
    if type(version) is not int or version < 1:
        _bad(name, 1, f"the version {version!r} is not a positive whole number")
    if version > VERSION:
        _bad(name, 1, f"cassette format version {version} is newer than this mcpsync reads (up to {VERSION}): "
                      "upgrade mcpsync, or record the cassette again with this one")


def _connection(name: str, number: int, obj: Dict[str, Any], expected: int) -> Connection:
    if obj.get("connection") != expected:
        _bad(name, number, f"connection {obj.get('connection')!r} declared where connection {expected} comes next")
    transport, target, detection = obj.get("transport"), obj.get("target"), obj.get("detection")
    if transport not in _TRANSPORTS:
        _bad(name, number, f"unknown transport {transport!r} (expected one of {', '.join(_TRANSPORTS)})")
    if not isinstance(target, dict):
        _bad(name, number, "the connection's target is not an object")
    if detection not in ("probe", "http", "legacy"):
        _bad(name, number, f"unknown era detection {detection!r}")
    return Connection(transport, target, detection, line=number)


def _event(name: str, number: int, obj: Dict[str, Any], recording: Recording) -> None:
    c = obj["c"]
    if type(c) is not int or not 0 <= c < len(recording.connections):
        _bad(name, number, f"the event names connection {c!r}, which is not declared before it")
    kinds = [kind for kind in EVENT_KINDS if kind in obj]
    if len(kinds) != 1 or len(obj) != 2:
        _bad(name, number, f"an event has \"c\" and exactly one of {', '.join(EVENT_KINDS)}; this one has keys "
                           f"{sorted(obj)}")
    kind = kinds[0]
    data = obj[kind]
    problem = _EVENT_PROBLEMS[kind](kind, data)
    if problem is not None:
        _bad(name, number, problem)
    recording.connections[c].events.append(Event(kind, data, number))


def _message_problem(kind: str, data: Any) -> Optional[str]:
    """A send or recv event holds a JSON-RPC 2.0 message (a recv, also a batch of them)."""
    items = data if isinstance(data, list) and kind == "recv" else [data]
    for item in items:
        if not isinstance(item, dict) or item.get("jsonrpc") != "2.0" or not ("method" in item or "id" in item):
            return f"the {kind} event is not a JSON-RPC 2.0 message"
    return None


def _timeout_problem(kind: str, data: Any) -> Optional[str]:
    if not isinstance(data, dict) or "id" not in data or not isinstance(data.get("seconds"), (int, float)):
        return "the timeout event needs an \"id\" and \"seconds\""
    return None


def _fail_problem(kind: str, data: Any) -> Optional[str]:
    if not isinstance(data, dict) or "id" not in data or not isinstance(data.get("message"), str):
        return "the fail event needs an \"id\" and a \"message\""
    return None


def _switch_problem(kind: str, data: Any) -> Optional[str]:
    if data not in _TRANSPORTS:
        return f"the switch event names unknown transport {data!r}"
    return None


# What is wrong with each kind of event's data (None: nothing).
_EVENT_PROBLEMS: Dict[str, Callable[[str, Any], Optional[str]]] = {
    "send": _message_problem, "recv": _message_problem, "timeout": _timeout_problem, "fail": _fail_problem,
    "switch": _switch_problem,
}


def _bad(name: str, number: int, what: str) -> NoReturn:
    raise CassetteError(f"Bad cassette {name}, line {number}: {what}")
