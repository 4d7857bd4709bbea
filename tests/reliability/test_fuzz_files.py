"""Fuzz targets of the readers of files mcpsync did not write, or that may be damaged: JSONC,
config files (JSON, JSONC and Codex's TOML), the project trust record and the tools cache.

A config file's problem is recorded, never raised; JSONC raises only ValueError (which the
config reader records); the trust record and the tools cache read as empty or a miss.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Tuple

import pytest
from hypothesis import strategies as st

from mcpsync import MCPSyncError
from mcpsync import config as mcpconfig
from mcpsync._fleet.toolcache import CACHE_VERSION, ToolCache
from mcpsync.config import _trust
from mcpsync.config._jsonc import parse_json

from .fuzzing import LEVELS, fuzz

scalars = (st.none() | st.booleans() | st.integers(min_value=-(10 ** 400), max_value=10 ** 400)
           | st.floats() | st.text(max_size=12))
json_values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4)
                           | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=20)


def deep(n: int, opener: str = "[", closer: str = "]") -> str:
    return opener * n + closer * n


hostile_json = st.one_of(
    st.integers(1, 50_000).map(deep),
    st.integers(1, 20_000).map(lambda n: '{"a":' * n + "1" + "}" * n),
    st.integers(4000, 6000).map(lambda n: "[" + "9" * n + "]"),
    st.integers(1, 50_000).map(lambda n: "[" + "1," * n + "]"),
    st.integers(1, 50_000).map(lambda n: "[" + ",/**/" * n + "1]"),
    st.integers(1, 50_000).map(lambda n: "/*" * n),
    st.integers(1, 50_000).map(lambda n: '"' + "\\\\" * n),
    st.sampled_from(["NaN", "[Infinity]", "[1e400]", "\ufeff{}", "{} //", "{/*}", '{"a": 1,}', "[1,,]"]),
)
jsonc_pieces = st.sampled_from(['{', '}', '[', ']', ',', ':', '"', '\\', '//', '/*', '*/', '\n', ' ', '1', 'true',
                                '"mcpServers"', '"command"', '"url"', '"s"', '"args"'])
jsonc_texts = st.one_of(st.lists(jsonc_pieces, max_size=40).map("".join), hostile_json, st.text(max_size=100),
                        json_values.map(lambda v: json.dumps(v, allow_nan=True)))


@pytest.mark.parametrize("level", LEVELS)
def test_fuzz_jsonc(level: str) -> None:
    fuzz("jsonc", level, jsonc_texts, parse_json, (ValueError,))


toml_texts = st.one_of(
    st.integers(1, 50_000).map(lambda n: "a = " + deep(n)),
    st.integers(1, 5_000).map(lambda n: "a = " + "{b = " * n + "1" + "}" * n),
    st.integers(4000, 6000).map(lambda n: "a = " + "9" * n),
    st.lists(st.sampled_from(["[mcp_servers.s]", "command = 'x'", "args = ['a']", "[", "]", "=", "\n", '"', "'",
                              "a.b.c = 1", "[[x]]", "env = {A = '1'}"]), max_size=20).map("\n".join),
    st.text(max_size=100),
)


@pytest.mark.parametrize("level", LEVELS)
def test_fuzz_config_file(level: str, tmp_path: Path) -> None:
    def read(case: Tuple[str, str]) -> None:
        name, content = case
        path = tmp_path / name
        path.write_text(content, encoding="utf-8", errors="surrogatepass")
        found = mcpconfig.load(path, environ={})
        for server in found.servers if hasattr(found, "servers") else ():
            repr(server)

    wrapped = json_values.map(lambda v: json.dumps({"mcpServers": {"s": v}}, allow_nan=True))
    cases = st.one_of(st.tuples(st.just("mcp.json"), jsonc_texts | wrapped), st.tuples(st.just("config.toml"), toml_texts))
    fuzz("config-file", level, cases, read, (MCPSyncError,))


@pytest.mark.parametrize("level", LEVELS)
def test_fuzz_trust_record(level: str, tmp_path: Path) -> None:
    path = tmp_path / "trusted-projects.json"

    def read(content: str) -> None:
        path.write_text(content, encoding="utf-8", errors="surrogatepass")
        projects = _trust._read(path)
        assert projects is None or isinstance(projects, dict)

    records = st.one_of(
        st.dictionaries(st.sampled_from(["projects", "version", "x"]),
                        st.dictionaries(st.text(max_size=10), st.fixed_dictionaries(
                            {}, optional={"sha256": json_values, "trusted_at": json_values}) | json_values,
                            max_size=3) | json_values, max_size=3).map(lambda d: json.dumps(d, allow_nan=True)),
        jsonc_texts,
    )
    fuzz("trust-record", level, records, read, (MCPSyncError,))


@pytest.mark.parametrize("level", LEVELS)
def test_fuzz_tools_cache(level: str, tmp_path: Path) -> None:
    cache = ToolCache(tmp_path)
    path = cache.path_for("s")
    path.parent.mkdir(parents=True, exist_ok=True)

    def read(content: str) -> None:
        path.write_text(content, encoding="utf-8", errors="surrogatepass")
        tools = cache.get("s", "h")
        assert tools is None or isinstance(tools, list)

    entries = st.fixed_dictionaries({}, optional={
        "version": st.just(CACHE_VERSION) | json_values, "server": st.just("s") | json_values,
        "config_hash": st.just("h") | json_values,
        "saved_at": st.floats() | st.integers(min_value=-(10 ** 400), max_value=10 ** 400) | json_values,
        "tools": st.lists(st.fixed_dictionaries({"name": st.text(max_size=5)}) | json_values, max_size=3)
        | json_values,
    }).map(lambda d: json.dumps(d, allow_nan=True))
    fuzz("tools-cache", level, entries | jsonc_texts, read, (MCPSyncError,))
