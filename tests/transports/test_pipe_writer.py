"""The stdio pipe writer, on a real OS pipe: whole lines, shared writes under load, no stranded lines.

These drive ``mcpsync.transports._pipe_writer`` directly, because the cases it
must get right (a full pipe at the moment a second thread arrives) cannot be
ordered from outside; the stdio tests run it against real servers too.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from typing import Iterator, List, Tuple

import pytest

from mcpsync import CancelToken, RequestCancelled, TransportClosed
from mcpsync._rpc.engine import Engine
from mcpsync._rpc.wire import CallWire
from mcpsync.transports._pipe_writer import SHARE_LIMIT, PipeWriter

from ..conftest import until

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX pipes (Windows writes block)")


@pytest.fixture
def piped() -> Iterator[Tuple[PipeWriter, int, Engine]]:
    """A writer on a fresh pipe; yields (writer, read fd, engine) and closes everything."""
    read_fd, write_fd = os.pipe()
    stream = os.fdopen(write_fd, "wb")
    engine = Engine(CallWire(lambda message: None), name="pipe-test")
    writer = PipeWriter("pipe-test")
    writer.attach(stream, engine)
    try:
        yield writer, read_fd, engine
    finally:
        engine.close(TransportClosed)
        writer.detach()
        writer.join(5)
        stream.close()
        os.close(read_fd)


def fill(write_fd: int) -> int:
    """Write filler bytes until the (non-blocking) pipe is full; returns how many."""
    total = 0
    chunk = b"." * 65536
    while True:
        try:
            total += os.write(write_fd, chunk)
        except BlockingIOError:
            return total


def read_exactly(read_fd: int, size: int) -> bytes:
    data = b""
    while len(data) < size:
        data += os.read(read_fd, size - len(data))
    return data


def read_lines(read_fd: int, count: int) -> List[bytes]:
    data = b""
    while data.count(b"\n") < count:
        data += os.read(read_fd, 65536)
    return data.split(b"\n")[:count]


def request(request_id: int, text: str = "x") -> dict:
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": {"text": text}}


def test_many_threads_writing_at_once_put_every_line_whole_and_once(piped):
    writer, read_fd, _ = piped
    per_thread, threads = 400, 8
    received: List[bytes] = []

    def drain() -> None:
        received.extend(read_lines(read_fd, per_thread * threads))

    reader = threading.Thread(target=drain)
    reader.start()

    def write_many(index: int) -> None:
        for n in range(per_thread):
            writer.write(request(index * per_thread + n, "y" * (n % 7)))

    writers = [threading.Thread(target=write_many, args=(i,)) for i in range(threads)]
    for thread in writers:
        thread.start()
    for thread in writers:
        thread.join(30)
    reader.join(30)
    ids = sorted(json.loads(line)["id"] for line in received)
    assert ids == list(range(per_thread * threads))


def test_lines_queued_behind_a_writer_that_gives_up_still_go_out_when_the_server_reads(piped):
    # A's line waits on a full pipe; B and C find the pipe busy, queue theirs and go on. A gives
    # up first (its cancel fires): A's own line (never begun) is dropped, but B's and C's were
    # left to A, so they must not be stranded: a flusher sends them once the server reads.
    writer, read_fd, _ = piped
    filled = fill(writer._fd)
    token = CancelToken()
    outcome = {}

    def a() -> None:
        try:
            writer.write(request(1), cancel=token)
        except RequestCancelled as exc:
            outcome["a"] = exc

    thread = threading.Thread(target=a)
    thread.start()
    until(lambda: writer._lock.locked() and writer._tail)  # A holds the pipe, its line begun
    writer.write(request(2), deadline=time.monotonic() + 10)  # returns at once: queued for A
    writer.write(request(3), deadline=time.monotonic() + 10)
    token.cancel("A gives up")
    thread.join(10)
    assert str(outcome["a"]) == "Request cancelled: A gives up" or "A gives up" in str(outcome["a"])
    assert read_exactly(read_fd, filled) == b"." * filled
    assert [json.loads(line)["id"] for line in read_lines(read_fd, 2)] == [2, 3]
    writer.join(10)
    assert writer._flusher is None


def test_a_queued_request_can_be_withdrawn_before_it_reaches_the_pipe(piped):
    writer, read_fd, _ = piped
    writer._lock.acquire()  # another writer is busy
    try:
        writer.write(request(7))
        writer.write(request(8))
        assert writer.withdraw(7) is True
        assert writer.withdraw("7") is False  # ids match by type too
        assert writer.withdraw(99) is False
    finally:
        writer._lock.release()
    writer.write(request(9))  # takes what is queued with it
    assert [json.loads(line)["id"] for line in read_lines(read_fd, 2)] == [8, 9]


def test_a_long_line_waits_for_the_pipe_itself_and_stays_whole(piped):
    writer, read_fd, _ = piped
    big = "z" * (SHARE_LIMIT * 40)
    received: List[bytes] = []
    reader = threading.Thread(target=lambda: received.extend(read_lines(read_fd, 9)))
    reader.start()
    threads = [threading.Thread(target=writer.write, args=(request(i, big if i % 3 == 0 else "s"),))
               for i in range(9)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    reader.join(30)
    texts = {json.loads(line)["id"]: json.loads(line)["params"]["text"] for line in received}
    assert texts == {i: big if i % 3 == 0 else "s" for i in range(9)}


def test_a_closed_connection_stops_the_flusher(piped):
    writer, read_fd, engine = piped
    fill(writer._fd)
    token = CancelToken()
    thread = threading.Thread(target=lambda: pytest.raises(RequestCancelled, writer.write, request(1),
                                                           cancel=token))
    thread.start()
    until(lambda: writer._lock.locked() and writer._tail)  # A holds the pipe, its line begun
    writer.write(request(2), deadline=time.monotonic() + 10)
    token.cancel()
    thread.join(10)
    until(lambda: writer._flusher is not None or not writer._queue)
    engine.fail_pending(TransportClosed)
    writer.detach()
    writer.join(5)
    assert writer._flusher is None


def test_lines_left_to_a_writer_stuck_on_a_full_pipe_are_bounded(piped):
    # A holds the pipe, waiting on a server that does not read. Threads that do not wait for
    # their line (notifications, answers) may leave theirs to A, but only up to QUEUE_LIMIT:
    # past that each waits for the pipe itself and gives up at its deadline, holding nothing.
    from mcpsync import RequestTimeout
    from mcpsync.transports._pipe_writer import QUEUE_LIMIT

    writer, read_fd, _ = piped
    fill(writer._fd)
    token = CancelToken()
    thread = threading.Thread(target=lambda: pytest.raises(RequestCancelled, writer.write, request(0),
                                                           cancel=token))
    thread.start()
    until(lambda: writer._lock.locked() and writer._tail)  # A holds the pipe, its line begun
    try:
        for n in range(QUEUE_LIMIT):
            writer.write(request(n + 1), deadline=time.monotonic() + 10)  # queued for A: returns at once
        for n in range(3):
            with pytest.raises(RequestTimeout):
                writer.write(request(QUEUE_LIMIT + n + 1), deadline=time.monotonic() + 0.05)
        assert len(writer._queue) == QUEUE_LIMIT
    finally:
        token.cancel()
        thread.join(10)
