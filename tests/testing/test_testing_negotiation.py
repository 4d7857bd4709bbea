"""FakeServer.client() negotiates as connect() does, and a call refused by the input schema never ran its tool."""

from __future__ import annotations

import io
import sys
import unittest
from pathlib import Path
from typing import List, Optional

import pytest

import mcpsync
from mcpsync.testing import FakeServer, FakeServerMixin

from ..conftest import ROOT

MODERN = "2026-07-28"
LEGACY_ONLY = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"]


def _calc(versions: Optional[List[str]] = None) -> FakeServer:
    server = FakeServer("calc", versions=versions)
    server.add_tool(lambda a, b: a + b, name="add", input_schema={
        "type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"], "additionalProperties": False})
    return server


@pytest.mark.parametrize("protocol", [None, "auto"])
def test_a_modern_only_fake_is_reached_by_the_default_client(protocol: Optional[str]) -> None:
    options = {} if protocol is None else {"protocol": protocol}
    with _calc([MODERN]) as server, server.client(**options) as client:
        assert client.protocol_version == MODERN and client.modern
        assert client.call_tool("add", {"a": 2, "b": 40}).text == "42"
    assert [r.method for r in server.requests] == ["server/discover", "tools/call"]


def test_a_modern_only_fake_is_reached_through_connect_with_its_transport() -> None:
    with _calc([MODERN]) as server, mcpsync.connect(server.transport(), timeout=5) as client:
        assert client.protocol_version == MODERN


def test_a_legacy_only_fake_gets_the_handshake_after_the_probe() -> None:
    with _calc(["2025-06-18"]) as server, server.client() as client:
        assert client.protocol_version == "2025-06-18" and not client.modern
        assert client.call_tool("add", {"a": 1, "b": 2}).text == "3"
    assert [r.method for r in server.requests] == ["server/discover", "initialize", "tools/call"]


def test_a_forced_era_still_wins() -> None:
    with _calc() as server:
        with server.client(protocol="legacy") as legacy, server.client(protocol=MODERN) as modern:
            assert legacy.protocol_version == "2025-11-25" and modern.protocol_version == MODERN


def _stdio_script(tmp_path: Path, versions: Optional[List[str]]) -> List[str]:
    script = tmp_path / "fake_server.py"
    script.write_text(f"import sys\nsys.path.insert(0, {str(ROOT)!r})\n"
                      "from mcpsync.testing import FakeServer\n"
                      f"FakeServer('calc', versions={versions!r}).run_stdio()\n")
    return [sys.executable, str(script)]


@pytest.mark.parametrize("versions", [None, [MODERN], LEGACY_ONLY, ["2024-11-05", MODERN]],
                         ids=["dual-era", "modern-only", "legacy-only", "oldest-and-modern"])
def test_in_memory_and_over_stdio_the_same_fake_settles_the_same_version(
        tmp_path: Path, versions: Optional[List[str]]) -> None:
    with FakeServer("calc", versions=versions) as server, server.client() as client:
        in_memory = client.protocol_version
    with mcpsync.connect(_stdio_script(tmp_path, versions), timeout=15) as client:
        over_stdio = client.protocol_version
    assert in_memory == over_stdio


# -- a call the input schema refused never ran the tool ---------------------------------------------


def test_a_schema_refused_call_is_recorded_but_is_not_a_call_of_the_tool() -> None:
    with _calc() as server, server.client() as client:
        refused = client.call_tool("add", {"a": "two", "b": 1})
        assert refused.is_error
        server.assert_tool_not_called("add")
        assert server.calls("add") == []
        assert server.calls("add", include_refused=True) == [{"a": "two", "b": 1}]
        (record,) = [r for r in server.requests if r.method == "tools/call"]
        assert record.tool == "add" and record.arguments == {"a": "two", "b": 1}
        assert record.refused == refused.text == (
            "Invalid arguments for tool 'add': argument 'a' should be an integer, got 'two'")
        with pytest.raises(AssertionError, match=r"was not called \(called: none\); 1 call\(s\) of it were "
                                                 r"refused before it ran, the first with \{'a': 'two', 'b': 1\}"):
            server.assert_tool_called("add")
        client.call_tool("add", {"a": 1, "b": 2})
        assert server.calls("add") == [{"a": 1, "b": 2}]
        assert server.calls("add", include_refused=True) == [{"a": "two", "b": 1}, {"a": 1, "b": 2}]


def test_a_call_of_an_unknown_tool_is_refused_too() -> None:
    with _calc() as server, server.client() as client:
        with pytest.raises(mcpsync.MCPError):
            client.call_tool("subtract", {"a": 1})
        server.assert_tool_not_called("subtract")
        assert [r.refused for r in server.requests if r.method == "tools/call"] == ["Unknown tool: subtract"]


def test_the_unittest_assertions_agree() -> None:
    class Cases(FakeServerMixin, unittest.TestCase):
        def setUp(self) -> None:
            self.client = self.useFakeServer(_calc()).client()

        def test_refused_is_not_called(self) -> None:
            assert self.client.call_tool("add", {"a": 1}).is_error
            self.assertToolNotCalled("add")
            self.assertToolCallCount("add", 0)

    suite = unittest.defaultTestLoader.loadTestsFromTestCase(Cases)
    result = unittest.TextTestRunner(stream=io.StringIO(), verbosity=0).run(suite)
    assert result.testsRun == 1 and result.wasSuccessful(), result.failures + result.errors
