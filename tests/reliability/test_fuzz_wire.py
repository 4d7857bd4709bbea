"""Fuzz targets of what arrives on a connection: the stdio line reader, the JSON-RPC decoder and
classifier, and the SSE parser (with the loop that takes message data out of it).

Every byte stream ends in messages, skipped lines or a ProtocolError (the error each reader
catches and reports), in bounded time and memory: a line or event beyond the size limit is
dropped, never held whole.
"""

from __future__ import annotations

import io
import json
from typing import List, Tuple

import pytest
from hypothesis import strategies as st

from mcpsync import MCPSyncError
from mcpsync._rpc import jsonrpc as rpc
from mcpsync.transports import stdio
from mcpsync.transports._http_io import body_summary
from mcpsync.transports._sse import SSEParser, message_data

from .fuzzing import LEVELS, fuzz

LIMIT = 4096  # a small max_message_size, so streams beyond it are cheap to make

scalars = (st.none() | st.booleans() | st.integers(min_value=-(10 ** 400), max_value=10 ** 400)
           | st.floats(allow_nan=False) | st.text(max_size=12))
json_values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4)
                           | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=20)
messages = st.fixed_dictionaries({}, optional={
    "jsonrpc": st.just("2.0") | json_values, "id": st.integers(0, 3) | json_values,
    "method": st.sampled_from(["ping", "notifications/progress", "tools/call"]) | json_values,
    "params": json_values, "result": json_values, "error": json_values,
}).map(lambda m: json.dumps(m).encode())
hostile = st.one_of(
    st.integers(1, 50_000).map(lambda n: b"[" * n + b"]" * n),
    st.integers(1, 20_000).map(lambda n: b'{"a":' * n + b"1" + b"}" * n),
    st.integers(4000, 6000).map(lambda n: b'{"id": ' + b"9" * n + b"}"),
    st.integers(1, 3 * LIMIT).map(lambda n: b'{"x": "' + b"a" * n + b'"}'),
    st.sampled_from([b"NaN", b"[Infinity]", b"\xff\xfe", b"\xef\xbb\xbf{}", b"\x00", b"{}\r", b"   ", b"\xe2\x82"]),
)
lines = st.one_of(messages, hostile, st.binary(max_size=100))
streams = st.lists(st.tuples(lines, st.sampled_from([b"\n", b"\r\n", b""])), max_size=8).map(
    lambda parts: b"".join(line + end for line, end in parts))


def read_stdio(data: bytes) -> None:
    """What the stdio reader thread does with each line, minus the engine."""
    stream = io.BufferedReader(io.BytesIO(data), buffer_size=1024)
    while True:
        try:
            line, size = stdio._read_line(stream, LIMIT)
        except stdio._Oversized:  # noqa: SLF001 - the reader logs and skips it
            continue
        if not line:
            return
        assert size <= LIMIT + 1
        if line.isspace():
            continue
        try:
            rpc.classify(rpc.decode(line))
        except MCPSyncError:
            pass


@pytest.mark.parametrize("level", LEVELS)
def test_fuzz_stdio_lines(level: str) -> None:
    fuzz("stdio-lines", level, streams, read_stdio, (MCPSyncError,))


def decode_message(data: bytes) -> None:
    value = rpc.decode(data)
    rpc.classify(value)
    rpc.preview(data)


@pytest.mark.parametrize("level", LEVELS)
def test_fuzz_jsonrpc_decode(level: str) -> None:
    fuzz("jsonrpc-decode", level, lines | st.binary(max_size=300), decode_message, (MCPSyncError,))


sse_pieces = st.sampled_from([b"data:", b"data: ", b"id:", b"event:", b"retry:", b":", b"\n", b"\r", b"\r\n",
                              b"x", b"\xef\xbb\xbf", b"\xff", b"\x00", b"message", b"endpoint", b"1500", b"{}"])
sse_streams = st.one_of(
    st.lists(sse_pieces, max_size=60).map(b"".join),
    st.integers(1, 3 * LIMIT).map(lambda n: b"data: " + b"a" * n + b"\n\n"),
    st.integers(1, 3 * LIMIT).map(lambda n: b"data: a\n" * n + b"\n"),
    st.integers(1, 3 * LIMIT).map(lambda n: b"id: " + b"9" * n + b"\nretry: " + b"9" * n + b"\n\n"),
    st.binary(max_size=300),
)


def read_sse(case: Tuple[bytes, List[int]]) -> None:
    data, cuts = case
    points = sorted({min(c, len(data)) for c in cuts})
    chunks = [data[a:b] for a, b in zip([0] + points, points + [len(data)])]
    for text in message_data(iter(chunks), SSEParser(max_event_size=LIMIT)):
        try:
            rpc.decode(text)
        except MCPSyncError:
            pass


@pytest.mark.parametrize("level", LEVELS)
def test_fuzz_sse(level: str) -> None:
    fuzz("sse", level, st.tuples(sse_streams, st.lists(st.integers(0, 20_000), max_size=6)), read_sse,
         (MCPSyncError,))


html_pieces = st.sampled_from(["<", ">", "</", "<title>", "</title>", "<h1>", "</h1 >", "<script>", "</script >",
                               "<style x>", "</style>", "<TITLE>", "&amp;", "&#0;", "a", " ", "\n", "é", "<!doctype html>"])
pages = st.one_of(
    st.lists(html_pieces, max_size=60).map(lambda p: "<html>" + "".join(p)),
    st.tuples(st.sampled_from(["<title>", "<h1>", "<", "<script>", "<style>", "</script", "<titlex>"]),
              st.integers(1, 20_000)).map(lambda t: "<html>" + t[0] * t[1]),
    st.text(max_size=200),
)


def summarise(page: str) -> None:
    summary = body_summary(page, "text/html")
    assert len(summary) < 400


@pytest.mark.parametrize("level", LEVELS)
def test_fuzz_html_error_page(level: str) -> None:
    fuzz("html-error-page", level, pages, summarise, (MCPSyncError,))
