"""A remote MCP server cannot make the client fetch this machine's or its network's URLs (issue 13, item 5).

Everything runs on 127.0.0.1, so the "remote" case is made by the seam the
rule has for it: ``transports._egress.origin_class`` (how the MCP server is
classified) is replaced to say ``public``, and the flow's gate takes the class (and a
resolver) as input for the unit tests. The rule runs in the egress gate, on the URL
about to be sent (issue 20). The hostile MCP server answers every
request with a 401 whose ``resource_metadata`` (or whose metadata's
``authorization_servers``) names a "canary" server on 127.0.0.1; the canary
records every request it gets, and must get none.
"""

from __future__ import annotations

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional

import pytest

import mcpsync

sys.path.insert(0, str(Path(__file__).parent.parent / "servers"))
from auth_server import AuthServerThread  # noqa: E402

PUBLIC_ADDRESS = "93.184.216.34"


class _Hostile(BaseHTTPRequestHandler):
    server: "HostileResource"
    protocol_version = "HTTP/1.0"

    def do_GET(self) -> None:  # noqa: N802
        if self.path.startswith("/.well-known/oauth-protected-resource") and self.server.metadata is not None:
            body = json.dumps(self.server.metadata).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
        else:
            body = b'{"error": "unauthorized"}'
            self.send_response(401)
            self.send_header("WWW-Authenticate", self.server.challenge)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_POST = do_GET  # noqa: N815

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass


class HostileResource(HTTPServer):
    """An MCP server that sends the client toward URLs of the test's choosing."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Hostile)
        self.url = f"http://127.0.0.1:{self.server_port}/mcp"
        self.challenge = 'Bearer realm="mcp"'
        self.metadata: Optional[Dict[str, Any]] = None
        self.thread = threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)


@pytest.fixture
def hostile() -> Iterator[HostileResource]:
    server = HostileResource()
    server.thread.start()
    yield server
    server.shutdown()
    server.server_close()
    server.thread.join(10)


@pytest.fixture
def canary() -> Iterator[AuthServerThread]:
    server = AuthServerThread().start()
    yield server
    server.wait_idle()
    server.stop()


@pytest.fixture
def remote(monkeypatch) -> None:
    """Classify every MCP server as public."""
    from mcpsync.transports import _egress

    monkeypatch.setattr(_egress, "origin_class", lambda url: _egress.PUBLIC)


def no_person(url: str) -> str:
    raise AssertionError("nobody should be asked to log in")


def attempt(url: str) -> mcpsync.AuthError:
    auth = mcpsync.OAuth(store=mcpsync.MemoryTokenStore(), login=no_person)
    with pytest.raises(mcpsync.MCPSyncError) as caught:
        mcpsync.connect(url, auth=auth, timeout=10)
    return caught.value


@pytest.mark.parametrize("target", ["http://127.0.0.1:{port}/v1/kv/", "http://localhost:{port}/",
                                    "https://127.0.0.1:{port}/internal"])
def test_a_remote_servers_resource_metadata_url_on_this_machine_is_not_fetched(hostile, canary, remote, target):
    url = target.format(port=canary.httpd.server_port)
    hostile.challenge = f'Bearer realm="mcp", resource_metadata="{url}"'
    error = attempt(hostile.url)
    assert isinstance(error, mcpsync.AuthError) and error.error == "unsafe_url", error
    assert "Refusing to fetch" in str(error)
    assert canary.logic.events == []


@pytest.mark.parametrize("target", ["http://localhost:{port}", "http://127.0.0.1:{port}/tenant"])
def test_a_remote_servers_authorization_server_on_this_machine_is_not_fetched(hostile, canary, remote, target):
    hostile.metadata = {"resource": hostile.url,
                        "authorization_servers": [target.format(port=canary.httpd.server_port)]}
    error = attempt(hostile.url)
    assert isinstance(error, mcpsync.AuthError) and error.error == "unsafe_url", error
    assert "must be https" in str(error)
    assert canary.logic.events == []


def test_a_local_server_may_still_name_local_metadata(hostile, canary):
    """Local development keeps working: an MCP server on loopback may name http://127.0.0.1 metadata."""
    hostile.metadata = {"resource": hostile.url, "authorization_servers": [canary.logic.issuer]}
    canary.logic.settings.dcr = False
    error = attempt(hostile.url)
    assert error.error == "registration_unsupported"  # it got all the way to the canary's metadata
    assert canary.logic.count("metadata") >= 1


# -- the policy itself, with the class and the resolver as input -------------------------------------

def policy(kind: str, names: Optional[Dict[str, List[str]]] = None, trusted=()):
    from mcpsync.transports._egress import DiscoveryGate

    def resolver(host: str, port: int) -> List[str]:
        if host not in (names or {}):
            raise OSError("no such host")
        return names[host]

    return DiscoveryGate("https://mcp.example.com/mcp", server_class=kind, resolver=resolver, trusted=trusted)


@pytest.mark.parametrize("url", [
    "https://127.0.0.1/x", "https://127.8.9.10/x", "https://localhost:6379/", "https://[::1]/",
    "https://[::ffff:127.0.0.1]/", "https://169.254.169.254/latest/meta-data/", "https://10.0.0.5/",
    "https://192.168.1.1/", "https://[fd00::1]/", "https://100.64.0.1/", "https://0.0.0.0/",
    "https://internal.example/", "https://mixed.example/", "http://as.example/", "https://as.example\\@x/",
])
def test_a_public_server_may_not_send_the_client_to_non_public_or_plain_http_urls(url):
    names = {"internal.example": ["10.1.2.3"], "mixed.example": [PUBLIC_ADDRESS, "127.0.0.1"],
             "as.example": [PUBLIC_ADDRESS]}
    with pytest.raises(mcpsync.EgressRefused) as caught:
        policy("public", names).check("GET", url)
    assert caught.value.rule in ("address", "unreadable", "metadata")


def test_public_https_urls_the_servers_own_origin_and_configured_origins_are_allowed():
    rule = policy("public", {"as.example": [PUBLIC_ADDRESS, "2606:2800:220:1::1"]},
                  trusted=["https://10.9.9.9/idp/token"])
    rule.check("GET", "https://as.example/.well-known/oauth-authorization-server")
    rule.check("POST", "https://93.184.216.34/token")
    rule.check("GET", "https://mcp.example.com/.well-known/oauth-protected-resource/mcp")
    rule.check("POST", "https://10.9.9.9/idp/token")


def test_an_intranet_server_may_name_intranet_but_not_loopback_or_link_local_urls():
    rule = policy("private", {"as.corp": ["10.0.0.8"]})
    rule.check("GET", "https://as.corp/.well-known/openid-configuration")
    for url in ("https://127.0.0.1/", "https://169.254.169.254/", "http://10.0.0.8/"):
        with pytest.raises(mcpsync.EgressRefused):
            rule.check("GET", url)


def test_a_loopback_server_may_name_anything_and_a_name_that_does_not_resolve_is_a_connect_error():
    policy("loopback").check("GET", "http://127.0.0.1:8500/v1/kv/")
    with pytest.raises(mcpsync.ConnectError):
        policy("public").check("GET", "https://nowhere.example/")


def test_the_mcp_server_is_classified_by_its_address(monkeypatch):
    from mcpsync.transports import _egress

    monkeypatch.setattr(_egress, "resolve", lambda host, port: {"corp.example": ["10.2.3.4"],
                                                              "public.example": ["10.2.3.4", PUBLIC_ADDRESS]}[host])
    assert _egress.origin_class("http://127.0.0.1:8000/mcp") == "loopback"
    assert _egress.origin_class("http://localhost:8000/mcp") == "loopback"
    assert _egress.origin_class("https://10.1.1.1/mcp") == "private"
    assert _egress.origin_class("https://corp.example/mcp") == "private"
    assert _egress.origin_class("https://public.example/mcp") == "public"
    assert _egress.origin_class("https://8.8.8.8/mcp") == "public"


# -- address classes (issue 20, item 6): unspecified is loopback, metadata is never reachable ---------------


@pytest.fixture
def intranet(monkeypatch) -> None:
    """Classify every MCP server as one on a private network."""
    from mcpsync.transports import _egress

    monkeypatch.setattr(_egress, "origin_class", lambda url: _egress.PRIVATE)


@pytest.mark.parametrize("host", ["0.0.0.0", "0", "0.0.0.1", "[::]", "[::ffff:0.0.0.0]"])
def test_an_intranet_server_cannot_aim_discovery_at_this_machine_by_an_unspecified_address(hostile, canary,
                                                                                            intranet, host):
    """0.0.0.0 and :: reach loopback: from a private-network server they count as loopback, not private."""
    url = f"https://{host}:{canary.httpd.server_port}/.well-known/oauth-protected-resource"
    hostile.challenge = f'Bearer realm="mcp", resource_metadata="{url}"'
    error = attempt(hostile.url)
    assert isinstance(error, mcpsync.AuthError) and error.error == "unsafe_url", error
    assert "loopback address" in str(error)
    assert isinstance(error.__cause__, mcpsync.EgressRefused) and error.__cause__.rule == "address"
    assert canary.logic.events == []


@pytest.mark.parametrize("kind", ["loopback", "private", "public"])
@pytest.mark.parametrize("url", [
    "https://169.254.169.254/latest/meta-data/", "http://169.254.169.254/", "https://[::ffff:169.254.169.254]/",
    "https://[::ffff:a9fe:a9fe]/", "https://2852039166/", "https://0xa9fea9fe/", "https://0251.0376.0251.0376/",
    "https://169.254.43518/", "https://[fd00:ec2::254]/latest/", "https://100.100.100.200/", "https://0x646464c8/",
    "https://[::ffff:100.100.100.200]/", "https://metadata.internal/", "https://metadata6.internal/",
])
def test_a_metadata_address_is_refused_whatever_the_class_of_the_server(kind, url):
    names = {"metadata.internal": ["169.254.169.254"], "metadata6.internal": [PUBLIC_ADDRESS, "fd00:ec2::254"]}
    with pytest.raises(mcpsync.EgressRefused) as caught:
        policy(kind, names).check("GET", url)
    assert caught.value.rule == "metadata", caught.value
    assert "metadata" in str(caught.value)


def test_a_metadata_address_is_refused_even_on_a_trusted_origin():
    rule = policy("public", trusted=["https://169.254.169.254/token"])
    with pytest.raises(mcpsync.EgressRefused):
        rule.check("POST", "https://169.254.169.254/token")


@pytest.mark.parametrize("text,expected", [
    ("0.0.0.0", "loopback"), ("0", "loopback"), ("0.1.2.3", "loopback"), ("::", "loopback"), ("[::]", "loopback"),
    ("::ffff:0.0.0.0", "loopback"), ("127.0.0.1", "loopback"), ("2130706433", "loopback"), ("0x7f.1", "loopback"),
    ("::1", "loopback"), ("169.254.169.254", "metadata"), ("fd00:ec2::254", "metadata"),
    ("100.100.100.200", "metadata"), ("169.254.1.1", "link-local"), ("fd00:ec2::253", "private"),
    ("100.100.100.201", "private"), ("10.0.0.1", "private"), (PUBLIC_ADDRESS, "public"), ("not-an-address", "private"),
])
def test_the_address_classes(text, expected):
    from mcpsync.transports._egress import address_class

    assert address_class(text) == expected


def test_an_mcp_server_on_an_unspecified_address_is_a_loopback_one():
    from mcpsync.transports._egress import origin_class

    assert origin_class("http://0.0.0.0:8000/mcp") == "loopback"
    assert origin_class("http://[::]:8000/mcp") == "loopback"
    assert origin_class("http://169.254.169.254/mcp") == "public"  # the strictest: no gate lets it be reached


def _name_for_this_machine() -> str:
    """A host name (not "localhost") the system resolver sends to 127.0.0.1, or skip."""
    import socket

    name = socket.gethostname()
    try:
        found = {info[4][0] for info in socket.getaddrinfo(name, 80, type=socket.SOCK_STREAM)}
    except OSError:
        pytest.skip("this machine's host name does not resolve")
    if found != {"127.0.0.1"} or name.lower().endswith("localhost"):
        pytest.skip("this machine's host name does not resolve to 127.0.0.1 alone")
    return name


def test_a_name_that_resolves_elsewhere_when_connecting_is_refused_before_anything_is_sent(canary):
    """DNS rebinding: the check's lookup says public, the connection's lookup lands on this machine.

    The check's resolver is the lie (given to the gate when built); the connection resolves for real
    and reaches the canary on 127.0.0.1, and the gate refuses that connection before any byte is sent.
    """
    from mcpsync.auth._fetch import Fetcher
    from mcpsync.transports._egress import DiscoveryGate

    name = _name_for_this_machine()
    gate = DiscoveryGate("https://mcp.example.com/mcp", server_class="public",
                         resolver=lambda host, port: [PUBLIC_ADDRESS])
    url = f"https://{name}:{canary.httpd.server_port}/.well-known/oauth-authorization-server"
    with Fetcher(gate=gate, timeout=5) as fetch:
        with pytest.raises(mcpsync.AuthError) as caught:
            fetch.get_json(url)
    assert caught.value.error == "unsafe_url" and "when connecting" in str(caught.value)
    assert isinstance(caught.value.__cause__, mcpsync.EgressRefused)
    assert canary.logic.events == []


def test_the_peer_check_refuses_metadata_for_every_gate_and_classes_for_discovery():
    from mcpsync.transports._egress import AnyOrigin, DiscoveryGate, OriginGate

    for gate in (AnyOrigin(), OriginGate("http://mcp.example/mcp"), policy("loopback")):
        with pytest.raises(mcpsync.EgressRefused):
            gate.check_peer("http", "metadata.example", 80, "169.254.169.254")
        gate.check_peer("https", "mcp.example", 443, "127.0.0.1")  # MCP traffic and loopback flows: any class
    public = DiscoveryGate("https://mcp.example.com/mcp", server_class="public", trusted=["https://idp.corp/token"])
    public.check_peer("https", "as.example", 443, PUBLIC_ADDRESS)
    public.check_peer("https", "idp.corp", 443, "10.0.0.9")  # configured by the user
    public.check_peer("https", "mcp.example.com", 443, "10.0.0.9")  # the MCP server's own origin
    for address in ("127.0.0.1", "0.0.0.0", "10.0.0.9", "fd00:ec2::254"):
        with pytest.raises(mcpsync.EgressRefused):
            public.check_peer("https", "as.example", 443, address)
