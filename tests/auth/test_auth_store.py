"""The token file survives damage (issue 13, item 9): a file that does not parse is moved aside, never overwritten.

Crafted files only, no servers: a byte order mark, garbage, a JSON list. The
rule: reading accepts a UTF-8 BOM; a write finds a file that did not parse,
renames it to ``tokens.json.corrupt-<UTC time>`` (0600), logs where it went,
and starts afresh, so whatever was in it can still be recovered by hand.
"""

from __future__ import annotations

import json
import os
import stat
import threading

import pytest

from mcpsync.auth._tokens import FileTokenStore, MemoryTokenStore

ENTRY = {"issuer": "https://as.example", "token": {"access_token": "kept-entry-token"}}


def asides(path):
    return sorted(p for p in path.parent.iterdir() if p.name.startswith(path.name + ".corrupt-"))


def test_a_file_with_a_byte_order_mark_is_read_and_its_entries_kept(tmp_path):
    path = tmp_path / "tokens.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps({"tokens a b": ENTRY}).encode("utf-8"))
    store = FileTokenStore(path)
    assert store.load("tokens a b") == ENTRY
    store.save("tokens c d", {"x": 1})
    assert json.loads(path.read_text()) == {"tokens a b": ENTRY, "tokens c d": {"x": 1}}
    assert asides(path) == []


@pytest.mark.parametrize("content", [b"{not json", b'["a", "list"]', b"\xff\xfe{}", b"[" * 100000],
                         ids=["garbage", "a-list", "utf-16-bom", "too-deep"])
def test_a_file_that_does_not_parse_is_moved_aside_before_a_write(tmp_path, logs, content):
    path = tmp_path / "tokens.json"
    path.write_bytes(content)
    os.chmod(path, 0o644)
    store = FileTokenStore(path)
    assert store.load("anything") is None  # unusable, but still there
    assert path.read_bytes() == content
    store.save("tokens c d", {"x": 1})
    [aside] = asides(path)
    assert aside.read_bytes() == content  # nothing lost: the damaged file is all there
    assert stat.S_IMODE(aside.stat().st_mode) == 0o600
    assert json.loads(path.read_text()) == {"tokens c d": {"x": 1}}
    assert any(str(aside) in message for message in logs.messages("mcpsync"))


def test_delete_never_overwrites_a_damaged_file_either(tmp_path):
    path = tmp_path / "tokens.json"
    path.write_bytes(b"\x00garbage")
    FileTokenStore(path).delete("tokens a b")
    [aside] = asides(path)
    assert aside.read_bytes() == b"\x00garbage"


def test_two_damaged_files_in_one_second_get_two_names(tmp_path):
    path = tmp_path / "tokens.json"
    store = FileTokenStore(path)
    for n in range(2):
        path.write_bytes(b"garbage %d" % n)
        store.save("k", {"n": n})
    assert sorted(p.read_bytes() for p in asides(path)) == [b"garbage 0", b"garbage 1"]


@pytest.mark.parametrize("make", [lambda p: FileTokenStore(p), lambda p: MemoryTokenStore()])
def test_replace_writes_only_over_what_was_expected(tmp_path, make):
    store = make(tmp_path / "tokens.json")
    assert store.replace("k", None, {"v": 1})
    assert not store.replace("k", None, {"v": 2})
    assert not store.replace("k", {"v": 0}, {"v": 3})
    assert store.replace("k", {"v": 1}, {"v": 4})
    assert store.load("k") == {"v": 4}


def test_the_file_transaction_is_reentrant_and_holds_off_another_thread(tmp_path):
    path = tmp_path / "tokens.json"
    store, other = FileTokenStore(path), FileTokenStore(path)
    inside, done = threading.Event(), threading.Event()
    order = []

    def writer():
        inside.wait(10)
        other.save("k", {"by": "other"})  # blocks on the file lock until the transaction ends
        order.append("other")
        done.set()

    thread = threading.Thread(target=writer)
    thread.start()
    with store.transaction("k"):
        store.save("k", {"by": "first"})  # nested: no self-deadlock
        inside.set()
        assert not done.wait(0.2)
        order.append("first")
    thread.join(10)
    assert order == ["first", "other"]
    assert store.load("k") == {"by": "other"}
