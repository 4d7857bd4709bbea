"""Streamable HTTP against the project's own misbehaving stdlib servers: every fault ends clearly."""

from __future__ import annotations

import threading

import pytest

import mcpsync
from mcpsync import (
    CancelToken, ConnectError, HTTPStatusError, ProtocolError, RequestCancelled, RequestTimeout, SessionExpired,
    StreamableHTTPTransport, TransportClosed,
)

from ..http_fixtures import mis  # noqa: F401  (fixture)


def client_for(server, **options):
    return mcpsync.Client(StreamableHTTPTransport(server.url(), **options))


def test_every_post_carries_the_required_headers_and_the_session_after_initialize(mis):
    server = mis(session=True, response="sse")
    with client_for(server, headers={"X-Team": "blue", "Accept": "application/json, text/event-stream"}) as client:
        assert client.call_tool("echo", {"text": "hi"}).text == "hi"
        assert client.transport.session_id == "sess-1"
    init, initialized, call = (server.calls(m)[0] for m in ("initialize", "notifications/initialized", "tools/call"))
    for rec in (init, initialized, call):
        assert rec.headers["content-type"] == "application/json"
        assert rec.headers["accept"] == "application/json, text/event-stream"
        assert rec.headers["x-team"] == "blue"
    assert "mcp-session-id" not in init.headers and "mcp-protocol-version" not in init.headers
    for rec in (initialized, call):
        assert rec.headers["mcp-session-id"] == "sess-1"
        assert rec.headers["mcp-protocol-version"] == "2025-11-25"
    delete = server.wait_for(lambda r: r.method == "DELETE")[0]
    assert delete.headers["mcp-session-id"] == "sess-1" and delete.headers["mcp-protocol-version"] == "2025-11-25"


def test_a_bearer_token_is_sent_as_authorization(mis):
    server = mis()
    with client_for(server, token="s3cret") as client:
        client.ping()
    assert all(r.headers["authorization"] == "Bearer s3cret" for r in server.records if r.method == "POST")


@pytest.mark.parametrize("status,body", [(500, "internal failure: db down"), (502, "<html>Bad Gateway</html>")])
def test_5xx_raises_http_status_error_with_status_and_body(mis, status, body):
    server = mis(status=(status, body, {}))
    with pytest.raises(HTTPStatusError) as info:
        mcpsync.connect(server.url())
    assert info.value.status_code == status and info.value.body == body
    # An HTML page is summarised, never quoted: here by its text, as it has no title.
    shown = "an HTML page saying 'Bad Gateway'" if body.startswith("<html>") else body
    assert str(info.value) == f"HTTP {status}: {shown}"
    assert not [r for r in server.records if r.method == "GET"], "5xx must not trigger the SSE fallback"


def test_401_names_the_auth_hints_and_never_falls_back(mis):
    hints = {"WWW-Authenticate": 'Bearer resource_metadata="https://auth.example/.well-known/x"',
             "Mcp-Auth-Server": "https://auth.example"}
    server = mis(status=(401, "login required", hints))
    with pytest.raises(HTTPStatusError) as info:
        mcpsync.connect(server.url())
    assert info.value.status_code == 401
    assert str(info.value).startswith("HTTP 401: login required")
    assert 'WWW-Authenticate: Bearer resource_metadata="https://auth.example/.well-known/x"' in str(info.value)
    assert "Mcp-Auth-Server: https://auth.example" in str(info.value)
    assert info.value.headers["WWW-Authenticate"].startswith("Bearer")
    assert [r.method for r in server.records] == ["POST"], "401 must not trigger the SSE fallback"


def test_404_with_a_session_reinitializes_restores_state_and_retries_once(mis, logs):
    server = mis(session=True, get="stream")
    client = client_for(server)
    got = []
    client.on_notification("notifications/message", got.append)
    with client:
        transport = client.transport
        client.subscribe_resource("demo://a")
        client.set_logging_level("debug")
        server.wait_for(lambda r: r.method == "GET" and r.headers.get("mcp-session-id") == "sess-1")
        client.call_tool("expire")  # the server forgets sess-1 after answering
        assert client.call_tool("echo", {"text": "again"}).text == "again"
        assert transport.session_id == "sess-2"
        server.wait_for(lambda r: r.method == "GET" and r.headers.get("mcp-session-id") == "sess-2")
    inits = server.calls("initialize")
    assert len(inits) == 2
    assert "mcp-session-id" not in inits[1].headers and "mcp-protocol-version" not in inits[1].headers
    echoes = [r for r in server.calls("tools/call") if r.body["params"]["name"] == "echo"]
    assert [r.headers["mcp-session-id"] for r in echoes] == ["sess-1", "sess-2"]  # failed once, retried once
    assert [r.headers["mcp-session-id"] for r in server.calls("resources/subscribe")] == ["sess-1", "sess-2"]
    assert [r.body["params"]["level"] for r in server.calls("logging/setLevel")] == ["debug", "debug"]
    assert len(server.calls("notifications/initialized")) == 2


def test_404_on_a_fresh_session_is_retried_only_once(mis):
    server = mis(session=True)
    with client_for(server) as client:
        server.reject_all_sessions = True
        with pytest.raises(SessionExpired) as info:
            client.ping()
        assert info.value.status_code == 404 and str(info.value).startswith("HTTP 404")
        assert isinstance(info.value, HTTPStatusError)
    # one new session, and no loop: the renewal itself was refused, so nothing more was sent
    assert len(server.calls("initialize")) == 2
    assert len(server.calls("ping")) == 1


def test_a_stream_cut_mid_event_fails_the_request_and_the_client_goes_on(mis):
    server = mis(response="sse")
    with client_for(server) as client:
        with pytest.raises(ProtocolError, match=r"No response received for request ID \d+"):
            client.call_tool("cut", timeout=10)
        assert client.call_tool("echo", {"text": "still here"}).text == "still here"


def test_a_stream_closed_after_priming_resumes_with_last_event_id_after_retry(mis):
    server = mis(response="sse")
    with client_for(server) as client:
        assert client.call_tool("resume", {"retry_ms": 400}, timeout=10).text == "resumed"
    post = [r for r in server.calls("tools/call")]
    assert len(post) == 1, "the request must never be POSTed twice"
    get = server.wait_for(lambda r: r.method == "GET")[0]
    assert get.headers["last-event-id"] == f"{post[0].body['id']}-0"
    assert get.headers["accept"] == "text/event-stream"
    waited = get.time - post[0].time
    assert 0.4 <= waited < 0.8, f"reconnected after {waited:.3f}s, retry was 0.4s"


def test_resumption_polls_until_the_answer_comes(mis):
    server = mis(response="sse")
    with client_for(server) as client:
        assert client.call_tool("resume", {"retry_ms": 100, "polls": 3}, timeout=10).text == "resumed"
    gets = [r for r in server.records if r.method == "GET"]
    rid = server.calls("tools/call")[0].body["id"]
    assert [g.headers["last-event-id"] for g in gets] == [f"{rid}-0", f"{rid}-1", f"{rid}-2"]
    assert len(server.calls("tools/call")) == 1


def test_no_response_ever_times_out_at_once_and_tells_the_server(mis):
    server = mis()
    with client_for(server) as client:
        with pytest.raises(RequestTimeout, match=r"^Request timeout after 300ms: MCP server '\S+' sent no answer to 'tools/call'$"):
            client.call_tool("silent", timeout=0.3)
        cancelled = server.wait_for(lambda r: r.rpc_method == "notifications/cancelled")[0]
        assert cancelled.body["params"]["requestId"] == server.calls("tools/call")[0].body["id"]
        assert client.call_tool("echo", {"text": "ok"}).text == "ok"


def test_a_slow_drip_hits_the_sse_response_timeout(mis):
    server = mis(response="sse")
    with client_for(server) as client:
        with pytest.raises(RequestTimeout, match=r"^SSE response timeout after 400ms: MCP server '\S+' sent no answer to 'tools/call'$"):
            client.call_tool("drip", timeout=0.4)
        client.ping()


def test_a_cancel_returns_at_once_as_request_cancelled(mis):
    server = mis()
    token = CancelToken()
    with client_for(server) as client:
        outcome = []

        def call():
            try:
                client.call_tool("silent", cancel=token, timeout=30)
            except BaseException as exc:
                outcome.append(exc)

        thread = threading.Thread(target=call)
        thread.start()
        server.wait_for(lambda r: r.rpc_method == "tools/call")
        token.cancel("user hit stop")
        thread.join(30)  # the call's own timeout: a cancel that did not end it would end in RequestTimeout
        assert not thread.is_alive()
        assert isinstance(outcome[0], RequestCancelled) and outcome[0].reason == "user hit stop"
        cancelled = server.wait_for(lambda r: r.rpc_method == "notifications/cancelled")[0]
        assert cancelled.body["params"]["reason"] == "user hit stop"


@pytest.mark.parametrize("tool,what", [("badjson", "Malformed JSON in the response to request"),
                                       ("badsse", "Malformed SSE data in the response to request")])
def test_malformed_bodies_fail_that_request_with_a_parse_error(mis, tool, what):
    server = mis(response="sse" if tool == "badsse" else "json")
    with client_for(server) as client:
        with pytest.raises(ProtocolError, match=what):
            client.call_tool(tool, timeout=10)
        client.ping()


@pytest.mark.parametrize("response", ["json", "sse"])
def test_a_giant_message_fails_that_request_clearly(mis, response):
    server = mis(response=response)
    with client_for(server, max_message_size=1024 * 1024) as client:
        with pytest.raises(ProtocolError, match="larger than max_message_size"):
            client.call_tool("big", {"mb": 2}, timeout=10)
        assert client.call_tool("big", {"mb": 0.5}).text == "x" * (512 * 1024)


@pytest.mark.parametrize("response", ["json", "sse"])
def test_a_20mb_tool_result_arrives_whole(mis, response):
    # How fast it arrives is benchmarks/http_roundtrip.py's job (its big-SSE section): a test
    # asserts no wall time on a shared machine; the call's timeout bounds a stuck read.
    server = mis(response=response)
    with client_for(server) as client:
        result = client.call_tool("big", {"mb": 20}, timeout=30)
        assert len(result.text) == 20 * 1024 * 1024


def test_sse_notifications_comments_and_multiline_data(mis):
    server = mis(response="sse")
    logged, progress = [], []
    with mcpsync.Client(StreamableHTTPTransport(server.url()), logging_handler=logged.append) as client:
        result = client.call_tool("notify", on_progress=lambda *a: progress.append(a))
        assert result.text == "notified"
    assert logged == [{"level": "info", "data": "line one"}]
    assert progress == [(1, 1, None)]


def test_delete_answered_405_is_ignored_and_on_close_runs_once(mis):
    server = mis(session=True, delete_status=405)
    closes = []
    client = client_for(server)
    client.transport.on_close = lambda: closes.append(1)
    with client:
        client.ping()
    client.close()
    server.wait_for(lambda r: r.method == "DELETE")
    assert closes == [1]


def test_notifications_accept_202_and_surface_errors(mis):
    server = mis()
    with client_for(server) as client:
        client.send_roots_list_changed()
        server.status = (500, "nope", {})
        with pytest.raises(HTTPStatusError, match="HTTP 500: nope"):
            client.send_roots_list_changed()


def test_a_notification_that_never_returns_hits_the_notify_timeout(mis):
    server = mis()
    with client_for(server) as client:
        client.transport.timeout = 0.3
        server.hold_notifications = True
        with pytest.raises(RequestTimeout, match=r"^Notify timeout after 300ms: MCP server '\S+' did not accept 'notifications/roots/list_changed' in time$"):
            client.send_roots_list_changed()
        server.hold_notifications = False
        client.ping()


def test_a_listener_405_disables_it_quietly(mis, logs):
    server = mis(session=True, get="405")
    client = client_for(server)
    client.on_notification("*", lambda p: None)
    with client:
        server.wait_for(lambda r: r.method == "GET")
        logs.wait_for(lambda m: "offers no GET stream" in m)
        client.transport._listener.join(5)
        assert not client.transport.listening
        client.transport.start_listener()
        assert not client.transport.listening
        client.ping()
    assert len([r for r in server.records if r.method == "GET"]) == 1


def test_a_listener_404_without_a_session_disables_it_quietly(mis, logs):
    """A server with no GET route and no sessions answers the listener with its framework's HTML 404
    (the conformance harness's mocks do): the client stops asking, as for a 405, and says nothing at
    WARNING. It used to ask again and again, with a warning each time, until the client closed."""
    server = mis(session=False, get="404")
    client = client_for(server)
    client.on_notification("*", lambda p: None)
    with client:
        server.wait_for(lambda r: r.method == "GET")
        client.transport._listener.join(5)
        assert not client.transport.listening
        client.ping()
    assert len([r for r in server.records if r.method == "GET"]) == 1
    assert not any("HTTP 404" in m for m in logs.messages())


def test_a_dropped_listener_reconnects_after_retry_with_last_event_id(mis):
    server = mis(session=True, get="stream", get_retry_ms=200)
    got = []
    arrived = threading.Event()
    client = client_for(server)

    def on_message(params):
        got.append(params)
        arrived.set()

    client.on_notification("notifications/message", on_message)
    with client:
        first = server.wait_for(lambda r: r.method == "GET")[0]
        server.wait_get_stream()
        server.push({"jsonrpc": "2.0", "method": "notifications/message",
                     "params": {"level": "info", "data": "pushed"}}, event_id="ev-9")
        assert arrived.wait(5)
        for stream in list(server.get_streams):
            stream._closed_by_test = True
        second = server.wait_for(lambda r: r.method == "GET", count=2)[1]
        assert second.headers["last-event-id"] == "ev-9"
        assert second.headers["mcp-protocol-version"] == "2025-11-25"
        assert second.headers["mcp-session-id"] == "sess-1"
        assert second.time - first.time >= 0.2
    assert got == [{"level": "info", "data": "pushed"}]


def test_malformed_data_on_the_listener_goes_to_on_error(mis):
    server = mis(session=True, get="stream")
    errors = []
    reported = threading.Event()
    client = client_for(server)
    client.on_notification("*", lambda p: None)

    def on_error(exc):
        errors.append(exc)
        reported.set()

    client.transport.on_error = on_error
    with client:
        server.wait_get_stream().send_event("{broken")
        assert reported.wait(5)
        client.ping()
    assert isinstance(errors[0], ProtocolError) and "listener stream" in str(errors[0])


def test_authorization_is_not_sent_to_another_origin_on_redirect(mis):
    target = mis()
    front = mis(redirect_to=target.url())
    with pytest.raises(HTTPStatusError, match="another origin"):
        client_for(front, token="s3cret").connect()
    assert front.records[0].headers["authorization"] == "Bearer s3cret"
    assert target.records == []  # the redirect is not followed at all (tests/transports/test_http_redirects.py)


def test_connection_refused_is_a_connect_error(mis):
    server = mis()
    url = server.url()
    server.stop()
    with pytest.raises(ConnectError, match="Cannot connect to"):
        mcpsync.connect(url, timeout=5)


def test_closing_wakes_pending_callers_with_transport_closed(mis):
    server = mis()
    client = client_for(server)
    client.connect()
    outcome = []

    def call():
        try:
            client.call_tool("silent", timeout=30)
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=call)
    thread.start()
    server.wait_for(lambda r: r.rpc_method == "tools/call")
    client.close()
    thread.join(5)
    assert isinstance(outcome[0], TransportClosed) and str(outcome[0]).startswith("Transport closed")


def test_a_requests_auth_object_signs_every_request(mis):
    from requests.auth import HTTPBasicAuth

    server = mis(session=True)
    with client_for(server, auth=HTTPBasicAuth("ada", "pw")) as client:
        client.ping()
    posts = [r for r in server.records if r.method == "POST"]
    assert len(posts) >= 3 and all(r.headers["authorization"] == "Basic YWRhOnB3" for r in posts)


def test_tls_verification_is_on_by_default_and_configurable():
    assert StreamableHTTPTransport("https://example.com/mcp").verify is True
    assert StreamableHTTPTransport("https://example.com/mcp", verify="/etc/ca.pem").verify == "/etc/ca.pem"


def test_proxies_come_from_the_environment_as_requests_reads_them(mis, monkeypatch):
    proxy, target = mis(), mis()
    for name in ("HTTP_PROXY", "http_proxy"):
        monkeypatch.setenv(name, proxy.url(""))
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    with mcpsync.Client(StreamableHTTPTransport(target.url())) as client:
        client.ping()
    assert proxy.records and proxy.records[0].path == target.url()  # absolute form: through the proxy
    assert not target.records
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.setenv(name, "127.0.0.1")
    with mcpsync.Client(StreamableHTTPTransport(target.url())) as client:
        client.ping()
    assert target.records  # NO_PROXY honoured
    count = len(target.records)
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    with mcpsync.Client(StreamableHTTPTransport(target.url(), trust_env=False)) as client:
        client.ping()
    assert len(target.records) > count  # trust_env=False ignores the proxy settings


def test_session_expired_is_an_http_status_error_and_pickles():
    import pickle

    exc = SessionExpired("HTTP 404: gone", status_code=404, headers={"A": "b"}, body="gone")
    copy = pickle.loads(pickle.dumps(exc))
    assert type(copy) is SessionExpired and str(copy) == "HTTP 404: gone"
    assert (copy.status_code, copy.headers, copy.body) == (404, {"A": "b"}, "gone")
    assert isinstance(copy, HTTPStatusError)


def test_a_connection_pool_the_pool_manager_dropped_is_replaced_not_reused(mis):
    # The adapter remembers the pool for the server's URL. When urllib3's pool manager drops
    # that pool (its LRU evicts and closes it), the next call must get the new one, not fail.
    server = mis()
    with client_for(server) as client:
        client.ping()
        adapter = client.transport._session.get_adapter(server.url())
        [remembered] = adapter._pools.values()
        adapter.poolmanager.pools.clear()  # an eviction: forgotten by the manager (urllib3 1 also closed it)
        remembered.close()
        client.ping()
        [current] = adapter._pools.values()
        assert current is not remembered and current.pool is not None


def test_closing_the_transport_closes_a_pool_the_pool_manager_dropped(mis):
    # urllib3 2 drops an evicted pool without closing it; the adapter still closes it on close().
    server = mis()
    with client_for(server) as client:
        client.ping()
        adapter = client.transport._session.get_adapter(server.url())
        [remembered] = adapter._pools.values()
        adapter.poolmanager.pools.clear()
        client.ping()  # still served by the remembered pool
    assert remembered.pool is None  # and the leak check finds no socket left
