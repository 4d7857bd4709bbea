"""The SSE parser and parse_sse: framing edge cases, ids, retry, bounds and linear cost."""

from __future__ import annotations

import json
import time

import pytest

from mcpsync import ProtocolError, parse_sse
from mcpsync.transports._sse import SSEParser


def feed_all(parser, data, step=None):
    events = []
    if step is None:
        events.extend(parser.feed(data))
    else:
        for i in range(0, len(data), step):
            events.extend(parser.feed(data[i:i + step]))
    return events


@pytest.mark.parametrize("step", [None, 1, 2, 3, 7])
def test_events_survive_any_chunking_and_line_ending(step):
    for newline in (b"\n", b"\r\n", b"\r"):
        text = newline.join([b"event: message", b"data: {\"a\": 1}", b"", b": comment", b"",
                             b"data: line1", b"data: line2", b"id: 7", b"", b""])
        events = feed_all(SSEParser(), text, step)
        assert [(e.event, e.data) for e in events] == [("message", b'{"a": 1}'), ("message", b"line1\nline2")]
        assert events[1].id == "7"


def test_missing_event_field_means_message_and_comments_are_ignored():
    events = SSEParser().feed(b": keep-alive\n\ndata: x\n\n:another\n\n")
    assert [(e.event, e.data) for e in events] == [("message", b"x")]


def test_priming_event_with_empty_data_records_its_id_and_retry_but_is_not_dispatched():
    parser = SSEParser()
    assert parser.feed(b"id: prime-1\nretry: 1500\ndata:\n\n") == []
    assert parser.last_event_id == "prime-1"
    assert parser.retry == 1.5
    assert parser.feed(b"id: only-an-id\n\n") == []
    assert parser.last_event_id == "only-an-id"


def test_an_id_in_an_unfinished_event_does_not_count():
    parser = SSEParser()
    parser.feed(b"id: 1\ndata: a\n\nid: 2\ndata: b")
    assert parser.last_event_id == "1"
    resumed = parser.resumed()
    assert resumed.last_event_id == "1" and resumed.feed(b"data: c\n\n")[0].id == "1"


def test_ids_persist_across_events_and_nul_ids_are_ignored():
    events = SSEParser().feed(b"id: a\ndata: 1\n\ndata: 2\n\nid: b\x00c\ndata: 3\n\n")
    assert [e.id for e in events] == ["a", "a", "a"]


def test_field_without_space_and_unknown_fields():
    events = SSEParser().feed(b"data:tight\nfoo: bar\nretry: soon\n\n")
    assert events[0].data == b"tight" and events[0].retry is None


def test_an_event_larger_than_the_limit_fails_without_growing():
    parser = SSEParser(max_event_size=1000)
    with pytest.raises(ProtocolError, match="larger than max_message_size"):
        for _ in range(100):
            parser.feed(b"data: " + b"x" * 100)
    parser2 = SSEParser(max_event_size=1000)
    with pytest.raises(ProtocolError, match="larger than max_message_size"):
        parser2.feed(b"data: " + b"x" * 600 + b"\ndata: " + b"y" * 600 + b"\n")


def test_parsing_is_linear_20mb_event_in_small_chunks():
    payload = json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"text": "x" * (20 * 1024 * 1024)}}).encode()
    data = b"id: 1\ndata: " + payload + b"\n\n"
    parser = SSEParser()
    # CPU time of this thread, not wall time: it counts the parser's own work, which other
    # processes on a loaded machine do not inflate. Rescanning the buffer on every chunk (5,120
    # chunks of one 20 MB line) is some 50 GB of scanning, about 1.6 s of CPU here; one pass
    # takes some 0.03 s.
    start = time.thread_time()
    events = feed_all(parser, data, 4 * 1024)
    used = time.thread_time() - start
    assert len(events) == 1 and len(events[0].data) == len(payload)
    assert used < 0.5, f"20 MB in 4 KB chunks used {used:.2f}s of CPU"


def test_parse_sse_takes_the_first_data_line_or_falls_back_to_json():
    assert parse_sse('event: message\ndata: {"id": 1}\n\ndata: {"id": 2}\n\n') == {"id": 1}
    assert parse_sse('id: p\ndata:\n\ndata: {"ok": true}\n\n') == {"ok": True}
    assert parse_sse('{"plain": "json"}') == {"plain": "json"}
    with pytest.raises(ProtocolError):
        parse_sse("neither sse nor json")
