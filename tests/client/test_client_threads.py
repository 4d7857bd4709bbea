"""The Client's thread-safety promise, raced for real: connect() and handler registration from many threads.

Threads are lined up with a Barrier so they enter the client together; outcomes are
awaited on Events (bounded), never with sleeps. Handshakes are counted on the server side.
"""

from __future__ import annotations

import threading
from typing import List

import pytest

import mcpsync
from mcpsync.testing import FakeServer

from ..conftest import server_argv, until

THREADS = 8
WAIT = 20.0


def _race(target, count: int = THREADS) -> List[BaseException]:
    """Run ``target()`` on ``count`` threads released together; returns what they raised."""
    barrier = threading.Barrier(count)
    errors: List[BaseException] = []
    lock = threading.Lock()

    def run() -> None:
        barrier.wait(WAIT)
        try:
            target()
        except BaseException as exc:  # collected and asserted on by the test
            with lock:
                errors.append(exc)

    threads = [threading.Thread(target=run, name=f"race-{i}") for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT)
    assert not any(thread.is_alive() for thread in threads), "a racing thread is stuck"
    return errors


@pytest.mark.parametrize(("protocol", "handshake"), [("legacy", "initialize"), ("modern", "server/discover")])
def test_concurrent_connects_run_one_handshake(protocol, handshake):
    server = FakeServer("race")

    @server.tool()
    def echo(text: str) -> str:
        return text

    with server:
        client = mcpsync.Client(server.transport(), protocol=protocol)
        connected: List[mcpsync.Client] = []
        errors = _race(lambda: connected.append(client.connect()))
        try:
            assert errors == []
            assert len(connected) == THREADS and all(c is client for c in connected)
            assert [r.method for r in server.requests].count(handshake) == 1
            assert client.call_tool("echo", {"text": "one"}).text == "one"
        finally:
            client.close()


def test_concurrent_connects_over_stdio_start_one_handshake():
    client = mcpsync.Client(mcpsync.StdioTransport(*_split(server_argv("era_scripted.py", "legacy-32601"))),
                            timeout=15)
    errors = _race(client.connect)

    def received() -> List[str]:
        return [line[5:].split()[0] for line in client.transport.stderr_tail if line.startswith("RECV ")]

    try:
        assert errors == []
        # The server's stderr is read by a thread of its own, behind the answers: a ping sent
        # after the handshake is logged after every handshake request, so once its line has been
        # read, all of theirs have too.
        client.ping()
        until(lambda: "ping" in received())
        seen = received()
        assert seen.count("initialize") == 1
        assert seen.count("server/discover") == 1  # the era probe, also sent once
    finally:
        client.close()


def test_handlers_registered_and_removed_from_many_threads_at_once_are_all_kept_or_all_gone():
    server = FakeServer("race")
    method = "notifications/race"
    per_thread = 50
    kept = THREADS * per_thread // 2
    calls = {"n": 0}
    lock = threading.Lock()
    all_called = threading.Event()

    def handler(_params) -> None:
        with lock:
            calls["n"] += 1
            if calls["n"] == kept:
                all_called.set()

    def register() -> None:
        removers = [client.on_notification(method, lambda params: handler(params)) for _ in range(per_thread)]
        for remove in removers[::2]:
            remove()

    with server, server.client(protocol="legacy") as client:
        assert _race(register) == []
        assert server.notify(method, {"n": 1}) == 1
        assert all_called.wait(WAIT)
        # Nothing more arrives after the last kept handler ran: a ping is answered after the dispatch.
        client.ping()
        with lock:
            assert calls["n"] == kept


def test_a_handler_may_register_another_from_inside_a_notification():
    server = FakeServer("race")
    second = threading.Event()

    with server, server.client(protocol="legacy") as client:
        def first(_params) -> None:
            client.on_notification("notifications/second", lambda _p: second.set())

        client.on_notification("notifications/first", first)
        server.notify("notifications/first")
        client.ping()
        server.notify("notifications/second")
        assert second.wait(WAIT)


def test_registering_while_another_thread_connects_never_loses_a_handler():
    server = FakeServer("race")
    method = "notifications/during-connect"
    got: List[int] = []
    lock = threading.Lock()
    done = threading.Event()
    registrars = THREADS - 1

    def note(index: int) -> None:
        with lock:
            got.append(index)
            if len(got) == registrars:
                done.set()

    with server:
        client = mcpsync.Client(server.transport(), protocol="legacy")
        counter = iter(range(registrars))
        counter_lock = threading.Lock()

        def one() -> None:
            with counter_lock:
                index = next(counter, None)
            if index is None:
                client.connect()
            else:
                client.on_notification(method, lambda _params, i=index: note(i))

        try:
            assert _race(one) == []
            client.connect()  # already connected: returns at once
            assert server.notify(method) == 1
            assert done.wait(WAIT)
            assert sorted(got) == list(range(registrars))
        finally:
            client.close()


def _split(argv: List[str]):
    return argv[0], argv[1:]
