"""The JSON-RPC engine, driven through the in-memory transport."""

from __future__ import annotations

import math
import os
import signal
import threading

import pytest

from mcpsync import CancelToken, MCPError, RequestCancelled, RequestTimeout, TransportClosed

from ..conftest import until
from ..peer import ScriptedPeer


def is_cancel(message):
    return message.get("method") == "notifications/cancelled"


def test_request_returns_its_own_result():
    with ScriptedPeer() as peer:
        assert peer.transport.request("echo/me", {"x": 1}) == {"echo": {"x": 1}}


def test_ids_are_increasing_integers_never_reused():
    with ScriptedPeer() as peer:
        for _ in range(5):
            peer.transport.request("a")
        ids = [m["id"] for m in peer.log if "id" in m]
        assert ids == sorted(ids) and len(set(ids)) == 5 and all(type(i) is int for i in ids)


def test_error_response_raises_mcp_error_with_code_message_and_data():
    with ScriptedPeer({"boom": lambda p, m: p.error(m, -32602, "bad arg", {"field": "x"})}) as peer:
        with pytest.raises(MCPError) as info:
            peer.transport.request("boom")
    assert str(info.value) == "MCP error -32602: bad arg"
    assert (info.value.code, info.value.message, info.value.data) == (-32602, "bad arg", {"field": "x"})


def test_a_failed_request_leaves_no_cycle_keeping_the_callers_locals_alive():
    # The error's traceback holds the caller's frames; if the engine kept the error where those
    # frames can reach it, the caller's locals (here a marker; in the free-threaded stress test
    # a fork pool and its 12 pipes) lived on until the cyclic collector happened to run.
    import gc
    import weakref

    class Marker:
        pass

    def caller(peer):
        marker = Marker()
        try:
            peer.transport.request("boom")
        except MCPError:  # no ``as``: this frame keeps no reference to the error itself
            pass
        return weakref.ref(marker)

    gc.disable()
    try:
        with ScriptedPeer({"boom": lambda p, m: p.error(m, -32602, "bad arg")}) as peer:
            marker = caller(peer)
        # Checked once the peer's threads are gone: on the free-threaded build an object made on
        # another thread (the error, by the reader) may be freed by that thread a moment later.
        assert marker() is None, "a failed request's error kept the caller's frame alive"
    finally:
        gc.enable()


def test_many_threads_each_get_their_own_result():
    results = {}
    with ScriptedPeer() as peer:
        def call(i):
            results[i] = peer.transport.request("t", {"i": i})

        threads = [threading.Thread(target=call, args=(i,)) for i in range(32)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(10)
    assert results == {i: {"echo": {"i": i}} for i in range(32)}


def test_unknown_and_mistyped_ids_are_dropped_and_counted(logs):
    def answer_twice(peer, message):
        peer.transport.feed({"jsonrpc": "2.0", "id": 999, "result": "stray"})
        peer.transport.feed({"jsonrpc": "2.0", "id": str(message["id"]), "result": "string id"})
        peer.result(message, "mine")

    with ScriptedPeer({"x": answer_twice}) as peer:
        assert peer.transport.request("x") == "mine"
        assert peer.transport._engine.unknown_responses == 2
    assert any("unknown or finished request id 999" in m for m in logs.messages())


def test_timeout_raises_request_timeout_and_tells_the_server():
    with ScriptedPeer() as peer:
        peer.hold("slow")
        with pytest.raises(RequestTimeout) as info:
            peer.transport.request("slow", timeout=0.05)
        assert str(info.value) == f"Request timeout after 50ms: MCP server {peer.transport.name!r} sent no answer to 'slow'"
        assert (info.value.server, info.value.method) == (peer.transport.name, "slow")
        assert isinstance(info.value, TimeoutError)
        held = peer.held.get(timeout=5)
        cancel = peer.wait_for(is_cancel)
        assert cancel["params"]["requestId"] == held["id"]
        # The late answer is dropped and the connection still works.
        peer.result(held, "late")
        assert peer.transport.request("after") == {"echo": None}


def test_a_request_sent_with_notify_cancel_false_is_never_cancelled():
    # The engine names no method: whoever knows the protocol (the session, for initialize)
    # asks for this per request.
    with ScriptedPeer() as peer:
        peer.hold("initialize")
        with pytest.raises(RequestTimeout):
            peer.transport.request("initialize", timeout=0.05, notify_cancel=False)
        peer.held.get(timeout=5)
        token = CancelToken()
        peer.hold("slow")
        canceller = threading.Thread(target=lambda: (peer.held.get(timeout=5), token.cancel("stop")))
        canceller.start()
        with pytest.raises(RequestCancelled):
            peer.transport.request("slow", cancel=token, timeout=30, notify_cancel=False)
        canceller.join(5)
        peer.transport.request("ping")
        assert not any(is_cancel(m) for m in peer.log)


def test_the_engine_gives_no_method_special_treatment_on_abandon():
    with ScriptedPeer() as peer:
        peer.hold("initialize")
        with pytest.raises(RequestTimeout):
            peer.transport.request("initialize", timeout=0.05)
        held = peer.held.get(timeout=5)
        assert peer.wait_for(is_cancel)["params"]["requestId"] == held["id"]


def test_cancel_from_another_thread_wakes_the_caller_with_the_reason():
    token = CancelToken()
    with ScriptedPeer() as peer:
        peer.hold("slow")

        def cancel_when_sent():
            peer.held.get(timeout=5)
            token.cancel("user pressed stop")

        canceller = threading.Thread(target=cancel_when_sent)
        canceller.start()
        with pytest.raises(RequestCancelled) as info:
            peer.transport.request("slow", cancel=token, timeout=30)
        canceller.join(5)
        assert info.value.reason == "user pressed stop"
        cancel = peer.wait_for(is_cancel)
        assert cancel["params"] == {"requestId": cancel["params"]["requestId"], "reason": "user pressed stop"}


def test_an_already_cancelled_token_raises_before_sending():
    token = CancelToken()
    token.cancel("too late")
    with ScriptedPeer() as peer:
        with pytest.raises(RequestCancelled):
            peer.transport.request("x", cancel=token)
        assert peer.log == []


def test_keyboard_interrupt_cancels_only_the_call_in_flight():
    assert threading.current_thread() is threading.main_thread()
    with ScriptedPeer() as peer:
        peer.hold("slow")

        def interrupt_when_sent():
            peer.held.get(timeout=5)
            os.kill(os.getpid(), signal.SIGINT)  # a real Ctrl-C, which wakes the parked wait

        interrupter = threading.Thread(target=interrupt_when_sent)
        interrupter.start()
        with pytest.raises(KeyboardInterrupt):
            peer.transport.request("slow", timeout=30)
        interrupter.join(5)
        assert peer.wait_for(is_cancel)["params"]["reason"] == "KeyboardInterrupt"
        assert peer.transport.request("next") == {"echo": None}


def test_progress_is_routed_to_the_call_in_order_before_it_returns():
    seen = []

    def with_progress(peer, message):
        token = message["params"]["_meta"]["progressToken"]
        for i in range(1, 4):
            peer.notify("notifications/progress", {"progressToken": token, "progress": i, "total": 3,
                                                   "message": f"step {i}"})
        peer.result(message, "done")

    with ScriptedPeer({"work": with_progress}) as peer:
        result = peer.transport.request("work", on_progress=lambda *args: seen.append(args))
    assert result == "done"
    assert seen == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]


def test_progress_can_keep_a_call_alive_past_its_timeout_but_not_past_the_maximum():
    stop = threading.Event()

    def trickle(peer, message):
        token = message["params"]["_meta"]["progressToken"]

        def run():
            i = 0
            while not stop.wait(0.02):
                i += 1
                try:
                    peer.notify("notifications/progress", {"progressToken": token, "progress": i})
                except TransportClosed:
                    return
                if i == 10:
                    peer.result(message, "finished")
                    return

        threading.Thread(target=run, name="trickle").start()

    with ScriptedPeer({"work": trickle}) as peer:
        # 10 progress steps 20 ms apart outlast a 100 ms timeout only because each resets it.
        assert peer.transport.request("work", timeout=0.1, on_progress=lambda *a: None,
                                      reset_timeout_on_progress=True, max_total_timeout=10) == "finished"
        peer.responders["forever"] = trickle
        with pytest.raises(RequestTimeout) as info:
            peer.transport.request("forever", timeout=0.1, on_progress=lambda *a: None,
                                   reset_timeout_on_progress=True, max_total_timeout=0.15)
        assert str(info.value).startswith("Request timeout after 150ms: ")
        stop.set()


def test_close_wakes_every_waiter_with_transport_closed_and_later_calls_fail_fast():
    errors = []
    with ScriptedPeer() as peer:
        peer.hold("slow")

        def call():
            try:
                peer.transport.request("slow", timeout=math.inf)
            except TransportClosed as exc:
                errors.append(str(exc))

        threads = [threading.Thread(target=call) for _ in range(4)]
        for t in threads:
            t.start()
        for _ in threads:
            peer.held.get(timeout=5)
        peer.transport.close()
        for t in threads:
            t.join(5)
        assert errors == ["Transport closed"] * 4
        with pytest.raises(TransportClosed):
            peer.transport.request("x")
        assert not peer.transport.connected


def test_ping_from_the_server_is_answered_inline_with_its_id_type():
    with ScriptedPeer() as peer:
        peer.transport.set_inline_handler("ping", lambda params: {})
        peer.transport.feed({"jsonrpc": "2.0", "id": "srv-1", "method": "ping"})
        reply = peer.wait_for(lambda m: m.get("id") == "srv-1")
        assert reply == {"jsonrpc": "2.0", "id": "srv-1", "result": {}}


def test_unhandled_server_requests_get_method_not_found():
    with ScriptedPeer() as peer:
        peer.transport.feed({"jsonrpc": "2.0", "id": 7, "method": "sampling/createMessage", "params": {}})
        reply = peer.wait_for(lambda m: m.get("id") == 7)
        assert reply["error"]["code"] == -32601


def test_server_requests_run_on_workers_and_a_raising_handler_is_answered_with_an_error(logs):
    threads = []

    def handler(method, params, cancel):
        threads.append(threading.current_thread().name)
        if method == "bad":
            raise RuntimeError("handler bug")
        if method == "refuse":
            raise MCPError(-1, "user said no")
        return {"method": method}

    with ScriptedPeer() as peer:
        peer.transport.set_request_handler(handler)
        peer.transport.feed({"jsonrpc": "2.0", "id": 1, "method": "good"})
        peer.transport.feed({"jsonrpc": "2.0", "id": 2, "method": "bad"})
        peer.transport.feed({"jsonrpc": "2.0", "id": 3, "method": "refuse"})
        replies = {}
        while len(replies) < 3:
            m = peer.wait_for(lambda m: "id" in m and "method" not in m)
            replies[m["id"]] = m
        assert replies[1]["result"] == {"method": "good"}
        assert replies[2]["error"]["code"] == -32603
        assert replies[3]["error"] == {"code": -1, "message": "user said no"}
        assert all(name.startswith("mcpsync-worker") for name in threads)
    assert any("raised" in m for m in logs.messages())


def test_server_cancellation_stops_a_handler_and_suppresses_its_answer():
    started = threading.Event()

    def handler(method, params, cancel):
        started.set()
        cancel.wait(5)
        return {"too": "late"}

    with ScriptedPeer() as peer:
        peer.transport.set_request_handler(handler)
        peer.transport.feed({"jsonrpc": "2.0", "id": "s1", "method": "slow"})
        assert started.wait(5)
        peer.transport.feed({"jsonrpc": "2.0", "method": "notifications/cancelled",
                             "params": {"requestId": "s1"}})
        peer.transport.request("sync")  # a round trip after the handler had its chance to answer
        peer.transport.close()
        assert not any(m.get("id") == "s1" for m in peer.log)


def test_notifications_arrive_in_order_on_the_dispatcher_thread():
    seen = []
    done = threading.Event()

    def on_notification(method, params):
        seen.append((method, params["n"], threading.current_thread().name))
        if params["n"] == 49:
            done.set()

    with ScriptedPeer() as peer:
        peer.transport.on_notification = on_notification
        for n in range(50):
            peer.notify("notifications/message", {"n": n})
        assert done.wait(5)
    assert [n for _, n, _ in seen] == list(range(50))
    assert all(name.startswith("mcpsync-dispatch") for *_, name in seen)


def test_a_raising_notification_callback_is_logged_and_delivery_goes_on(logs):
    done = threading.Event()

    def on_notification(method, params):
        if method == "bad":
            raise ValueError("callback bug")
        done.set()

    with ScriptedPeer() as peer:
        peer.transport.on_notification = on_notification
        peer.notify("bad")
        peer.notify("good")
        assert done.wait(5)
    assert any("raised" in m for m in logs.messages())


def test_on_close_is_called_exactly_once():
    calls = []
    with ScriptedPeer() as peer:
        peer.transport.on_close = lambda: calls.append(1)
        peer.transport.close()
        peer.transport.close()
    assert calls == [1]


def test_a_batch_array_is_unpacked():
    with ScriptedPeer() as peer:
        peer.hold("a")
        got = {}

        def call():
            got["a"] = peer.transport.request("a")

        t = threading.Thread(target=call)
        t.start()
        held = peer.held.get(timeout=5)
        peer.transport.feed([{"jsonrpc": "2.0", "method": "notifications/x"},
                             {"jsonrpc": "2.0", "id": held["id"], "result": 42}])
        t.join(5)
        assert got == {"a": 42}


def test_invalid_messages_raise_protocol_error_for_the_reader_to_log():
    from mcpsync import ProtocolError

    with ScriptedPeer() as peer:
        for bad in ([], 3, {"jsonrpc": "1.0", "id": 1, "result": 1},
                    {"jsonrpc": "2.0", "id": 1, "result": 1, "error": {"code": 1, "message": "x"}},
                    {"jsonrpc": "2.0", "id": None, "method": "x"}):
            with pytest.raises(ProtocolError):
                peer.transport._engine.receive(bad)
        assert peer.transport.request("still") == {"echo": None}


def test_a_stray_wake_of_a_reused_lock_does_not_end_the_next_call_early():
    # Each thread parks on one lock, call after call. A wake-up meant for its previous call
    # (an answer or a cancel that raced that call's end) can land during the next call: the
    # call must go on waiting for its own answer, not return early or spin.
    from mcpsync._rpc.engine import Engine
    from mcpsync._rpc.options import CallOptions
    from mcpsync._rpc.wire import CallWire

    sent = threading.Event()
    engine = None

    def send(message):
        engine._waiters[message["id"]].wake.release()  # the stray wake, before any answer
        sent.set()

    engine = Engine(CallWire(send), name="stray")

    def answer():
        sent.wait(10)
        engine.receive({"jsonrpc": "2.0", "id": 1, "result": {"mine": True}})

    helper = threading.Thread(target=answer)
    helper.start()
    try:
        assert engine.request("tools/call", None, CallOptions(timeout=10)) == {"mine": True}
    finally:
        helper.join(10)
        engine.close(lambda: TransportClosed())
    assert engine.unknown_responses == 0


class RecordingWire:
    """A wire that records what the engine asks of it and answers nothing by itself."""

    def __init__(self):
        self.untimed = []
        self.timed = []
        self.abandoned = []

    def write(self, message):
        self.untimed.append(message)

    def timed_write(self, message, deadline, cancel):
        self.timed.append((message, deadline, cancel))

    def abandon(self, request_id, reason, send_cancelled):
        self.abandoned.append((request_id, reason))
        send_cancelled(request_id, reason)  # the engine's own cancellation, handed over: no reach-in


def test_the_engine_sends_only_through_the_wire_it_was_built_with():
    from mcpsync._rpc.engine import Engine
    from mcpsync._rpc.options import CallOptions

    wire = RecordingWire()
    engine = Engine(wire, name="wired", default_timeout=None)
    try:
        engine.notify("note")  # no limit: the plain write
        assert [m["method"] for m in wire.untimed] == ["note"]
        with pytest.raises(RequestTimeout):
            engine.request("slow", None, CallOptions(timeout=0.01))  # a deadline: the timed write
        (request, deadline, cancel), (cancelled, _, _) = wire.timed
        assert request["method"] == "slow" and math.isfinite(deadline) and cancel is None
        assert wire.abandoned == [(request["id"], "Request timed out")]
        assert cancelled["method"] == "notifications/cancelled"
        assert cancelled["params"] == {"requestId": request["id"], "reason": "Request timed out"}
    finally:
        engine.close(lambda: TransportClosed())


def test_with_answering_off_a_peer_request_is_logged_and_never_answered(logs):
    from mcpsync._rpc.engine import Engine

    wire = RecordingWire()
    engine = Engine(wire, name="quiet")
    engine.incoming.set_inline_handler("ping", lambda params: {})
    try:
        engine.incoming.set_answering(False)
        engine.receive({"jsonrpc": "2.0", "id": 7, "method": "ping"})
        assert wire.untimed == [] and wire.timed == []
        assert any("no server-to-client requests" in m for m in logs.messages())
        engine.incoming.set_answering(True)
        engine.receive({"jsonrpc": "2.0", "id": 8, "method": "ping"})
        until(lambda: wire.timed != [])  # written by the outbox thread: the reader never writes
        assert [m for m, _, _ in wire.timed] == [{"jsonrpc": "2.0", "id": 8, "result": {}}]
        assert wire.untimed == []
    finally:
        engine.close(lambda: TransportClosed())


def test_answers_made_on_the_reader_thread_are_written_by_the_outbox_thread_never_the_reader():
    from mcpsync._rpc.engine import Engine

    writers = []
    written = threading.Event()

    class Wire(RecordingWire):
        def timed_write(self, message, deadline, cancel):
            writers.append(threading.current_thread().name)
            super().timed_write(message, deadline, cancel)
            if len(self.timed) == 2:
                written.set()

    wire = Wire()
    engine = Engine(wire, name="off")
    engine.incoming.set_inline_handler("ping", lambda params: {})
    try:
        engine.receive({"jsonrpc": "2.0", "id": 1, "method": "ping"})  # this thread plays the reader
        engine.receive({"jsonrpc": "2.0", "id": 2, "method": "no/handler"})
        assert written.wait(5)
        assert writers == ["mcpsync-reply[off]-0"] * 2
        assert [m["id"] for m, _, _ in wire.timed] == [1, 2]
    finally:
        engine.close(lambda: TransportClosed())


def test_a_cancelled_handlers_token_fires_off_the_reader_thread():
    # The token's callbacks are the handler's own code: they must not run on (and hold) the reader.
    from mcpsync._rpc.engine import Engine

    fired = []
    started, done, release = threading.Event(), threading.Event(), threading.Event()

    def handler(method, params, token):
        token.add_callback(lambda reason: (fired.append((threading.current_thread().name, reason)), done.set()))
        started.set()
        release.wait(10)
        return {}

    engine = Engine(RecordingWire(), name="cancels")
    engine.incoming.set_handler(handler)
    try:
        engine.receive({"jsonrpc": "2.0", "id": "s1", "method": "work"})  # this thread plays the reader
        assert started.wait(5)
        engine.receive({"jsonrpc": "2.0", "method": "notifications/cancelled",
                        "params": {"requestId": "s1", "reason": "stop"}})
        assert done.wait(5)
        assert fired == [("mcpsync-reply[cancels]-0", "stop")]
    finally:
        release.set()
        engine.close(lambda: TransportClosed())
