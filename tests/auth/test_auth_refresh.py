"""Stored grants survive faults (issue 13, items 7 and 8).

* A token endpoint that answers a refresh with 5xx or 429 is having a bad
  moment: the refresh token is kept, the error says so, and the next try works
  without anyone logging in (a headless job must not lose its grant).
* Two auth objects, each with its own ``FileTokenStore`` on one file (as two
  processes have), and an authorization server that rotates refresh tokens
  (the test server spends a refresh token when it is used): the one that did
  not refresh reads the other's new grant from the file instead of spending
  the old refresh token, so nobody gets ``invalid_grant`` and nobody has to log
  in again. The same holds when both refresh at the same moment: the file lock
  lets one refresh and the other adopt its answer.
"""

from __future__ import annotations

import json
import threading

import pytest

import mcpsync

from ..auth_fixtures import _auth_servers, stack  # noqa: F401  (fixtures)


def echo(client, text="hi"):
    return client.call_tool("echo", {"text": text}).text


def stored_refresh_tokens(path):
    data = json.loads(path.read_text())
    return [v["token"]["refresh_token"] for k, v in data.items() if k.startswith("tokens ")]


def no_person(url):
    raise AssertionError("a headless job was asked to log in")


@pytest.mark.parametrize("status", [503, 500, 429])
def test_a_transient_refresh_failure_keeps_the_stored_grant(stack, tmp_path, status):
    path = tmp_path / "tokens.json"
    with stack.connect(stack.oauth(store=mcpsync.FileTokenStore(path))) as client:
        echo(client)
    [refresh_token] = stored_refresh_tokens(path)
    stack.authorization.expire_access_tokens()
    stack.authorization.settings.refresh_failure = status
    job = stack.oauth(store=mcpsync.FileTokenStore(path), login=no_person, server_url=stack.mcp_url)
    with pytest.raises(mcpsync.AuthError) as caught:
        stack.connect(job)
    error = caught.value
    assert error.error == "refresh_unavailable"
    assert f"HTTP {status}" in str(error) and "stored refresh token was kept" in str(error)
    assert refresh_token not in str(error)
    assert stored_refresh_tokens(path) == [refresh_token]  # still there, still usable
    stack.authorization.settings.refresh_failure = None
    later = stack.oauth(store=mcpsync.FileTokenStore(path), login=no_person)
    with stack.connect(later) as client:  # the next run refreshes with it: no login
        assert echo(client, "back") == "back"
    assert stack.person.logins == 1


def test_invalid_grant_still_forgets_the_refresh_token(stack, tmp_path):
    path = tmp_path / "tokens.json"
    with stack.connect(stack.oauth(store=mcpsync.FileTokenStore(path))) as client:
        echo(client)
        stack.authorization.expire_access_tokens()
        stack.authorization.revoke_refresh_tokens()
        assert echo(client, "again") == "again"  # refused refresh, then a new login
    assert stack.person.logins == 2


def test_a_second_auth_object_on_the_same_file_adopts_the_rotated_grant(stack, tmp_path):
    path = tmp_path / "tokens.json"
    first = stack.oauth(store=mcpsync.FileTokenStore(path))
    with stack.connect(first) as client:
        echo(client)
    second = stack.oauth(store=mcpsync.FileTokenStore(path))
    with stack.connect(first) as one, stack.connect(second) as two:
        assert echo(one) == echo(two) == "hi"  # both hold the same stored tokens now
        stack.authorization.expire_access_tokens()
        assert echo(one, "first refreshes") == "first refreshes"      # RT1 spent, RT2 stored
        assert echo(two, "second follows") == "second follows"        # reads RT2's grant, spends nothing
        assert echo(one, "first again") == "first again"
    assert stack.person.logins == 1
    assert stack.authorization.count("token", grant_type="refresh_token") == 1
    [kept] = stored_refresh_tokens(path)
    assert kept is not None and kept in stack.authorization.refresh  # the stored grant is the live one


def test_two_auth_objects_refreshing_at_once_spend_the_refresh_token_once(stack, tmp_path):
    path = tmp_path / "tokens.json"
    with stack.connect(stack.oauth(store=mcpsync.FileTokenStore(path))) as client:
        echo(client)
    auths = [stack.oauth(store=mcpsync.FileTokenStore(path), login=no_person) for _ in range(2)]
    clients = [stack.connect(auth) for auth in auths]
    try:
        stack.authorization.expire_access_tokens()
        barrier = threading.Barrier(2)
        results, errors = [], []

        def call(client, i):
            barrier.wait(10)
            try:
                results.append(echo(client, str(i)))
            except Exception as exc:  # collected for the assertion below
                errors.append(exc)

        threads = [threading.Thread(target=call, args=(c, i)) for i, c in enumerate(clients)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
    finally:
        for client in clients:
            client.close()
    assert errors == [] and sorted(results) == ["0", "1"]
    assert stack.authorization.count("token", grant_type="refresh_token") == 1
    [kept] = stored_refresh_tokens(path)
    assert kept in stack.authorization.refresh


CHILD = r"""
import sys
import mcpsync

url, path = sys.argv[1], sys.argv[2]

def no_person(url):
    raise SystemExit("asked to log in")

auth = mcpsync.OAuth(store=mcpsync.FileTokenStore(path), login=no_person)
print("READY", flush=True)
sys.stdin.readline()
with mcpsync.connect(url, auth=auth, timeout=20) as client:
    print(client.call_tool("echo", {"text": "child"}).text, flush=True)
"""


def test_two_processes_on_one_token_file_refresh_once_and_keep_the_live_grant(stack, tmp_path):
    import subprocess
    import sys

    from ..conftest import ROOT

    path = tmp_path / "tokens.json"
    with stack.connect(stack.oauth(store=mcpsync.FileTokenStore(path))) as client:
        echo(client)
    stack.authorization.expire_access_tokens()
    env = {**__import__("os").environ, "PYTHONPATH": str(ROOT)}
    children = [subprocess.Popen([sys.executable, "-c", CHILD, stack.mcp_url, str(path)], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
                for _ in range(2)]
    try:
        for child in children:
            assert child.stdout.readline().strip() == "READY"
        for child in children:
            child.stdin.write("go\n")
            child.stdin.flush()
        outcomes = [child.communicate(timeout=40) for child in children]
    finally:
        for child in children:
            if child.poll() is None:
                child.kill()
                child.wait()
    assert [out.strip() for out, _ in outcomes] == ["child", "child"], [err[-2000:] for _, err in outcomes]
    assert stack.authorization.count("token", grant_type="refresh_token") == 1
    [kept] = stored_refresh_tokens(path)
    assert kept in stack.authorization.refresh
