"""Hostile HTTP servers (tests/servers/hostile_http.py, one child process per test): what the client does.

Each test is named for the behaviour it pins. Every bad answer fails only its
own call, with a typed error and at once (not at the call's timeout), and the
client stays usable: a ping on the same client is answered afterwards.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import tracemalloc
from typing import Any, Dict, List

import pytest

import mcpsync
from mcpsync import ProtocolError, RequestTimeout

from ..conftest import until
from .conftest import TIERS, HostileHTTP

MB = 1 << 20
BOMB_MB = {"fast": 64, "soak": 1024}


def connect(server: HostileHTTP, **options: Any) -> mcpsync.Client:
    options.setdefault("timeout", 20)
    return mcpsync.connect({"type": "http", "url": server.url()}, **options)


def fails_at_once(client: mcpsync.Client, error: Any, match: str, **arguments: Any) -> BaseException:
    # Failing at once, not at the timeout, shows in the error: waiting would end in RequestTimeout.
    with pytest.raises(error, match=match) as caught:
        client.call_tool("echo", arguments, timeout=20)
    assert not isinstance(caught.value, RequestTimeout)
    client.ping()
    return caught.value


def test_a_content_length_beyond_the_limit_fails_the_call_at_once(http_server):
    with connect(http_server("huge-content-length")) as client:
        fails_at_once(client, ProtocolError, r"larger than max_message_size \(1000000000000000 > 67108864 bytes\)")


def test_a_body_cut_short_of_its_content_length_fails_the_call_with_a_transport_error(http_server):
    with connect(http_server("short-body")) as client:
        error = fails_at_once(client, mcpsync.ConnectionLost,
                              r"in the middle of its response \(10 bytes read, 990 more expected\)")
        assert "IncompleteRead" not in str(error)  # in words, not urllib3's repr


@pytest.mark.parametrize("mode, shown", [("wrong-content-type", "'text/html'"), ("no-content-type", "''")])
def test_a_wrong_or_missing_content_type_fails_the_call_with_a_protocol_error(http_server, mode, shown):
    with connect(http_server(mode)) as client:
        fails_at_once(client, ProtocolError, f"Unexpected Content-Type {shown} in the response to request")


@pytest.mark.parametrize("response", ["json", "sse"])
@pytest.mark.parametrize("tier", TIERS)
def test_a_gzip_bomb_is_refused_by_its_decompressed_size_in_bounded_memory(http_server, tier, response):
    server = http_server("gzip-bomb", "--response", response, "--mb", str(BOMB_MB[tier]))
    with connect(server, max_message_size=1 * MB, timeout=60) as client:
        tracemalloc.start()
        try:
            started = time.monotonic()
            with pytest.raises(ProtocolError, match=r"larger than max_message_size \(1048576 bytes\)"):
                client.call_tool("echo", timeout=60)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        print(f"\n[gzip bomb {response} {tier}] {BOMB_MB[tier]} MiB inflated refused after "
              f"{time.monotonic() - started:.2f}s; peak traced memory {peak / MB:.1f} MiB")
        assert peak < 16 * MB  # a few read chunks, never the inflated body
        client.ping()


def test_an_sse_stream_that_never_answers_ends_at_the_call_timeout(http_server):
    with connect(http_server("sse-endless")) as client:
        with pytest.raises(RequestTimeout, match="SSE response timeout after 500ms") as caught:
            client.call_tool("echo", timeout=0.5)
        assert caught.value.timeout == 0.5  # the call's own timeout ended it
        client.ping()


# 20,000 notifications, up to 10,000 of them queued and each one logged: about 5 s on an idle
# machine, 33 s under CI's load with the GIL off; the default 60 s ran out there once.
@pytest.mark.timeout(240)
def test_a_notification_flood_on_a_response_stream_is_bounded_and_the_call_gets_its_answer(http_server, logs):
    count = 20_000
    release = threading.Event()
    seen: List[int] = []

    def slow_handler(params: Any) -> None:
        seen.append(1)
        release.wait(30)

    with connect(http_server("sse-flood", "--count", str(count))) as client:
        client.on_notification("notifications/message", slow_handler)
        try:
            assert client.call_tool("echo", {"text": "done"}).text == "done"
        finally:
            release.set()
        dropped = client.transport._engine._dispatcher.dropped
        limit = client.transport._engine._dispatcher._limit
        client.ping()
    # close() waits 2 s for the queued notifications, then leaves the dispatcher finishing them
    until(lambda: len(seen) + dropped == count, timeout=180)
    assert dropped >= count - limit - 1
    assert any("Notification queue full: dropped notifications/message" in m for m in logs.messages("mcpsync.engine"))


def test_a_request_flood_on_a_response_stream_meets_a_bounded_pool_and_overload_errors(http_server):
    release = threading.Event()
    lock = threading.Lock()
    busy: Dict[str, int] = {"now": 0, "peak": 0}

    def sampling(params: Dict[str, Any]) -> Dict[str, Any]:
        with lock:
            busy["now"] += 1
            busy["peak"] = max(busy["peak"], busy["now"])
        try:
            release.wait(30)
            return {"role": "assistant", "content": {"type": "text", "text": "ok"}, "model": "m"}
        finally:
            with lock:
                busy["now"] -= 1

    def on_message(params: Any) -> None:
        if params.get("data") == "sent":
            release.set()

    with connect(http_server("request-flood", "--count", "600"), sampling_handler=sampling) as client:
        client.on_notification("notifications/message", on_message)
        stats = json.loads(client.call_tool("echo", timeout=60).text)
        pool = client.transport._engine._pool
        client.ping()
    assert busy["peak"] <= pool._max_threads == 4
    assert stats == {"results": 4 + pool._limit, "errors": 600 - 4 - pool._limit}


def test_duplicate_and_early_responses_on_a_stream_are_never_misrouted(http_server):
    with connect(http_server("duplicate")) as client:
        assert client.call_tool("echo").text == "first"
        assert client.request("ping") == {}  # its id was answered early on the last stream: not taken


def test_a_response_with_both_result_and_error_fails_its_call_at_once_with_a_protocol_error(http_server):
    with connect(http_server("result-and-error")) as client:
        fails_at_once(client, ProtocolError, "Malformed response to request .*both result and error")


def test_a_string_id_never_answers_an_integer_request(http_server):
    with connect(http_server("string-id")) as client:
        fails_at_once(client, ProtocolError, "No response received for request ID")
    with connect(http_server("string-id", "--response", "sse")) as client:
        assert client.call_tool("echo").text == "right"


def test_nan_in_a_response_fails_the_call_with_a_protocol_error(http_server):
    with connect(http_server("nan")) as client:
        fails_at_once(client, ProtocolError, "NaN is not valid JSON")


def test_deeply_nested_json_fails_the_call_without_a_recursion_error(http_server):
    with connect(http_server("deep-nesting")) as client:
        fails_at_once(client, ProtocolError, "nested too deeply")


def test_a_batch_from_a_2025_03_26_server_is_delivered_item_by_item(http_server, logs):
    with connect(http_server("batch")) as client:
        assert client.protocol_version == "2025-03-26"
        assert client.call_tool("echo").text == "right"
        logs.wait_for(lambda m: m == "in a batch")


def test_responses_to_notifications_are_ignored(http_server, caplog):
    caplog.set_level(logging.DEBUG, logger="mcpsync")
    with connect(http_server("answer-notifications")) as client:
        assert client.call_tool("echo", {"text": "fine"}).text == "fine"
        client.ping()
