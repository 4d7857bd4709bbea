"""Property tests of the SSE parser: any chunking of one byte stream yields the same events and ids.

Streams are built from fields (data, id, event, retry, comments, unknown
fields, data without a colon), CR, LF and CRLF line ends, non-ASCII text
(so chunk boundaries split UTF-8 sequences), empty data and an optional
leading byte order mark. The parser's output for the whole stream, for the
stream cut at arbitrary points, and fed byte by byte must all equal a small
reference reading of the WHATWG rules written here independently.
"""

from __future__ import annotations

import re
from typing import Any, List, Optional, Tuple

import pytest
from hypothesis import given, strategies as st

from mcpsync.transports._sse import MAX_ID_LENGTH, MAX_RETRY, SSEParser

from .conftest import PROPERTY_SETTINGS, TIERS

BOM = b"\xef\xbb\xbf"
Event = Tuple[str, bytes, Optional[str], Optional[float]]

values = st.text(alphabet=st.characters(blacklist_characters="\r\n", blacklist_categories=("Cs",)), max_size=12)
fields = st.one_of(
    st.tuples(st.just("data"), values),
    st.tuples(st.just("id"), values | st.just("a\0b")),
    st.tuples(st.just("event"), st.sampled_from(["message", "endpoint", "ping", ""]) | values),
    st.tuples(st.just("retry"), st.sampled_from(["0", "1500", "x", "-1", "10.5", ""])),
    st.tuples(st.just(""), values),  # a comment
    st.tuples(st.sampled_from(["bogus", "Data", "data "]), values),
    st.tuples(st.just("data-no-colon"), st.just("")),
)
line_ends = st.sampled_from([b"\n", b"\r", b"\r\n"])


@st.composite
def streams(draw: Any) -> bytes:
    out = [BOM] if draw(st.booleans()) else []
    for _ in range(draw(st.integers(0, 6))):
        for name, value in draw(st.lists(fields, max_size=5)):
            if name == "data-no-colon":
                line = b"data"
            else:
                space = b" " if draw(st.booleans()) else b""
                line = name.encode() + b":" + space + value.encode("utf-8")
            out.append(line + draw(line_ends))
        out.append(draw(line_ends))  # the blank line that dispatches the event
    if draw(st.booleans()):
        out.append(b"data: cut off before its blank line")
    return b"".join(out)


def reference(stream: bytes) -> Tuple[List[Event], Optional[str], Optional[float]]:
    """The WHATWG event-stream rules, read directly (whole stream at once)."""
    if stream.startswith(BOM):
        stream = stream[len(BOM):]
    lines = re.split(rb"\r\n|\r|\n", stream)[:-1]  # the last piece has no line end yet: not a line
    events: List[Event] = []
    data: List[bytes] = []
    kind, pending_id, last_id, retry, dirty = "", None, None, None, False
    for line in lines:
        if not line:
            if dirty:
                if pending_id is not None:
                    last_id = pending_id
                payload = b"\n".join(data)
                if payload and not payload.isspace():
                    events.append((kind or "message", payload, last_id, retry))
            data, kind, dirty = [], "", False
            continue
        dirty = True
        if line.startswith(b":"):
            continue
        name, colon, value = line.partition(b":")
        if colon and value.startswith(b" "):
            value = value[1:]
        if name == b"data":
            data.append(value)
        elif name == b"event":
            kind = value.decode("utf-8", "replace")
        elif name == b"id" and sendable(value.decode("utf-8", "replace")):
            pending_id = value.decode("utf-8", "replace")
        elif name == b"retry" and value.isdigit():
            retry = min(int(value) / 1000.0, MAX_RETRY)
    return events, last_id, retry


def sendable(value: str) -> bool:
    """The parser keeps only an id that can go back as a Last-Event-ID header as it came."""
    return len(value) <= MAX_ID_LENGTH and value == value.strip() and all(
        0x20 <= ord(ch) <= 0x7E or 0xA0 <= ord(ch) <= 0xFF for ch in value)


def parse(chunks: List[bytes]) -> Tuple[List[Event], Optional[str], Optional[float]]:
    parser = SSEParser()
    events = [(e.event, e.data, e.id, e.retry) for chunk in chunks for e in parser.feed(chunk)]
    return events, parser.last_event_id, parser.retry


@pytest.mark.parametrize("tier", TIERS)
def test_any_chunking_of_a_stream_yields_the_same_events_and_ids(tier: str) -> None:
    @PROPERTY_SETTINGS[tier]
    @given(st.data())
    def check(data: Any) -> None:
        stream = data.draw(streams())
        cuts = sorted(set(data.draw(st.lists(st.integers(0, len(stream)), max_size=12))))
        pieces = [stream[a:b] for a, b in zip([0, *cuts], [*cuts, len(stream)])]
        expected = reference(stream)
        assert parse([stream]) == expected
        assert parse(pieces) == expected
        assert parse([stream[i:i + 1] for i in range(len(stream))]) == expected

    check()


def test_a_byte_order_mark_split_across_chunks_is_dropped_once() -> None:
    assert parse([b"\xef", b"\xbb", b"\xbfdata: x\n\n"])[0] == [("message", b"x", None, None)]
    assert parse([b"\xef\xbb\xbf\xef\xbb\xbfdata: x\n\n"])[0] == []  # only one BOM is dropped: then a bogus field
