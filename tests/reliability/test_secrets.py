"""Secrets never leak: not in a log line at any level, an exception text, a repr, or the CLI's output.

Every test captures all logging at DEBUG on the root logger (so urllib3's and
requests' records too, with tracebacks) through a whole session, failures
included, and greps everything the user could see for every secret:
``headers=``, ``token=``, ``auth=`` (a requests auth object, and credentials
in the URL), the legacy transport, ``mcpsync.OAuth`` and
``mcpsync.ClientCredentials`` (every token, code and client secret the test
authorization server handed out), and the ``env`` of a stdio server: all env
values are treated as secrets (no repr, log line or error shows them).

The last test (issue 13) runs one whole OAuth session at DEBUG: a browser
login through the loopback redirect catcher with a dynamically registered
confidential client, a step-up, refreshes on a 401 and before expiry, a
token endpoint outage (503), a refused refresh and a new login, a pinned
issuer refused, a wrong pre-registered secret, and the CLI using the issued
token before and after it expires; it greps everything for every token,
code, client secret and PKCE verifier.
"""

from __future__ import annotations

import base64
import http.client
import json
import logging
import os
import secrets
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Dict, Iterator, List
from urllib.parse import urlsplit

import pytest
import requests

import mcpsync
from mcpsync import HTTPStatusError, MCPSyncError, TransportClosed
from mcpsync import config as mcpconfig

from ..auth_fixtures import _auth_servers, stack  # noqa: F401  (fixtures)
from ..conftest import ROOT, server_argv
from .conftest import HostileHTTP


class Seen(logging.Handler):
    """Everything the user could see: every log record of every logger (formatted with its
    traceback), plus the texts a test adds (reprs, exception texts, output)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))
        self.logged: List[str] = []
        self.extra: List[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.logged.append(self.format(record))

    def __iadd__(self, texts: Any) -> "Seen":
        self.extra.extend(texts)
        return self

    def extend(self, texts: Any) -> None:
        self.extra.extend(texts)

    def all(self) -> List[str]:
        return self.logged + self.extra


@pytest.fixture
def seen() -> Iterator[Seen]:
    root = logging.getLogger()
    handler = Seen()
    levels = {name: logging.getLogger(name).level for name in ("", "mcpsync", "urllib3", "requests")}
    for name in levels:
        logging.getLogger(name).setLevel(logging.DEBUG)
    root.addHandler(handler)
    yield handler
    root.removeHandler(handler)
    for name, level in levels.items():
        logging.getLogger(name).setLevel(level)


def new_secret(label: str) -> str:
    return f"{label}-{secrets.token_hex(12)}"


def shows(error: BaseException) -> List[str]:
    """What an exception shows: its text, repr and the text of its causes."""
    out = []
    while error is not None:
        out += [str(error), repr(error)]
        error = error.__cause__ or error.__context__  # type: ignore[assignment]
    return out


def assert_nowhere(seen: Any, hidden: List[str]) -> None:
    texts = seen.all() if isinstance(seen, Seen) else seen
    if isinstance(seen, Seen):  # the capture worked: DEBUG records of mcpsync (and of urllib3, for HTTP) are in
        assert any(t.startswith("mcpsync") and " DEBUG " in t for t in seen.logged)
    assert len(texts) > 5
    leaked = [(secret[:10], text[:200]) for text in texts for secret in hidden if secret in text]
    assert leaked == []


def http_session(texts: Any, url: str, **options: Any) -> None:
    """A whole session, with a failed call, then the client's and transport's reprs."""
    with mcpsync.connect(url, timeout=10, **options) as client:
        client.list_tools()
        client.call_tool("echo", {"text": "hello"})
        client.ping()
        try:
            client.call_tool("echo", {"text": float("nan")})
        except MCPSyncError as exc:
            texts.extend(shows(exc))
        texts += [repr(client), repr(client.transport), str(client.server_info)]
    texts += [repr(client), repr(client.transport)]


def refused(texts: Any, url: str, **options: Any) -> None:
    with pytest.raises(HTTPStatusError) as caught:
        mcpsync.connect(url, timeout=10, **options)
    assert caught.value.status_code == 401
    texts.extend(shows(caught.value))


def test_headers_never_show(http_server: Any, seen: Seen) -> None:
    key, wrong = new_secret("hdr"), new_secret("wrong")
    server: HostileHTTP = http_server("normal", "--require-header", f"X-Api-Key:{key}")
    http_session(seen, server.url(), headers={"X-Api-Key": key})
    refused(seen, server.url(), headers={"X-Api-Key": wrong})
    assert any(t.startswith("urllib3") and " DEBUG " in t for t in seen.logged)  # the HTTP stack's records too
    assert_nowhere(seen, [key, wrong])


def test_bearer_tokens_never_show(http_server: Any, seen: Seen) -> None:
    token, wrong = new_secret("tok"), new_secret("wrong")
    server: HostileHTTP = http_server("normal", "--require-header", f"Authorization:Bearer {token}")
    http_session(seen, server.url(), token=token)
    refused(seen, server.url(), token=wrong)
    legacy = {"type": "sse", "url": server.url("/sse")}
    with mcpsync.connect(legacy, token=token, timeout=10) as client:
        client.call_tool("echo", {"text": "legacy"})
        seen += [repr(client), repr(client.transport)]
    assert_nowhere(seen, [token, wrong])


def test_requests_auth_objects_and_url_credentials_never_show(http_server: Any, seen: Seen) -> None:
    password = new_secret("pw")
    basic = base64.b64encode(f"user:{password}".encode()).decode()
    server: HostileHTTP = http_server("normal", "--require-header", f"Authorization:Basic {basic}")
    http_session(seen, server.url(), auth=requests.auth.HTTPBasicAuth("user", password))
    http_session(seen, f"http://user:{password}@127.0.0.1:{server.port}/mcp")
    refused(seen, server.url(), auth=requests.auth.HTTPBasicAuth("user", "nope-" + password[::-1]))
    assert_nowhere(seen, [password, basic, password[::-1]])


def test_oauth_and_client_credentials_secrets_never_show(stack: Any, seen: Seen) -> None:
    auth = stack.oauth()
    with stack.connect(auth) as client:
        client.call_tool("echo", {"text": "hi"})
        stack.authorization.expire_access_tokens()
        client.call_tool("echo", {"text": "after a refresh"})
        seen += [repr(client), repr(client.transport), repr(auth), repr(auth._grant), repr(auth._grant.token)]
    client_secret = new_secret("cs")
    stack.authorization.add_client("svc", secret=client_secret)
    job = mcpsync.ClientCredentials("svc", client_secret=client_secret)
    with stack.connect(job) as client:
        client.ping()
        seen += [repr(job), repr(client)]
    with pytest.raises(mcpsync.AuthError) as caught:
        stack.connect(mcpsync.ClientCredentials("svc", client_secret=client_secret[::-1]))
    seen.extend(shows(caught.value))
    issued = [s for s in stack.secrets() if len(s) > 8]
    assert len(issued) >= 4
    assert_nowhere(seen, issued + [client_secret, client_secret[::-1]])


def test_stdio_env_values_never_show(seen: Seen) -> None:
    value = new_secret("env")
    argv = server_argv("misbehaving.py", "crash")
    transport = mcpsync.StdioTransport(argv[0], argv[1:], env={"API_KEY": value}, shutdown_timeout=0.5)
    with mcpsync.Client(transport).connect() as client:
        seen += [repr(client), repr(transport)]
        with pytest.raises(TransportClosed) as caught:
            client.call_tool("crash")
        seen.extend(shows(caught.value))
    config = mcpconfig.parse_server("srv", {"command": "x", "env": {"API_KEY": "${SECRET_VAR}"}},
                                         environ={"SECRET_VAR": value})
    seen += [repr(config), repr(transport)]
    assert config.env["API_KEY"] == value
    assert_nowhere(seen, [value])


def test_the_cli_never_prints_a_secret_even_with_debug(http_server: Any, tmp_path: Path) -> None:
    token, env_value, wrong = new_secret("tok"), new_secret("env"), new_secret("wrong")
    server: HostileHTTP = http_server("normal", "--require-header", f"Authorization:Bearer {token}")
    good = server_argv("misbehaving.py", "good")
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {
        "remote": {"type": "http", "url": server.url(), "headers": {"Authorization": "Bearer ${TOKEN}"}},
        "refused": {"type": "http", "url": server.url(), "headers": {"Authorization": "Bearer ${WRONG}"}},
        "local": {"command": good[0], "args": good[1:], "env": {"API_KEY": "${API_KEY}"}},
    }}))
    env: Dict[str, str] = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "MCPSYNC_"))}
    env.update(HOME=str(tmp_path), XDG_CACHE_HOME=str(tmp_path / "cache"), PYTHONPATH=str(ROOT),
               TOKEN=token, WRONG=wrong, API_KEY=env_value)
    outputs: List[str] = []
    for args in (["servers", "--json", "--status"], ["servers", "--status"], ["servers"], ["tools"],
                 ["call", "remote", "echo", '{"text": "hi"}'],
                 ["call", "refused", "echo", "{}"], ["call", "local", "echo", '{"text": "hi"}']):
        for debug in ([], ["--debug"]):
            done = subprocess.run([sys.executable, "-m", "mcpsync", *args, "--config", str(config), *debug],
                                  capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60)
            outputs += [done.stdout, done.stderr]
    assert any("HTTP 401" in text for text in outputs)  # the refused server's failure was shown
    assert any('"state": "connected"' in text for text in outputs)
    assert_nowhere(outputs, [token, env_value, wrong])


def test_a_secret_in_the_url_query_is_cut_from_mcpsync_errors_and_logs(http_server: Any, seen: Seen) -> None:
    key = new_secret("query")
    server: HostileHTTP = http_server("normal")
    http_session(seen, server.url(f"/mcp?api_key={key}"))
    closed = socket.socket()  # bound, never listening: connecting is refused
    closed.bind(("127.0.0.1", 0))
    try:
        with pytest.raises(mcpsync.ConnectError) as caught:
            mcpsync.connect(f"http://127.0.0.1:{closed.getsockname()[1]}/mcp?api_key={key}", timeout=5)
    finally:
        closed.close()
    seen.extend([str(caught.value), repr(caught.value)])  # its chained cause is urllib3's own exception
    # The text says what happened in its own words; urllib3's (which quotes the path and query) is not in it.
    assert "nothing is listening on 127.0.0.1:" in str(caught.value) and "Max retries" not in str(caught.value)
    ours = [t for t in seen.all() if not t.startswith("urllib3")]
    assert_nowhere(ours, [key])
    # The documented exception: urllib3's own DEBUG records quote each request's path with its query.
    assert any(key in t for t in seen.logged if t.startswith("urllib3"))


# -- a whole OAuth session at DEBUG (issue 13) ----------------------------------------------------------


class Browser:
    """A browser for the loopback login: follows the authorization URL (the test server approves at once) and
    is redirected to mcpsync's callback server. It uses http.client, which logs nothing: the DEBUG records
    that are grepped are mcpsync's and the HTTP stack's, as they would be in a real session."""

    def __init__(self) -> None:
        self.threads: List[threading.Thread] = []

    def __call__(self, url: str) -> bool:
        thread = threading.Thread(target=self._visit, args=(url,), name="test-browser")
        self.threads.append(thread)
        thread.start()
        return True

    @staticmethod
    def _visit(url: str) -> None:
        for _ in range(2):  # the authorization endpoint, then its redirect to the callback
            parts = urlsplit(url)
            connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
            try:
                connection.request("GET", parts.path + ("?" + parts.query if parts.query else ""))
                answer = connection.getresponse()
                answer.read()
                url = answer.getheader("Location") or ""
            finally:
                connection.close()
            if not url:
                return

    def join(self) -> None:
        for thread in self.threads:
            thread.join(10)


def test_a_whole_oauth_session_at_debug_shows_no_token_secret_code_or_verifier(stack: Any, seen: Seen,
                                                                             tmp_path: Path, monkeypatch: Any) -> None:
    from mcpsync.auth import _oauth, _tokens

    verifiers: List[str] = []
    monkeypatch.setattr(_oauth, "new_verifier", lambda: verifiers.append(secrets.token_urlsafe(48)) or verifiers[-1])
    stack.authorization.settings.auth_methods = ["client_secret_basic", "client_secret_post"]  # a secret from DCR
    stack.authorization.settings.echo_in_errors = True  # a careless server echoes the refresh token in errors
    stack.gate.settings.tool_scopes = {"add": "admin"}
    browser = Browser()
    store = mcpsync.FileTokenStore(tmp_path / "tokens.json")
    auth = stack.oauth(store=store, login="browser", open_browser=browser)
    try:
        with stack.connect(auth) as client:
            client.call_tool("echo", {"text": "logged in"})                   # login: authorize, redirect, code
            client.call_tool("add", {"a": 1, "b": 2})                          # 403 insufficient_scope: step-up
            stack.authorization.expire_access_tokens()
            client.call_tool("echo", {"text": "refreshed on a 401"})
            later = _tokens.clock() + 3590
            monkeypatch.setattr(_tokens, "clock", lambda: later)
            client.call_tool("echo", {"text": "refreshed before expiry"})
            monkeypatch.setattr(_tokens, "clock", time.time)
            stack.authorization.expire_access_tokens()
            stack.authorization.settings.refresh_failure = 503
            with pytest.raises(MCPSyncError) as caught:                        # transient: the grant is kept
                client.call_tool("echo", {"text": "token endpoint down"})
            seen.extend(shows(caught.value))
            stack.authorization.settings.refresh_failure = None
            client.call_tool("echo", {"text": "refreshed after the outage"})
            stack.authorization.expire_access_tokens()
            stack.authorization.revoke_refresh_tokens()
            client.call_tool("echo", {"text": "a refused refresh, then a new login"})
            seen += [repr(client), repr(client.transport), repr(auth), repr(store), repr(auth._grant),
                     repr(auth._grant.client), repr(auth._grant.token)]
            access_token = auth._grant.token.access_token
    finally:
        browser.join()
    client_secret = new_secret("cs")
    stack.authorization.add_client("app", secret=client_secret, redirect_uris=["http://127.0.0.1:47031/callback"])
    pinned = stack.oauth(client_id="app", client_secret=client_secret, issuer="https://login.example.com",
                         redirect_uri="http://127.0.0.1:47031/callback")
    with pytest.raises(mcpsync.AuthError) as refused_pin:                     # pinned to another issuer
        stack.connect(pinned)
    wrong = stack.oauth(client_id="app", client_secret=client_secret[::-1],
                        redirect_uri="http://127.0.0.1:47031/callback")
    with pytest.raises(mcpsync.AuthError) as refused_secret:                  # the code, then a refused secret
        stack.connect(wrong)
    seen += shows(refused_pin.value) + shows(refused_secret.value) + [repr(pinned), repr(wrong)]
    outputs = _cli_with_token(stack, tmp_path, access_token)
    stack.authorization.expire_access_tokens()
    outputs += _cli_with_token(stack, tmp_path, access_token)                  # now refused with 401
    seen.extend(outputs)
    assert any("HTTP 401" in text for text in outputs) and any('"cli"' in text or "cli" in text for text in outputs)
    assert stack.authorization.count("token", grant_type="refresh_token") >= 4
    assert len(verifiers) >= 3 and browser.threads
    hidden = [s for s in stack.secrets() if len(s) > 8] + verifiers + [client_secret, client_secret[::-1]]
    assert any(s.startswith("secret_") for s in hidden)  # the dynamically registered client's secret is in
    assert any(s.startswith("code_") for s in hidden) and any(s.startswith("rt_") for s in hidden)
    assert any(t.startswith("urllib3") and " DEBUG " in t for t in seen.logged)
    assert_nowhere(seen, hidden)


def _cli_with_token(stack: Any, tmp_path: Path, token: str) -> List[str]:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {
        "remote": {"type": "http", "url": stack.mcp_url, "headers": {"Authorization": "Bearer ${TOKEN}"}}}}))
    env: Dict[str, str] = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "MCPSYNC_"))}
    env.update(HOME=str(tmp_path), XDG_CACHE_HOME=str(tmp_path / "cache"), PYTHONPATH=str(ROOT), TOKEN=token)
    outputs: List[str] = []
    for debug in ([], ["--debug"]):
        done = subprocess.run([sys.executable, "-m", "mcpsync", "call", "remote", "echo", '{"text": "cli"}',
                               "--config", str(config), *debug],
                              capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60)
        outputs += [done.stdout, done.stderr]
    return outputs
