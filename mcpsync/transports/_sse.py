"""Server-Sent Events parsing: bytes in, events out, with last-event-id and retry tracking.

An incremental parser of the ``text/event-stream`` format (WHATWG HTML §9.2),
fed raw chunks as they arrive. Unlike a parser that only hands out events
with data, it records the id of *every* completed event, including the
priming events of MCP 2025-11-25 (an ``id:`` with empty ``data``), because a
resumed stream must send that id back as ``Last-Event-ID``.

Cost is linear in the input: chunks are appended to one buffer, each byte is
scanned for a line end once, and a multi-line ``data`` field is joined once
when its event completes. A single event larger than ``max_event_size``
raises :class:`~mcpsync.ProtocolError` without being held whole in memory.
"""

from __future__ import annotations

from typing import Callable, ClassVar, Dict, Iterable, Iterator, List, Optional, Union

from ..exceptions import ProtocolError

__all__ = ["MAX_ID_LENGTH", "MAX_RETRY", "SSEEvent", "SSEParser", "message_data"]

_BOM = b"\xef\xbb\xbf"

#: The longest reconnection delay a ``retry:`` field can ask for, in seconds (five minutes): a
#: larger value is taken as this bound, so a server can neither silence a stream for days nor
#: overflow a timer.
MAX_RETRY = 300.0
_MAX_RETRY_DIGITS = 9  # more digits than this (over 11 days in milliseconds) are over the bound anyway

#: The longest event ``id`` kept, in characters. The id goes back to the server as the
#: ``Last-Event-ID`` header, so an id that no header could carry is ignored (see SSEParser).
MAX_ID_LENGTH = 1024


class SSEEvent:
    """One dispatched event: ``event`` type (default ``"message"``), ``data``, ``id``, ``retry``.

    ``data`` is the raw UTF-8 bytes (multi-line values joined with ``\\n``);
    ``id`` is the stream's last event id when the event completed; ``retry``
    is the reconnection delay in seconds the stream last asked for.
    """

    __slots__ = ("event", "data", "id", "retry")

    def __init__(self, event: str, data: bytes, id: Optional[str], retry: Optional[float]) -> None:
        self.event = event
        self.data = data
        self.id = id
        self.retry = retry

    def __repr__(self) -> str:
        return f"<SSEEvent {self.event!r} id={self.id!r} {len(self.data)} bytes>"


class SSEParser:
    """Parses one event stream incrementally. Not thread-safe: one reader feeds it.

    Attributes:
        last_event_id: the id of the last *completed* event that set one (or
            ``None``); an id seen in an event cut off before its blank line
            does not count, as the SSE standard says.
        retry: the last ``retry:`` value, in seconds (``None`` until one arrives), at most
            :data:`MAX_RETRY`.

    An ``id:`` that could not be sent back as a ``Last-Event-ID`` header is
    ignored, as one holding NUL is by the standard: longer than
    :data:`MAX_ID_LENGTH`, with a control character, leading or trailing
    whitespace, or a character outside Latin-1.
        events_seen: completed events, with or without data.
    """

    def __init__(self, max_event_size: int = 64 * 1024 * 1024) -> None:
        self.max_event_size = max_event_size
        self.last_event_id: Optional[str] = None
        self.retry: Optional[float] = None
        self.events_seen = 0
        self._buf = bytearray()
        self._scan = 0  # bytes of _buf already known to hold no line end
        self._pending_cr = False  # the previous chunk ended in CR: a following LF belongs to it
        self._data: List[bytes] = []
        self._data_size = 0
        self._event_type = ""
        self._id_buffer: Optional[str] = None
        self._dirty = False  # a field was seen since the last blank line
        self._at_start = True  # a byte order mark may still begin the stream

    def resumed(self) -> "SSEParser":
        """A parser for the next connection of the same stream: same last event id and retry."""
        parser = SSEParser(self.max_event_size)
        parser.last_event_id = self.last_event_id
        parser.retry = self.retry
        parser._id_buffer = self.last_event_id
        return parser

    def feed(self, chunk: bytes) -> List[SSEEvent]:
        """Add the next bytes of the stream; return the events they completed.

        Raises:
            ProtocolError: one event (or one line) grew beyond ``max_event_size``.
        """
        if not chunk:
            return []
        buf = self._buf
        buf += self._line_ends(chunk)
        if self._at_start and not self._past_bom(buf):
            return []
        events = self._read_lines(buf)
        if len(buf) + self._data_size > self.max_event_size:
            self._reset_event()
            buf.clear()
            self._scan = 0
            raise ProtocolError(f"SSE event larger than max_message_size ({self.max_event_size} bytes)")
        return events

    def _line_ends(self, chunk: bytes) -> bytes:
        """``chunk`` with every line end (CRLF, CR, LF) as LF; a CRLF split between chunks is one."""
        if self._pending_cr:
            self._pending_cr = False
            if chunk[:1] == b"\n":
                chunk = chunk[1:]
        if b"\r" in chunk:
            self._pending_cr = chunk.endswith(b"\r")
            chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        return chunk

    def _past_bom(self, buf: bytearray) -> bool:
        """Drop a byte order mark beginning the stream (the stream is UTF-8 decoded, which drops
        one; it may be split between chunks); False while ``buf`` may still be the start of one."""
        if len(buf) < len(_BOM) and _BOM.startswith(bytes(buf)):
            return False
        if buf[:len(_BOM)] == _BOM:
            del buf[:len(_BOM)]
        self._at_start = False
        return True

    def _read_lines(self, buf: bytearray) -> List[SSEEvent]:
        """Read the whole lines in ``buf`` (removing them); the events their blank lines complete."""
        events: List[SSEEvent] = []
        start = 0
        find = buf.find
        while True:
            end = find(b"\n", max(start, self._scan))
            if end < 0:
                break
            self._scan = 0
            if end == start:
                event = self._dispatch()
                if event is not None:
                    events.append(event)
            elif buf.startswith(b"data:", start):
                # The commonest line, and the one that may be huge: copy only its value, once,
                # straight out of the buffer (not the line, then the value out of the line).
                skip = 6 if buf[start + 5:start + 6] == b" " else 5
                with memoryview(buf) as view:
                    self._data_line(bytes(view[start + skip:end]))
            else:
                self._line(bytes(buf[start:end]))
            start = end + 1
        if start:
            del buf[:start]
        self._scan = len(buf)
        return events

    def _data_line(self, value: bytes) -> None:
        self._dirty = True
        self._data.append(value)
        self._data_size += len(value) + 1
        if self._data_size > self.max_event_size:
            self._reset_event()
            raise ProtocolError(f"SSE event larger than max_message_size ({self.max_event_size} bytes)")

    def _line(self, line: bytes) -> None:
        if line[:5] == b"data:":
            self._data_line(line[6:] if line[5:6] == b" " else line[5:])
            return
        self._dirty = True
        if line[:1] == b":":
            return  # a comment: keep-alive
        name, sep, raw = line.partition(b":")
        if sep and raw[:1] == b" ":
            raw = raw[1:]
        field = self._FIELDS.get(name)
        if field is not None:  # a field of another name is ignored, as the standard says
            field(self, raw)

    def _empty_data(self, raw: bytes) -> None:
        """``data`` with no colon: an empty data line."""
        self._data.append(b"")
        self._data_size += 1

    def _event_field(self, raw: bytes) -> None:
        self._event_type = raw.decode("utf-8", errors="replace")

    def _id_field(self, raw: bytes) -> None:
        """An id that could not go back as a ``Last-Event-ID`` header is ignored."""
        if len(raw) <= MAX_ID_LENGTH * 2:
            text = raw.decode("utf-8", errors="replace")
            if _sendable_id(text):
                self._id_buffer = text

    def _retry_field(self, raw: bytes) -> None:
        if raw.isdigit():
            self.retry = MAX_RETRY if len(raw) > _MAX_RETRY_DIGITS else min(int(raw) / 1000.0, MAX_RETRY)

    #: What each field of a line (other than ``data:``, read on the fast path) sets, by its name.
    _FIELDS: ClassVar[Dict[bytes, Callable[["SSEParser", bytes], None]]] = {
        b"data": _empty_data, b"event": _event_field, b"id": _id_field, b"retry": _retry_field,
    }

    def _dispatch(self) -> Optional[SSEEvent]:
        if not self._dirty:
            return None  # consecutive blank lines
        self.events_seen += 1
        if self._id_buffer is not None:
            # Committed on the blank line, data or not: priming events carry only an id.
            self.last_event_id = self._id_buffer
        data = self._data
        event_type = self._event_type or "message"
        self._reset_event()
        payload = data[0] if len(data) == 1 else b"\n".join(data)
        if not payload or payload.isspace():
            return None  # e.g. a priming event: an id and empty data, nothing to parse
        return SSEEvent(event_type, payload, self.last_event_id, self.retry)

    def _reset_event(self) -> None:
        self._data = []
        self._data_size = 0
        self._event_type = ""
        self._dirty = False


def _sendable_id(value: str) -> bool:
    """Whether ``value`` can go back as a ``Last-Event-ID`` header exactly as it came."""
    if len(value) > MAX_ID_LENGTH or value != value.strip():
        return False
    return all(" " <= ch <= "~" or "\xa0" <= ch <= "\xff" for ch in value)


def message_data(chunks: Iterable[bytes], parser: SSEParser,
                 on_other: Optional[Callable[[SSEEvent], None]] = None) -> Iterator[Union[str, bytes]]:
    """The one SSE consumption loop: the data of every ``message`` event that ``chunks`` complete.

    Events of another type (``endpoint``, ...) go to ``on_other`` (dropped without one),
    in stream order. Runs on the consuming thread; the generator is not thread-safe.

    Raises:
        ProtocolError: one event grew beyond the parser's ``max_event_size``.
        Whatever iterating ``chunks`` raises (a dropped connection).
    """
    for chunk in chunks:
        events = parser.feed(chunk)
        events.reverse()
        while events:
            event = events.pop()
            if event.event != "message":
                if on_other is not None:
                    on_other(event)
                continue
            data: Union[bytes, str] = event.data
            del event  # the data is now held here alone: decoded, the bytes go at once
            try:
                data = data.decode("utf-8") if isinstance(data, bytes) else data
            except UnicodeDecodeError:
                pass  # the bytes as they came: the JSON decoder says what is wrong with them
            yield data
            data = ""
