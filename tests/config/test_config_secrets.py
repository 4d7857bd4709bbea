"""Secrets from the environment never show (issue 13, items 10 and 11).

A token read from a CRLF ``.env`` file ends in ``\\r``: the config refuses it when it is parsed,
naming the server and the header, and the transport's error for a header ``requests`` refuses
names the header only. Expanded ``${VAR}`` values never reach a log record (DEBUG included), a
``repr``, an exception text or the CLI's output.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any, Dict

import pytest

from mcpsync import config as mcpconfig
from mcpsync.config import Config, ServerConfig
from mcpsync.exceptions import ConfigError
from mcpsync.manager import Manager

from ..conftest import server_argv
from ..cli.test_cli import Shell

SECRET = "tok-Zq81vQ-SECRET"


def servers(**entries: Any) -> Dict[str, Any]:
    return {"mcpServers": entries}


def every_text(caplog: pytest.LogCaptureFixture) -> str:
    """Each record's message, its arguments and any exception text, as one string to search."""
    parts = []
    for record in caplog.records:
        parts.append(record.getMessage())
        parts.append(repr(record.args))
        if record.exc_info and record.exc_info[1] is not None:
            parts.append(str(record.exc_info[1]))
    return "\n".join(parts)


# -- item 10: a header value requests would refuse ----------------------------------------------


def test_a_crlf_token_in_a_header_is_refused_when_parsed_naming_server_and_header() -> None:
    found = mcpconfig.from_mapping(servers(
        api={"type": "http", "url": "https://api.example/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}},
        lf={"type": "http", "url": "https://api.example/mcp", "headers": {"X-Key": "${TOKEN_LF}"}},
        ctl={"type": "http", "url": "https://api.example/mcp", "headers": {"X-Key": "a\x01b"}},
        lead={"type": "http", "url": "https://api.example/mcp", "headers": {"X-Key": " ${TOKEN_OK}"}},
        name={"type": "http", "url": "https://api.example/mcp", "headers": {"Bad Name:": "v"}},
        fine={"type": "http", "url": "https://api.example/mcp", "headers": {"X-Key": "a\tb ${TOKEN_OK}"}},
    ), environ={"TOKEN": SECRET + "\r", "TOKEN_LF": SECRET + "\n", "TOKEN_OK": SECRET})
    error = found.errors["api"]
    assert isinstance(error, ConfigError) and error.server == "api"
    assert str(error).startswith('server "api": header "Authorization" has a carriage return (\\r) at its end')
    assert "Windows line endings" in str(error)
    assert 'header "X-Key" has a line feed' in str(found.errors["lf"])
    assert 'header "X-Key" has a control character (U+0001)' in str(found.errors["ctl"])
    assert 'header "X-Key" starts with whitespace' in str(found.errors["lead"])
    assert "header name 'Bad Name:' is not a valid HTTP header name" in str(found.errors["name"])
    assert found.servers["fine"].headers == {"X-Key": f"a\tb {SECRET}"}
    for problem in found.errors.values():
        assert SECRET not in str(problem) and SECRET not in repr(problem)


def test_a_control_character_in_an_expanded_url_is_refused_and_a_bad_url_is_not_quoted() -> None:
    found = mcpconfig.from_mapping(servers(
        crlf={"type": "http", "url": "https://api.example/mcp?key=${TOKEN}"},
        ftp={"type": "http", "url": "${ODD_URL}"},
    ), environ={"TOKEN": SECRET + "\r", "ODD_URL": f"ftp://files.example/x?key={SECRET}"})
    assert str(found.errors["crlf"]).startswith('server "crlf": url has a carriage return (\\r) at its end')
    assert str(found.errors["ftp"]) == ("server \"ftp\": url '${ODD_URL}' is not an http:// or https:// URL")
    for problem in found.errors.values():
        assert SECRET not in str(problem)


def test_the_transport_error_for_a_header_requests_refuses_names_the_header_not_its_value() -> None:
    import requests

    from mcpsync.transports._http_io import translate

    try:
        requests.Request("POST", "http://127.0.0.1:9/mcp", headers={"X-Api-Key": SECRET + "\r"}).prepare()
    except requests.exceptions.InvalidHeader as exc:
        error = translate(exc, "http://127.0.0.1:9/mcp?key=" + SECRET)
    else:  # pragma: no cover - requests accepts it: nothing to translate
        pytest.fail("requests accepted a header value ending in \\r")
    assert "header 'X-Api-Key'" in str(error) and "not shown" in str(error)
    assert SECRET not in str(error)


def test_a_server_built_in_code_with_a_crlf_header_shows_no_value_in_its_status(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="mcpsync")
    config = Config()  # a ServerConfig made in code skips the parse-time check: the transport's error holds
    config.add(ServerConfig("api", "http", url="http://127.0.0.1:9/mcp",
                            headers={"Authorization": f"Bearer {SECRET}\r"}), "api")
    with Manager(config, cache=False, reconnect=False, timeout=10) as manager:
        manager.wait(15)
        status = manager.server_status("api")
    assert status.state == "failed"
    assert "header 'Authorization'" in (status.last_error or "")
    assert SECRET not in (status.last_error or "")
    assert SECRET not in every_text(caplog)


def test_the_cli_names_the_header_of_a_crlf_token_and_never_prints_it(tmp_path: Path) -> None:
    sh = Shell(tmp_path)
    config = sh.project / "servers.json"
    config.write_text(json.dumps(servers(api={"type": "http", "url": "http://127.0.0.1:9/mcp",
                                              "headers": {"Authorization": "Bearer ${API_TOKEN}"}})))
    sh.env["API_TOKEN"] = SECRET + "\r"
    for command in (["call", "api", "echo"], ["tools", "--debug"], ["servers", "--json"]):
        out = sh.run("--config", str(config), *command)
        assert SECRET not in out.stdout and SECRET not in out.stderr, command
        assert 'header "Authorization" has a carriage return' in out.stdout + out.stderr, command
    assert sh.run("--config", str(config), "call", "api", "echo").returncode == 3


# -- item 11: expanded secrets in logs and reprs -------------------------------------------------


def test_expanded_arguments_never_reach_a_debug_log_or_a_repr(tmp_path: Path,
                                                             caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="mcpsync")
    argv = server_argv("slow_start.py", "--marker", str(tmp_path / "started-${RUN_SECRET}"))
    environ = {"RUN_SECRET": SECRET, "PATH": "/usr/bin:/bin"}
    with Manager({"srv": {"command": argv[0], "args": argv[1:]}}, cache=False, environ=environ) as manager:
        assert manager.wait(15) and manager.server_status("srv").state == "connected"
        client = manager.client("srv")
        shown = [repr(manager), repr(client), repr(client.transport), repr(manager.config),
                 repr(manager.config.servers["srv"]), repr(manager.status())]
    assert (tmp_path / f"started-{SECRET}").exists()  # the secret did reach the server, as it should
    assert "${RUN_SECRET}" in repr(manager.config.servers["srv"])  # the argument is shown as written
    log_text = every_text(caplog)
    assert "Started" in log_text and "argument(s), not shown" in log_text
    assert SECRET not in log_text
    for text in shown:
        assert SECRET not in text


def test_a_url_is_shown_without_its_query_or_userinfo_in_reprs() -> None:
    found = mcpconfig.from_mapping(servers(
        q={"type": "http", "url": "https://api.example:8443/mcp?key=${K}&x=1#frag"},
        u={"type": "sse", "url": "https://user:${K}@api.example/sse"},
    ), environ={"K": SECRET})
    assert found.servers["q"].url == f"https://api.example:8443/mcp?key={SECRET}&x=1#frag"
    assert "url='https://api.example:8443/mcp?...#...'" in repr(found.servers["q"])
    assert "url='https://...@api.example/sse'" in repr(found.servers["u"])
    for server in found.servers.values():
        assert SECRET not in repr(server)
    from mcpsync.config._model import display_url

    assert display_url("http://h:99999999/") == "<unparsable URL, 18 characters>"


def test_the_cli_debug_log_of_a_stdio_server_shows_no_expanded_argument(tmp_path: Path) -> None:
    sh = Shell(tmp_path)
    argv = server_argv("slow_start.py", "--tools", "echo", "--marker", str(tmp_path / "m-${RUN_SECRET}"))
    config = sh.project / "servers.json"
    config.write_text(json.dumps(servers(srv={"command": argv[0], "args": argv[1:]})))
    sh.env["RUN_SECRET"] = SECRET
    out = sh.run("--config", str(config), "tools", "--debug")
    assert out.returncode == 0, out.stderr
    assert "argument(s), not shown" in out.stderr
    assert SECRET not in out.stdout and SECRET not in out.stderr


def test_the_cli_debug_traceback_hides_a_url_query_that_a_foreign_exception_quotes(tmp_path: Path) -> None:
    sh = Shell(tmp_path)
    config = sh.project / "servers.json"
    config.write_text(json.dumps(servers(api={"type": "http", "url": "http://127.0.0.1:9/mcp?key=${API_KEY}",
                                              "headers": {"X-Key": "${API_KEY}"}})))
    sh.env["API_KEY"] = SECRET
    out = sh.run("--config", str(config), "call", "api", "echo", "--debug")
    assert out.returncode == 4 and "Traceback" in out.stderr
    assert "Max retries exceeded with url: /mcp?***" in out.stderr  # urllib3's own text, scrubbed
    assert SECRET not in out.stdout and SECRET not in out.stderr
