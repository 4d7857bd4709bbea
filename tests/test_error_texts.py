"""Error texts say each thing once, in the same type everywhere, and say what to do (issue 26, item 5).

Against real peers: the TypeScript SDK's server-everything (tests/npm_peers.py) over stdio,
Streamable HTTP and legacy SSE, the project's own test servers, and the real command.
"""

from __future__ import annotations

import pickle
import sys

import pytest

import mcpsync

from .conftest import server_argv
from .npm_peers import everything_argv, everything_http
from .cli.test_cli import Shell, sh  # noqa: F401  (fixture)

DOUBLED = "MCP error -32602: MCP error -32602:"


def test_an_error_whose_message_already_carries_the_prefix_says_it_once() -> None:
    error = mcpsync.MCPError(-32602, "MCP error -32602: Resource x not found")
    assert str(error) == "MCP error -32602: Resource x not found"
    assert error.message == "MCP error -32602: Resource x not found"  # the peer's message, as sent
    assert str(pickle.loads(pickle.dumps(error))) == str(error)
    assert str(mcpsync.MCPError(-32602, "MCP error -32601: odd")) == "MCP error -32602: MCP error -32601: odd"
    assert str(mcpsync.MCPError(-1, "plain")) == "MCP error -1: plain"


def test_typescript_server_errors_say_their_code_once() -> None:
    with mcpsync.connect(everything_argv(), timeout=30) as client:
        with pytest.raises(mcpsync.MCPError) as raised:
            client.read_resource("demo://no/such/resource")
        bad_args = client.call_tool("get-sum", {"a": "not a number"})  # the server answers a tool error
    assert DOUBLED not in str(raised.value), str(raised.value)
    assert str(raised.value).startswith("MCP error -32602: Resource demo://no/such/resource not found")
    assert bad_args.is_error and DOUBLED not in bad_args.text


@pytest.mark.parametrize("mode", ["stdio", "streamableHttp", "sse"])
def test_an_unknown_resource_is_resource_not_found_on_every_transport(mode: str) -> None:
    if mode == "stdio":
        with mcpsync.connect(everything_argv(), timeout=30) as client:
            with pytest.raises(mcpsync.ResourceNotFound) as raised:
                client.read_resource("demo://no/such/resource")
    else:
        with everything_http(mode) as url, mcpsync.connect(url, timeout=30) as client:
            with pytest.raises(mcpsync.ResourceNotFound) as raised:
                client.read_resource("demo://no/such/resource")
    assert raised.value.code == -32602 and DOUBLED not in str(raised.value)


def test_forcing_the_modern_protocol_on_a_legacy_stdio_server_says_to_use_auto() -> None:
    with pytest.raises(mcpsync.UnsupportedProtocolVersion) as raised:
        mcpsync.connect(server_argv("misbehaving.py", "good"), protocol="modern", timeout=10)
    text = str(raised.value)
    assert "legacy-era server" in text and "protocol='auto'" in text, text
    assert isinstance(raised.value.__cause__, mcpsync.MCPError) and raised.value.__cause__.code == -32601


def test_forcing_the_modern_protocol_on_a_legacy_http_server_says_to_use_auto() -> None:
    with everything_http("streamableHttp") as url:
        with pytest.raises(mcpsync.UnsupportedProtocolVersion) as raised:
            mcpsync.connect(url, protocol="modern", timeout=10)
        with mcpsync.connect(url, protocol="auto", timeout=30) as client:  # what the hint says works
            assert client.era == "legacy"
    assert "protocol='auto'" in str(raised.value)


def test_the_cli_does_not_say_it_waited_0ms_for_a_server_still_listing_its_tools(sh: Shell) -> None:
    out = sh.run("--timeout", "1", "tools", "--", *server_argv("slow_start.py", "--list-delay", "5"))
    assert out.returncode == 5, out.stderr
    assert "still connecting" in out.stderr
    assert "waited 0ms" not in out.stderr, out.stderr
    assert out.stderr.rstrip().endswith("(waited --timeout 1s; raise it if the server is only slow)")


@pytest.mark.parametrize("command, missing", [("call", "TOOL"), ("read", "URI"), ("prompt", "NAME")])
def test_the_name_put_after_the_server_command_is_reported_in_the_usages_words(sh: Shell, command: str,
                                                                                missing: str) -> None:
    out = sh.run(command, "--", sys.executable, "server.py", "echo", '{"text": "hi"}')
    assert out.returncode == 2
    assert "WORDS" not in out.stderr, out.stderr
    assert f"the {missing} goes before '--'" in out.stderr
    bare = sh.run(command)
    assert bare.returncode == 2 and "WORDS" not in bare.stderr and f"{missing} is missing" in bare.stderr
