"""The tools cache parses a file with the cyclic collector paused, and leaves the collector as it found it."""

from __future__ import annotations

import gc
import threading

from mcpsync._fleet.toolcache import ToolCache


def _tools(count):
    return [{"name": f"tool_{i}", "inputSchema": {"type": "object", "properties": {"x": {"type": "integer"}}}}
            for i in range(count)]


def test_a_large_cache_file_is_read_without_a_collection_and_the_collector_stays_enabled(tmp_path):
    cache = ToolCache(tmp_path)
    assert cache.put("big", "h", _tools(5000))
    starts = []

    def watch(phase, info):
        if phase == "start" and threading.current_thread() is threading.main_thread():
            starts.append(info["generation"])

    gc.collect()
    gc.callbacks.append(watch)
    try:
        # Parsing 5,000 tools allocates some 30,000 containers: with the collector running that
        # is dozens of collections, each walking what is already live.
        original = gc.get_threshold()
        gc.set_threshold(100, 10, 10)
        try:
            tools = cache.get("big", "h")
            during = len(starts)
        finally:
            gc.set_threshold(*original)
    finally:
        gc.callbacks.remove(watch)
    assert tools is not None and len(tools) == 5000
    assert during <= 3, starts  # before: more than 100 at this threshold
    assert gc.isenabled()


def test_an_application_that_disabled_the_collector_finds_it_still_disabled(tmp_path):
    cache = ToolCache(tmp_path)
    assert cache.put("s", "h", _tools(10))
    gc.disable()
    try:
        assert cache.get("s", "h") is not None
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_concurrent_reads_leave_the_collector_enabled(tmp_path):
    cache = ToolCache(tmp_path)
    assert cache.put("s", "h", _tools(2000))
    go = threading.Barrier(4)
    failures = []

    def read():
        go.wait(10)
        for _ in range(5):
            if cache.get("s", "h") is None:
                failures.append("miss")

    threads = [threading.Thread(target=read) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert not failures
    assert gc.isenabled()
