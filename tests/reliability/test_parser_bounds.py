"""What the fuzz targets found, kept as plain tests in the default run: each input once raised a
foreign exception (OverflowError, AttributeError, ValueError, RecursionError) out of a reader, or
broke the reader's bound.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest

from mcpsync import config as mcpconfig
from mcpsync._fleet.toolcache import CACHE_VERSION, ToolCache
from mcpsync.auth._dpop import Nonces
from mcpsync.auth._grant import Grant
from mcpsync.auth._tokens import FileTokenStore, Token, _seconds


@pytest.mark.parametrize("number", [10 ** 400, -(10 ** 400), math.nan, math.inf], ids=["huge", "-huge", "nan", "inf"])
def test_a_stored_token_time_too_big_for_a_float_reads_as_no_time(number: float, tmp_path: Path) -> None:
    token = Token.from_dict({"access_token": "a", "expires_at": number, "lifetime": number})
    assert token is not None and token.expires_at is None and token.lifetime is None
    assert not token.expired(0.0) and "no expiry" in repr(token)
    assert _seconds(number) is None  # a token endpoint's expires_in


def test_a_token_file_entry_of_the_wrong_shapes_is_no_grant(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    path.write_text(json.dumps({"k": {"issuer": "i", "resource": "r", "token_endpoint": "t",
                                      "client": ["not", "a", "dict"], "token": [None]}}))
    value = FileTokenStore(path).load("k")
    assert isinstance(value, dict) and Grant.from_dict(value) is None


@pytest.mark.parametrize("url", ["https://[::1/", "http://[v1.x/", "https://["])
def test_a_dpop_nonce_for_an_unreadable_url_is_none(url: str) -> None:
    nonces = Nonces()
    assert nonces.note(url, {"DPoP-Nonce": "n-1"}) is None
    assert nonces.get(url) is None


@pytest.mark.parametrize("saved_at", [10 ** 400, "NaN"], ids=["huge", "nan"])
def test_a_tools_cache_saved_at_an_impossible_time_is_a_miss(saved_at: object, tmp_path: Path) -> None:
    cache = ToolCache(tmp_path)
    path = cache.path_for("s")
    path.parent.mkdir(parents=True)
    saved = float(saved_at) if saved_at == "NaN" else saved_at  # type: ignore[arg-type]
    path.write_text(json.dumps({"version": CACHE_VERSION, "server": "s", "config_hash": "h", "saved_at": saved,
                                "tools": [{"name": "t"}]}))
    assert cache.get("s", "h") is None  # NaN used to make the entry never expire


def test_a_config_toml_nested_too_deeply_is_a_problem_not_a_crash(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text("a = " + "[" * 50_000 + "]" * 50_000)
    found = mcpconfig.load(path, environ={})
    assert [p.reason for p in found.problems] == ["invalid TOML: nested too deeply to be a config file"]


def test_a_config_file_that_is_a_fifo_or_a_device_is_a_problem_not_a_hang(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo" / ".mcp.json"
    fifo.parent.mkdir()
    os.mkfifo(fifo)  # nobody writes: opening it for reading used to block for ever
    zero = tmp_path / "zero" / ".mcp.json"
    zero.parent.mkdir()
    zero.symlink_to("/dev/zero")  # never ends: reading it whole used to fill memory
    for path in (fifo, zero):
        found = mcpconfig.load(path, environ={})
        assert [p.reason for p in found.problems] == ["cannot read: not a regular file"]
        found = mcpconfig.discover(path.parent, user=False, trust_project=False)
        assert "not a regular file" in " ".join(p.reason for p in found.problems)


def test_a_config_file_larger_than_the_limit_is_a_problem(tmp_path: Path) -> None:
    from mcpsync.config._files import MAX_CONFIG_BYTES

    path = tmp_path / "mcp.json"
    with open(path, "wb") as f:
        f.truncate(MAX_CONFIG_BYTES + 1)  # sparse: no disk used
    found = mcpconfig.load(path, environ={})
    assert [p.reason for p in found.problems] == [f"cannot read: larger than {MAX_CONFIG_BYTES} bytes"]


@pytest.mark.timeout(5)  # the old pattern spent about 16 s on this text
def test_a_connection_error_naming_a_hostile_path_is_explained_in_linear_time() -> None:
    from mcpsync.transports._http_io import _reason

    path = "/" + "http://" * 9000  # a redirect can name any path on the same origin
    text = _reason(OSError(f"Max retries exceeded with url: {path} (Caused by ...)"))
    assert len(text) <= 303
    assert "s3cret" not in _reason(OSError("Max retries exceeded with url: /mcp?key=s3cret (Caused by ...)"))


@pytest.mark.parametrize("page", ["\x01" + "\x00" * 100 + "\ufffdpe", "<title>" + "\U000e0001" * 120 + "</title>",
                                  "<h1>" + "\x7f\u200b" * 80 + "</h1>"], ids=["text", "title", "heading"])
def test_an_html_error_page_of_unprintable_characters_is_summarised_in_a_short_line(page: str) -> None:
    # Found by the atheris html-error-page target (the first input, shortened): a summary quotes
    # 100 characters with repr, which showed each unprintable one as up to ten.
    from mcpsync.transports._http_io import body_summary

    summary = body_summary(page, "text/html")
    assert len(summary) < 400 and "\\x" not in summary and "\\U" not in summary, summary
