"""Hostile stdio servers (tests/servers/hostile_stdio.py): one behaviour each, and what the client does about it.

Each test is named for the behaviour it pins. In every case the connection
survives what the server did: the reader thread keeps reading, and the
client is still usable (a ping, and often a further call, are answered).
"""

from __future__ import annotations

import json
import logging
import math
import threading
from typing import Any, Dict, List

import pytest

import mcpsync
from mcpsync import ProtocolError, RequestTimeout

from ..conftest import until
from .conftest import hostile_stdio

STDIO_LOG = "mcpsync.transport.stdio"
ENGINE_LOG = "mcpsync.engine"


def connect(mode: str, *args: str, **options: Any) -> mcpsync.Client:
    options.setdefault("timeout", 20)
    options.setdefault("shutdown_timeout", 0.5)
    return mcpsync.connect(hostile_stdio(mode, *args), **options)


def warnings_from(logs: Any, logger: str) -> List[str]:
    return [r.getMessage() for r in logs.records if r.name == logger and r.levelno == logging.WARNING]


def reader_alive(client: mcpsync.Client) -> bool:
    reader = client.transport._reader  # type: ignore[attr-defined]
    return reader is not None and reader.is_alive()


def last_request_id(client: mcpsync.Client) -> int:
    return int(client.transport._engine._next_id) - 1


def test_deeply_nested_json_is_skipped_without_a_recursion_error_and_the_call_still_gets_its_answer(logs):
    with connect("deep-nesting") as client:
        assert client.call_tool("echo").text == "right"
        assert client.transport.skipped_lines == 2  # the bare nest, and the "response" holding one
        assert reader_alive(client)
        client.ping()
    skipped = warnings_from(logs, STDIO_LOG)
    assert len(skipped) == 2 and all("nested too deeply" in w for w in skipped)


def test_a_response_with_both_result_and_error_fails_its_call_at_once_with_a_protocol_error(logs):
    with connect("result-and-error") as client:
        # Failed when it arrived: waiting for the timeout would have ended in RequestTimeout instead.
        with pytest.raises(ProtocolError, match="Malformed response to request .*both result and error"):
            client.call_tool("echo", timeout=20)
        client.ping()


def test_a_string_id_never_answers_an_integer_request():
    with connect("string-id") as client:
        assert client.call_tool("echo").text == "right"  # "2" was dropped; 2 answered
        assert client.transport._engine.unknown_responses == 1


def test_duplicate_and_early_responses_are_dropped_and_never_misrouted(logs):
    with connect("duplicate") as client:
        assert client.call_tool("echo").text == "first"  # the first answer wins
        early = last_request_id(client) + 1
        # The server answered id `early` before the client sent that request: it must be dropped,
        # not kept for the request that will get that id.
        logs.wait_for(lambda m: m.endswith(f"unknown or finished request id {early}"))
        assert client.request("ping") == {}  # the ping is request `early`: it gets its own answer
        assert last_request_id(client) == early
        assert client.transport._engine.unknown_responses == 2


def test_responses_to_notifications_are_dropped():
    # The server answers notifications/initialized with id null (a result and an error) and id 0.
    with connect("answer-notifications") as client:
        assert client.call_tool("echo").text == "right"
        assert client.transport._engine.unknown_responses == 3
        client.ping()


def test_a_batch_from_a_2025_03_26_server_is_delivered_item_by_item(logs):
    with connect("batch", "--version", "2025-03-26") as client:
        assert client.protocol_version == "2025-03-26"
        assert client.call_tool("echo").text == "right"
        logs.wait_for(lambda m: m == "in a batch")  # the notification in the batch reached the server log
        assert client.transport.skipped_lines == 1  # the empty array line
    assert any("Skipping batch item" in w and "got int" in w for w in warnings_from(logs, ENGINE_LOG))


def test_nan_and_infinity_are_rejected_both_ways(logs):
    with connect("nan") as client:
        assert client.call_tool("echo").text == "right"
        assert client.transport.skipped_lines == 3
        with pytest.raises(ProtocolError, match="Cannot encode"):
            client.call_tool("echo", {"value": math.inf})  # never written: the server would choke on it
        client.ping()
    skipped = warnings_from(logs, STDIO_LOG)
    for constant in ("NaN", "Infinity", "-Infinity"):
        assert any(f"{constant} is not valid JSON" in w for w in skipped), skipped


# 50,000 notifications, 10,000 of them queued: about 10 s idle, past the default 60 s with
# CI's suites side by side on the free-threaded build. The check is unchanged.
@pytest.mark.timeout(240)
def test_a_notification_flood_while_a_call_waits_is_bounded_and_says_what_it_drops(logs):
    count = 50_000
    release = threading.Event()
    seen = []

    def slow_handler(params: Any) -> None:
        seen.append(1)
        release.wait(30)  # the first notification holds the dispatcher until the call is answered

    with connect("notification-flood", "--count", str(count)) as client:
        client.on_notification("notifications/message", slow_handler)
        try:
            assert client.call_tool("echo").text == "done"  # answered despite the flood and the stuck handler
        finally:
            release.set()
        dispatcher = client.transport._engine._dispatcher
        dropped = dispatcher.dropped
        limit = dispatcher._limit
        client.ping()
    # Closing lets the queued notifications run (close() waits 2 s for them, then leaves the
    # dispatcher finishing on its own): every one is either delivered or counted as dropped.
    until(lambda: len(seen) + dropped == count, timeout=180)
    assert dropped >= count - limit - 1  # the queue never held more than its limit
    drops = [w for w in warnings_from(logs, ENGINE_LOG) if "Notification queue full" in w]
    assert drops[0].endswith("dropped notifications/message (1 dropped so far)")
    assert len(drops) <= 1 + dropped // 1000  # said, not shouted: one line per thousand


def test_a_request_flood_is_answered_by_a_bounded_pool_and_overload_errors(logs):
    release = threading.Event()
    lock = threading.Lock()
    busy: Dict[str, int] = {"now": 0, "peak": 0}
    workers_seen = set()

    def sampling(params: Dict[str, Any]) -> Dict[str, Any]:
        with lock:
            busy["now"] += 1
            busy["peak"] = max(busy["peak"], busy["now"])
            workers_seen.add(threading.current_thread().name)
        try:
            release.wait(30)
            return {"role": "assistant", "content": {"type": "text", "text": "ok"}, "model": "m"}
        finally:
            with lock:
                busy["now"] -= 1

    def on_message(params: Any) -> None:
        if params.get("data") == "sent":  # the reader has dispatched or refused every request
            release.set()

    with connect("request-flood", "--count", "1000", sampling_handler=sampling) as client:
        client.on_notification("notifications/message", on_message)
        stats = json.loads(client.call_tool("echo", timeout=30).text)
        workers = client.transport._engine._pool
        assert busy["peak"] <= workers._max_threads == 4
        assert len(workers_seen) <= 4
        client.ping()
    queued = workers._limit
    # The pool holds 4 running and `queued` waiting; how many of the 4 have taken their job by
    # the time the queue fills depends on thread start-up (seen: one fewer with the GIL off), so
    # the answered count lies between `queued` and 4 + `queued`, and every other request is
    # refused with -32603.
    assert stats["results"] + stats["errors"] == 1000
    assert queued <= stats["results"] <= 4 + queued
    assert stats["codes"] == {"-32603": stats["errors"]}
    refusals = [w for w in warnings_from(logs, ENGINE_LOG) if "Too many server requests in flight" in w]
    assert refusals[0].endswith("refusing sampling/createMessage (1 refused so far)")
    assert len(refusals) <= 2


def test_a_server_that_stops_reading_cannot_hold_a_call_past_its_timeout():
    client = connect("stop-reading")
    try:
        big = {"text": "x" * 1_000_000}  # far more than a pipe holds
        for _ in range(2):  # the second finds the pipe full and part of the first line still unsent
            with pytest.raises(RequestTimeout, match="Request timeout after 500ms") as caught:
                client.call_tool("echo", big, timeout=0.5)
            assert caught.value.timeout == 0.5  # its own timeout ended it, the stuck pipe did not hold it
        token = mcpsync.CancelToken()
        threading.Timer(0.2, token.cancel, args=("give up",)).start()
        with pytest.raises(mcpsync.RequestCancelled):
            client.call_tool("echo", big, timeout=math.inf, cancel=token)
        client.transport.timeout = 0.5
        with pytest.raises(RequestTimeout, match="Notify timeout after 500ms"):
            client.send_roots_list_changed()
    finally:
        client.close()  # closing does not wait on the stuck pipe either (pytest-timeout bounds it)
    assert client.transport.returncode is not None


def test_twenty_thousand_lines_of_random_bytes_never_kill_the_reader():
    with connect("garbage-bytes") as client:
        assert client.call_tool("echo", timeout=60).text == "right"
        assert client.transport.skipped_lines > 15_000
        assert reader_alive(client)
        client.ping()


@pytest.mark.timeout(60)
def test_a_listing_of_huge_pages_stops_at_its_byte_budget_not_its_page_count():
    with connect("huge-pages") as client:  # 80 pages of 1 MiB each, every one within max_message_size
        with pytest.raises(ProtocolError) as caught:
            client.list_tools()
        assert f"more than {64 * 2 ** 20} bytes of tools in 64 pages" in str(caught.value)
        client.ping()  # the session is still usable
    with connect("huge-pages", "--count", "3") as client:  # a listing within the budget is read whole
        assert [t.name for t in client.list_tools()] == ["t0", "t1", "t2"]
