"""The egress gate (issue 20): every HTTP request mcpsync sends is checked on the URL about to go out.

The hostile pairs are two stdlib servers on 127.0.0.1 (tests/servers/http_misbehaving.py): the one
the client is pointed at answers with a redirect whose ``Location`` is crafted so that a check made
on a re-parse of the header and the URL requests actually sends disagree (a leading C0 control or
space, which requests strips and a requoting check turns into ``%01``, a relative path), or holds a
backslash or userinfo. The other server records what it gets, and must get nothing: no configured
header, no session id, no JSON-RPC body.
"""

from __future__ import annotations

import pickle
from typing import Any, List

import pytest

import mcpsync
from mcpsync import SSETransport, StreamableHTTPTransport
from mcpsync.exceptions import CrossOriginRedirect, EgressRefused, TransportError

from ..http_fixtures import mis  # noqa: F401  (fixture)

API_KEY = "key-SECRET-9a8b"
TOKEN = "tok-SECRET-1f2e"

#: Location prefixes requests strips (C0 controls and space) or that hide the target (tab, backslash, userinfo).
HOSTILE_LOCATIONS = {
    "soh": "\x01{url}",
    "vt": "\x0b{url}",
    "ff": "\x0c{url}",
    "us": "\x1f{url}",
    "space": " {url}",
    "tab": "\t{url}",
    "backslash": "http://127.0.0.1:{front}\\@127.0.0.1:{port}/mcp",
    "backslash-path": "\\\\127.0.0.1:{port}/mcp",
    "userinfo": "http://user@127.0.0.1:{port}/mcp",
    "userinfo-same-host": "http://127.0.0.1:{front}@127.0.0.1:{port}/mcp",
}


def hostile_location(kind: str, front: Any, collector: Any) -> str:
    return HOSTILE_LOCATIONS[kind].format(url=collector.url(), port=collector.port, front=front.port)


def leaked(records: List[Any]) -> List[str]:
    found = []
    for record in records:
        text = f"{record.headers} {record.body}"
        found += [secret for secret in (API_KEY, TOKEN, "sess-", "jsonrpc", "initialize", "ping") if secret in text]
    return found


@pytest.mark.parametrize("status", [307, 308])
@pytest.mark.parametrize("kind", sorted(HOSTILE_LOCATIONS))
def test_a_hostile_location_on_a_post_reaches_no_other_server(mis, kind, status):
    collector = mis()
    front = mis(session=True, redirect_status=status)
    front.redirect_to = hostile_location(kind, front, collector)
    transport = StreamableHTTPTransport(front.url(), headers={"X-Api-Key": API_KEY}, token=TOKEN, timeout=10)
    with pytest.raises(EgressRefused) as info:
        mcpsync.Client(transport).connect()
    assert collector.records == [], leaked(collector.records)
    error = info.value
    assert isinstance(error, TransportError)
    assert API_KEY not in str(error) and TOKEN not in str(error)
    assert not any(ord(ch) < 0x20 for ch in str(error))  # the header is shown safely
    assert front.records


def test_a_hostile_location_after_the_session_started_leaks_no_session_id(mis):
    collector = mis()
    front = mis(session=True)
    with mcpsync.Client(StreamableHTTPTransport(front.url(), headers={"X-Api-Key": API_KEY}, timeout=10)) as client:
        assert any(r.headers.get("mcp-session-id") for r in front.records) or front.sessions
        front.redirect_to = "\x01" + collector.url()
        with pytest.raises(EgressRefused):
            client.ping()
    assert collector.records == [], leaked(collector.records)


@pytest.mark.parametrize("kind", ["soh", "us", "backslash", "userinfo"])
def test_a_hostile_location_on_the_get_listener_and_delete_reaches_nothing(mis, kind):
    collector = mis()
    front = mis(session=True, get="stream", redirect_methods=("GET", "DELETE"))
    front.redirect_to = hostile_location(kind, front, collector)
    with mcpsync.Client(StreamableHTTPTransport(front.url(), headers={"X-Api-Key": API_KEY}, token=TOKEN,
                                                listener_backoff=(5.0, 5.0))) as client:
        client.on_notification("*", lambda params: None)
        front.wait_for(lambda r: r.method == "GET")
        client.ping()
    front.wait_for(lambda r: r.method == "DELETE")
    assert collector.records == [], leaked(collector.records)


@pytest.mark.parametrize("kind", ["soh", "ff", "space", "backslash", "userinfo"])
def test_a_hostile_location_on_the_legacy_get_and_posts_reaches_nothing(mis, kind):
    collector = mis(legacy=True)
    front = mis(legacy=True, redirect_methods=("GET",))
    front.redirect_to = hostile_location(kind, front, collector).replace("/mcp", "/sse")
    transport = SSETransport(front.url("/sse"), headers={"X-Api-Key": API_KEY}, token=TOKEN, endpoint_timeout=5)
    with pytest.raises(EgressRefused):
        mcpsync.Client(transport).connect()
    assert collector.records == [], leaked(collector.records)

    front2 = mis(legacy=True, redirect_methods=("POST",))
    front2.redirect_to = hostile_location(kind, front2, collector)
    with pytest.raises(EgressRefused):
        mcpsync.Client(SSETransport(front2.url("/sse"), headers={"X-Api-Key": API_KEY}, timeout=10)).connect()
    assert collector.records == [], leaked(collector.records)


@pytest.mark.parametrize("kind", ["soh", "vt", "tab", "backslash", "userinfo"])
def test_call_mcp_follows_no_hostile_location(mis, kind):
    collector = mis()
    front = mis()
    front.redirect_to = hostile_location(kind, front, collector)
    with pytest.raises(EgressRefused):
        mcpsync.call_mcp(front.url(), "tools/list", headers={"X-Api-Key": API_KEY}, timeout=10)
    assert collector.records == [], leaked(collector.records)


def test_a_plain_redirect_to_another_origin_is_still_a_cross_origin_redirect_and_an_egress_refusal(mis):
    collector = mis()
    front = mis(redirect_to=collector.url(), redirect_status=308)
    with pytest.raises(CrossOriginRedirect) as info:
        mcpsync.Client(StreamableHTTPTransport(front.url(), headers={"X-Api-Key": API_KEY}, timeout=10)).connect()
    assert isinstance(info.value, EgressRefused) and info.value.status_code == 308
    assert info.value.location == collector.url()
    assert collector.records == []


def test_the_error_pickles_and_shows_the_url_safely():
    error = EgressRefused("refused", url="http://x.example/p", rule="location")
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is EgressRefused and copy.url == "http://x.example/p" and copy.rule == "location"
    assert str(copy) == "refused"


@pytest.mark.parametrize("url", ["http://169.254.169.254/mcp", "http://[fd00:ec2::254]/mcp",
                                 "http://100.100.100.200:8080/mcp", "http://[::ffff:169.254.169.254]/mcp",
                                 "http://2852039166/mcp"])
def test_a_configured_mcp_url_on_a_cloud_metadata_address_is_never_sent_to(url):
    with pytest.raises(EgressRefused) as info:
        mcpsync.call_mcp(url, "tools/list", timeout=2)
    assert info.value.rule == "metadata"
    with pytest.raises(EgressRefused):
        mcpsync.connect(url, timeout=2)


def test_a_redirect_to_a_metadata_address_on_the_same_origin_rule_is_refused(mis):
    front = mis()
    front.redirect_to = "http://169.254.169.254/latest/meta-data/iam/"
    with pytest.raises(EgressRefused):
        mcpsync.call_mcp(front.url(), "tools/list", timeout=5)


def test_the_gate_remembers_what_it_allowed_and_refuses_another_origin():
    from mcpsync.transports._egress import OriginGate

    gate = OriginGate("http://127.0.0.1:9/mcp")
    gate.check("POST", "http://127.0.0.1:9/mcp")
    assert "http://127.0.0.1:9/mcp" in gate._allowed
    with pytest.raises(EgressRefused) as info:
        gate.check("POST", "http://127.0.0.1:10/mcp")
    assert info.value.rule == "origin" and "127.0.0.1:10" in str(info.value)
