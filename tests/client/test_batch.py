"""Batch calls (issue 25): map_tool / imap_tool on a Client and a Manager, retries that cannot duplicate
work, and per-server rate and concurrency limits, against real stdio and HTTP servers.

What a server saw (calls in flight, executions, cancellations, arrival times) is counted by the server
(tests/servers/batch_stdio.py, tests/servers/http_throttle.py) and asked for through a tool; no test
asserts on wall time.
"""

from __future__ import annotations

import contextlib
import io
import json
import threading
import time
from typing import Any, Dict, Iterator, List

import pytest

import mcpsync
from mcpsync import MCPError, Retry

from mcpsync._rpc.options import CallOptions
from mcpsync._session.limits import Limits

from ..conftest import server_argv, until


def stats(client: mcpsync.Client, **args: Any) -> Dict[str, Any]:
    text = client.call_tool("stats", args).text
    assert text is not None
    result: Dict[str, Any] = json.loads(text)
    return result


@pytest.fixture
def client() -> Iterator[mcpsync.Client]:
    with mcpsync.connect(server_argv("batch_stdio.py"), timeout=20) as c:
        yield c


# -- map_tool / imap_tool ---------------------------------------------------------------------------


def test_map_tool_returns_results_in_input_order(client: mcpsync.Client) -> None:
    # later items answer first: the order is the input's, not the completion's
    items = [{"tag": f"t{i}", "delay_ms": (20 - i) * 5} for i in range(20)]
    results = client.map_tool("work", items, max_concurrency=6)
    assert [r.text for r in results] == [f"t{i}" for i in range(20)]
    seen = stats(client)
    assert seen["calls"] == 20
    assert 1 < seen["max_in_flight"] <= 6


def test_map_tool_with_a_one_shot_generator_and_no_arguments(client: mcpsync.Client) -> None:
    results = client.map_tool("work", ({"tag": str(i)} for i in range(50)), max_concurrency=3)
    assert [r.text for r in results] == [str(i) for i in range(50)]
    assert client.map_tool("work", []) == []


def test_imap_tool_reads_no_further_ahead_than_max_concurrency(client: mcpsync.Client) -> None:
    read: List[int] = []

    def endless() -> Iterator[Dict[str, Any]]:
        i = 0
        while True:
            read.append(i)
            yield {"tag": str(i), "delay_ms": 5}
            i += 1

    results = client.imap_tool("work", endless(), max_concurrency=4)
    assert read == []  # nothing read, no thread started, before the first next()
    with contextlib.closing(results):
        got = [next(results).text for _ in range(10)]
        assert got == [str(i) for i in range(10)]
        # ten yielded; at most max_concurrency more taken from the input
        assert 10 <= len(read) <= 10 + 4
    assert len(read) <= 14  # closing read nothing more


def test_first_failure_cancels_the_calls_in_flight_and_the_server_is_told(client: mcpsync.Client) -> None:
    items = [{"tag": "slow1", "delay_ms": 60_000}, {"tag": "slow2", "delay_ms": 60_000},
             {"tag": "bad", "fail": True, "delay_ms": 10}] + [{"tag": f"never{i}"} for i in range(20)]
    with pytest.raises(MCPError, match="failed bad"):
        client.map_tool("work", items, max_concurrency=3)
    sent = stats(client)["calls"]  # (a slow call cancelled before its request went out was never sent)
    assert 1 <= sent <= 3  # nothing after the failure was sent
    seen = stats(client, expect_cancelled=sent - 1, wait_ms=10_000)
    assert seen["cancelled"] == sent - 1  # every slow call the server got was cancelled, and the server told


def test_return_exceptions_puts_each_failure_in_its_place(client: mcpsync.Client) -> None:
    items = [{"tag": str(i), "fail": i % 3 == 0} for i in range(9)]
    results = client.map_tool("work", items, return_exceptions=True, max_concurrency=4)
    for i, result in enumerate(results):
        if i % 3 == 0:
            assert isinstance(result, MCPError) and f"failed {i}" in str(result)
        else:
            assert result.text == str(i)
    assert stats(client)["calls"] == 9


def test_imap_tool_raises_the_first_failure_from_next(client: mcpsync.Client) -> None:
    results = client.imap_tool("work", [{"tag": "a"}, {"tag": "b", "fail": True}, {"tag": "c"}], max_concurrency=1)
    assert next(results).text == "a"
    with pytest.raises(MCPError):
        next(results)
    with pytest.raises(StopIteration):
        next(results)


def test_progress_draws_a_bar(client: mcpsync.Client) -> None:
    out = io.StringIO()
    bar = mcpsync.ProgressBar("work", file=out, use_tqdm=False)
    client.map_tool("work", [{"tag": str(i)} for i in range(5)], progress=bar)
    assert bar.progress == 5 and bar.total == 5
    assert "5/5" in out.getvalue() or "100%" in out.getvalue()


def test_bad_max_concurrency_is_refused_before_anything_is_sent(client: mcpsync.Client) -> None:
    with pytest.raises(ValueError, match="max_concurrency"):
        client.map_tool("work", [{"tag": "x"}], max_concurrency=0)
    assert stats(client)["calls"] == 0


# -- retries ----------------------------------------------------------------------------------------


def test_a_tool_that_may_have_run_is_not_retried_and_the_error_says_why(client: mcpsync.Client) -> None:
    with pytest.raises(mcpsync.RequestTimeout) as caught:
        client.call_tool("once", {"key": "k", "slow_ms": 60_000}, timeout=0.3, retry=Retry(attempts=3, backoff=0))
    assert caught.value.not_retried is not None and "not declared safe to repeat" in caught.value.not_retried
    assert stats(client)["executions"] == {"k": 1}


@pytest.mark.parametrize("tool", ["once_safe", "once_read"])
def test_a_tool_annotated_safe_to_repeat_is_retried(client: mcpsync.Client, tool: str) -> None:
    result = client.call_tool(tool, {"key": "k", "slow_ms": 60_000}, timeout=0.3, retry=Retry(attempts=2, backoff=0))
    assert result.text == "k 2"
    assert stats(client)["executions"] == {"k": 2}


def test_idempotent_true_allows_a_retry_and_false_forbids_it(client: mcpsync.Client) -> None:
    result = client.call_tool("once", {"key": "a", "slow_ms": 60_000}, timeout=0.3, retry=Retry(backoff=0),
                              idempotent=True)
    assert result.text == "a 2"
    with pytest.raises(mcpsync.RequestTimeout):
        client.call_tool("once_safe", {"key": "b", "slow_ms": 60_000}, timeout=0.3, retry=Retry(backoff=0),
                         idempotent=False)
    assert stats(client)["executions"] == {"a": 2, "b": 1}


def test_map_tool_retries_per_item(client: mcpsync.Client) -> None:
    items = [{"key": f"k{i}", "slow_ms": 60_000 if i % 2 else 0} for i in range(4)]
    results = client.map_tool("once_safe", items, timeout=0.3, retry=Retry(backoff=0))
    assert [r.text for r in results] == ["k0 1", "k1 2", "k2 1", "k3 2"]


def test_retry_gives_up_after_its_attempts() -> None:
    # a server that is gone: every attempt is refused before any byte, and the error says when it gave up
    client = mcpsync.connect(server_argv("batch_stdio.py"), timeout=20)
    client.close()
    with pytest.raises(mcpsync.TransportClosed):
        client.call_tool("work", {"tag": "x"}, retry=Retry(attempts=2, backoff=0))


def test_retry_is_validated() -> None:
    with pytest.raises(ValueError, match="attempts"):
        Retry(attempts=0)
    with pytest.raises(ValueError, match="backoff"):
        Retry(backoff=-1)


# -- limits -----------------------------------------------------------------------------------------


def test_max_concurrency_of_a_client_holds_across_threads() -> None:
    with mcpsync.connect(server_argv("batch_stdio.py"), timeout=20, max_concurrency=2) as client:
        items = [{"tag": str(i), "delay_ms": 20} for i in range(12)]
        threads = [threading.Thread(target=client.map_tool, args=("work", items), kwargs={"max_concurrency": 8})
                   for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        seen = stats(client)
    assert seen["calls"] == 24
    assert seen["max_in_flight"] == 2


def test_rate_limit_spaces_the_calls_the_server_sees() -> None:
    rate = 40.0
    began = time.monotonic()  # one clock with the server's (CLOCK_MONOTONIC is system-wide)
    with mcpsync.connect(server_argv("batch_stdio.py"), timeout=20, rate_limit=rate) as client:
        client.map_tool("work", [{"tag": str(i)} for i in range(30)], max_concurrency=8)
        seen = stats(client)
    arrivals = sorted(seen["arrivals"])
    assert len(arrivals) == 30
    # The k-th call cannot reach the server before its k-th token: never early. (A count per window
    # of the server's read times is not the limiter's: a server whose reader stalls on a loaded
    # machine reads a dozen queued lines at once. How the limiter spaces late callers is below.)
    assert all(t >= began + k / rate for k, t in enumerate(arrivals)), arrivals


def test_rate_limit_callers_woken_late_still_leave_one_token_apart() -> None:
    """Callers that slept past their turns (a loaded machine) do not all leave at once when they wake."""
    rate, callers = 5.0, 5
    limits = Limits("stalled", rate, None)
    left: List[float] = []

    def call() -> None:
        limits.enter(CallOptions(timeout=30), None)
        left.append(time.monotonic())

    threads = [threading.Thread(target=call, name=f"test-rate-{n}") for n in range(callers)]
    for thread in threads:
        reserved = limits._next
        thread.start()
        until(lambda: limits._next != reserved)  # it took its turn (the next free instant moved on)
    # Their lock held past every turn, as when the waiters are not scheduled: none can wake.
    with limits._tokens:
        threading.Event().wait(callers / rate + 0.1)  # the stall itself, not a synchronisation
        woken = time.monotonic()
    for thread in threads:
        thread.join(30)
    assert not [t.name for t in threads if t.is_alive()]
    # Those whose turns passed during the stall leave one token apart from when they could go
    # on, not all at once (a burst). Noise only delays them: a bound from below is not a wall time.
    late = sorted(t for t in left if t >= woken)
    assert len(late) >= 2, [t - woken for t in sorted(left)]
    assert late[-1] - woken >= (len(late) - 1) / rate - 1e-6, [t - woken for t in sorted(left)]


def test_a_call_whose_rate_turn_comes_too_late_times_out_as_usual() -> None:
    with mcpsync.connect(server_argv("batch_stdio.py"), timeout=20, rate_limit=0.25) as client:
        assert client.call_tool("work", {"tag": "first"}).text == "first"  # took the token; the next is 4 s away
        with pytest.raises(mcpsync.RequestTimeout, match="rate_limit=0.25/s"):
            client.call_tool("work", {"tag": "late"}, timeout=0.2)
        assert stats(client)["calls"] == 1  # stats is not work: the late call was never sent


def test_a_call_that_cannot_get_a_slot_in_time_times_out_as_usual() -> None:
    with mcpsync.connect(server_argv("batch_stdio.py"), timeout=20, max_concurrency=1) as client:
        cancel = mcpsync.CancelToken()
        hold = threading.Thread(target=lambda: _ignore(client.call_tool, "work", {"tag": "hold", "delay_ms": 60_000},
                                                       cancel=cancel))
        hold.start()
        try:
            limits = client._limits  # noqa: SLF001 (the only way to know the slot is taken, without a sleep)
            assert limits is not None
            until(lambda: limits._in_flight == 1)  # noqa: SLF001
            with pytest.raises(mcpsync.RequestTimeout, match="max_concurrency=1"):
                client.call_tool("work", {"tag": "late"}, timeout=0.2)
        finally:
            cancel.cancel()
            hold.join()


def _ignore(fn: Any, *args: Any, **kwargs: Any) -> None:
    with contextlib.suppress(mcpsync.MCPSyncError):
        fn(*args, **kwargs)


def test_limits_are_validated_and_pickled() -> None:
    import pickle

    with pytest.raises(ValueError, match="rate_limit"):
        mcpsync.Client(mcpsync.StdioTransport("python"), rate_limit=0)
    with pytest.raises(ValueError, match="max_concurrency"):
        mcpsync.Client(mcpsync.StdioTransport("python"), max_concurrency=0)
    client = mcpsync.Client(mcpsync.StdioTransport("python"), rate_limit=5, max_concurrency=3)
    copy = pickle.loads(pickle.dumps(client))
    assert (copy.rate_limit, copy.max_concurrency) == (5, 3)


# -- Manager ----------------------------------------------------------------------------------------


def manager_config(**keys: Any) -> Dict[str, Any]:
    argv = server_argv("batch_stdio.py")
    return {"mcpServers": {"b": {"command": argv[0], "args": argv[1:], **keys}}}


def manager_stats(manager: mcpsync.Manager) -> Dict[str, Any]:
    text = manager.call_tool("mcp_b_stats", {}).text
    assert text is not None
    result: Dict[str, Any] = json.loads(text)
    return result


def test_manager_map_tool_in_order_under_the_servers_config_limits(tmp_path: Any) -> None:
    with mcpsync.Manager(manager_config(max_concurrency=2, rate_limit=200), cache=False) as manager:
        manager.wait(30)
        items = [{"tag": str(i), "delay_ms": (10 - i) * 3} for i in range(10)]
        results = manager.map_tool("mcp_b_work", items, max_concurrency=6)
        assert [r.text for r in results] == [str(i) for i in range(10)]
        lazy = manager.imap_tool("mcp_b_work", ({"tag": str(i)} for i in range(5)), max_concurrency=2)
        assert [r.text for r in lazy] == [str(i) for i in range(5)]
        seen = manager_stats(manager)
    assert seen["calls"] == 15
    assert seen["max_in_flight"] == 2


def test_manager_map_tool_first_failure_cancels_and_return_exceptions() -> None:
    with mcpsync.Manager(manager_config(), cache=False) as manager:
        manager.wait(30)
        items = [{"tag": "slow", "delay_ms": 60_000}, {"tag": "bad", "fail": True, "delay_ms": 10}]
        with pytest.raises(MCPError, match="failed bad"):
            manager.map_tool("mcp_b_work", items)
        text = manager.call_tool("mcp_b_stats", {"expect_cancelled": 1, "wait_ms": 10_000}).text
        assert text is not None and json.loads(text)["cancelled"] == 1
        mixed = manager.map_tool("mcp_b_work", [{"tag": "a"}, {"tag": "b", "fail": True}], return_exceptions=True)
        assert mixed[0].text == "a" and isinstance(mixed[1], MCPError)
        with pytest.raises(mcpsync.UnknownToolError):
            manager.map_tool("mcp_b_nope", [{}])


def test_manager_retries_only_what_is_safe_to_repeat() -> None:
    with mcpsync.Manager(manager_config(), cache=False) as manager:
        manager.wait(30)
        with pytest.raises(mcpsync.RequestTimeout) as caught:
            manager.call_tool("mcp_b_once", {"key": "n", "slow_ms": 60_000}, timeout=0.3, retry=Retry(backoff=0))
        assert caught.value.not_retried is not None
        ok = manager.call_tool("mcp_b_once_safe", {"key": "s", "slow_ms": 60_000}, timeout=0.3,
                               retry=Retry(backoff=0))
        assert ok.text == "s 2"
        assert manager_stats(manager)["executions"] == {"n": 1, "s": 2}


def test_config_keys_are_read_and_checked() -> None:
    from mcpsync.config import parse_server

    server = parse_server("b", {"command": "x", "rate_limit": 2.5, "maxConcurrency": 4})
    assert (server.rate_limit, server.max_concurrency) == (2.5, 4)
    with pytest.raises(mcpsync.ConfigError, match="rate_limit"):
        parse_server("b", {"command": "x", "rate_limit": 0})
    with pytest.raises(mcpsync.ConfigError, match="max_concurrency"):
        parse_server("b", {"command": "x", "max_concurrency": 1.5})


# -- HTTP 429 / 503 and Retry-After -----------------------------------------------------------------


def throttled(*refuse: Any, fail_after_run: int = 0) -> Any:
    from ..servers.http_throttle import ThrottleServer

    return ThrottleServer(list(refuse), fail_after_run=fail_after_run)


def test_429_and_503_are_retried_for_any_tool_honouring_retry_after() -> None:
    # "work" is not safe to repeat, yet a 429 or 503 means it never ran: retried, and it runs once
    with throttled((429, "1"), (503, "0")) as server:
        with mcpsync.connect(server.url, protocol="legacy", timeout=20) as client:
            result = client.call_tool("work", {}, retry=Retry(attempts=3, backoff=0))
        posts = list(server.posts)
    assert result.text == "ran 1"
    assert server.executions == 1
    assert [status for _, status in posts] == [429, 503, 200]
    assert posts[1][0] - posts[0][0] >= 0.9  # the server's own clock: it asked for 1 s and got it


def test_retry_after_as_an_http_date_is_honoured() -> None:
    import email.utils
    import time

    when = email.utils.formatdate(time.time() + 2, usegmt=True)  # whole seconds: 1 to 2 s from now
    with throttled((503, when)) as server:
        with mcpsync.connect(server.url, protocol="legacy", timeout=20) as client:
            assert client.call_tool("work", {}, retry=Retry(backoff=0)).text == "ran 1"
        posts = list(server.posts)
    assert posts[1][0] - posts[0][0] >= 0.9


def test_a_retry_after_beyond_the_timeout_is_not_waited_for() -> None:
    with throttled((429, "3600")) as server:
        with mcpsync.connect(server.url, protocol="legacy", timeout=20) as client:
            with pytest.raises(mcpsync.HTTPStatusError) as caught:
                client.call_tool("work", {}, timeout=5, retry=Retry())
        assert len(server.posts) == 1
    assert caught.value.status_code == 429
    assert caught.value.not_retried is not None and "Retry-After" in caught.value.not_retried


def test_an_http_failure_after_the_tool_ran_is_retried_only_for_a_safe_tool() -> None:
    with throttled(fail_after_run=1) as server:
        with mcpsync.connect(server.url, protocol="legacy", timeout=20) as client:
            with pytest.raises(mcpsync.HTTPStatusError) as caught:
                client.call_tool("work", {}, retry=Retry(backoff=0))
            assert caught.value.not_retried is not None and "may have run" in caught.value.not_retried
            assert server.executions == 1  # ran once, not repeated
            server.fail_after_run = 1
            assert client.call_tool("read", {}, retry=Retry(backoff=0)).text == "ran 3"  # readOnlyHint
        assert server.executions == 3


# -- a server nobody here wrote (the TypeScript SDK's server-everything) ---------------------------


def test_map_tool_against_server_everything() -> None:
    from ..npm_peers import everything_argv

    with mcpsync.connect(everything_argv(), timeout=60) as client:
        results = client.map_tool("get-sum", [{"a": i, "b": 1000} for i in range(40)], max_concurrency=8)
        assert [r.text for r in results] == [f"The sum of {i} and 1000 is {i + 1000}." for i in range(40)]
        lazy = client.imap_tool("get-sum", ({"a": i, "b": i} for i in range(10)), max_concurrency=3)
        assert [r.text for r in lazy] == [f"The sum of {i} and {i} is {2 * i}." for i in range(10)]
        # its tools carry no annotations: a timed-out call may have run, so it is not retried
        with pytest.raises(mcpsync.RequestTimeout) as caught:
            client.call_tool("trigger-long-running-operation", {"duration": 5, "steps": 1}, timeout=0.3,
                             retry=Retry(backoff=0))
        assert caught.value.not_retried is not None and "not declared safe" in caught.value.not_retried


def test_a_call_that_reached_a_server_that_died_is_retried_only_when_safe(tmp_path: Any) -> None:
    # the server runs the call (its marker file proves it), then dies: the call may have run. The manager
    # reconnects; only the tool declared safe to repeat is sent again, on the new connection.
    with mcpsync.Manager(manager_config(), cache=False) as manager:
        manager.wait(30)
        unsafe = tmp_path / "unsafe"
        with pytest.raises(mcpsync.TransportClosed) as caught:
            manager.call_tool("mcp_b_once", {"key": "u", "crash_once": str(unsafe)}, timeout=20,
                              retry=Retry(backoff=0))
        assert unsafe.exists()
        assert caught.value.not_retried is not None and "may have run" in caught.value.not_retried
        safe = tmp_path / "safe"
        result = manager.call_tool("mcp_b_once_safe", {"key": "s", "crash_once": str(safe)}, timeout=20,
                                   retry=Retry(backoff=0))
        assert safe.exists() and result.text == "s 1"  # ran again on the restarted server
        assert manager_stats(manager)["executions"] == {"s": 1}  # "u" was not sent to the new server


def test_retry_says_when_it_gave_up_and_a_cancel_ends_its_wait() -> None:
    client = mcpsync.connect(server_argv("batch_stdio.py"), timeout=20)
    client.close()
    with pytest.raises(mcpsync.TransportClosed) as caught:
        client.call_tool("work", {"tag": "x"}, retry=Retry(attempts=2, backoff=0))
    assert caught.value.not_retried == "2 attempt(s) failed (Retry(attempts=2))"
    cancel = mcpsync.CancelToken()
    cancel.cancel("enough")
    with pytest.raises(mcpsync.RequestCancelled):
        client.call_tool("work", {"tag": "x"}, retry=Retry(attempts=5, backoff=600), cancel=cancel)


def test_closing_imap_tool_early_cancels_the_calls_in_flight(client: mcpsync.Client) -> None:
    items = [{"tag": "fast", "delay_ms": 0}] + [{"tag": f"slow{i}", "delay_ms": 60_000} for i in range(3)]
    results = client.imap_tool("work", iter(items), max_concurrency=4)
    assert next(results).text == "fast"
    until(lambda: stats(client)["calls"] == 4)  # the three slow calls reached the server
    results.close()  # they are still in flight: cancelled, the server told, the threads ended
    seen = stats(client, expect_cancelled=3, wait_ms=10_000)
    assert seen["cancelled"] == 3 and seen["calls"] == 4


def test_a_cancel_ends_the_wait_for_a_slot() -> None:
    with mcpsync.connect(server_argv("batch_stdio.py"), timeout=20, max_concurrency=1) as client:
        hold_cancel, wait_cancel = mcpsync.CancelToken(), mcpsync.CancelToken()
        hold = threading.Thread(target=lambda: _ignore(client.call_tool, "work", {"tag": "hold", "delay_ms": 60_000},
                                                       cancel=hold_cancel))
        hold.start()
        errors: List[BaseException] = []
        try:
            limits = client._limits  # noqa: SLF001 (the only way to know the slot is taken, without a sleep)
            assert limits is not None
            until(lambda: limits._in_flight == 1)  # noqa: SLF001

            def waiter() -> None:
                try:
                    client.call_tool("work", {"tag": "waits"}, cancel=wait_cancel, timeout=60)
                except mcpsync.MCPSyncError as exc:
                    errors.append(exc)

            second = threading.Thread(target=waiter)
            second.start()
            wait_cancel.cancel("changed my mind")
            second.join(10)
            assert not second.is_alive()
            assert len(errors) == 1 and isinstance(errors[0], mcpsync.RequestCancelled)
        finally:
            hold_cancel.cancel()
            hold.join()


def test_progress_true_draws_the_text_bar_without_tqdm(client: mcpsync.Client, capsys: Any) -> None:
    # the plain bar is what a machine without the progress extra draws
    import importlib.util

    if importlib.util.find_spec("tqdm") is not None:
        pytest.skip("tqdm is installed: the bar is tqdm's")
    client.map_tool("work", [{"tag": str(i)} for i in range(4)], progress=True)
    err = capsys.readouterr().err
    assert "work" in err and "4/4" in err
