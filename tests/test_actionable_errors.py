"""Errors a person can act on (issue 15, items 4 to 8): each says what was wrong, what was
tried and what to do, and quotes no secret and no raw HTML.

Every test here failed before the change it pins. Small misbehaving servers: stdio ones in
tests/servers/unhelpful.py, HTTP ones in this process on 127.0.0.1 with ephemeral ports.
"""

from __future__ import annotations

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
