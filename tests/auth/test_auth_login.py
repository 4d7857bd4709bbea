"""The person's part of a login: the browser with the loopback callback, paste, callables, timeouts."""

from __future__ import annotations

import re
import sys
import threading
from urllib.parse import parse_qsl, urlsplit

import pytest
import requests

import mcpsync
from mcpsync.auth import _flow

from ..auth_fixtures import _auth_servers, stack  # noqa: F401  (fixtures)


class Browser:
    """Stands in for the system browser: visits the URL on its own thread, like a real one would."""

    def __init__(self, stray_first: bool = False) -> None:
        self.stray_first = stray_first
        self.statuses = []
        self.threads = []

    def __call__(self, url: str) -> bool:
        thread = threading.Thread(target=self._visit, args=(url,), name="test-browser")
        self.threads.append(thread)
        thread.start()
        return True

    def _visit(self, url: str) -> None:
        redirect_uri = dict(parse_qsl(urlsplit(url).query))["redirect_uri"]
        with requests.Session() as session:
            if self.stray_first:  # a stale tab and a favicon fetch must not end the login
                favicon = redirect_uri.rsplit("/", 1)[0] + "/favicon.ico"
                for stray in (redirect_uri + "?code=forged&state=wrong", favicon):
                    self.statuses.append(session.get(stray, timeout=10).status_code)
            response = session.get(url, timeout=10)
            self.statuses.append(response.status_code)
            self.page = response.text

    def join(self) -> None:
        for thread in self.threads:
            thread.join(10)


def test_browser_login_through_the_loopback_callback(stack):
    browser = Browser(stray_first=True)
    auth = stack.oauth(login="browser", open_browser=browser)
    try:
        with stack.connect(auth) as client:
            assert client.call_tool("echo", {"text": "hi"}).text == "hi"
    finally:
        browser.join()
    assert browser.statuses == [400, 404, 200]
    assert "Login complete" in browser.page
    redirect_uri = stack.authorization.find("authorize")[0]["params"]["redirect_uri"]
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+/callback", redirect_uri)


def test_browser_login_on_the_calling_thread_with_a_fixed_redirect_uri(stack, capsys):
    browser = Browser()
    stack.authorization.add_client("desktop-app", redirect_uris=["http://127.0.0.1:47021/cb"])
    auth = stack.oauth(login="browser", open_browser=browser, client_id="desktop-app",
                       redirect_uri="http://127.0.0.1:47021/cb")
    try:
        auth.login(stack.mcp_url)
    finally:
        browser.join()
    assert browser.statuses == [200]
    assert "Your browser has been opened" in capsys.readouterr().err


def test_the_login_wait_ends_at_the_timeout(stack, capsys):
    auth = stack.oauth(login="browser", open_browser=lambda url: False, login_timeout=0.5)
    with pytest.raises(mcpsync.AuthError) as caught:
        auth.login(stack.mcp_url)
    assert caught.value.error == "login_timeout"
    err = capsys.readouterr().err
    assert "Open this URL in a browser" in err and "/authorize?" in err


def test_a_login_needed_to_connect_runs_before_the_first_request_and_ends_at_its_own_timeout(stack):
    # The transport asks the auth object to log in when it opens, on the caller's thread, so
    # a person's login is bounded by login_timeout, not by the first request's timeout.
    auth = stack.oauth(login="browser", open_browser=lambda url: True, login_timeout=1)
    # login_timeout is what ended it: a login run inside the first request would have ended by
    # that request's 30 s timeout (RequestTimeout, or the login abandoned), not by its own.
    with pytest.raises(mcpsync.AuthError) as caught:
        stack.connect(auth, timeout=30)
    assert caught.value.error == "login_timeout"


def test_paste_login(stack, monkeypatch, capsys):
    printed, answers = [], []

    def paste(prompt=""):
        printed.append(capsys.readouterr().err)
        if not answers:
            answers.append("not a url")  # a slip of the mouse first
            return "not a url"
        url = re.search(r"^\s+(http\S+/authorize\?\S+)$", "".join(printed), re.M).group(1)
        answers.append(url)
        return "  " + stack.person(url) + "  \n"

    monkeypatch.setattr("builtins.input", paste)
    auth = stack.oauth(login="paste")
    auth.login(stack.mcp_url)
    assert len(answers) == 2
    assert "does not look like the redirect URL" in "".join(printed)
    with stack.connect(auth) as client:
        client.ping()


def test_auto_finds_nobody_to_ask_in_a_headless_job(stack, monkeypatch):
    if "ipykernel" in sys.modules:
        pytest.skip("a notebook kernel is loaded in this process")
    monkeypatch.setenv("SSH_CONNECTION", "10.0.0.1 22 10.0.0.2 22")
    auth = stack.oauth(login="auto")
    with pytest.raises(mcpsync.AuthError) as caught:
        auth.login(stack.mcp_url)
    assert caught.value.error == "no_person"
    assert "ClientCredentials" in str(caught.value)


def test_auto_mode_choice(monkeypatch):
    for name in ("SSH_CONNECTION", "SSH_CLIENT", "SSH_TTY", "DISPLAY", "WAYLAND_DISPLAY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("DISPLAY", ":0")
    assert _flow._auto_mode() == ("paste" if "ipykernel" in sys.modules else "browser")
    monkeypatch.setenv("SSH_TTY", "/dev/pts/1")
    assert _flow._auto_mode() == "paste"


def test_a_login_handler_that_fails(stack):
    def broken(url):
        raise RuntimeError("the app's login window crashed")

    with pytest.raises(mcpsync.AuthError) as caught:
        stack.oauth(login=broken).login(stack.mcp_url)
    assert caught.value.error == "login_failed"
    assert isinstance(caught.value.__cause__, RuntimeError)


def test_the_person_says_no(stack):
    stack.authorization.settings.deny = True
    with pytest.raises(mcpsync.AuthError) as caught:
        stack.connect(stack.oauth())
    assert caught.value.error == "access_denied"
    assert "The user said no" in str(caught.value)


def test_a_redirect_with_another_state_is_refused(stack):
    def forger(url):
        return stack.person(url).replace("state=", "state=x")

    with pytest.raises(mcpsync.AuthError) as caught:
        stack.oauth(login=forger).login(stack.mcp_url)
    assert caught.value.error == "state_mismatch"
    assert stack.authorization.count("token") == 0
