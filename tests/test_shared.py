"""Issue 25: copies of a client or manager unpickled in one process share one live connection.

A Dask or Ray task that receives a client as an argument unpickles a copy of its own; those copies
share one server (one connection per set of settings), reference-counted, closed after their
``idle_timeout``, never across a fork. Real demo servers over stdio; every wait is bounded and waits
on an event, a barrier or a process's end.
"""

from __future__ import annotations

import gc
import os
import pickle
import threading
from typing import Any, Dict, Iterator, List

import pytest

import mcpsync
from mcpsync import _shared
from tests.conftest import _children, until
from tests.fork_tasks import DEMO, manager_config
from tests.test_fork import child_result, in_child


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def demo_servers(pids: "set[int]") -> "set[int]":
    """The demo servers among ``pids`` (a stdio server also has a watchdog process)."""
    found = set()
    for pid in pids:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
                if b"demo_server" in cmdline.read():
                    found.add(pid)
        except OSError:
            continue
    return found


@pytest.fixture
def blob() -> Iterator[bytes]:
    """A pickled client (never connected in this test's process: a driver's, as a task receives it)."""
    original = mcpsync.Client(mcpsync.StdioTransport(DEMO[0], DEMO[1:], timeout=20), idle_timeout=0.05)
    yield pickle.dumps(original)
    original.close()


def echo_from_threads(handles: List[mcpsync.Client]) -> Dict[int, Any]:
    barrier = threading.Barrier(len(handles))
    answers: Dict[int, Any] = {}

    def use(n: int) -> None:
        barrier.wait(10)
        try:
            result = handles[n].call_tool("echo", {"text": f"token-{n}"}).text
            answers[n] = (result, handles[n].transport.pid)
        except Exception as exc:  # reported in the assertion
            answers[n] = repr(exc)

    threads = [threading.Thread(target=use, args=(n,), name=f"test-shared-{n}") for n in range(len(handles))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    return answers


def test_copies_share_one_server_used_from_threads_and_it_ends_after_its_idle_time(blob: bytes) -> None:
    before = _children()
    handles = [pickle.loads(blob) for _ in range(4)]
    answers = echo_from_threads(handles)
    server = handles[0].transport.pid
    assert answers == {n: (f"token-{n}", server) for n in range(4)}  # each its own answer, one server
    assert demo_servers(_children() - before) == {server}
    assert _shared.stats() == {"cores": 1, "idle": 0}

    handles[0].close()  # one copy lets go: the others go on
    with pytest.raises(mcpsync.TransportClosed):
        handles[0].call_tool("echo", {"text": "after close"})
    assert handles[1].call_tool("echo", {"text": "still"}).text == "still" and alive(server)
    handles[0].close()  # a second close of the same copy takes nothing from the others
    assert handles[2].call_tool("echo", {"text": "again"}).text == "again"

    for handle in handles[1:]:
        handle.close()
    until(lambda: not alive(server), 15)  # the last close started the 0.05 s idle time; then it was closed
    assert _shared.stats() == {"cores": 0, "idle": 0}


def test_a_copy_unpickled_during_the_idle_time_reuses_the_server() -> None:
    original = mcpsync.Client(mcpsync.StdioTransport(DEMO[0], DEMO[1:], timeout=20), idle_timeout=60)
    data = pickle.dumps(original)
    first = pickle.loads(data)
    server = (first.call_tool("echo", {"text": "a"}), first.transport.pid)[1]
    del first
    gc.collect()  # a copy nobody closed lets go when it is collected
    assert _shared.stats() == {"cores": 1, "idle": 1} and alive(server)
    second = pickle.loads(data)  # the next task, within the idle time
    assert second.call_tool("echo", {"text": "b"}).text == "b" and second.transport.pid == server
    second.close()
    assert _shared.close_idle() == 1  # a worker's teardown need not wait the idle time out
    until(lambda: not alive(server), 15)


def test_opting_out_gives_each_copy_its_own_server(monkeypatch: pytest.MonkeyPatch) -> None:
    private = mcpsync.Client(mcpsync.StdioTransport(DEMO[0], DEMO[1:], timeout=20), share=False)
    copies = [pickle.loads(pickle.dumps(private)) for _ in range(2)]
    monkeypatch.setenv(_shared.ENV_OPT_OUT, "0")
    shared = mcpsync.Client(mcpsync.StdioTransport(DEMO[0], DEMO[1:], timeout=20))
    copies += [pickle.loads(pickle.dumps(shared)) for _ in range(2)]  # the worker's environment opts out
    try:
        for n, copy in enumerate(copies):
            assert copy.call_tool("echo", {"text": str(n)}).text == str(n)
        assert len({copy.transport.pid for copy in copies}) == 4 and _shared.stats()["cores"] == 0
    finally:
        for copy in copies:
            copy.close()
        private.close()
        shared.close()


def test_idle_timeout_is_checked() -> None:
    with pytest.raises(ValueError, match="idle_timeout"):
        mcpsync.Client(mcpsync.StdioTransport(DEMO[0], DEMO[1:]), idle_timeout=-1)


def test_a_forked_child_never_uses_the_parents_shared_connection(blob: bytes) -> None:
    handle = pickle.loads(blob)
    assert handle.call_tool("echo", {"text": "parent"}).text == "parent"
    server = handle.transport.pid

    def child() -> Dict[str, Any]:
        inherited = handle.call_tool("echo", {"text": "child"}).text
        fresh = pickle.loads(blob)  # a new copy in the child: the pool started empty here
        answer = fresh.call_tool("echo", {"text": "fresh"}).text
        result = {"inherited": inherited, "inherited_pid": handle.transport.pid, "fresh": answer,
                  "fresh_pid": fresh.transport.pid}
        fresh.close()
        handle.close()
        _shared.close_idle()
        return result

    result = child_result(*in_child(child))
    assert result["inherited"] == "child" and result["fresh"] == "fresh"
    assert server not in (result["inherited_pid"], result["fresh_pid"])
    assert handle.transport.pid == server and handle.call_tool("echo", {"text": "p2"}).text == "p2"
    handle.close()


def test_manager_copies_share_one_manager() -> None:
    manager = mcpsync.Manager(manager_config(), cache=False, timeout=20, idle_timeout=0.05)
    manager.connect_all(20)  # a started manager's copies start on their first use
    data = pickle.dumps(manager)
    manager.close()
    copies = [pickle.loads(data) for _ in range(3)]
    answers = [copy.call_tool("mcp_demo_echo", {"text": f"m{n}"}).text for n, copy in enumerate(copies)]
    assert answers == ["m0", "m1", "m2"]
    servers = {copy.client("demo").transport.pid for copy in copies}
    assert len(servers) == 1
    copies[0].close()
    assert copies[0].closed and not copies[1].closed
    with pytest.raises(mcpsync.MCPSyncError):  # as a closed manager's (its servers are gone)
        copies[0].call_tool("mcp_demo_echo", {"text": "closed"})
    assert copies[1].call_tool("mcp_demo_echo", {"text": "on"}).text == "on"
    for copy in copies[1:]:
        copy.close()
    server = servers.pop()
    until(lambda: not alive(server), 15)
    assert _shared.stats()["cores"] == 0


def test_a_copy_unpickled_after_the_server_died_gets_a_new_one(blob: bytes) -> None:
    """A shared connection whose server died must not be handed to the next task: before this was
    checked, every later copy in the worker got the dead connection (TransportClosed on each call)."""
    import signal

    holder = pickle.loads(blob)  # a task still holding its copy
    server = (holder.call_tool("echo", {"text": "a"}), holder.transport.pid)[1]
    os.kill(server, signal.SIGKILL)
    until(lambda: holder.transport.finished, 15)
    later = pickle.loads(blob)  # the next task
    try:
        assert later.call_tool("echo", {"text": "b"}).text == "b" and later.transport.pid != server
        with pytest.raises(mcpsync.TransportClosed):
            holder.call_tool("echo", {"text": "c"})
        assert _shared.stats()["cores"] == 1
    finally:
        later.close()
        holder.close()  # the last holder of the broken one closes it


def test_separate_picklings_and_copies_of_copies_share_one_connection() -> None:
    """The key is a digest of the settings, not of one pickled string: a task argument is pickled anew
    for each task, and an engine may pass a copy on (pickling the copy)."""
    original = mcpsync.Client(mcpsync.StdioTransport(DEMO[0], DEMO[1:], timeout=20), idle_timeout=0.05)
    first = pickle.loads(pickle.dumps(original))
    second = pickle.loads(pickle.dumps(original))
    third = pickle.loads(pickle.dumps(second))
    other = pickle.loads(pickle.dumps(mcpsync.Client(mcpsync.StdioTransport(DEMO[0], DEMO[1:], timeout=21))))
    try:
        servers = [(c.call_tool("echo", {"text": "x"}), c.transport.pid)[1] for c in (first, second, third, other)]
        assert servers[0] == servers[1] == servers[2] != servers[3]  # other settings, another connection
    finally:
        for copy in (first, second, third, other):
            copy.close()
        original.close()


def test_a_copy_collected_in_a_cycle_while_the_pool_is_busy(blob: bytes) -> None:
    """The collector may find a copy in a reference cycle during any allocation, inside the pool's own
    lock too (acquire allocates): its release must not wait for that lock for ever."""
    copy = pickle.loads(blob)
    cycle: List[Any] = [copy]
    cycle.append(cycle)
    del copy, cycle
    done = threading.Event()

    def collect_inside() -> None:
        with _shared._pool.lock:  # as if the collection ran inside acquire()
            gc.collect()
        done.set()

    worker = threading.Thread(target=collect_inside, name="test-shared-gc", daemon=True)
    worker.start()
    assert done.wait(10), "the release waited for the lock its own thread held"
    worker.join(10)
    assert _shared.stats() == {"cores": 1, "idle": 1}
