"""Property tests of config parsing, ``${VAR}`` expansion, qualified tool names and name sanitising.

Arbitrary entries and files only ever produce a config or a ConfigError (a
file's problem is recorded, never raised); expansion is one pass and its
errors never quote a variable's value; qualified names are unique, at most 64
characters of ``[a-z0-9_-]``, deterministic, and do not change when more
servers or tools are added after them; server names become safe logger,
thread and file names.
"""

from __future__ import annotations

import re
import string
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest
from hypothesis import assume, given, strategies as st

from mcpsync import ConfigError
from mcpsync import config as mcpconfig
from mcpsync._fleet.naming import MAX_LENGTH, assign, qualified_name
from mcpsync._fleet.toolcache import ToolCache
from mcpsync.transports.base import safe_name

from .conftest import PROPERTY_SETTINGS, TIERS

scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=10)
json_values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3)
                           | st.dictionaries(st.text(max_size=6), inner, max_size=3), max_leaves=12)
names = st.text(max_size=30)
variable_names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True)
secrets = st.text(alphabet=string.ascii_letters + string.digits, min_size=12, max_size=20).map(lambda s: "S3CR3T" + s)
templates = st.lists(st.one_of(
    st.text(alphabet=st.characters(blacklist_characters="$"), max_size=6),
    variable_names.map(lambda n: "${%s}" % n),
    variable_names.map(lambda n: "${env:%s}" % n),
    st.tuples(variable_names, st.text(alphabet=st.characters(blacklist_characters="}"), max_size=6)).map(
        lambda pair: "${%s:-%s}" % pair),
    st.sampled_from(["$", "${", "}", "${}", "${input:x}", "$${A}", "${A:-${B}}"]),
), max_size=6).map("".join)


@pytest.mark.parametrize("tier", TIERS)
def test_expansion_is_one_pass_and_its_errors_never_quote_a_value(tier: str) -> None:
    @PROPERTY_SETTINGS[tier]
    @given(templates, st.dictionaries(variable_names, secrets | st.sampled_from(["", "${A}", "$"]), max_size=5))
    def check(text: str, environ: Dict[str, str]) -> None:
        try:
            result = mcpconfig.expand(text, environ, where="args[0]")
        except ConfigError as exc:
            message = str(exc)
            assert "args[0]" in message
            assert not [v for v in environ.values() if len(v) > 6 and v in message and v not in text]
            return
        if "${" not in text:
            assert result == text
        for name, value in environ.items():
            if value and text == "${%s}" % name:
                assert result == value  # taken as it is, never expanded again

    check()


entries = st.fixed_dictionaries({}, optional={
    "type": st.sampled_from(["stdio", "http", "sse", "streamable-http", "streamableHttp", "local", "remote", "ws"])
    | json_values,
    "transport": json_values,
    "command": st.sampled_from(["python", "npx", ""]) | st.lists(st.text(max_size=5), max_size=3) | json_values,
    "args": st.lists(st.text(max_size=8) | st.integers() | json_values, max_size=4) | json_values,
    "env": st.dictionaries(variable_names, secrets | json_values, max_size=3) | json_values,
    "environment": st.dictionaries(variable_names, secrets, max_size=2),
    "cwd": st.text(max_size=8) | json_values,
    "url": st.sampled_from(["http://localhost:1/mcp", "https://h/x?q=1", "ftp://x", ""]) | json_values,
    "httpUrl": st.sampled_from(["https://h/mcp"]), "serverUrl": st.sampled_from(["https://h/mcp"]),
    "headers": st.dictionaries(st.sampled_from(["Authorization", "X-Api-Key"]), secrets | json_values, max_size=2)
    | json_values,
    "timeout": st.integers(-5, 10 ** 6) | st.sampled_from(["100", "x", "0"]) | json_values,
    "enabled": json_values, "disabled": json_values,
}) | json_values


def secret_values(entry: Any) -> List[str]:
    found: List[str] = []
    if isinstance(entry, dict):
        for key in ("env", "environment", "headers"):
            if isinstance(entry.get(key), dict):
                found += [v for v in entry[key].values() if isinstance(v, str) and v.startswith("S3CR3T")]
    return found


@pytest.mark.parametrize("tier", TIERS)
def test_any_entry_gives_a_server_config_or_a_config_error_and_no_repr_shows_a_secret(tier: str,
                                                                                     tmp_path: Path) -> None:
    @PROPERTY_SETTINGS[tier]
    @given(names, entries, st.sampled_from(["mcpServers", "vscode", "gemini"]))
    def check(name: str, entry: Any, form: str) -> None:
        shown: List[str] = []
        try:
            server = mcpconfig.parse_server(name, entry, format=form, environ={}, base_dir=str(tmp_path))
            shown.append(repr(server))
            assert server.name == name and server.type in ("stdio", "http", "sse")
            server.transport_config()
            assert len(server.config_hash) == 64
        except ConfigError as exc:
            shown.append(str(exc))
            assert str(exc).startswith(f'server "{name}": ')
        assert not [s for s in secret_values(entry) for text in shown if s in text]

    check()


@pytest.mark.parametrize("tier", TIERS)
def test_any_config_file_is_read_or_reported_never_raised(tier: str, tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"

    @PROPERTY_SETTINGS[tier]
    @given(st.one_of(
        st.binary(max_size=200),
        st.builds(lambda e: ('{"mcpServers": {"s": %s}}' % __import__("json").dumps(e)).encode(), entries),
        st.text(alphabet='{}[]":,/* \n\t01truefalsn', max_size=120).map(str.encode),
    ))
    def check(content: bytes) -> None:
        path.write_bytes(content)
        found = mcpconfig.load(path, environ={})
        assert bool(found.problems) or set(found.names) <= {"s"}
        for problem in found.problems:
            assert problem.path == str(path)

    check()


pairs = st.lists(st.tuples(names, names), max_size=12)


@pytest.mark.parametrize("tier", TIERS)
def test_qualified_names_are_unique_short_safe_stable_and_unmoved_by_later_servers(tier: str) -> None:
    pattern = re.compile(r"mcp_[a-z0-9_-]+")

    @PROPERTY_SETTINGS[tier]
    @given(pairs, pairs)
    def check(first: List[Tuple[str, str]], more: List[Tuple[str, str]]) -> None:
        names_ = assign(first, warned=set())
        assert set(names_) == set(first)
        values = list(names_.values())
        assert len(set(values)) == len(values)
        for pair, name in names_.items():
            assert len(name) <= MAX_LENGTH and pattern.fullmatch(name), name
        assert assign(first, warned=set()) == names_  # deterministic
        extended = assign(first + more, warned=set())
        assert {pair: extended[pair] for pair in names_} == names_  # later servers move nobody
        for pair in first:  # the first pair to clean to a name keeps the plain name
            if [p for p in first if qualified_name(*p) == qualified_name(*pair)][0] == pair:
                assert names_[pair] == qualified_name(*pair)

    check()


@pytest.mark.parametrize("tier", TIERS)
def test_any_server_name_makes_a_safe_logger_thread_and_file_name(tier: str, tmp_path: Path) -> None:
    cache = ToolCache(tmp_path)
    hostile = st.sampled_from(["..", ".", "../../etc/passwd", "a/b", "x\0y", "con", "", " ", "名前", "a" * 300,
                               "~root", "$(rm -rf /)", "a\nb", "mcpsync.server"])

    @PROPERTY_SETTINGS[tier]
    @given(hostile | st.text(max_size=80))
    def check(name: str) -> None:
        safe = safe_name(name)
        assert re.fullmatch(r"[A-Za-z0-9_.-]{1,64}", safe)
        assert safe not in (".", "..") and not safe.startswith(".")
        path = cache.path_for(name)
        assert path.parent == tmp_path / "tools"
        assert path.resolve().parent == (tmp_path / "tools").resolve()
        assert "/" not in path.name and "\0" not in path.name and not path.name.startswith(".")

    check()
