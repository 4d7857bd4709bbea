"""The 2026-07-28 changelog, point by point, against scripted peers (issue 14, item 7).

The stdio peer is ``tests/servers/era_scripted.py``; the HTTP peer ``tests/servers/http_era.py``.
Points already covered elsewhere are named in the report of the audit, with their tests.
"""

from __future__ import annotations

import json
from typing import Any, List

import pytest

import mcpsync
from mcpsync import ElicitResult, ProtocolError, StreamBroken

from .auth_fixtures import _auth_servers, stack  # noqa: F401  (fixtures)
from .conftest import server_argv

MODERN = "2026-07-28"


# -- no SSE resumption in 2026: a broken stream means the request is sent again, with a new id -----------


def test_a_broken_modern_stream_is_sent_again_with_a_new_id_not_resumed(era_http):
    server = era_http("modern")
    with mcpsync.connect(server.url()) as client:
        assert client.protocol_version == MODERN
        assert client.call_tool("flaky", timeout=10).text == "answered on try 2"
    calls = server.calls("tools/call")
    assert len(calls) == 2 and calls[0].body["id"] != calls[1].body["id"]
    assert calls[0].body["params"] == calls[1].body["params"]  # the same request, _meta and all
    assert "last-event-id" not in calls[1].headers
    assert not [r for r in server.calls() if r.method == "GET"]  # the stream had an id: still no resume


def test_a_modern_stream_that_breaks_again_raises_stream_broken_after_two_requests(era_http):
    server = era_http("modern")
    with mcpsync.connect(server.url()) as client:
        with pytest.raises(StreamBroken, match="broke twice") as raised:
            client.call_tool("broken", timeout=10)
        assert isinstance(raised.value, ProtocolError)
        assert client.call_tool("echo", {"text": "goes on"}).text == "goes on"
    calls = server.calls("tools/call")
    assert [c.body["params"]["name"] for c in calls] == ["broken", "broken", "echo"]
    assert len({c.body["id"] for c in calls}) == 3
    assert not [r for r in server.calls() if r.method == "GET"]


# -- URL-mode elicitation: correlated by requestState, with no elicitationId -----------------------------


def test_url_mode_elicitation_in_2026_is_answered_and_the_retry_carries_the_request_state():
    asked: List[Any] = []

    def elicit(params):
        asked.append((params.mode, params.url, params.elicitation_id, params.message))
        return ElicitResult.accept()

    argv = server_argv("era_scripted.py", "modern")
    with mcpsync.connect(argv, timeout=10, elicitation_handler=elicit, elicitation_modes=("form", "url")) as client:
        result = json.loads(client.call_tool("url_login").text)
    assert asked == [("url", "https://login.example.com/start?x=1", None, "Sign in")]
    assert result == {"state": "login-7", "answers": {"login": {"action": "accept"}}}


# -- application_type in dynamic client registration ---------------------------------------------------------


def test_a_web_application_registers_as_web_and_a_local_one_as_native(stack):
    redirect = "https://app.example.com/oauth/callback"
    with stack.connect(stack.oauth(redirect_uri=redirect)) as client:
        assert client.call_tool("echo", {"text": "hi"}).text == "hi"
    [registration] = stack.authorization.find("register")
    assert registration["params"]["application_type"] == "web"
    assert registration["params"]["redirect_uris"] == [redirect]


@pytest.mark.parametrize("uris, kind", [
    (["http://127.0.0.1:4711/callback"], "native"),
    (["https://localhost:8443/cb"], "native"),
    (["https://dev.localhost/cb"], "native"),
    (["https://[::1]:8443/cb"], "native"),
    (["com.example.app:/oauth2redirect"], "native"),
    (["https://app.example.com/cb"], "web"),
    (["https://app.example.com/cb", "http://127.0.0.1/cb"], "native"),  # a local one among them
    ([], "native"),
])
def test_the_application_type_follows_the_redirect_uris(uris, kind):
    from mcpsync.auth._registration import application_type

    assert application_type(uris) == kind


# -- Mcp-Name and Mcp-Param-* on every round of a multi round-trip call --------------------------------------


def test_a_multi_round_trip_retry_over_http_carries_the_routing_headers_again(era_http):
    server = era_http("modern")
    with mcpsync.connect(server.url(), elicitation_handler=lambda params: ElicitResult.accept({"ok": True})) \
            as client:
        result = client.call_tool("ask_route", {"region": "eu-west-1"})
    assert result.text == 'routed to eu-west-1 after {"q": {"action": "accept", "content": {"ok": true}}}'
    rounds = server.calls("tools/call")
    assert len(rounds) == 2 and rounds[0].body["id"] != rounds[1].body["id"]
    for sent in rounds:
        assert (sent.headers["mcp-method"], sent.headers["mcp-name"], sent.headers["mcp-param-region"]) == (
            "tools/call", "ask_route", "eu-west-1")
        assert sent.headers["mcp-protocol-version"] == sent.body["params"]["_meta"][
            "io.modelcontextprotocol/protocolVersion"] == MODERN
    assert rounds[1].body["params"]["requestState"] == "r1"


# -- serverInfo in a result's _meta ----------------------------------------------------------------------------


def test_a_modern_server_without_server_discover_is_known_by_the_server_info_its_results_carry(era_http):
    server = era_http("modern-404")
    with mcpsync.connect(server.url()) as client:
        assert client.server_info is None and client.server_capabilities == {}
        assert client.call_tool("echo", {"text": "signed"}).text == "signed"
        assert (client.server_info.name, client.server_info.version) == ("era-404", "4")


def test_the_request_sent_again_gets_only_what_is_left_of_the_calls_timeout(era_http):
    server = era_http("modern")
    with mcpsync.connect(server.url()) as client:
        with pytest.raises(mcpsync.RequestTimeout) as raised:
            client.call_tool("cut_late", timeout=1.5)
        assert server.stream_closed.wait(10)  # the second stream was closed: that cancels it
    # The first stream lasted at least 0.3 s, so the second request's budget is under 1.2 s.
    assert 0 < raised.value.timeout <= 1.2
    assert len(server.calls("tools/call")) == 2
