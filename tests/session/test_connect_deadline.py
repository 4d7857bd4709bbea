"""``connect(timeout=)`` bounds the whole connect: the era probe, the handshake, the legacy SSE endpoint wait.

One :class:`~mcpsync._rpc.options.Deadline` travels through the connect; a person's login
while opening is not counted (it has ``login_timeout``). The tests tell the bound by the
error it gives (a connect timeout, naming what was awaited), never by the wall clock.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

import mcpsync
from mcpsync.transports import SSETransport, StreamableHTTPTransport

from ..conftest import server_argv
from ..http_fixtures import _sdk_servers, make_sdk_fixture, mis  # noqa: F401 (fixtures)

sdk = make_sdk_fixture("json-stateful")


def test_a_silent_stdio_server_times_out_at_the_connect_timeout_probe_included() -> None:
    with pytest.raises(mcpsync.RequestTimeout) as caught:
        mcpsync.connect(server_argv("unhelpful.py", "banner"), timeout=0.5, probe_timeout=3.0)
    # One budget for the probe and the handshake: the error is the connect's own 0.5 s.
    assert "after 500ms" in str(caught.value)
    assert caught.value.timeout == 0.5


def test_a_legacy_sse_server_without_an_endpoint_event_times_out_at_the_connect_timeout(mis: Any) -> None:
    server = mis(legacy=True, endpoint=None)
    transport = SSETransport(server.url("/mcp"), endpoint_timeout=60)
    with pytest.raises(mcpsync.RequestTimeout, match="sent no endpoint event in the .*s the connect had left"):
        mcpsync.Client(transport).connect(timeout=0.5)
    assert not transport.connected


def test_the_fallback_to_legacy_sse_is_bounded_by_the_same_deadline(mis: Any) -> None:
    server = mis(legacy=True, endpoint=None)
    # Streamable HTTP is refused (405), the legacy transport waits for its endpoint: one deadline for both.
    with pytest.raises(mcpsync.RequestTimeout, match="no endpoint event"):
        mcpsync.connect(server.url("/mcp"), timeout=0.5)


def test_a_shorter_endpoint_timeout_still_wins(mis: Any) -> None:
    server = mis(legacy=True, endpoint=None)
    with pytest.raises(mcpsync.ConnectError, match="No endpoint event .* within 0.2s"):
        mcpsync.Client(SSETransport(server.url("/mcp"), endpoint_timeout=0.2)).connect(timeout=30)


class SlowLogin:
    """An auth object whose ``prepare`` is a person taking their time to log in (longer than the connect timeout)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.prepared = 0

    def prepare(self, url: str) -> None:
        threading.Event().wait(self.seconds)  # the person, not a synchronisation
        self.prepared += 1

    def __call__(self, request: Any) -> Any:  # a requests auth object: nothing to add
        return request


def test_a_login_while_opening_is_not_counted_against_the_connect_timeout(sdk: Any) -> None:
    login = SlowLogin(0.6)
    transport = StreamableHTTPTransport(sdk.url, auth=login)
    client = mcpsync.Client(transport)
    try:
        client.connect(timeout=0.3)
        assert client.call_tool("echo", {"text": "in"}).text == "in"
    finally:
        client.close()
    assert login.prepared == 1
    assert transport.login_seconds >= 0.6
