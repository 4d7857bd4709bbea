"""The legacy HTTP+SSE transport, the Streamable-to-legacy fallback, and choosing a transport."""

from __future__ import annotations

import subprocess
import sys
import threading

import pytest

import mcpsync
from mcpsync import (
    ConnectError, HTTPStatusError, SSETransport, StdioTransport, StreamableHTTPTransport, TransportClosed,
    create_transport,
)

from ..http_fixtures import mis  # noqa: F401  (fixture)


def test_the_legacy_transport_posts_to_the_endpoint_and_reads_the_stream(mis):
    server = mis(legacy=True)
    with mcpsync.Client(SSETransport(server.url("/sse"), token="t0k")) as client:
        assert client.protocol_version == "2024-11-05"
        assert client.transport.endpoint == server.url("/messages?sid=1")
        assert client.call_tool("echo", {"text": "legacy"}).text == "legacy"
    posts = [r for r in server.records if r.method == "POST"]
    assert posts and all(r.path == "/messages?sid=1" for r in posts)
    assert all(r.headers["authorization"] == "Bearer t0k" for r in server.records)
    assert server.records[0].method == "GET" and server.records[0].headers["accept"] == "text/event-stream"


def test_an_endpoint_event_that_never_comes_fails_the_open_in_bounded_time(mis):
    server = mis(legacy=True, endpoint=None)
    # The message names the endpoint timeout that ended the wait (not the connect's own deadline).
    with pytest.raises(ConnectError, match=r"No endpoint event from \S+ within 0\.5s"):
        mcpsync.connect({"type": "sse", "url": server.url("/sse")}, endpoint_timeout=0.5)


@pytest.mark.parametrize("endpoint", ["http://evil.example/messages", "https://127.0.0.1:{port}/messages",
                                      "//127.0.0.2:{port}/messages"])
def test_an_endpoint_on_another_origin_is_refused(mis, endpoint):
    server = mis(legacy=True)
    server.endpoint = endpoint.format(port=server.port)
    with pytest.raises(ConnectError, match="Refusing the endpoint .* another origin"):
        mcpsync.connect({"type": "sse", "url": server.url("/sse")})
    assert not [r for r in server.records if r.method == "POST"]


def test_losing_the_stream_fails_pending_calls_and_calls_on_close_once(mis):
    server = mis(legacy=True)
    closes, errors = [], []
    closed = threading.Event()
    transport = SSETransport(server.url("/sse"))
    transport.on_close = lambda: (closes.append(1), closed.set())
    transport.on_error = errors.append
    client = mcpsync.Client(transport)
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
    for stream in list(server.legacy_streams):
        stream._closed_by_test = True
    thread.join(10)
    assert isinstance(outcome[0], TransportClosed) and str(outcome[0]).startswith("Transport closed")
    with pytest.raises(TransportClosed):
        client.ping()
    client.close()
    assert closed.wait(5)
    assert closes == [1]
    assert len(errors) == 1 and isinstance(errors[0], mcpsync.TransportError)


@pytest.mark.parametrize("status", [400, 404, 405])
def test_connect_by_url_falls_back_to_legacy_on_400_404_405(mis, status):
    server = mis(legacy=True, legacy_post_status=status)
    closes = []
    with mcpsync.connect(server.url("/mcp")) as client:
        assert isinstance(client.transport, SSETransport)
        client.transport.on_close = lambda: closes.append(1)
        assert client.call_tool("echo", {"text": "fell back"}).text == "fell back"
    methods = [(r.method, r.rpc_method, r.path) for r in server.records]
    # The modern request first (auto), then the legacy initialize, then the HTTP+SSE GET.
    assert methods[:3] == [("POST", "server/discover", "/mcp"), ("POST", "initialize", "/mcp"),
                           ("GET", None, "/mcp")]
    assert closes == [1]


@pytest.mark.parametrize("status", [401, 403])
def test_auth_failures_never_fall_back(mis, status):
    server = mis(status=(status, "who are you?", {"WWW-Authenticate": "Bearer"}))
    with pytest.raises(HTTPStatusError) as info:
        mcpsync.connect(server.url("/mcp"))
    assert info.value.status_code == status
    assert [r.method for r in server.records] == ["POST"]


def test_an_explicit_http_type_does_not_fall_back(mis):
    server = mis(legacy=True)
    with pytest.raises(HTTPStatusError, match="HTTP 405"):
        mcpsync.connect({"type": "http", "url": server.url("/mcp")})
    assert [r.rpc_method for r in server.records] == ["server/discover", "initialize"]


def test_on_close_of_a_fallen_back_client_moves_to_the_new_transport(mis):
    server = mis(legacy=True)
    closes = []
    transport = create_transport({"url": server.url("/mcp")})
    transport.on_close = lambda: closes.append("closed")
    client = mcpsync.Client(transport)
    with client:
        assert isinstance(client.transport, SSETransport)
        assert closes == []  # the refused Streamable transport closed quietly
    assert closes == ["closed"]


@pytest.mark.parametrize("kind,cls", [(None, StreamableHTTPTransport), ("http", StreamableHTTPTransport),
                                      ("streamable-http", StreamableHTTPTransport),
                                      ("streamableHttp", StreamableHTTPTransport), ("sse", SSETransport)])
def test_create_transport_covers_every_http_type(kind, cls):
    config = {"url": "https://example.com/mcp", "headers": {"X-Key": "k"}, "timeout": 2500}
    if kind is not None:
        config["type"] = kind
    transport = create_transport(config)
    assert type(transport) is cls
    assert transport.url == "https://example.com/mcp" and transport.headers == {"X-Key": "k"}
    assert transport.timeout == 2.5
    if cls is StreamableHTTPTransport:
        assert transport.legacy_fallback is (kind is None)
    transport.close()


def test_create_transport_keeps_stdio_and_rejects_nonsense():
    assert isinstance(create_transport({"command": "python"}), StdioTransport)
    assert isinstance(create_transport({"type": "stdio", "command": "python"}), StdioTransport)
    with pytest.raises(ValueError, match="url"):
        create_transport({"type": "http"})
    with pytest.raises(ValueError, match="Unknown transport type"):
        create_transport({"type": "websocket", "url": "ws://x"})
    with pytest.raises(ValueError, match="http:// or https://"):
        StreamableHTTPTransport("ftp://example.com/mcp")


def test_connect_rejects_a_string_that_is_not_a_url():
    with pytest.raises(ValueError, match="list of arguments"):
        mcpsync.connect("python server.py")


def test_http_transports_import_requests_only_when_opened():
    code = ("import sys, mcpsync; t = mcpsync.StreamableHTTPTransport('http://127.0.0.1:9/mcp'); "
            "s = mcpsync.SSETransport('http://127.0.0.1:9/sse'); mcpsync.create_transport({'url': 'http://x/mcp'}); "
            "print(' '.join(m for m in ('requests', 'urllib3', 'sseclient', 'asyncio') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30, check=True)
    assert out.stdout.strip() == ""
