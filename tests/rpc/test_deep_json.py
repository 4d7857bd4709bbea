"""JSON nested deeper than Python's parser recurses, from every place mcpsync reads JSON it did not write.

``json.loads`` raises ``RecursionError`` (not ``ValueError``) for such input, so each reader must
treat it as malformed input like any other: a hostile server's error body or OAuth metadata, a
cloned repository's config file, a tampered tools cache, token file or trust record, or a tool's
arguments on the command line.
"""

from __future__ import annotations

import io
import sys
from pathlib import Path
from typing import Any

import pytest

from mcpsync import HTTPStatusError
from mcpsync._fleet.toolcache import ToolCache
from mcpsync._session.era import http_error
from mcpsync.auth import FileTokenStore
from mcpsync.config import load

DEEP = "[" * 100_000 + "]" * 100_000


def test_a_deep_http_error_body_is_no_json_rpc_error():
    error = HTTPStatusError("HTTP 400", status_code=400, body=DEEP)
    assert http_error(error) is None


def test_a_deep_config_file_is_reported_as_a_problem_of_that_file(tmp_path: Path):
    path = tmp_path / "mcp.json"
    path.write_text('{"mcpServers": ' + DEEP + "}")
    config = load(path)
    assert not config.servers and [p.path for p in config.problems] == [str(path)]
    assert "nested too deeply" in config.problems[0].reason


def test_a_deep_tools_cache_entry_is_ignored(tmp_path: Path):
    cache = ToolCache(tmp_path)
    cache.path_for("s").parent.mkdir(parents=True)
    cache.path_for("s").write_text(DEEP)
    assert cache.get("s", "hash") is None


def test_a_deep_token_file_reads_as_empty(tmp_path: Path):
    path = tmp_path / "tokens.json"
    path.write_text(DEEP)
    path.chmod(0o600)
    assert FileTokenStore(path).load("key") is None


def test_deep_tool_arguments_on_the_command_line_are_a_usage_error(monkeypatch: Any, capsys: Any):
    from mcpsync import cli

    monkeypatch.setattr("sys.stdin", io.StringIO(DEEP))
    code = cli.main(["call", "tool", "-", "--", sys.executable, "-c", "pass"])
    assert code != 0
    assert "nested too deeply" in capsys.readouterr().err
