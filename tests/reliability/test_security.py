"""Security: no shell, a minimal server environment, safe names, owner-only files, TLS off only on purpose."""

from __future__ import annotations

import ast
import datetime
import ipaddress
import json
import logging
import os
import stat
import threading
from pathlib import Path
from typing import Any, Iterator, List

import pytest

import mcpsync
from mcpsync import ConnectError
from mcpsync._fleet.toolcache import ToolCache
from mcpsync.transports import _egress, _http, _sse

from ..conftest import ROOT, server_argv
from .conftest import HostileHTTP, hostile_stdio

PACKAGE = ROOT / "mcpsync"


# -- no shell ------------------------------------------------------------------------------------

SHELL_CALLS = {("os", "system"), ("os", "popen"), ("subprocess", "getoutput"), ("subprocess", "getstatusoutput")}


def test_no_shell_anywhere_in_the_package() -> None:
    found: List[str] = []
    files = sorted(PACKAGE.rglob("*.py"))
    assert len(files) > 20
    for path in files:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            where = f"{path.relative_to(ROOT)}:{node.lineno}"
            for keyword in node.keywords:
                if keyword.arg == "shell" and not (isinstance(keyword.value, ast.Constant)
                                                   and keyword.value.value is False):
                    found.append(f"{where}: shell={ast.unparse(keyword.value)}")
            func = node.func
            if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) \
                    and (func.value.id, func.attr) in SHELL_CALLS:
                found.append(f"{where}: {func.value.id}.{func.attr}()")
    assert found == []


# -- the server's environment ------------------------------------------------------------------------

def test_a_stdio_server_sees_only_the_allow_list_and_its_env_whatever_the_parent_holds(monkeypatch) -> None:
    parent_secrets = {"AWS_SECRET_ACCESS_KEY": "aws-secret-value", "GITHUB_TOKEN": "ghp_secretvalue",
                      "OPENAI_API_KEY": "sk-secretvalue", "DATABASE_URL": "postgres://u:pw@h/db",
                      "PYTHONSTARTUP": "/tmp/evil.py", "LD_PRELOAD": "/tmp/evil.so",
                      "BASH_FUNC_f%%": "() {  echo pwned; }"}
    for key, value in parent_secrets.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("LC_ALL", "C.UTF-8")
    monkeypatch.setenv("TERM", "() { :; }; echo pwned")  # an allow-listed name holding a shell function
    with mcpsync.connect(hostile_stdio("printenv"), env={"MY_KEY": "given"}) as client:
        seen = json.loads(client.call_tool("echo").text)
    allowed = set(mcpsync.transports._process.POSIX_ENV_ALLOWLIST)
    assert {k for k in seen if not k.startswith("LC_")} <= allowed | {"MY_KEY"}
    assert seen["MY_KEY"] == "given" and seen["LC_ALL"] == "C.UTF-8"
    assert "TERM" not in seen
    assert not set(parent_secrets) & set(seen)
    assert not [v for v in seen.values() for s in parent_secrets.values() if s in v]


# -- names -------------------------------------------------------------------------------------------

def test_a_hostile_server_name_is_sanitised_before_it_names_loggers_threads_and_files(tmp_path: Path) -> None:
    name = "../../etc/evil name:1"
    argv = server_argv("misbehaving.py", "good")
    config = {"mcpServers": {name: {"command": argv[0], "args": argv[1:]}}}
    with mcpsync.Manager(config, cache=tmp_path / "cache", reconnect=False) as manager:
        manager.connect_all(startup_timeout=30)
        client = manager.client(name, timeout=30)
        assert client.transport.name == "etc_evil_name_1"
        assert client.server_log.name == "mcpsync.server.etc_evil_name_1"
        reader = client.transport._reader
        assert reader is not None and reader.name == "mcpsync-stdio-reader[etc_evil_name_1]"
        assert [t.qualified_name for t in manager.tools()] == ["mcp__etc_evil_name_1_echo"]
    written = [p for p in (tmp_path / "cache").rglob("*") if p.is_file()]
    assert len(written) == 1 and written[0].parent == tmp_path / "cache" / "tools"
    assert written[0].name.startswith("_.._etc_evil_name_1-")
    assert not (tmp_path / "etc").exists()


# -- owner-only files ----------------------------------------------------------------------------------

@pytest.fixture
def open_umask() -> Iterator[None]:
    """A umask that hides nothing: the modes seen are the ones mcpsync asked for."""
    previous = os.umask(0)
    yield
    os.umask(previous)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_the_tools_cache_is_owner_only(tmp_path: Path, open_umask: None) -> None:
    cache = ToolCache(tmp_path / "cache")
    assert cache.put("srv", "hash", [{"name": "echo"}])
    path = cache.path_for("srv")
    assert mode(path) == 0o600
    assert mode(path.parent) == 0o700


def test_the_token_file_and_its_lock_are_owner_only(tmp_path: Path, open_umask: None) -> None:
    store = mcpsync.FileTokenStore(tmp_path / "config" / "tokens.json")
    store.save("issuer|server", {"access_token": "at-secret"})
    assert mode(store.path) == 0o600
    assert mode(store.path.parent) == 0o700
    assert mode(store.path.with_name("tokens.json.lock")) == 0o600
    os.chmod(store.path, 0o644)  # someone loosened it
    assert store.load("issuer|server") == {"access_token": "at-secret"}
    assert mode(store.path) == 0o600


# -- TLS ---------------------------------------------------------------------------------------------

@pytest.fixture
def certificate(tmp_path: Path) -> Any:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


@pytest.mark.filterwarnings("ignore::urllib3.exceptions.InsecureRequestWarning")
def test_tls_is_verified_unless_verify_is_false_which_warns_once(http_server: Any, certificate: Any,
                                                                   caplog: pytest.LogCaptureFixture,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    cert_path, key_path = certificate
    server: HostileHTTP = http_server("normal", "--tls", str(cert_path), str(key_path))
    monkeypatch.delenv("REQUESTS_CA_BUNDLE", raising=False)
    monkeypatch.delenv("CURL_CA_BUNDLE", raising=False)
    with pytest.raises(ConnectError, match="TLS error"):
        mcpsync.connect({"type": "http", "url": server.url()}, timeout=10)
    with mcpsync.connect({"type": "http", "url": server.url()}, verify=str(cert_path), timeout=10) as client:
        client.ping()
    caplog.set_level(logging.WARNING, logger="mcpsync")
    for _ in range(2):
        with mcpsync.connect({"type": "http", "url": server.url()}, verify=False, timeout=10) as client:
            client.ping()
    off = [r for r in caplog.records if "TLS certificate verification is off" in r.getMessage()]
    assert len(off) == 1 and off[0].levelno == logging.WARNING
    assert f"https://127.0.0.1:{server.port}/mcp" in off[0].getMessage()


@pytest.mark.parametrize("value", [None, 0, "", [], "false"[:0]])
def test_tls_verification_cannot_be_turned_off_by_a_falsy_value(value: Any) -> None:
    with pytest.raises(ValueError, match="verify must be True, False or the path of a CA bundle"):
        mcpsync.StreamableHTTPTransport("https://example.com/mcp", verify=value)
    with pytest.raises(ValueError):
        _http.new_session(url="https://example.com/mcp", verify=value, gate=_egress.OriginGate("https://example.com/mcp"))


# -- the legacy endpoint cannot point elsewhere ----------------------------------------------------

@pytest.fixture
def servers() -> Iterator[Any]:
    """A factory of the misbehaving stdlib HTTP servers (tests/servers/http_misbehaving.py), stopped after."""
    from ..http_fixtures import misbehaving

    started: List[Any] = []

    def make(**options: Any) -> Any:
        server = misbehaving(**options).start()
        started.append(server)
        return server

    yield make
    for server in started:
        server.stop()


@pytest.mark.parametrize("endpoint", [
    "http://localhost:{other}\\@127.0.0.1:{port}/messages?sid=1",  # urllib3 ends the authority at the backslash
    "http://127.0.0.1:{port}\\@localhost:{other}/messages?sid=1",
    "http://x@127.0.0.1:{port}/messages?sid=1",  # userinfo, even on the right origin
    "/messages\\@localhost:{other}/?sid=1",
    "http://127.0.0.1:{port}/messages?sid=1\n",  # only a trailing line end is stripped, not refused
])
def test_a_legacy_endpoint_that_parsers_read_differently_is_refused(servers: Any, endpoint: str) -> None:
    collector = servers(legacy=True)
    server = servers(legacy=True)
    server.endpoint = endpoint.format(port=server.port, other=collector.port)
    transport = mcpsync.SSETransport(server.url("/sse"), token="tok-SECRET", headers={"X-Api-Key": "key-SECRET"},
                                     endpoint_timeout=5, timeout=10)
    if endpoint.endswith("\n"):  # the control case: an honest absolute endpoint still works
        server.endpoint = endpoint.strip().format(port=server.port)
        with mcpsync.Client(transport) as client:
            client.ping()
        assert collector.records == []
        return
    with pytest.raises(ConnectError, match="Refusing the endpoint") as info:
        mcpsync.Client(transport).connect()
    assert "sid=1" not in str(info.value)  # the query may hold the server's session id
    assert collector.records == [] and not [r for r in server.records if r.method == "POST"]


# -- SSE fields a hostile server controls ------------------------------------------------------------

def test_a_huge_sse_retry_is_bounded_and_the_listener_goes_on(servers: Any, monkeypatch: Any) -> None:
    from mcpsync.transports import _sse, streamable_http

    monkeypatch.setattr(_sse, "MAX_RETRY", 0.05, raising=False)  # the real bound is minutes: shrink it to see it
    monkeypatch.setattr(streamable_http, "MAX_RETRY", 0.05, raising=False)
    server = servers(session=True, get="stream", get_retry_ms=9223372037000)
    errors: List[BaseException] = []
    with mcpsync.connect(server.url(), timeout=10) as client:
        client.transport.on_error = errors.append
        client.on_notification("*", lambda params: None)
        server.wait_get_stream()._closed_by_test = True  # the stream ends: the listener waits "retry", then resumes
        server.wait_for(lambda r: r.method == "GET", count=2)
        assert client.transport.listening
        client.ping()
    assert errors == []


def test_an_sse_retry_beyond_int_parsing_is_bounded_too() -> None:
    parser = _sse.SSEParser()
    parser.feed(b"retry: " + b"9" * 5000 + b"\n\n")
    assert parser.retry == _sse.MAX_RETRY
    parser.feed(b"retry: 9223372037000\n\n")
    assert parser.retry == _sse.MAX_RETRY
    parser.feed(b"retry: 1500\n\n")
    assert parser.retry == 1.5


@pytest.mark.parametrize("bad_id", ["\u65e5\u672c", " leading", "trailing ", "ctl\x01", "x" * 5000])
def test_an_event_id_no_header_could_carry_back_is_ignored(bad_id: str) -> None:
    parser = _sse.SSEParser()
    parser.feed(b"id: good-1\ndata: {}\n\n")
    parser.feed(f"id: {bad_id}\ndata: {{}}\n\n".encode("utf-8"))
    assert parser.last_event_id == "good-1"


def test_an_unsendable_event_id_does_not_wedge_the_listener(servers: Any) -> None:
    server = servers(session=True, get="stream")
    transport = mcpsync.StreamableHTTPTransport(server.url(), timeout=10, listener_backoff=(0.01, 0.01))
    with mcpsync.Client(transport) as client:
        client.on_notification("*", lambda params: None)
        stream = server.wait_get_stream()
        stream.send_event({"jsonrpc": "2.0", "method": "notifications/message",
                           "params": {"level": "info", "data": "x"}}, event_id="\u65e5\u672c")
        stream._closed_by_test = True
        second = server.wait_for(lambda r: r.method == "GET", count=2)[1]
        assert "last-event-id" not in second.headers
        client.ping()


def test_no_failure_ends_the_listener_silently(servers: Any, monkeypatch: Any) -> None:
    from mcpsync.transports.streamable_http import StreamableHTTPTransport

    real = StreamableHTTPTransport._listen_once
    calls: List[int] = []

    def failing_once(self: Any, *args: Any) -> Any:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("an unforeseen failure")
        return real(self, *args)

    monkeypatch.setattr(StreamableHTTPTransport, "_listen_once", failing_once)
    server = servers(session=True, get="stream")
    errors: List[BaseException] = []
    reported = threading.Event()

    def on_error(exc: BaseException) -> None:
        errors.append(exc)
        reported.set()

    transport = mcpsync.StreamableHTTPTransport(server.url(), timeout=10, listener_backoff=(0.01, 0.01))
    with mcpsync.Client(transport) as client:
        client.transport.on_error = on_error
        client.on_notification("*", lambda params: None)
        assert reported.wait(10)
        server.wait_get_stream()  # it reconnected
        assert client.transport.listening
    assert isinstance(errors[0], mcpsync.TransportError) and "unforeseen failure" in str(errors[0])
    assert isinstance(errors[0].__cause__, RuntimeError)
