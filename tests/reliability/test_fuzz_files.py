"""Fuzz targets of the readers of files mcpsync did not write, or that may be damaged: JSONC,
config files (JSON, JSONC and Codex's TOML), the project trust record and the tools cache.

A config file's problem is recorded, never raised; JSONC raises only ValueError (which the
config reader records); the trust record and the tools cache read as empty or a miss.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable, Tuple, Union

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


def as_bytes(content: Union[str, bytes]) -> bytes:
    """A file's content as written: text as UTF-8 (lone surrogates too), bytes as they are."""
    return content if isinstance(content, bytes) else content.encode("utf-8", "surrogatepass")


def config_file_reader(directory: Path) -> Callable[[Tuple[str, Union[str, bytes]]], None]:
    """The config-file target: write one file (named ``mcp.json`` or ``config.toml``) into ``directory``, load it."""
    def read(case: Tuple[str, Union[str, bytes]]) -> None:
        name, content = case
        path = directory / name
        path.write_bytes(as_bytes(content))
        found = mcpconfig.load(path, environ={})
        for server in found.servers if hasattr(found, "servers") else ():
            repr(server)

    return read


@pytest.mark.parametrize("level", LEVELS)
def test_fuzz_config_file(level: str, tmp_path: Path) -> None:
    read = config_file_reader(tmp_path)
    wrapped = json_values.map(lambda v: json.dumps({"mcpServers": {"s": v}}, allow_nan=True))
    cases = st.one_of(st.tuples(st.just("mcp.json"), jsonc_texts | wrapped), st.tuples(st.just("config.toml"), toml_texts))
    fuzz("config-file", level, cases, read, (MCPSyncError,))


def trust_record_reader(path: Path) -> Callable[[Union[str, bytes]], None]:
    """The trust-record target: write one record to ``path``, read it as the trust check does."""
    def read(content: Union[str, bytes]) -> None:
        path.write_bytes(as_bytes(content))
        projects = _trust._read(path)
        assert projects is None or isinstance(projects, dict)

    return read


@pytest.mark.parametrize("level", LEVELS)
def test_fuzz_trust_record(level: str, tmp_path: Path) -> None:
    read = trust_record_reader(tmp_path / "trusted-projects.json")
    records = st.one_of(
        st.dictionaries(st.sampled_from(["projects", "version", "x"]),
                        st.dictionaries(st.text(max_size=10), st.fixed_dictionaries(
                            {}, optional={"sha256": json_values, "trusted_at": json_values}) | json_values,
                            max_size=3) | json_values, max_size=3).map(lambda d: json.dumps(d, allow_nan=True)),
        jsonc_texts,
    )
    fuzz("trust-record", level, records, read, (MCPSyncError,))


def tools_cache_reader(directory: Path) -> Callable[[Union[str, bytes]], None]:
    """The tools-cache target: write one cache entry under ``directory``, look it up."""
    cache = ToolCache(directory)
    path = cache.path_for("s")
    path.parent.mkdir(parents=True, exist_ok=True)

    def read(content: Union[str, bytes]) -> None:
        path.write_bytes(as_bytes(content))
        tools = cache.get("s", "h")
        assert tools is None or isinstance(tools, list)

    return read


@pytest.mark.parametrize("level", LEVELS)
def test_fuzz_tools_cache(level: str, tmp_path: Path) -> None:
    read = tools_cache_reader(tmp_path)
    entries = st.fixed_dictionaries({}, optional={
        "version": st.just(CACHE_VERSION) | json_values, "server": st.just("s") | json_values,
        "config_hash": st.just("h") | json_values,
        "saved_at": st.floats() | st.integers(min_value=-(10 ** 400), max_value=10 ** 400) | json_values,
        "tools": st.lists(st.fixed_dictionaries({"name": st.text(max_size=5)}) | json_values, max_size=3)
        | json_values,
    }).map(lambda d: json.dumps(d, allow_nan=True))
    fuzz("tools-cache", level, entries | jsonc_texts, read, (MCPSyncError,))
