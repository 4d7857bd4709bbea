"""Auth objects across processes (issue 12): pickled as their settings, never their tokens, and
with locks of their own after unpickling and after fork.

Against the test authorization server and protected SDK server (tests/auth_fixtures.py). The
login handler here is a module-level function, as one sent to a worker must be.
"""

from __future__ import annotations

import json
import os
import pickle
import select
import signal
import threading
from pathlib import Path
from typing import Any

import pytest
import requests

import mcpsync

from ..auth_fixtures import _auth_servers, stack  # noqa: F401  (fixtures)
from ..test_fork import helpers_stopped  # noqa: F401  (fixture)


def approve(url: str) -> str:
    """The person's part, as a picklable function: the test server approves at once."""
    response = requests.get(url, allow_redirects=False, timeout=10)
    response.close()
    assert response.status_code == 302, response.status_code
    return str(response.headers["Location"])


def logged_in(stack: Any, auth: Any) -> None:
    with stack.connect(auth) as client:
        assert client.call_tool("echo", {"text": "hi"}).text == "hi"


def leaked(data: bytes, stack: Any) -> list:
    return [secret for secret in stack.secrets() if secret.encode() in data]


def test_oauth_pickles_as_settings_and_finds_its_tokens_in_the_file_store(stack: Any, tmp_path: Path) -> None:
    auth = mcpsync.OAuth(login=approve, store=mcpsync.FileTokenStore(tmp_path / "tokens.json"), scopes=["mcp"])
    logged_in(stack, auth)
    data = pickle.dumps(auth)
    assert leaked(data, stack) == []  # no token, code or registered secret in the pickle
    copy = pickle.loads(data)
    assert repr(copy) == f"<OAuth {auth.server_url!r} no token>" and copy.scopes == ("mcp",)
    assert copy.store.path == auth.store.path and copy._lock is not auth._lock
    logins = stack.authorization.count("authorize")
    logged_in(stack, copy)  # the tokens the first one stored in the file
    assert stack.authorization.count("authorize") == logins


def test_a_memory_store_pickles_empty_unless_asked(stack: Any) -> None:
    auth = mcpsync.OAuth(login=approve, store=mcpsync.MemoryTokenStore())
    logged_in(stack, auth)
    data = pickle.dumps(auth)
    assert leaked(data, stack) == []
    copy = pickle.loads(data)
    assert repr(copy.store) == "<MemoryTokenStore entries=0>"
    logins = stack.authorization.count("authorize")
    logged_in(stack, copy)  # a login of its own (the test person approves again)
    assert stack.authorization.count("authorize") == logins + 1


def test_memory_store_with_pickle_tokens_carries_them(stack: Any) -> None:
    auth = mcpsync.OAuth(login=approve, store=mcpsync.MemoryTokenStore(pickle_tokens=True))
    logged_in(stack, auth)
    data = pickle.dumps(auth)
    assert leaked(data, stack)  # asked for: the tokens travel
    copy = pickle.loads(data)
    assert copy.store.pickle_tokens
    logins = stack.authorization.count("authorize")
    logged_in(stack, copy)
    assert stack.authorization.count("authorize") == logins


def test_a_client_with_oauth_pickles_and_reconnects(stack: Any, tmp_path: Path) -> None:
    auth = mcpsync.OAuth(login=approve, store=mcpsync.FileTokenStore(tmp_path / "tokens.json"))
    with stack.connect(auth) as client:
        assert client.call_tool("echo", {"text": "a"}).text == "a"
        data = pickle.dumps(client)
    assert leaked(data, stack) == []
    copy = pickle.loads(data)
    try:
        assert copy.call_tool("echo", {"text": "b"}).text == "b"
    finally:
        copy.close()


def test_client_credentials_pickle_and_what_cannot_be_pickled_is_named(stack: Any) -> None:
    stack.authorization.add_client("svc", secret="svc-secret-1", auth_method="client_secret_basic")
    auth = mcpsync.ClientCredentials("svc", client_secret="svc-secret-1")
    logged_in(stack, auth)
    copy = pickle.loads(pickle.dumps(auth))
    assert repr(copy).endswith("no token>")
    logged_in(stack, copy)  # the configured secret is a setting: it travels
    with pytest.raises(TypeError, match=r"Cannot pickle OAuth: its login <function .*<lambda>"):
        pickle.dumps(mcpsync.OAuth(login=lambda url: url))
    with pytest.raises(TypeError, match=r"its auth object OAuth cannot be pickled .*its open_browser"):
        pickle.dumps(mcpsync.Client(mcpsync.StreamableHTTPTransport(
            stack.mcp_url, auth=mcpsync.OAuth(login="browser", open_browser=lambda url: None))))
    with pytest.raises(TypeError, match=r"WorkloadIdentity: its token source <TokenSource callable>"):
        pickle.dumps(mcpsync.auth.WorkloadIdentity(token=lambda: "jwt"))
    assert pickle.loads(pickle.dumps(mcpsync.auth.WorkloadIdentity(token_file="/var/run/token"))).source is not None


def test_a_private_key_object_is_named_without_its_value() -> None:
    pytest.importorskip("jwt")
    from cryptography.hazmat.primitives.asymmetric import ec

    key = ec.generate_private_key(ec.SECP256R1())
    with pytest.raises(TypeError, match=r"its private_key \(a .*PrivateKey\) cannot be pickled .*PEM text"):
        pickle.dumps(mcpsync.ClientCredentials("svc", private_key=key, algorithm="ES256"))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_auth_and_store_locks_held_at_fork_cannot_deadlock_the_child(tmp_path: Path) -> None:
    """A parent thread is inside a token-file transaction and the auth object's lock when another
    forks: the child's own uses of both go through (the file lock once the parent lets go)."""
    store = mcpsync.FileTokenStore(tmp_path / "tokens.json")
    auth = mcpsync.OAuth("http://127.0.0.1:9/mcp", store=store)
    memory = mcpsync.MemoryTokenStore()
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with auth._lock, memory.transaction("k"), store.transaction("k"):
            held.set()
            release.wait(30)

    holder = threading.Thread(target=hold, name="test-holder")
    holder.start()
    assert held.wait(10)
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        report = {}
        try:
            os.close(read_end)
            report["auth"] = auth._lock.acquire(timeout=5)
            memory.save("k", {"v": 1})
            report["memory"] = memory.load("k")
            done = threading.Event()

            def write() -> None:
                store.save("k", {"v": "child"})
                done.set()

            threading.Thread(target=write, daemon=True).start()
            report["file"] = done.wait(20)
        finally:
            os.write(write_end, json.dumps(report).encode())
            os._exit(0)
    os.close(write_end)
    release.set()  # the parent's thread lets go of the file lock: the child's write may go on
    holder.join(10)
    ready, _, _ = select.select([read_end], [], [], 40)
    if not ready:  # a deadlocked child: end it, so the failure below is all that is left
        os.kill(pid, signal.SIGKILL)
    with os.fdopen(read_end, "rb") as stream:
        report = json.loads(stream.read() or b"{}") if ready else {"deadlocked": True}
    os.waitpid(pid, 0)
    assert report == {"auth": True, "memory": {"v": 1}, "file": True}
    assert store.load("k") == {"v": "child"}
    with store.transaction("k"):  # and the parent's own lock works as before
        pass


def remote_echo(client: mcpsync.Client, text: str) -> Any:
    """In a spawned worker: one call through the unpickled client, and whether its auth got a token."""
    with client:
        answer = client.call_tool("echo", {"text": text}).text
        return answer, repr(client.transport.auth).endswith("token [redacted]>"), os.getpid()


@pytest.mark.slow
def test_an_oauth_client_sent_to_a_spawned_worker(stack: Any, tmp_path: Path, helpers_stopped: None) -> None:
    """The whole path: a client whose OAuth logged in here, pickled to a spawn worker, which uses the
    tokens from the shared file store (no login of its own)."""
    import concurrent.futures
    import multiprocessing

    auth = mcpsync.OAuth(login=approve, store=mcpsync.FileTokenStore(tmp_path / "tokens.json"))
    with stack.connect(auth) as client:
        assert client.call_tool("echo", {"text": "here"}).text == "here"
        logins = stack.authorization.count("authorize")
        with concurrent.futures.ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
            answer, had_token, worker = pool.submit(remote_echo, client, "there").result(60)
    assert (answer, had_token) == ("there", True) and worker != os.getpid()
    assert stack.authorization.count("authorize") == logins
