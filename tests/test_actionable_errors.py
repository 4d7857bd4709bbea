"""Errors a person can act on (issue 15, items 4 to 8): each says what was wrong, what was
tried and what to do, and quotes no secret and no raw HTML.

Every test here failed before the change it pins. Small misbehaving servers: stdio ones in
tests/servers/unhelpful.py, HTTP ones in this process on 127.0.0.1 with ephemeral ports.
"""

from __future__ import annotations

import re
import sys
from typing import List

import pytest

import mcpsync
from mcpsync import ConfigError, UnsupportedProtocolVersion

from .conftest import server_argv

posix = pytest.mark.skipif(sys.platform == "win32", reason="POSIX stdio servers")


def unhelpful(mode: str) -> List[str]:
    return server_argv("unhelpful.py", mode)


# -- item 7: connect() targets and -32022 ----------------------------------------------------------------


@pytest.mark.parametrize("target", ["python server.py", {"foo": 1}, 42, "127.0.0.1:38101/mcp", [], ["python", 3],
                                    None, {"type": "bogus", "url": "http://x"}],
                         ids=["command-string", "dict-without-command", "int", "schemeless-url", "empty-list",
                              "non-string-arg", "none", "unknown-type"])
def test_every_bad_target_is_a_config_error_that_lists_the_accepted_forms(target):
    with pytest.raises(ConfigError) as info:
        mcpsync.connect(target)
    assert isinstance(info.value, ValueError)  # code that caught ValueError still does
    text = str(info.value)
    assert "an argv list such as ['python', 'server.py']" in text and "http:// or https:// URL" in text
    assert "config dict" in text and "Transport" in text


def test_a_command_line_string_is_told_to_become_an_argv_list():
    with pytest.raises(ConfigError, match=r"give the command as a list of arguments, e\.g\. "
                                          r"connect\(\['python', 'server\.py'\]\)"):
        mcpsync.connect("python server.py")


def test_a_command_line_string_shows_no_argument_past_the_second():
    with pytest.raises(ConfigError) as info:
        mcpsync.connect("npx -y server --api-key sk-very-secret")
    assert "sk-very-secret" not in str(info.value) and "['npx', '-y', ...]" in str(info.value)


def test_a_host_port_path_string_is_told_to_add_http_and_not_to_become_an_argv_list():
    with pytest.raises(ConfigError) as info:
        mcpsync.connect("127.0.0.1:38101/mcp?key=s3cret")
    text = str(info.value)
    assert "write 'http://127.0.0.1:38101/mcp?...'" in text
    assert "list of arguments" not in text and "s3cret" not in text


def test_a_config_dict_without_command_or_url_names_its_keys_not_its_values():
    with pytest.raises(ConfigError) as info:
        mcpsync.connect({"comand": "python", "token": "s3cret-value"})
    text = str(info.value)
    assert "needs 'command' (a stdio server) or 'url' (an HTTP server)" in text
    assert "'comand', 'token'" in text and "s3cret-value" not in text


@posix
@pytest.mark.parametrize("mode", ["refuse", "refuse-listing"])
@pytest.mark.parametrize("protocol", ["auto", "legacy", "modern", "2025-06-18"])
def test_a_32022_refusal_raises_unsupported_protocol_version_on_every_path(mode, protocol):
    with pytest.raises(UnsupportedProtocolVersion) as info:
        mcpsync.connect(unhelpful(mode), protocol=protocol, timeout=10)
    text = str(info.value)
    assert "refused protocol version" in text or "Server offered protocol version '2099-01-01'" in text
    if mode == "refuse-listing":
        assert "2099-01-01" in text
    assert isinstance(info.value.__cause__, mcpsync.MCPError) or info.value.__cause__ is None


# -- item 8: callbacks with the wrong signature fail where they are given ------------------------------------


def one_argument(progress):  # the usual slip: a progress callback that takes only the number
    pass


@pytest.fixture
def fake_client():
    from mcpsync.testing import FakeServer

    server = FakeServer("fake")

    @server.tool()
    def work() -> str:
        return "done"

    with server, server.client() as client:
        yield client


def test_a_progress_callback_with_the_wrong_signature_raises_type_error_at_the_call(fake_client):
    with pytest.raises(TypeError) as info:
        fake_client.call_tool("work", on_progress=one_argument)
    text = str(info.value)
    assert "on_progress is called as on_progress(progress, total, message)" in text
    assert "one_argument takes (progress)" in text


@pytest.mark.parametrize("fits", [
    lambda progress, total, message: None,
    lambda *args: None,
    lambda progress, total=None, message=None, extra=None: None,
    __import__("functools").partial(lambda label, progress, total, message: None, "label"),
    print,  # a builtin
    mcpsync.ProgressBar("x", file=__import__("io").StringIO()),
], ids=["plain", "star-args", "defaults", "partial", "builtin", "progress-bar"])
def test_callbacks_that_can_take_progress_total_message_are_accepted(fake_client, fits):
    assert fake_client.call_tool("work", on_progress=fits).text == "done"


def test_a_notification_handler_that_takes_no_params_raises_type_error_when_registered(fake_client):
    with pytest.raises(TypeError, match=r"the handler for 'notifications/message' is called as "
                                        r"handler\(params\), but .* takes \(\)"):
        fake_client.on_notification("notifications/message", lambda: None)


def test_client_handlers_with_the_wrong_signature_raise_type_error_when_the_client_is_built():
    from mcpsync.testing import FakeServer

    with FakeServer("fake") as server:
        with pytest.raises(TypeError, match=r"sampling_handler is called as sampling_handler\(params\)"):
            mcpsync.Client(server.transport(), sampling_handler=lambda: None)
        with pytest.raises(TypeError, match=r"logging_handler is called as logging_handler\(message\)"):
            mcpsync.Client(server.transport(), logging_handler=lambda level, text: None)


def test_manager_callbacks_with_the_wrong_signature_raise_type_error_at_once():
    with pytest.raises(TypeError, match=r"on_tools_changed is called as on_tools_changed\(server_name\)"):
        mcpsync.Manager({"mcpServers": {}}, on_tools_changed=lambda: None)


@pytest.mark.parametrize("protocol", ["legacy", "auto"])  # auto reaches the fake at 2026-07-28
def test_a_subscription_callback_that_takes_no_uri_raises_type_error_before_subscribing(protocol):
    from mcpsync.testing import FakeServer

    server = FakeServer("fake")

    @server.resource("file:///notes.txt")
    def notes() -> str:
        return "hello"

    with server, server.client(protocol=protocol) as client:
        with pytest.raises(TypeError, match=r"the subscription callback is called as callback\(uri\)"):
            client.subscribe("file:///notes.txt", lambda: None)


# -- item 5: a timeout names the server and the method, and says what the server wrote instead ----------------


@posix
def test_a_handshake_timeout_says_the_server_wrote_lines_that_are_not_json_rpc_and_quotes_the_first():
    with pytest.raises(mcpsync.RequestTimeout) as info:
        mcpsync.connect(unhelpful("banner"), protocol="legacy", timeout=1)
    text = str(info.value)
    assert text.startswith("Request timeout after 1000ms: MCP server 'unhelpful' sent no answer to 'initialize'. ")
    assert "It wrote 2 lines that were not JSON-RPC on stdout (skipped), the first: 'Weather server 1.4 starting" \
           in text
    assert "..." in text and "." * 150 not in text  # shortened
    assert "send its banners and logs to stderr" in text
    assert (info.value.server, info.value.method) == ("unhelpful", "initialize")
    assert "not JSON-RPC" in info.value.hint


@posix
def test_a_call_timeout_on_a_working_server_names_the_method_and_still_mentions_the_banner():
    with mcpsync.connect(unhelpful("banner-good"), protocol="legacy", timeout=10) as client:
        with pytest.raises(mcpsync.RequestTimeout) as info:
            client.call_tool("anything", timeout=0.3)
    text = str(info.value)
    assert text.startswith("Request timeout after 300ms: MCP server 'unhelpful' sent no answer to 'tools/call'")
    assert "It wrote 1 line that was not JSON-RPC on stdout" in text


@posix
def test_a_timeout_of_a_server_that_wrote_only_json_rpc_has_no_hint():
    with mcpsync.connect(server_argv("misbehaving.py", "silent"), protocol="legacy", timeout=10) as client:
        with pytest.raises(mcpsync.RequestTimeout) as info:
            client.call_tool("echo", {"text": "x"}, timeout=0.3)
    assert str(info.value) == "Request timeout after 300ms: MCP server 'misbehaving' sent no answer to 'tools/call'"
    assert info.value.hint == ""


def test_a_timeout_keeps_its_server_and_hint_through_pickling():
    import pickle

    error = mcpsync.RequestTimeout.after(2.5, method="tools/call", server="web", hint="It wrote junk")
    copy = pickle.loads(pickle.dumps(error))
    assert str(copy) == str(error) == "Request timeout after 2500ms: MCP server 'web' sent no answer to " \
                                      "'tools/call'. It wrote junk"
    assert (copy.server, copy.hint, copy.method, copy.timeout) == ("web", "It wrote junk", "tools/call", 2.5)


# -- item 4: a call that gives up waiting for a managed server says how long, why, and what to do -------------


@posix
def test_a_call_giving_up_on_a_connecting_server_says_how_long_it_has_been_connecting_and_why(logs):
    config = {"mcpServers": {"garbage_server": {"command": sys.executable, "args": unhelpful("banner")[1:]}}}
    with mcpsync.Manager(config, cache=False, timeout=30) as manager:
        manager.connect_all(startup_timeout=0)
        logs.wait_for(lambda message: "Skipping a line from the server" in message)
        with pytest.raises(mcpsync.RequestTimeout) as info:
            manager.client("garbage_server", timeout=0)
    text = str(info.value)
    assert "after 0ms" not in text
    assert text.startswith("MCP server 'garbage_server' is still connecting, ")
    assert re.search(r"still connecting, \d+\.\ds after it started\. ", text), text
    assert "waited 0ms" not in text  # a caller that asked not to wait is not told it waited 0ms
    assert re.search(r"It wrote \d lines? that w(as|ere) not JSON-RPC on stdout \(skipped\), the first: "
                     r"'Weather server", text)
    assert "Wait longer for it (a larger timeout" in text and "'mcpsync.server.garbage_server'" in text
    assert info.value.server == "garbage_server"


@posix
def test_the_cli_reports_the_connect_error_with_its_hint_and_the_timeout_it_waited(tmp_path):
    from .cli.test_cli import Shell

    sh = Shell(tmp_path)
    config = sh.write_config({"garbage_server": {"command": sys.executable, "args": unhelpful("banner")[1:]}},
                             name="servers.json")
    out = sh.run("--config", str(config), "tools", "--timeout", "1")
    assert out.returncode == 5
    assert "after 0ms" not in out.stderr and "still connecting" not in out.stderr
    assert "MCP server not connected: garbage_server; last error: Request timeout after 1000ms: MCP server " \
           "'garbage_server' sent no answer to " in out.stderr
    assert "not JSON-RPC on stdout" in out.stderr
    assert out.stderr.rstrip().endswith("(waited --timeout 1s; raise it if the server is only slow)")


# -- item 6: HTTP errors summarise HTML, tell both attempts, and say where MCP usually is ------------------


_PAGE = (b"<!DOCTYPE html><html><head><title>404 Not Found</title><style>body{color:red}</style></head>"
         b"<body><h1>Not Found</h1>" + b"<p>The requested URL was not found on this server.</p>" * 50
         + b"</body></html>")


class _Web:
    """A stdlib HTTP server on 127.0.0.1 (an ephemeral port) that is no MCP server at all."""

    def __init__(self, handler: type) -> None:
        import http.server
        import threading

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.thread = threading.Thread(target=self.server.serve_forever, name="test-web", daemon=True)
        self.thread.start()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}{path}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)


def _web_handler(status: int, page: bytes, content_type: str = "text/html; charset=utf-8"):
    import http.server

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

        def answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            if length:
                self.rfile.read(length)
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(page)))
            self.end_headers()
            self.wfile.write(page)

        do_GET = do_POST = do_DELETE = answer

    return Handler


@pytest.fixture
def web():
    started: List[_Web] = []

    def start(status: int, page: bytes = _PAGE, content_type: str = "text/html; charset=utf-8") -> _Web:
        server = _Web(_web_handler(status, page, content_type))
        started.append(server)
        return server

    yield start
    for server in started:
        server.close()


def _no_markup(text: str) -> None:
    assert "<" not in text and "DOCTYPE" not in text and "The requested URL" not in text


def test_a_404_html_page_tells_both_attempts_summarises_the_page_and_suggests_the_usual_paths(web):
    server = web(404)
    with pytest.raises(mcpsync.HTTPStatusError) as info:
        mcpsync.connect(server.url("/api?key=s3cret"), timeout=10)
    text = str(info.value)
    _no_markup(text)
    assert "s3cret" not in text
    assert text.startswith(f"No MCP endpoint at {server.url('/api')}: Streamable HTTP (POST) and then the legacy "
                           "HTTP+SSE transport (GET) both got HTTP 404 (an HTML page titled '404 Not Found')")
    assert f"{server.url('/mcp')} (Streamable HTTP) or {server.url('/sse')} (the legacy HTTP+SSE transport)" in text
    assert info.value.status_code == 404 and "<title>" in info.value.body  # the body itself is kept


@pytest.mark.timeout(8)  # linear: milliseconds; the old patterns spent 10-14 s of CPU on each of these pages
@pytest.mark.parametrize("page", [b"<html>" + b"<title>" * 9000, b"<html>" + b"<" * 65000,
                                  b"<html>" + b"<h1>" * 16000], ids=["titles", "brackets", "headings"])
def test_a_hostile_html_error_page_is_summarised_in_linear_time(web, page):
    server = web(502, page)
    with pytest.raises(mcpsync.HTTPStatusError) as info:
        mcpsync.connect({"type": "http", "url": server.url("/mcp")}, timeout=10)
    assert info.value.status_code == 502 and len(str(info.value)) < 1000


@pytest.mark.parametrize("title", ["\U000e0001" * 200, "\x00\x1b[2J" * 100], ids=["invisible", "controls"])
def test_an_html_error_page_titled_in_unprintable_characters_is_summarised_in_one_short_line(web, title):
    # Found by the atheris html-error-page target: the summary quoted 100 characters with repr,
    # and an unprintable one is shown as up to ten, so the one-line summary grew to a kilobyte.
    server = web(502, b"<html><title>" + title.encode() + b"</title><h1>Bad \x00gateway\x1b</h1>")
    with pytest.raises(mcpsync.HTTPStatusError) as info:
        mcpsync.connect({"type": "http", "url": server.url("/mcp")}, timeout=10)
    text = str(info.value)
    assert "an HTML page titled '" in text and len(text) < 400, text
    assert "\\x" not in text and "\\U" not in text and "\x1b" not in text, text
    if title.startswith("\U000e0001"):  # nothing printable in the title: the first heading names the page
        assert "an HTML page titled 'Bad gateway'" in text


def test_a_404_without_the_fallback_names_the_url_and_the_other_usual_path(web):
    server = web(404)
    with pytest.raises(mcpsync.HTTPStatusError) as info:
        mcpsync.connect({"type": "http", "url": server.url("/mcp")}, timeout=10)
    text = str(info.value)
    _no_markup(text)
    assert text.startswith("HTTP 404: an HTML page titled '404 Not Found'. Nothing answers MCP at ")
    assert f"served at {server.url('/sse')} (the legacy HTTP+SSE transport)" in text


def test_a_server_answering_post_with_501_does_not_look_like_an_mcp_endpoint(web):
    server = web(501, b"<html><head><title>Error response</title></head><body>Unsupported method</body></html>")
    with pytest.raises(mcpsync.HTTPStatusError) as info:
        mcpsync.connect(server.url("/"), timeout=10)
    text = str(info.value)
    _no_markup(text)
    assert f"{server.url('/')} does not look like an MCP endpoint: it does not take POST requests " \
           "(501 Not Implemented)" in text


def test_a_web_page_answering_post_with_200_does_not_look_like_an_mcp_endpoint(web):
    server = web(200, b"<html><head><title>My blog</title></head><body>hello</body></html>")
    with pytest.raises(mcpsync.ProtocolError) as info:
        mcpsync.connect(server.url("/"), timeout=10)
    text = str(info.value)
    _no_markup(text)
    assert "(an HTML page titled 'My blog')" in text and "does not look like an MCP endpoint" in text


def test_a_refused_connection_says_nothing_is_listening_without_urllib3_internals():
    import socket

    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()  # nothing listens there now
    with pytest.raises(mcpsync.ConnectError) as info:
        mcpsync.connect(f"http://127.0.0.1:{port}/mcp?token=s3cret", timeout=10)
    text = str(info.value)
    assert text == (f"Cannot connect to http://127.0.0.1:{port}/mcp: nothing is listening on 127.0.0.1:{port} "
                    "(connection refused); is the server running, and on this host and port?")


# -- siblings ------------------------------------------------------------------------------------------------


@posix
def test_a_command_that_is_not_installed_says_so_and_what_to_do():
    with pytest.raises(mcpsync.ConnectError) as info:
        mcpsync.connect(["mcpsync-no-such-program", "--flag"])
    assert str(info.value) == ("Cannot start MCP server 'mcpsync-no-such-program': no program "
                               "'mcpsync-no-such-program' was found on PATH; install it, or give its full path")
