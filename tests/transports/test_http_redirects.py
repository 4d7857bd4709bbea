"""Redirects on MCP requests: followed only within one origin, so nothing of a request reaches another.

Each hostile pair is two stdlib servers on 127.0.0.1: the one the client is
pointed at answers with a redirect to the other, which records everything it
receives. The other origin must receive nothing at all: no token, no config
header, no session id, no request body.
"""

from __future__ import annotations

import threading
import time
from typing import Any, List

import pytest
import requests

import mcpsync
from mcpsync import HTTPStatusError, SSETransport, StreamableHTTPTransport, TransportError
from mcpsync.auth._bearer import Grant
from mcpsync.auth._registration import ClientIdentity
from mcpsync.auth._tokens import Token
from mcpsync.exceptions import CrossOriginRedirect
from mcpsync.transports._http_session import new_session

from ..http_fixtures import mis  # noqa: F401  (fixture)

TOKEN = "tok-SECRET-1f2e"
API_KEY = "key-SECRET-9a8b"


def seeded_auth(server_url: str) -> mcpsync.ClientCredentials:
    """A ClientCredentials already holding a valid token for ``server_url`` (no authorization server needed)."""
    auth = mcpsync.ClientCredentials("svc", client_secret="client-SECRET", server_url=server_url)
    client = ClientIdentity("svc", "client-SECRET", "client_secret_basic", (), "static")
    grant = Grant("http://127.0.0.1:9/issuer", str(auth.server_url), "http://127.0.0.1:9/token", client,
                  Token(TOKEN, expires_at=time.time() + 3600))
    auth._keep(grant)
    return auth


def leaked(records: List[Any]) -> List[str]:
    """Every secret of the test found in what a server received."""
    found = []
    for record in records:
        text = f"{record.headers} {record.body}"
        found += [secret for secret in (TOKEN, API_KEY, "sess-") if secret in text]
    return found


def origins_named(error: BaseException, *servers: Any) -> bool:
    return all(f"http://127.0.0.1:{server.port}" in str(error) for server in servers)


# -- Streamable HTTP -----------------------------------------------------------------------------


@pytest.mark.parametrize("status", [307, 308])
@pytest.mark.parametrize("credential", ["token", "auth"])
def test_a_post_redirected_to_another_origin_is_refused_and_sends_it_nothing(mis, status, credential):
    collector = mis(status=(401, "", {"WWW-Authenticate": 'Bearer error="invalid_token"'}))
    front = mis(redirect_to=collector.url(), redirect_status=status)
    options: Any = {"token": TOKEN} if credential == "token" else {"auth": seeded_auth(front.url())}
    transport = StreamableHTTPTransport(front.url(), headers={"X-Api-Key": API_KEY}, timeout=10, **options)
    with pytest.raises(CrossOriginRedirect) as info:
        mcpsync.Client(transport).connect()
    error = info.value
    assert isinstance(error, HTTPStatusError) and error.status_code == status
    assert origins_named(error, front, collector) and "put " in str(error) and "configuration" in str(error)
    assert error.location == collector.url()
    assert API_KEY not in str(error) and TOKEN not in str(error)
    assert front.records and collector.records == []



@pytest.mark.parametrize("prefix", ["\x01", "\x0b", "\x0c", "\x1f"])
@pytest.mark.parametrize("credential", ["token", "auth"])
def test_a_location_starting_with_a_control_character_sends_nothing_to_the_other_origin(mis, prefix, credential):
    """Issue 20, item 1: requests strips the leading control and goes to the other origin; a check on a
    requoted copy saw a relative path (``%01http://...``). The gate refuses the Location outright."""
    from mcpsync.exceptions import EgressRefused

    collector = mis()
    front = mis(session=True, redirect_status=308)
    front.redirect_to = prefix + collector.url()
    options: Any = {"token": TOKEN} if credential == "token" else {"auth": seeded_auth(front.url())}
    transport = StreamableHTTPTransport(front.url(), headers={"X-Api-Key": API_KEY}, timeout=10, **options)
    with pytest.raises(EgressRefused) as info:
        mcpsync.Client(transport).connect()
    assert info.value.rule == "reference" and "\\x" in str(info.value)  # the control is shown escaped
    assert collector.records == [], leaked(collector.records)


def test_a_redirect_away_on_the_era_probe_is_raised_not_taken_for_a_legacy_server(mis):
    collector = mis()
    front = mis(redirect_to=collector.url(), redirect_status=307)
    with pytest.raises(CrossOriginRedirect):
        mcpsync.connect(front.url(), timeout=10)
    assert [record.body.get("method") for record in front.records] == ["server/discover"]
    assert collector.records == []

def test_a_same_origin_redirect_is_still_followed(mis):
    server = mis()
    server.redirect_to = server.url("/moved")
    with mcpsync.Client(StreamableHTTPTransport(server.url(), headers={"X-Api-Key": API_KEY})) as client:
        client.ping()
    moved = [r for r in server.records if r.path == "/moved"]
    assert moved and all(r.headers["x-api-key"] == API_KEY for r in moved)


def test_a_same_origin_redirect_with_a_huge_body_is_not_read_whole(mis):
    server = mis(redirect_body="endless")
    server.redirect_to = server.url("/moved")
    with pytest.raises(HTTPStatusError) as info:
        mcpsync.Client(StreamableHTTPTransport(server.url(), timeout=3)).connect()
    assert info.value.status_code == 307 and not isinstance(info.value, CrossOriginRedirect)
    assert str(info.value).startswith(f"A redirect to {server.url('/moved')} was not followed")
    assert not [r for r in server.records if r.path == "/moved"]


def test_a_same_origin_redirect_with_a_small_body_is_followed(mis):
    server = mis(redirect_body=b"moved: see /moved" * 100)
    server.redirect_to = server.url("/moved")
    with mcpsync.Client(StreamableHTTPTransport(server.url(), timeout=20)) as client:
        client.ping()


def test_the_get_listener_and_the_delete_redirected_away_reach_nothing(mis):
    collector = mis()
    server = mis(session=True, get="stream", redirect_to=collector.url(), redirect_methods=("GET", "DELETE"))
    errors: List[BaseException] = []
    reported = threading.Event()

    def on_error(exc: BaseException) -> None:
        errors.append(exc)
        reported.set()

    transport = StreamableHTTPTransport(server.url(), headers={"X-Api-Key": API_KEY}, token=TOKEN,
                                        listener_backoff=(5.0, 5.0))
    transport.on_error = on_error
    with mcpsync.Client(transport) as client:
        client.on_notification("*", lambda params: None)
        assert reported.wait(10)
        client.ping()
    server.wait_for(lambda r: r.method == "DELETE")
    assert isinstance(errors[0], CrossOriginRedirect) and origins_named(errors[0], server, collector)
    assert collector.records == []


# -- legacy HTTP+SSE -----------------------------------------------------------------------------


def test_the_legacy_sse_get_redirected_to_another_origin_is_refused(mis):
    collector = mis(legacy=True)
    front = mis(legacy=True, redirect_to=collector.url("/sse"), redirect_methods=("GET",))
    transport = SSETransport(front.url("/sse"), headers={"X-Api-Key": API_KEY}, token=TOKEN, endpoint_timeout=5)
    with pytest.raises(CrossOriginRedirect) as info:
        mcpsync.Client(transport).connect()
    assert origins_named(info.value, front, collector)
    assert collector.records == []


def test_legacy_message_posts_redirected_to_another_origin_are_refused(mis):
    collector = mis(legacy=True)
    front = mis(legacy=True, redirect_to=collector.url("/messages?sid=1"), redirect_methods=("POST",))
    transport = SSETransport(front.url("/sse"), headers={"X-Api-Key": API_KEY}, token=TOKEN, timeout=10)
    with pytest.raises(CrossOriginRedirect) as info:
        mcpsync.Client(transport).connect()
    assert origins_named(info.value, front, collector)
    assert [r.method for r in front.records] == ["GET", "POST"]
    assert collector.records == []


# -- the stateless helper --------------------------------------------------------------------------


def test_call_mcp_refuses_a_redirect_to_another_origin(mis):
    collector = mis()
    front = mis(redirect_to=collector.url())
    with pytest.raises(CrossOriginRedirect):
        mcpsync.call_mcp(front.url(), "tools/list", headers={"X-Api-Key": API_KEY}, timeout=10)
    assert collector.records == []


# -- the auth object on someone else's session ------------------------------------------------------


def test_the_auth_hook_never_answers_a_401_from_another_origin(mis):
    """requests' own Session follows the redirect (dropping Authorization); the 401 of the other
    origin must not make the auth object re-send the request there with the token."""
    collector = mis(status=(401, "", {"WWW-Authenticate": "Bearer"}))
    front = mis(redirect_to=collector.url())
    auth = seeded_auth(front.url())
    with requests.Session() as session:
        response = session.post(front.url(), json={"jsonrpc": "2.0", "id": 1, "method": "ping"}, auth=auth,
                                timeout=10)
        response.close()
    assert response.status_code == 401
    assert front.records[0].headers["authorization"] == f"Bearer {TOKEN}"
    assert collector.records and TOKEN not in str([r.headers for r in collector.records])


# -- which redirects count as another origin ------------------------------------------------------


@pytest.mark.parametrize("location,followed", [
    ("/elsewhere", True),
    ("https://mcp.example/v2", True),
    ("https://mcp.example:443/v2", True),
    ("//mcp.example/v2", True),
    ("HTTPS://MCP.example/v2", True),
    ("http://mcp.example/v2", False),  # https -> http
    ("https://mcp.example:8443/v2", False),
    ("https://other.example/v2", False),
    ("//other.example/v2", False),
    ("https://mcp.example:99999/v2", False),
    ("https://mcp.example.evil/v2", False),
    ("https://mcp.example\\@evil.example/v2", False),
    ("\x01https://other.example/v2", False),
    ("\x0bhttps://other.example/v2", False),
    ("\x1f//other.example/v2", False),
    ("https://user@mcp.example/v2", False),
])
def test_only_a_hop_on_the_same_scheme_host_and_port_passes_the_gate(location, followed):
    """The hop as requests builds it (its own redirect code, on a prepared request) meets the gate."""
    from mcpsync.exceptions import EgressRefused
    from mcpsync.transports._egress import OriginGate, check_reference

    gate = OriginGate("https://mcp.example/mcp")
    try:
        hop = check_reference("https://mcp.example/mcp", location, "the redirect to")
        prepared = requests.Request("POST", hop).prepare()
        gate.check("POST", str(prepared.url))
    except (EgressRefused, requests.exceptions.RequestException):
        allowed = False
    else:
        allowed = True
    assert allowed is followed


def test_an_http_answer_without_redirects_costs_no_more_than_before():
    from mcpsync.transports._egress import AnyOrigin

    with new_session(gate=AnyOrigin()) as session:
        answer = requests.Response()
        answer.status_code = 200
        answer.url = "https://mcp.example/mcp"
        assert session.get_redirect_target(answer) is None


def test_the_error_survives_pickling():
    import pickle

    error = CrossOriginRedirect("moved", status_code=308, headers={"Location": "x"}, body="", location="https://b/")
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is CrossOriginRedirect and copy.location == "https://b/" and copy.status_code == 308
    assert isinstance(copy, TransportError)
