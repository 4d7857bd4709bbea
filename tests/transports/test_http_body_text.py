"""HTTP bodies and SSE data reach the JSON decoder as text, decoded as they arrive (so a large
answer is never held as bytes and text at once), with invalid UTF-8 still reported."""

from __future__ import annotations

import pytest

from mcpsync import ProtocolError
from mcpsync._rpc import jsonrpc as rpc
from mcpsync.transports._http_io import read_text
from mcpsync.transports._sse import SSEParser, message_data


class _Raw:
    def __init__(self, chunks):
        self.chunks = list(chunks)

    def read1(self, size, decode_content=True):
        return self.chunks.pop(0) if self.chunks else b""


class _Response:
    def __init__(self, chunks, headers=None):
        self.raw = _Raw(chunks)
        self.headers = headers or {}


def test_a_body_split_inside_a_character_is_decoded_whole():
    body = '{"text":"caf\u00e9 \u2603"}'.encode("utf-8")
    cut = body.index(b"\xc3") + 1  # between the two bytes of the e-acute
    text = read_text(_Response([body[:cut], body[cut:]]), 1000, "The body")
    assert text == '{"text":"caf\u00e9 \u2603"}'
    assert rpc.decode(text) == {"text": "caf\u00e9 \u2603"}


def test_a_body_that_is_not_utf8_is_a_protocol_error_naming_it():
    with pytest.raises(ProtocolError, match="The JSON response to request 3 is not valid UTF-8"):
        read_text(_Response([b'{"a":"\xff"}']), 1000, "The JSON response to request 3")


def test_a_body_over_the_limit_is_refused_without_being_read_whole():
    with pytest.raises(ProtocolError, match="larger than max_message_size"):
        read_text(_Response([b"x" * 600, b"x" * 600, b"x" * 600]), 1000, "The body")
    with pytest.raises(ProtocolError, match="2000 > 1000"):
        read_text(_Response([], {"Content-Length": "2000"}), 1000, "The body")


def test_sse_data_arrives_as_text_and_invalid_utf8_as_the_bytes_for_the_decoder_to_report():
    stream = [b'data: {"a":1}\n\nevent: other\ndata: x\n\n', b'data: {"b":"\xff"}\n', b"\n", b"data:{\"c\":3}\n\n"]
    others = []
    out = list(message_data(stream, SSEParser(), others.append))
    assert out[0] == '{"a":1}' and out[2] == '{"c":3}'
    assert out[1] == b'{"b":"\xff"}'
    with pytest.raises(ProtocolError, match="not valid UTF-8"):
        rpc.decode(out[1])
    assert [event.event for event in others] == ["other"]
